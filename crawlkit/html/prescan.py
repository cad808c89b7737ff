"""Which charset a page declares in its own bytes: HTML's prescan, XML's declaration.

:func:`prescan` is the WHATWG HTML Standard's "prescan a byte stream to determine its
encoding" (https://html.spec.whatwg.org/#prescan-a-byte-stream-to-determine-its-encoding):
it reads tags as the tokenizer would, so a ``<meta charset>`` inside a comment, or
inside another tag's attribute value, is not one; and a ``content="...charset=..."``
counts only beside ``http-equiv="content-type"`` (a ``<meta name="description"
content="text/html; charset=windows-1251">`` on a UTF-8 page is a description). A
regular expression over the bytes took all three for declarations, and the page's
title and text were read in the wrong charset. Where browsers, which run their
tokenizer instead, differ from the standard's text, it reads as they do (the
web-platform-tests html/syntax/charset/ cases): the text of a ``<script>``,
``<style>`` or ``<title>`` holds no tags, and character references in a value are
resolved.

:func:`xml_declared` is the ``encoding`` of an XML declaration (``<?xml version="1.0"
encoding="Shift_JIS"?>``), which is what an XHTML page served as
``application/xhtml+xml`` declares: XML parsers, browsers among them, never look at
its ``<meta>``.

Both scan at most :data:`PRESCAN_BYTES`; both give the Python codec of a label of the
WHATWG Encoding Standard (:func:`~crawlkit.html.encoding.codec_for_label`), or None.
"""

from __future__ import annotations

import html
import re

from crawlkit.html.encoding import codec_for_label

__all__ = ["ANYWHERE_BYTES", "HEAD_BYTES", "PRESCAN_BYTES", "prescan", "xml_declared"]

ANYWHERE_BYTES = 1024
"""A declaration starting in the page's first bytes counts wherever it is (in the
body, after a stray tag); past them, only while the page is still in its head: no
``</head>``, ``<body>`` or other tag that is no head's (``<div>``, ``<template>``)
before it. Blink and Gecko read so (WPT html/syntax/charset/after-1kb.html,
after-head-after-1kb.html, after-bogus-after-1kb.html)."""

PRESCAN_BYTES = 4096
"""Bytes of a page searched for a declaration first. The standard says 1,024 at
least; pages that put a long ``<head>`` of scripts before their ``<meta charset>``
are common enough that browsers read further (to the end of the head)."""

HEAD_BYTES = 65536
"""Bytes of a page's head searched when the first :data:`PRESCAN_BYTES` declare none."""
_BODY = re.compile(rb"<body[\t\n\x0c\r />]", re.IGNORECASE)

_WS = b"\t\n\x0c\r "
_SPACE_OR_SLASH = re.compile(rb"[\t\n\x0c\r /]*")
_SPACES = re.compile(rb"[\t\n\x0c\r ]*")
_NAME_REST = re.compile(rb"[^\t\n\x0c\r />=]*")
_UNQUOTED = re.compile(rb"[^\t\n\x0c\r >]*")
# Everything up to the next <meta> tag, as the prescan reads it, in one match: text, a
# comment (up to the first "-->" after "<!", so "<!-->" is one), any other tag with
# its attributes as :func:`_attribute` reads them (a value whose quote is never closed
# runs to the end), "<!", "</" or "<?" up to ">", a "<" that starts nothing. It stops
# at a <meta>, or where the prescan would run out of bytes (an open comment).
# The text of a raw-text or RCDATA element (<script>, <style>, <title>, ...) runs to
# its end tag, as the tokenizer browsers read it with has it: the standard's prescan
# would take a <meta> written in a script's string for a declaration, and no browser
# does (WPT html/syntax/charset/in-script.html, in-style.html, in-title.html).
_TAG_REST = (
    rb"""[^\t\n\x0c\r >]*+(?:[\t\n\x0c\r /]*+[^\t\n\x0c\r />][^\t\n\x0c\r />=]*+"""
    rb"""(?:[\t\n\x0c\r ]*+=[\t\n\x0c\r ]*+(?:"[^"]*+(?:"|\Z)|'[^']*+(?:'|\Z)|(?=>)"""
    rb"""|[^\t\n\x0c\r >]++))?+)*+[\t\n\x0c\r /]*+>?"""
)
_RAW_TEXT_ELEMENTS = (
    b"script",
    b"style",
    b"title",
    b"textarea",
    b"xmp",
    b"iframe",
    b"noembed",
    b"noframes",
)


def _raw_text(name: bytes) -> bytes:
    """The pattern of a raw-text element's start tag and text, up to its end tag. (One
    alternative a name: a backreference inside the possessive loop breaks ``re``.)"""
    end_tag = b"/" + name + rb"[\t\n\x0c\r />]"
    return (
        b"<" + name + rb"(?=[\t\n\x0c\r />])" + _TAG_REST + rb"(?:[^<]++|<(?!" + end_tag + rb"))*+"
    )


# (The lookahead first: most tags are none of them, and fail it at once.)
_RAW_TEXT = (
    rb"(?=<(?:"
    + b"|".join(_RAW_TEXT_ELEMENTS)
    + rb")[\t\n\x0c\r />])(?:"
    + b"|".join(_raw_text(name) for name in _RAW_TEXT_ELEMENTS)
    + b")"
)
_TO_META = re.compile(
    rb"(?:[^<]++|<!(?=--).*?-->|"
    + _RAW_TEXT
    + rb"|(?!<meta[\t\n\x0c\r /])</?[a-z]"
    + _TAG_REST
    + rb"|<(?!!--)[!/?][^>]*+>|<(?![a-z!/?]))*+",
    re.DOTALL | re.IGNORECASE,
)
_META = re.compile(rb"<meta[\t\n\x0c\r /]", re.IGNORECASE)
# A <noscript>'s text, from its start tag to its end tag (or the end of what is read).
_NOSCRIPT = re.compile(rb"<noscript.*?(?:</noscript|\Z)", re.DOTALL | re.IGNORECASE)
# Everything up to the first tag that ends the head, read as _TO_META reads it: a start
# tag of these names, an end tag of those but html and head, keep a page in its head
# (Blink's list); any other tag (</head>, <body>, <div>, <template>) leaves it.
_HEAD_START = rb"(?:html|head|meta|link|script|style|title|base|noscript|object)"
_HEAD_END = rb"(?:meta|link|script|style|title|base|noscript|object)"
# A <noscript> in the head is raw text too, as browsers (scripting enabled) parse it:
# Google Tag Manager's <noscript><iframe ...></iframe></noscript>, pasted into many
# heads before their <meta charset>, does not end the head.
_TO_OUT_OF_HEAD = re.compile(
    rb"(?:[^<]++|<!(?=--).*?-->|(?=<(?:script|style|title|noscript)[\t\n\x0c\r />])(?:"
    + b"|".join(_raw_text(name) for name in (b"script", b"style", b"title", b"noscript"))
    + rb")|<"
    + _HEAD_START
    + rb"(?=[\t\n\x0c\r />])"
    + _TAG_REST
    + rb"|</"
    + _HEAD_END
    + rb"(?=[\t\n\x0c\r />])"
    + _TAG_REST
    + rb"|<(?!!--)(?:[!?]|/(?![a-z]))[^>]*+>|<(?![a-z!/?]))*+",
    re.DOTALL | re.IGNORECASE,
)
_XML_DECLARATION = re.compile(
    rb"""<\?xml[\t\n\r ][^>]*?encoding[\t\n\r ]*=[\t\n\r ]*(?:"([^"]*)"|'([^']*)')"""
)


class _End(Exception):
    """The bytes ran out inside a tag: the prescan finds nothing."""


def xml_declared(body: bytes) -> str | None:
    """The codec an XML declaration at the very start of ``body`` names, or None.

    A declaration written in ASCII bytes that names UTF-16 is UTF-8 (its bytes say so).
    """
    if not body.startswith(b"<?xml"):
        return None
    match = _XML_DECLARATION.match(body, 0, PRESCAN_BYTES)
    if match is None:
        return None
    label = (match.group(1) or match.group(2) or b"").decode("ascii", "replace")
    codec = codec_for_label(label)
    return "utf-8" if codec is not None and codec.startswith("utf-16") else codec


def prescan(body: bytes) -> str | None:
    """The codec the page's first ``<meta>`` declaring one names (see the module
    docstring), or None when there is none (or its label is no charset of the web).

    Past the first :data:`ANYWHERE_BYTES`, a declaration counts only in the head (see
    there). Past the first :data:`PRESCAN_BYTES`, the head is read on to its end (the
    ``<body`` tag), at most :data:`HEAD_BYTES`, as Blink does: 5% of 1,392 real pages declared
    their charset later than 4 KB (after scripts and styles; one at 44 KB), and a
    legacy-charset page so written was read as windows-1252, its title and text
    mojibake (Shift_JIS at 15,912 bytes, windows-1251 at 25,063, GBK at 34,468).
    """
    found = _declared(body[:PRESCAN_BYTES])
    if found is None and len(body) > PRESCAN_BYTES:
        head = body[:HEAD_BYTES]
        end = _BODY.search(head)
        if end is None or end.start() > PRESCAN_BYTES:  # (else the head was read whole)
            found = _declared(head[: end.start()] if end else head)
    return found


def _declared(data: bytes) -> str | None:
    if _META.search(data) is None:  # most pages: nothing to read tag by tag
        return None
    try:
        return _prescan(data)
    except _End:
        return None


def _prescan(data: bytes) -> str | None:
    pos = 0
    head_end: int | None = None  # where the head ends, once a <meta> past 1 KiB needs it
    noscripts: list[tuple[int, int]] = []  # the head's <noscript> texts, found with it
    while True:
        pos = _TO_META.match(data, pos).end()  # type: ignore[union-attr]
        if not _META.match(data, pos):
            return None  # the end, or where the bytes run out inside a comment or tag
        if pos >= ANYWHERE_BYTES:
            if head_end is None:
                head_end = _TO_OUT_OF_HEAD.match(data).end()  # type: ignore[union-attr]
                noscripts = [m.span() for m in _NOSCRIPT.finditer(data, 0, head_end)]
            if pos > head_end:
                return None  # past the first KiB and out of the head: browsers stop
            if any(start < pos < end for start, end in noscripts):
                pos += 5  # the text of a head's <noscript>, no tag (see _TO_OUT_OF_HEAD)
                continue
        codec, pos = _meta(data, pos + 5)
        if codec is not None:
            return codec
        pos += 1


def _meta(data: bytes, pos: int) -> tuple[str | None, int]:
    """Read a ``<meta>`` tag's attributes from ``pos`` (just past ``<meta``): the
    codec it declares, or None, and where its attributes end."""
    names: set[bytes] = set()
    got_pragma = False
    need_pragma: bool | None = None
    charset: str | None = None
    failed = False  # a charset attribute whose label is no encoding
    while (attribute := _attribute(data, pos)) is not None:
        name, value, pos = attribute
        if b"&" in value:
            # Browsers read the tag with their tokenizer, which resolves character
            # references: charset="&#119;indows-1251" is windows-1251 (WPT ncr.html).
            value = html.unescape(value.decode("latin-1")).encode("latin-1", "replace")
        if name in names:
            continue
        names.add(name)
        if name == b"http-equiv":
            got_pragma = got_pragma or value == b"content-type"
        elif name == b"content":
            label = _charset_in_content(value)
            codec = codec_for_label(label.decode("ascii", "replace")) if label else None
            if codec is not None and charset is None and not failed:
                charset, need_pragma = codec, True
        elif name == b"charset":
            charset = codec_for_label(value.decode("ascii", "replace"))
            failed, need_pragma = charset is None, False
    pos = _SPACE_OR_SLASH.match(data, pos).end()  # type: ignore[union-attr]
    if need_pragma is None or (need_pragma and not got_pragma) or charset is None:
        return None, pos
    # A page that says utf-16 in ASCII-compatible bytes is not UTF-16.
    return ("utf-8" if charset.startswith("utf-16") else charset), pos


def _attribute(data: bytes, pos: int) -> tuple[bytes, bytes, int] | None:
    """The standard's "get an attribute" at ``pos``: (name, value, the position after
    it), names and values lowercased, or None at the tag's ``>``. Raises :class:`_End`
    when the bytes run out first."""
    n = len(data)
    pos = _SPACE_OR_SLASH.match(data, pos).end()  # type: ignore[union-attr]
    if pos >= n:
        raise _End
    if data[pos] == 0x3E:  # ">"
        return None
    # The first byte is the name's whatever it is ("=" included).
    end = _NAME_REST.match(data, pos + 1).end()  # type: ignore[union-attr]
    name = data[pos:end].lower()
    pos = end
    if pos >= n:
        raise _End
    if data[pos] in _WS:
        pos = _SPACES.match(data, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            raise _End
    if data[pos] != 0x3D:  # no "=": a name alone
        return name, b"", pos
    pos = _SPACES.match(data, pos + 1).end()  # type: ignore[union-attr]
    if pos >= n:
        raise _End
    quote = data[pos]
    if quote in (0x22, 0x27):
        close = data.find(bytes((quote,)), pos + 1)
        if close < 0:
            raise _End
        return name, data[pos + 1 : close].lower(), close + 1
    if quote == 0x3E:
        return name, b"", pos
    end = _UNQUOTED.match(data, pos).end()  # type: ignore[union-attr]
    if end >= n:
        raise _End
    return name, data[pos:end].lower(), end


def _charset_in_content(value: bytes) -> bytes | None:
    """The standard's "extracting a character encoding from a meta element": the label
    after ``charset=`` in a ``content`` value (lowercased), or None."""
    pos = 0
    while True:
        found = value.find(b"charset", pos)
        if found < 0:
            return None
        pos = _SPACES.match(value, found + 7).end()  # type: ignore[union-attr]
        if value[pos : pos + 1] == b"=":
            break
    pos = _SPACES.match(value, pos + 1).end()  # type: ignore[union-attr]
    if pos >= len(value):
        return None
    quote = value[pos : pos + 1]
    if quote in (b'"', b"'"):
        close = value.find(quote, pos + 1)
        return value[pos + 1 : close] if close >= 0 else None
    end = pos
    while end < len(value) and value[end] not in _WS and value[end] != 0x3B:  # ";"
        end += 1
    return value[pos:end]
