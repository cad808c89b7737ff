"""Charset labels: the Python codec for a label a page or stylesheet declares.

Labels follow the WHATWG Encoding Standard, which maps several labels to a superset
of what their name says (``iso-8859-1`` and ``ascii`` decode as windows-1252, ``gbk``
as gb18030, ...), as browsers do. Used by :mod:`crawlkit.html.page` (headers, ``<meta>``)
and :mod:`crawlkit.html.css` (``@charset``).
"""

from __future__ import annotations

import codecs

__all__ = ["codec_for_label", "query_in_document_encoding"]

# The WHATWG Encoding Standard's labels (https://encoding.spec.whatwg.org/#names-and-labels),
# by the Python codec that decodes them. Only these: a label that is any other Python
# codec name (``undefined``, ``zlib``, ``hex``, ``utf-7``...) is no charset of the web,
# and decoding with it raised or turned a page into what no browser shows. The
# "replacement" labels (iso-2022-kr, hz-gb-2312, ...) are left unknown.
_CODEC_LABELS = {
    "utf-8": "unicode-1-1-utf-8 unicode11utf8 unicode20utf8 utf-8 utf8 x-unicode20utf8",
    "cp866": "866 cp866 csibm866 ibm866",
    "iso8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 "
    "iso_8859-2:1987 l2 latin2",
    "iso8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 "
    "iso_8859-3:1988 l3 latin3",
    "iso8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 "
    "iso_8859-4:1988 l4 latin4",
    "iso8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 "
    "iso_8859-5 iso_8859-5:1988",
    "iso8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 "
    "iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 "
    "iso_8859-6:1987",
    "iso8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 "
    "iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "iso8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 "
    "iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual csiso88598i iso-8859-8-i logical",
    "iso8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "iso8859-13": "iso-8859-13 iso8859-13 iso885913",
    "iso8859-14": "iso-8859-14 iso8859-14 iso885914",
    "iso8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "iso8859-16": "iso-8859-16",
    "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
    "koi8-u": "koi8-ru koi8-u",
    "mac-roman": "csmacintosh mac macintosh x-mac-roman",
    "cp874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "cp1250": "cp1250 windows-1250 x-cp1250",
    "cp1251": "cp1251 windows-1251 x-cp1251",
    "cp1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 iso-ir-100 "
    "iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii windows-1252 "
    "x-cp1252 x-user-defined",
    "cp1253": "cp1253 windows-1253 x-cp1253",
    "cp1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
    "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    "cp1255": "cp1255 windows-1255 x-cp1255",
    "cp1256": "cp1256 windows-1256 x-cp1256",
    "cp1257": "cp1257 windows-1257 x-cp1257",
    "cp1258": "cp1258 windows-1258 x-cp1258",
    "mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "gb18030": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 "
    "x-gbk gb18030",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "euc_jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "iso2022_jp": "csiso2022jp iso-2022-jp",
    "cp932": "csshiftjis ms932 ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "cp949": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 "
    "ksc5601 ksc_5601 windows-949",
    "utf-16-be": "unicodefffe utf-16be",
    "utf-16-le": "csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff utf-16 utf-16le",
}
_LABELS = {
    label: codecs.lookup(codec).name
    for codec, labels in _CODEC_LABELS.items()
    for label in labels.split()
}


# "Get an encoding" trims ASCII white space only: a label with a no-break space, a
# vertical tab or a NUL around it is no label (browsers reject it).
_ASCII_SPACE = " \t\n\f\r"


def codec_for_label(label: str | None) -> str | None:
    """The Python codec for a charset label of the WHATWG Encoding Standard, or None
    when the label is none of them (its "get an encoding": ASCII white space around
    it trimmed, case ignored; quotes are the caller's to remove, as a Content-Type
    parameter, a ``<meta>`` or an XML declaration defines them)."""
    if not label:
        return None
    return _LABELS.get(label.strip(_ASCII_SPACE).lower())


# Encodings whose documents' URLs take UTF-8 queries anyway (the WHATWG URL Standard's
# "encoding override" is UTF-8 for them).
_UTF = frozenset({"utf-8", "utf_8", "utf8", "utf-16", "utf-16-le", "utf-16-be", "utf_16"})


def _url_reference(error: UnicodeError) -> tuple[str, int]:
    """An encoding error's characters as percent-encoded numeric references."""
    assert isinstance(error, UnicodeEncodeError)
    chars = error.object[error.start : error.end]
    return "".join(f"%26%23{ord(c)}%3B" for c in chars), error.end


_URL_REFERENCE = "crawlkit.url-reference"
codecs.register_error(_URL_REFERENCE, _url_reference)


def query_in_document_encoding(href: str, codec: str) -> str:
    """``href`` with the non-ASCII characters of its query percent-encoded in the
    document's encoding ``codec``, as a browser requests a link of such a page (the
    WHATWG URL Standard's encoding override): ``?q=café`` on a windows-1252 page is
    ``?q=caf%E9``, not UTF-8's ``caf%C3%A9``, which the server may read as another
    query and a replay of the page would not find. A character the encoding lacks
    becomes ``%26%23NNN%3B``, its numeric character reference percent-encoded (the
    standard's "percent-encode after encoding": a bare ``&`` would split the
    parameter). Path and fragment are left
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
    data = query.encode(codec, _URL_REFERENCE)
    encoded = "".join(f"%{b:02X}" if b >= 0x80 or (b == 0x23) else chr(b) for b in data)
    return href[: start + 1] + encoded + href[end:]
