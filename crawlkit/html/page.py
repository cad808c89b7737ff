"""HTML pages: is it HTML, which charset, and what does it say (links, robots, text).

One job: turn the bytes of one HTTP response body into a :class:`Page`. The caller
(``crawlkit.stages.extract``) decides which records to feed in and what to write.
Here: the :class:`Page` model, its text measures and :class:`HtmlExtractor`, which
parses and composes the parts: :mod:`crawlkit.html.sniff` (is it HTML, which
charset), :mod:`crawlkit.html.attrs` (robots directives, meta refresh, srcset) and
:mod:`crawlkit.html.links` (the pass over the tree, links and requisites resolved).

Contracts:

* :func:`looks_like_html` answers from the Content-Type, and sniffs the first bytes
  when the type is missing or generic (``text/plain``, ``application/octet-stream``) or
  when an HTML type is declared over bytes that are plainly something else (PNG, PDF,
  gzip, ...), as browsers do (WHATWG MIME Sniffing).
* :func:`detect_charset` follows the WHATWG encoding sniffing order: a byte order mark,
  then the Content-Type ``charset``, then a ``<meta charset>`` or ``<meta http-equiv>``
  as HTML's prescan reads tags (not in a comment, not in another tag's attribute, not
  in a script; in the first KiB, or further on in the head:
  :mod:`crawlkit.html.prescan`), then UTF-8 if the bytes are valid
  UTF-8, else windows-1252, unless windows-1252 is implausible for the bytes and a
  detector is sure of another encoding (:mod:`crawlkit.html.guess`: Shift_JIS, GBK,
  EUC-KR, windows-1251, ... pages without a declaration). A page served as
  ``application/xhtml+xml`` follows XML's rules instead: after the BOM and the
  header, its XML declaration, else UTF-8.
  Labels map to codecs by the WHATWG Encoding Standard (``iso-8859-1`` means
  windows-1252, ``gb2312`` means gb18030, ...).
* :class:`HtmlExtractor` parses with selectolax's Lexbor parser (the HTML5 tree
  builder, so broken markup parses as a browser would). Links come from ``a[href]``
  (an SVG ``a[xlink:href]`` too), ``area[href]``, ``link[rel=canonical|alternate|next]``,
  ``frame[src]``, ``iframe[src]`` and ``<meta http-equiv=refresh>``, are resolved against
  ``<base href>`` and the page URL by the WHATWG URL rules, canonicalized, and kept
  only when they are http(s); each canonical URL appears once per page (its first
  occurrence; nofollow only if every occurrence is nofollow). An ``a`` or ``area``
  with an empty href (or one of spaces) links to the base URL, the page itself
  without ``<base>``, as a browser has it; an empty ``src`` or ``link`` href is no link.
* Page requisites (what a browser loads to show the page) are their own kind,
  :attr:`Page.requisites`, resolved the same way, each URL once per page: ``img``
  ``src`` and ``srcset``, ``source`` ``src`` and ``srcset`` (in ``picture``, ``video``
  and ``audio``), ``link`` with rel ``stylesheet``, ``icon`` (and ``apple-touch-icon``,
  ``mask-icon``), ``preload``, ``modulepreload`` or ``manifest`` (and a preload's
  ``imagesrcset``), ``script`` ``src``, ``video``/``audio``/``track`` ``src``, ``video``
  ``poster``, ``object`` ``data``, ``embed`` ``src``, ``input type=image`` ``src``, SVG
  ``image`` ``href`` / ``xlink:href``, the ``background`` attribute, and ``url()`` and
  ``@import`` in ``style`` attributes and ``<style>`` blocks (:mod:`crawlkit.html.css`).
  Requisites are never nofollow: a browser loads them whatever the robots meta says.
* Caps bound the work per page: at most ``max_html_bytes`` of HTML are parsed, at
  most ``max_links`` links and as many requisites kept. A page over a cap is still
  returned, parsed up to the cap, with :attr:`Page.capped` saying which cap it hit,
  so the caller can count it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from crawlkit.dedup.simhash import simhash
from crawlkit.html.attrs import parse_robots_directives, parse_srcset, refresh_target
from crawlkit.html.guard import guard_markup
from crawlkit.html.links import (
    Link,
    authority_of,
    collect,
    resolve_links,
    resolve_requisites,
    serialize,
)
from crawlkit.html.resolve import LinkResolver
from crawlkit.html.sniff import HTML_TYPES, detect_charset, looks_like_html, media_type
from crawlkit.url import Canonicalizer, ParsedURL

# Besides its own names, the module re-exports what it defined before the split into
# sniff.py, attrs.py and links.py, so callers import them from here as before.
__all__ = [
    "BOILERPLATE_TAGS",
    "HTML_TYPES",
    "MAX_HTML_BYTES",
    "MAX_LINKS",
    "HtmlExtractor",
    "Link",
    "LinkResolver",
    "Page",
    "collapsed_length",
    "collapsed_length_numpy",
    "detect_charset",
    "looks_like_html",
    "media_type",
    "parse_robots_directives",
    "parse_srcset",
    "refresh_target",
]

MAX_HTML_BYTES = 5 * 1024 * 1024
MAX_LINKS = 10_000

#: Elements whose text is not the page's content: code, navigation and page chrome.
BOILERPLATE_TAGS = [
    "script",
    "style",
    "noscript",
    "template",
    "nav",
    "header",
    "footer",
    "aside",
    "iframe",
    "svg",
]


@dataclass(slots=True)
class Page:
    """What an HTML page says. ``capped`` names the caps the page hit (empty if none);
    ``error`` says what went wrong on the page (a step that raised), None if nothing."""

    title: str | None
    canonical: str | None
    noindex: bool
    nofollow: bool
    links: list[Link]
    raw_text: str  # the visible text as Lexbor gives it, whitespace not collapsed
    text_bytes: int
    simhash: int
    charset: str
    capped: list[str] = field(default_factory=list)
    requisites: list[Link] = field(default_factory=list)
    error: str | None = None

    @property
    def text(self) -> str:
        """The visible text with runs of ASCII whitespace collapsed to one space."""
        return " ".join(_ASCII_WS.split(self.raw_text)).strip(" ")


_ASCII_WS = re.compile(r"[ \t\n\r\f\v]+")
_WS_TABLE = bytes(1 if c in b" \t\n\r\f\v" else 0 for c in range(256))


def collapsed_length_numpy(text: str) -> int:
    """UTF-8 bytes of ``text`` once runs of ASCII whitespace are one space, ends trimmed.

    Counted with numpy instead of building the collapsed string: on a 100 KB page
    ``" ".join(text.split())`` alone costs more than the parse. Where the C extension
    was built, :func:`collapsed_length` is its one loop (a fifth of the CPU), the same
    number.
    """
    data = text.encode("utf-8", "surrogatepass")
    if not data:
        return 0
    ws = np.frombuffer(data.translate(_WS_TABLE), dtype=np.bool_)
    word = ~ws
    letters = int(np.count_nonzero(word))
    if letters == 0:
        return 0
    runs = int(word[0]) + int(np.count_nonzero(word[1:] & ws[:-1]))
    return letters + runs - 1


try:
    from crawlkit.dedup._simhash import collapsed_length
except ImportError:  # built without a C compiler
    collapsed_length = collapsed_length_numpy


class HtmlExtractor:
    """Parses HTML bodies into :class:`Page` objects (see the module docstring).

    One instance keeps a :class:`LinkResolver` cache, so reuse it across pages.
    """

    def __init__(
        self,
        canon: Canonicalizer,
        *,
        max_html_bytes: int = MAX_HTML_BYTES,
        max_links: int = MAX_LINKS,
        agent: str = "crawlkit",
    ):
        self.canon = canon
        # The crawler's product token: which <meta name> and X-Robots-Tag agent
        # prefix besides "robots" speak to it (robots.txt matches the same token).
        self.agent = agent.lower()
        self.max_html_bytes = max_html_bytes
        self.max_links = max_links
        self.resolver = LinkResolver(canon)

    def resolve(self, href: str, base_url: str) -> ParsedURL | None:
        """The canonical http(s) URL of ``href`` in a document at ``base_url``, or None
        (a stylesheet's references resolve against the stylesheet's own URL)."""
        base = serialize(base_url, None) or base_url
        return self.resolver.resolve(href, base, authority_of(base))

    def base_of(self, url: str, base_href: str | None) -> str:
        """The WHATWG serialization of the base URL of a page at ``url`` with a
        ``<base href>`` of ``base_href`` (None: no such element)."""
        base = serialize(url, None) or url
        if base_href:
            href = serialize(base_href, base)
            # A base that fails to parse, or is a data: or javascript: URL, is passed
            # over (HTML's "set the frozen base URL"): the page's own URL stays.
            if href is not None and not href.startswith(("data:", "javascript:")):
                base = href
        return base

    def resolve_on(self, href: str, base: str) -> ParsedURL | None:
        """The canonical http(s) URL of ``href`` against ``base`` (from :meth:`base_of`)."""
        return self.resolver.resolve(href, base, authority_of(base))

    def decode(self, body: bytes, content_type: str | None) -> tuple[str | bytes, str]:
        """The markup to hand to Lexbor and the codec used.

        UTF-8 is passed as bytes (Lexbor reads UTF-8 natively and replaces invalid
        sequences); other charsets are decoded here, with replacement characters.
        """
        codec, _, bom = detect_charset(body, content_type)
        if codec == "utf-8":
            return (body[bom:] if bom else body), codec
        return body[bom:].decode(codec, "replace"), codec

    def extract(
        self,
        body: bytes,
        url: str,
        *,
        content_type: str | None = None,
        x_robots_tag: str | None = None,
    ) -> Page:
        """Parse one page fetched from ``url`` (its final URL, after redirects)."""
        capped: list[str] = []
        if len(body) > self.max_html_bytes:
            body = body[: self.max_html_bytes]
            capped.append("html")
        markup, codec = self.decode(body, content_type)
        error: str | None = None
        try:
            markup, guarded = guard_markup(markup)  # depth and attribute caps
            capped += guarded
        except Exception as exc:  # a bug of the scan: parse the page as it is
            error = f"guard: {type(exc).__name__}: {exc}"
        tree = LexborHTMLParser(markup)
        noindex, nofollow = parse_robots_directives(x_robots_tag, self.agent)
        # Bytes, to tell cheaply whether the page can hold inline CSS requisites at all
        # (most style blocks have no url() or @import).
        raw = body if isinstance(markup, bytes) else markup.encode("utf-8", "replace")
        found = collect(tree, raw, self.agent, noindex, nofollow)
        if codec != "utf-8":  # a link's query is sent in the page's encoding (WHATWG)
            found.encode_queries(codec)
        base = self.base_of(url, found.base_href)
        authority = authority_of(base)

        canonical: str | None = None
        canonical_href = found.canonical_href
        if canonical_href is not None and canonical_href.strip():
            parsed = self.resolver.resolve(canonical_href, base, authority)
            canonical = parsed.url if parsed is not None else None

        resolve = self.resolver.resolve
        links = resolve_links(
            found.links, base, authority, resolve, found.nofollow, self.max_links, capped
        )
        requisites = resolve_requisites(
            found.requisites, base, authority, resolve, self.max_links, capped
        )

        tree.strip_tags(BOILERPLATE_TAGS)
        body_node = tree.body
        raw_text = body_node.text(separator=" ") if body_node is not None else ""
        return Page(
            title=found.title,
            canonical=canonical,
            noindex=found.noindex,
            nofollow=found.nofollow,
            links=links,
            raw_text=raw_text,
            text_bytes=collapsed_length(raw_text),
            simhash=simhash(raw_text),
            charset=codec,
            capped=capped,
            requisites=requisites,
            error=error,
        )
