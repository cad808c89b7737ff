"""CSS: the URLs a stylesheet loads (``url()`` and ``@import``), for page requisites.

One job: find the references in one stylesheet, a ``<style>`` block or a ``style``
attribute, in source order. Resolving them against a base URL is the caller's job
(``crawlkit.html.page`` for inline CSS, ``crawlkit.stages.extract`` for CSS files).

Contracts:

* Comments (``/* ... */``) are skipped; so are the contents of strings other than
  an ``@import`` target or a quoted ``url()`` argument.
* ``url(x)``, ``url("x")`` and ``url('x')`` are found anywhere (declarations,
  ``@font-face`` ``src``, ``image-set()``, ``@import url(x)``); ``@import "x"``
  (a bare string) too, and a bare string that begins an option of ``image-set()``
  (``-webkit-image-set()`` too: ``image-set("a.avif" type("image/avif"), "a.jpg")``).
  CSS escapes (``\\"``, ``\\28``) in a URL are decoded.
* Work is linear in the input, and at most ``max_bytes`` of CSS are read and
  ``max_urls`` references returned, so a hostile stylesheet costs bounded time and
  memory. Recursion over ``@import`` is not done here: each imported file is fetched
  and read on its own, and the crawl bounds how deep imports are followed.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from crawlkit.html.encoding import codec_for_label
from crawlkit.html.sniff import content_type_charset

__all__ = ["MAX_CSS_BYTES", "MAX_CSS_URLS", "CssRef", "css_refs", "decode_css"]

MAX_CSS_BYTES = 2 * 1024 * 1024
MAX_CSS_URLS = 10_000


class CssRef(NamedTuple):
    """One reference: the URL text as written (unresolved) and ``url`` or ``import``."""

    url: str
    kind: str


# The tokens that matter, found left to right; a comment or a string is consumed whole,
# so a "url(" inside one is never taken for a reference, and every step moves past
# what it read (linear time, however the input is broken).
_NEXT = re.compile(
    r"""/\*|["']|(?<![\w-])url\(|@import|(?<![\w-])(?:-webkit-)?image-set\(""", re.IGNORECASE
)
_STRING = {q: re.compile(r"(?:\\.|[^\\\n" + q + r"])*+", re.DOTALL) for q in "\"'"}
_RAW = re.compile(r"""(?:\\[0-9a-fA-F]{1,6}[ \t\n]?|\\.|[^)\s"'(\\])*+""", re.DOTALL)
_WS = re.compile(r"[ \t\r\n\f]*+")


def _run_end(pattern: re.Pattern[str], text: str, pos: int) -> int:
    """Where the run of ``pattern`` that starts at ``pos`` ends (these patterns match
    the empty string, so there always is one)."""
    match = pattern.match(text, pos)
    return match.end() if match is not None else pos


_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\n]?|\n|(.))", re.DOTALL)
_CHARSET = re.compile(rb'^@charset "([A-Za-z0-9_:.+\-]{1,40})";')


def _unescape(text: str) -> str:
    def one(m: re.Match[str]) -> str:
        if m.group(1):
            code = int(m.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return m.group(2) or ""  # an escaped newline is a line continuation

    return _ESCAPE.sub(one, text) if "\\" in text else text


# The same tokens as one pattern, for css_refs: finditer moves through the text in C,
# with a Python step only per comment, string or reference (a few hundred in a large
# style block), 5 to 10 times faster than a search per token. Every branch either
# matches as far as it can without backtracking or fails at once, so it is linear too.
_Q2 = r'(?:\\.|[^\\\n"])*+'
_Q1 = r"(?:\\.|[^\\\n'])*+"
_RAW_ARG = r"""(?:\\[0-9a-fA-F]{1,6}[ \t\n]?|\\.|[^)\s"'(\\])*+"""
_W = r"[ \t\r\n\f]*+"


def _arg(prefix: str) -> str:
    """A url( argument (after the parenthesis) to its ")", its value in named groups."""
    return (
        rf"""{_W}(?:"(?P<{prefix}2>{_Q2})"|'(?P<{prefix}1>{_Q1})'|(?P<{prefix}r>{_RAW_ARG}))"""
        rf"{_W}\)"
    )


# A url( argument the way a failed one is read: as far as the scanner goes before it
# finds no ")" (it goes on from there, so the pattern must consume the same).
_BAD_ARG = rf"""{_W}(?:"{_Q2}"?|'{_Q1}'?|{_RAW_ARG}){_W}"""
_TOKEN = re.compile(
    r"/\*(?:[^*]|\*(?!/))*+(?:\*/)?"
    rf'|"{_Q2}"?'
    rf"|'{_Q1}'?"
    # (the look-behind after the "u", so the scan for a token's first character is fast)
    rf"|u(?<![\w-]u)rl\((?:{_arg('u')}|{_BAD_ARG})"
    rf"""|@import{_W}(?:"(?P<i2>{_Q2})"|'(?P<i1>{_Q1})'|"{_Q2}|'{_Q1}"""
    rf"|url\((?:{_arg('iu')}|{_BAD_ARG})|)",
    re.IGNORECASE | re.DOTALL,
)


def css_refs(
    text: str, *, max_bytes: int = MAX_CSS_BYTES, max_urls: int = MAX_CSS_URLS
) -> list[CssRef]:
    """The references in ``text``, in source order (see the module docstring).

    Empty references (``url()``, ``url("")``) and fragments alone (``url(#a)``, an
    SVG filter in the same document) are left out.
    """
    if len(text) > max_bytes:
        text = text[:max_bytes]
    lowered = text.lower()
    if "image-set(" in lowered:  # its bare strings are URLs: the token scanner knows
        return _css_refs_stepwise(text, max_urls)
    if "url(" not in lowered and "@import" not in lowered:
        return []  # most style blocks and attributes: no scan at all
    refs: list[CssRef] = []
    for m in _TOKEN.finditer(text):
        if m.lastindex is None:
            continue  # a comment or a string
        groups = m.groupdict()
        for name, kind in _GROUPS:
            value = groups[name]
            if value is not None:
                _add(refs, value, kind)
                break
        if len(refs) >= max_urls:
            break
    return refs


_GROUPS = (
    ("u2", "url"),
    ("u1", "url"),
    ("ur", "url"),
    ("i2", "import"),
    ("i1", "import"),
    ("iu2", "import"),
    ("iu1", "import"),
    ("iur", "import"),
)


def _css_refs_stepwise(text: str, max_urls: int = MAX_CSS_URLS) -> list[CssRef]:
    """css_refs by a search per token (the reference :data:`_TOKEN` is tested against)."""
    refs: list[CssRef] = []
    pos = 0
    end = len(text)
    while len(refs) < max_urls and (m := _NEXT.search(text, pos)) is not None:
        token = m.group()
        pos = m.end()
        if token == "/*":
            close = text.find("*/", pos)
            pos = end if close < 0 else close + 2
        elif token in ("'", '"'):
            pos = _string(text, pos, token)[1]
        elif token[-1] == "(" and token[0] != "u" and token[0] != "U":  # image-set(
            pos = _image_set(text, pos, refs)
        else:
            kind = "url"
            if token[0] == "@":
                kind = "import"
                pos = _run_end(_WS, text, pos)
                if text[pos : pos + 1] in ("'", '"'):
                    value, pos = _string(text, pos + 1, text[pos])
                    _add(refs, value, kind)
                    continue
                if text[pos : pos + 4].lower() != "url(":
                    continue
                pos += 4
            value, pos = _url_argument(text, pos)
            if value is not None:
                _add(refs, value, kind)
    return refs[:max_urls]  # (an image-set() adds all its options at once)


def _image_set(text: str, pos: int, refs: list[CssRef]) -> int:
    """The URLs of an ``image-set(`` (``pos`` just after the parenthesis): a string
    that begins an option (``image-set("a.avif" type("image/avif"), "a.jpg" 1x)``)
    and every ``url()``; returns where its ")" ends. Linear: each step moves on."""
    depth, option_start, end = 0, True, len(text)
    while pos < end:
        pos = _run_end(_WS, text, pos)
        if text.startswith("/*", pos):
            close = text.find("*/", pos + 2)
            pos = end if close < 0 else close + 2
            continue
        ch = text[pos : pos + 1]
        if ch in ("'", '"'):
            value, pos = _string(text, pos + 1, ch)
            if option_start and depth == 0:
                _add(refs, value, "url")
            option_start = False
            continue
        if text[pos : pos + 4].lower() == "url(" and not _NAME_CHAR.match(text, pos - 1):
            value, pos = _url_argument(text, pos + 4)
            _add(refs, value, "url")
            option_start = False
            continue
        if ch == ")":
            if depth == 0:
                return pos + 1
            depth -= 1
        elif ch == "(":
            depth += 1
        option_start = ch == "," and depth == 0
        pos += 1
    return pos


_NAME_CHAR = re.compile(r"[\w-]")


def _string(text: str, pos: int, quote: str) -> tuple[str | None, int]:
    """The string that starts after its opening ``quote`` at ``pos``, and where it ends.

    An unterminated string ends at the newline (CSS's bad-string) and is None.
    """
    body_end = _run_end(_STRING[quote], text, pos)
    if text[body_end : body_end + 1] == quote:
        return text[pos:body_end], body_end + 1
    return None, body_end


def _url_argument(text: str, pos: int) -> tuple[str | None, int]:
    """The argument of ``url(`` (``pos`` just after the parenthesis) and where it ends."""
    pos = _run_end(_WS, text, pos)
    if text[pos : pos + 1] in ("'", '"'):
        value, pos = _string(text, pos + 1, text[pos])
    else:
        raw_end = _run_end(_RAW, text, pos)
        value, pos = text[pos:raw_end], raw_end
    pos = _run_end(_WS, text, pos)
    if text[pos : pos + 1] != ")":
        return None, pos
    return value, pos + 1


def _add(refs: list[CssRef], value: str | None, kind: str) -> None:
    if value is None:
        return
    url = _unescape(value).strip()
    if url and not url.startswith("#"):
        refs.append(CssRef(url, kind))


def decode_css(body: bytes, content_type: str | None = None) -> str:
    """A stylesheet's text: its codec from the BOM, then the header's charset, then
    ``@charset``, then UTF-8 (CSS Syntax 3 §3.2, without the referring document's
    encoding, which a crawler reading one file does not have); bad bytes replaced."""
    if body.startswith(b"\xef\xbb\xbf"):
        return body[3:].decode("utf-8", "replace")
    if body.startswith(b"\xff\xfe"):
        return body[2:].decode("utf-16-le", "replace")
    if body.startswith(b"\xfe\xff"):
        return body[2:].decode("utf-16-be", "replace")
    codec = codec_for_label(content_type_charset(content_type))
    if codec is None and (m2 := _CHARSET.match(body)):
        codec = codec_for_label(m2.group(1).decode("ascii"))
        if codec is not None and codec.startswith("utf-16"):
            codec = "utf-8"  # an ASCII @charset rule cannot be UTF-16 (CSS Syntax)
    return body.decode(codec or "utf-8", "replace")
