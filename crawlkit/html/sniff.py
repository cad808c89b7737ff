"""Is a response body an HTML page, and in which charset: the first two questions
about it, answered from the Content-Type and the body's first bytes as browsers
answer them (WHATWG MIME Sniffing, and the Encoding Standard's sniffing order; see
:mod:`crawlkit.html.page` for the contracts). Pure functions of bytes and a header.
"""

from __future__ import annotations

import re

from crawlkit.html.encoding import codec_for_label
from crawlkit.html.guess import guess_legacy
from crawlkit.html.prescan import prescan, xml_declared

__all__ = [
    "HTML_TYPES",
    "content_type_charset",
    "detect_charset",
    "looks_like_html",
    "media_type",
]

#: The media types of HTML pages.
HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# Types a server sends when it does not know better: sniff those.
_GENERIC_TYPES = frozenset(
    {"", "text/plain", "application/octet-stream", "unknown/unknown", "application/unknown", "*/*"}
)
_BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"%PDF-",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"RIFF",
    b"\x00\x00\x01\x00",
    b"OggS",
    b"\x28\xb5\x2f\xfd",
)
# The HTML signatures of the WHATWG MIME Sniffing standard (each followed by a space
# or ">"), and "<?xml" / "<svg" are not HTML.
_HTML_SIGNATURES = (
    b"<!doctype html",
    b"<html",
    b"<head",
    b"<script",
    b"<iframe",
    b"<h1",
    b"<div",
    b"<font",
    b"<table",
    b"<a",
    b"<style",
    b"<title",
    b"<b",
    b"<body",
    b"<br",
    b"<p",
    b"<!--",
    b"<meta",
    b"<link",
)


_HTTP_SPACE = " \t\n\r"  # HTTP's white space: no form feed, no other Unicode space


def media_type(content_type: str | None) -> str:
    """The lowercased ``type/subtype`` of a Content-Type value ('' when absent).

    Only HTTP's white space is trimmed (``text/html\\xa0`` is no HTML type)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip(_HTTP_SPACE).lower()


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_QUOTED_TOKEN = re.compile(r"[\t\x20-\x7e\x80-\xff]*")
_TYPE = re.compile(r"([^/]*)/([^;]*)")


def content_type_charset(content_type: str | None) -> str | None:
    """The ``charset`` parameter of a Content-Type value, as the WHATWG MIME Sniffing
    standard's "parse a MIME type" reads it, or None.

    The first ``charset`` counts; a value may be a quoted string (backslash escapes,
    an unclosed quote runs to the end), and ``'`` is a character like any other. No
    white space around ``=``, no value that is not token or quoted-string characters,
    and no parameter of a type that does not parse: ``charset ='gbk'``, ``charset=gbk"``
    and ``text/html(;charset=gbk`` name none, and the page's own declaration decides.
    """
    text = (content_type or "").strip(_HTTP_SPACE)
    match = _TYPE.match(text)
    if match is None or not _TOKEN.fullmatch(match.group(1)):
        return None
    if not _TOKEN.fullmatch(match.group(2).rstrip(_HTTP_SPACE)):
        return None
    pos, end = match.end(), len(text)
    while pos < end:
        pos += 1  # past the ";"
        while pos < end and text[pos] in _HTTP_SPACE:
            pos += 1
        name_end = _find_any(text, pos, ";=")
        name, pos = text[pos:name_end].lower(), name_end
        if pos < end and text[pos] == ";":
            continue
        pos += 1  # past the "="
        if pos >= end:
            break
        if text[pos] == '"':
            value, pos = _quoted_string(text, pos)
            pos = _find_any(text, pos, ";")
        else:
            value_end = _find_any(text, pos, ";")
            value, pos = text[pos:value_end].rstrip(_HTTP_SPACE), value_end
            if not value:
                continue
        if name == "charset" and _TOKEN.fullmatch(name) and _QUOTED_TOKEN.fullmatch(value):
            return value
    return None


def _find_any(text: str, pos: int, chars: str) -> int:
    """The position of the first of ``chars`` in ``text`` from ``pos``, or its end."""
    while pos < len(text) and text[pos] not in chars:
        pos += 1
    return pos


def _quoted_string(text: str, pos: int) -> tuple[str, int]:
    """Fetch's "collect an HTTP quoted string" (its value) from the ``"`` at ``pos``:
    the value and the position after the closing quote (or the end)."""
    value: list[str] = []
    pos += 1
    while pos < len(text):
        char = text[pos]
        pos += 1
        if char == '"':
            break
        if char == "\\":
            if pos >= len(text):
                value.append("\\")
                break
            char = text[pos]
            pos += 1
        value.append(char)
    return "".join(value), pos


def _sniff_html(body: bytes) -> bool:
    head = body[:512].lstrip(b"\xef\xbb\xbf").lstrip(b" \t\r\n\x0c").lower()
    for sig in _HTML_SIGNATURES:
        if head.startswith(sig):
            rest = head[len(sig) : len(sig) + 1]
            if sig == b"<!--" or rest in (b" ", b">", b"\t", b"\n", b"\r", b"\x0c", b"/", b""):
                return True
    # XHTML served without a type: an XML prolog followed by an html root element.
    return head.startswith(b"<?xml") and (b"<html" in head or b"<!doctype html" in head)


def looks_like_html(content_type: str | None, body: bytes) -> bool:
    """Whether a response body is an HTML page (see the module docstring)."""
    mtype = media_type(content_type)
    if mtype in HTML_TYPES:
        return not body.startswith(_BINARY_MAGIC)
    if mtype in _GENERIC_TYPES:
        return _sniff_html(body)
    return False


# ---------------------------------------------------------------- charset


def detect_charset(body: bytes, content_type: str | None = None) -> tuple[str, str, int]:
    """``(codec, source, bom_length)``: which codec decodes ``body`` and why.

    ``source`` is one of ``bom``, ``header``, ``meta`` (HTML's prescan,
    :mod:`crawlkit.html.prescan`), ``xml`` (the XML declaration of a page served as
    ``application/xhtml+xml``, whose ``<meta>`` is not read: XML's rules), ``utf-8``
    (valid UTF-8 without a declaration, also when cut inside its last character, and
    any XHTML page without one), ``guess`` (UTF-8 for a page that is UTF-8 but for a
    stray byte or a few, :func:`_mostly_utf8`; else an undeclared page that is not
    UTF-8 and that windows-1252 cannot explain, in the encoding
    :func:`crawlkit.html.guess.guess_legacy` names) or ``default``
    (windows-1252, the web's historical default, for the other undeclared pages).
    """
    if body.startswith(b"\xef\xbb\xbf"):
        return "utf-8", "bom", 3
    if body.startswith(b"\xff\xfe"):
        return "utf-16-le", "bom", 2
    if body.startswith(b"\xfe\xff"):
        return "utf-16-be", "bom", 2
    codec = codec_for_label(content_type_charset(content_type))
    if codec:
        return codec, "header", 0
    if media_type(content_type) == "application/xhtml+xml":
        declared = xml_declared(body)
        return (declared, "xml", 0) if declared else ("utf-8", "utf-8", 0)
    declared = prescan(body)
    if declared:
        return declared, "meta", 0
    if _is_utf8(body):
        return "utf-8", "utf-8", 0
    if _mostly_utf8(body):
        return "utf-8", "guess", 0
    guessed = guess_legacy(body)
    return (guessed, "guess", 0) if guessed else ("cp1252", "default", 0)


def _is_utf8(body: bytes) -> bool:
    """True when ``body`` is valid UTF-8, or would be but for a last character cut short:
    a page capped at ``max_html_bytes`` (or a fetch capped at its ``max_body``) ends
    mid-character as often as not when its text is CJK or Cyrillic, and read as
    windows-1252 for that one character it lost all of its text."""
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as error:
        return error.reason == "unexpected end of data" and error.end == len(body)
    return True


_HIGH_BYTES = bytes(range(0x80, 0x100))
# A page whose non-ASCII bytes are UTF-8 but for at most one in this many is UTF-8 with
# a stray byte (a Latin-1 character pasted into a UTF-8 page), and at least this many
# of them valid: a few valid sequences prove nothing. Text in windows-1252 or a CJK
# legacy encoding read as UTF-8 fails on most of its non-ASCII bytes.
_STRAY_SHARE = 100
_MIN_VALID_HIGH = 16


def _mostly_utf8(body: bytes) -> bool:
    """True when ``body`` is UTF-8 but for a stray invalid byte or a few: read as
    UTF-8 (each stray byte a replacement character), it keeps all of its text, where
    windows-1252 turned every character into two and a detector, asked about bytes
    that are UTF-8, named encodings such as gb18030 that decode anything (a Greek page
    with one stray byte became CJK)."""
    high = len(body) - len(body.translate(None, _HIGH_BYTES))
    stray = body.decode("utf-8", "replace").count("\ufffd")
    return high - stray >= _MIN_VALID_HIGH and stray * _STRAY_SHARE <= high
