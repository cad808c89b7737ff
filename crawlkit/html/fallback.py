"""What a page says when it could not be parsed in time: a bounded scan of its bytes.

:func:`quick_page` is what :mod:`crawlkit.stages.extract` records for a page whose
parse ran out of its CPU deadline, or raised: no tree is built, the bytes are searched
with patterns whose every repetition is bounded, so the work is linear in the page
whatever its markup. It finds the ``<title>`` and the ``href`` of ``<a>`` and ``<area>``
start tags (anywhere, scripts and comments included: without a tokenizer the scan
cannot tell them apart), their character references decoded (``&amp;`` is ``&``) and
their query in the page's encoding, resolved against ``<base href>`` and the page URL
like the parser's links; and the robots directives of X-Robots-Tag and of ``<meta
name=robots>`` (or the agent's name). There is no text, so ``text_bytes`` is 0 and the
simhash that of an empty text.
"""

from __future__ import annotations

import html.entities
import re

from crawlkit.dedup.simhash import simhash
from crawlkit.html.encoding import query_in_document_encoding
from crawlkit.html.page import HtmlExtractor, Link, Page, detect_charset, parse_robots_directives

__all__ = ["quick_page"]

_MAX_VALUE = 8192  # longest href or title read
_MAX_TAG = 2048  # farthest an href is read from its tag's "<"
# An href attribute and its value; the tag it is in is looked for before it.
_HREF = re.compile(
    rb"""[\t\n\f\r "']href[\t\n\f\r ]*=[\t\n\f\r ]*"""
    rb"""(?:"([^"]{0,%d})"|'([^']{0,%d})'|([^\t\n\f\r "'>]{1,%d}))"""
    % (_MAX_VALUE, _MAX_VALUE, _MAX_VALUE),
    re.IGNORECASE,
)
_LINK_TAG = re.compile(rb"<(a|area)[\t\n\f\r /]", re.IGNORECASE)
_TITLE = re.compile(rb"<title[^>]{0,1024}>([^<]{0,%d})" % _MAX_VALUE, re.IGNORECASE)
# A <meta> tag, and its name and content attributes (robots directives).
_META_TAG = re.compile(rb"<meta[\t\n\f\r /][^>]{0,%d}" % _MAX_TAG, re.IGNORECASE)
_META_NAME = re.compile(
    rb"""[\t\n\f\r /"']name[\t\n\f\r ]*=[\t\n\f\r ]*["']?([^"'\t\n\f\r >]{0,64})""",
    re.IGNORECASE,
)
_META_CONTENT = re.compile(
    rb"""[\t\n\f\r /"']content[\t\n\f\r ]*=[\t\n\f\r ]*"""
    rb"""(?:"([^"]{0,1024})"|'([^']{0,1024})'|([^\t\n\f\r >]{0,1024}))""",
    re.IGNORECASE,
)
# A character reference closed by ";" (numeric, or a name HTML knows): an attribute's
# "&amp;" is "&" to the parser, so it is to the scan.
_CHAR_REF = re.compile(r"&(#[0-9]{1,8}|#[xX][0-9a-fA-F]{1,8}|[A-Za-z][A-Za-z0-9]{0,31});")
_BASE = re.compile(rb"""<base[^>]{0,1024}?href=["']?([^"'>\s]{1,%d})""" % _MAX_VALUE, re.IGNORECASE)


def quick_page(
    ex: HtmlExtractor,
    body: bytes,
    url: str,
    *,
    content_type: str | None = None,
    x_robots_tag: str | None = None,
    capped: list[str] | None = None,
    error: str | None = None,
) -> Page:
    """A :class:`Page` of ``body`` from the bounded scan (see the module docstring),
    with ``capped`` and ``error`` saying why it was not parsed."""
    capped = list(capped or [])
    if len(body) > ex.max_html_bytes:
        body = body[: ex.max_html_bytes]
        if "html" not in capped:
            capped.append("html")
    codec, _, _ = detect_charset(body, content_type)

    def text(raw: bytes) -> str:
        return _CHAR_REF.sub(_char, raw.decode(codec, "replace")).strip()

    def href(raw: bytes) -> str:
        value = text(raw)
        return value if codec == "utf-8" else query_in_document_encoding(value, codec)

    title_match = _TITLE.search(body)
    title = " ".join(text(title_match.group(1)).split()) if title_match else None
    base = ex.base_of(url, href(m.group(1)) if (m := _BASE.search(body)) else None)
    noindex, nofollow = parse_robots_directives(x_robots_tag, ex.agent)
    for meta in _META_TAG.finditer(body):
        name = _META_NAME.search(meta.group(0))
        if name is None or name.group(1).decode("ascii", "replace").lower() not in (
            "robots",
            ex.agent,
        ):
            continue
        content = _META_CONTENT.search(meta.group(0))
        if content is not None:
            value = next((g for g in content.groups() if g is not None), b"")
            ni, nf = parse_robots_directives(text(value), ex.agent)
            noindex, nofollow = noindex or ni, nofollow or nf
    links: list[Link] = []
    seen: set[str] = set()
    # Each match is one step, and at most 4 x max_links are taken: linear time.
    for count, match in enumerate(_HREF.finditer(body)):
        if count >= 4 * ex.max_links:
            capped.append("links")
            break
        start = match.start()
        lt = body.rfind(b"<", max(0, start - _MAX_TAG), start)
        tag = _LINK_TAG.match(body, lt) if lt >= 0 and b">" not in body[lt:start] else None
        if tag is None:
            continue
        raw = next(group for group in match.groups() if group is not None)
        # an empty href is a link to the base URL, as the parsed page has it
        parsed = ex.resolve_on(href(raw) if raw.strip() else base, base)
        if parsed is None or parsed.fp in seen:
            continue
        if len(links) >= ex.max_links:
            capped.append("links")
            break
        seen.add(parsed.fp)
        links.append(Link(parsed, nofollow, tag.group(1).lower().decode()))
    return Page(
        title=title,
        canonical=None,
        noindex=noindex,
        nofollow=nofollow,
        links=links,
        raw_text="",
        text_bytes=0,
        simhash=simhash(""),
        charset=codec,
        capped=capped,
        error=error,
    )


def _char(match: re.Match[str]) -> str:
    """The character a reference names, or the reference as written if none."""
    ref = match.group(1)
    try:
        if ref[0] == "#":
            code = int(ref[2:], 16) if ref[1] in "xX" else int(ref[1:])
            return chr(code) if 0 < code < 0x110000 and not 0xD800 <= code < 0xE000 else "\ufffd"
    except ValueError:
        return match.group(0)
    return html.entities.html5.get(ref + ";", match.group(0))
