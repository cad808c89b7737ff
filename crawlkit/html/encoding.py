"""Charset labels: the Python codec for a label a page or stylesheet declares.

Labels follow the WHATWG Encoding Standard, which maps several labels to a superset
of what their name says (``iso-8859-1`` and ``ascii`` decode as windows-1252, ``gbk``
as gb18030, ...), as browsers do. Used by :mod:`crawlkit.html.page` (headers, ``<meta>``)
and :mod:`crawlkit.html.css` (``@charset``).
"""

from __future__ import annotations

import codecs

__all__ = ["codec_for_label", "query_in_document_encoding"]

# WHATWG Encoding Standard labels whose Python codec differs from the label's name.
_WHATWG_LABELS = {
    "iso-8859-1": "cp1252",
    "iso8859-1": "cp1252",
    "iso_8859-1": "cp1252",
    "latin1": "cp1252",
    "l1": "cp1252",
    "ascii": "cp1252",
    "us-ascii": "cp1252",
    "windows-1252": "cp1252",
    "cp819": "cp1252",
    "iso-8859-9": "cp1254",
    "latin5": "cp1254",
    "iso-8859-11": "cp874",
    "tis-620": "cp874",
    "windows-874": "cp874",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-gbk": "gb18030",
    "gb_2312-80": "gb18030",
    "chinese": "gb18030",
    "shift_jis": "cp932",
    "shift-jis": "cp932",
    "sjis": "cp932",
    "x-sjis": "cp932",
    "ms_kanji": "cp932",
    "windows-31j": "cp932",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "korean": "cp949",
    "big5": "big5hkscs",
    "x-x-big5": "big5hkscs",
    "utf8": "utf-8",
    "unicode-1-1-utf-8": "utf-8",
    "x-unicode20utf8": "utf-8",
    "utf-16": "utf-16-le",
    "utf-16le": "utf-16-le",
    "utf-16be": "utf-16-be",
    "unicode": "utf-16-le",
    "x-user-defined": "cp1252",
}


def codec_for_label(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when the label is unknown."""
    if not label:
        return None
    name = label.strip().strip("\"'").lower()
    if not name:
        return None
    name = _WHATWG_LABELS.get(name, name)
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None


# Encodings whose documents' URLs take UTF-8 queries anyway (the WHATWG URL Standard's
# "encoding override" is UTF-8 for them).
_UTF = frozenset({"utf-8", "utf_8", "utf8", "utf-16", "utf-16-le", "utf-16-be", "utf_16"})


def query_in_document_encoding(href: str, codec: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in the
    document's encoding ``codec``, as a browser requests a link of such a page (the
    WHATWG URL Standard's encoding override): ``?q=café`` on a windows-1252 page is
    ``?q=caf%E9``, not UTF-8's ``caf%C3%A9``, which the server may read as another
    query and a replay of the page would not find. A character the encoding lacks
    becomes ``&%23NNN;`` (its numeric character reference). Path and fragment are left
    to the URL parser, which encodes them in UTF-8 for every document."""
    if href.isascii() or codec.lower() in _UTF:
        return href
    start = href.find("?")
    if start < 0:
        return href
    end = href.find("#", start)
    end = len(href) if end < 0 else end
    query = href[start + 1 : end]
    if query.isascii():
        return href
    data = query.encode(codec, "xmlcharrefreplace")
    encoded = "".join(f"%{b:02X}" if b >= 0x80 or (b == 0x23) else chr(b) for b in data)
    return href[: start + 1] + encoded + href[end:]
