"""What a page points at: one pass over its parsed tree for its links, requisites,
``<base href>``, canonical, title and robots meta (:func:`collect`, everything but
the text, so the tree is walked once), then those hrefs resolved against the base
URL, canonicalized, each URL once per page, at most ``max_links`` of each
(:func:`resolve_links`, :func:`resolve_requisites`). Which elements and attributes
count is in :mod:`crawlkit.html.page`'s docstring.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from crawlkit.html.attrs import ASCII_SPACE, parse_robots_directives, parse_srcset, refresh_target
from crawlkit.html.css import css_refs
from crawlkit.html.encoding import query_in_document_encoding
from crawlkit.url import ParsedURL, trim_url, whatwg_href

__all__ = [
    "Found",
    "Link",
    "authority_of",
    "collect",
    "requisite_markers",
    "requisite_markers_py",
    "resolve_links",
    "resolve_requisites",
    "serialize",
]

# resolve(href, base, authority): LinkResolver.resolve, looked up once per page
Resolve = Callable[[str, str, str], ParsedURL | None]

_SELECTOR = (
    "a[href], a[xlink\\:href], area[href], link[href], frame[src], iframe[src], meta, "
    "base[href], title, img, source, script[src], video, audio, track[src], object[data], "
    "embed[src], input[src], image, style"
)
# Without url( or @import anywhere in the page, <style> blocks hold no requisite.
_SELECTOR_NO_STYLE = _SELECTOR.removesuffix(", style")
# Attribute selectors cost on every element, so style and background attributes are
# looked for in a second pass, only on pages whose bytes can hold such a requisite: a
# style attribute whose value has url( in it, a background attribute
# (requisite_markers; _STYLE_URL is searched in the lowercased bytes: a
# case-insensitive pattern loses re's fast scan for a literal prefix).
_BACKGROUND_ATTR = re.compile(rb"background\s*=")
_STYLE_URL = re.compile(
    rb"""style[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*?url\(|'[^']*?url\(|[^\t\n\f\r >"']*?url\()"""
)
_LINK_RELS = frozenset({"canonical", "alternate", "next"})
_REQUISITE_RELS = frozenset(
    {
        "stylesheet",
        "icon",
        "apple-touch-icon",
        "apple-touch-icon-precomposed",
        "mask-icon",
        "preload",
        "modulepreload",
        "manifest",
    }
)
# Requisite attributes by element (besides style and background, read on any element).
_SRC_ATTRS: dict[str, tuple[str, ...]] = {
    "img": ("src",),
    "source": ("src",),
    "script": ("src",),
    "video": ("src", "poster"),
    "audio": ("src",),
    "track": ("src",),
    "object": ("data",),
    "embed": ("src",),
    "image": ("href", "xlink:href"),
}
# A title's whitespace as document.title strips and collapses it: ASCII's only. str.split
# took U+3000 and U+00A0 for spaces too ("…電話　習氏…" became "…電話 習氏…").
_ASCII_SPACES = re.compile("[\t\n\x0c\r ]+")


@dataclass(slots=True)
class Link:
    """One outgoing link: its canonical URL, whether it is nofollow, and its element."""

    url: ParsedURL
    nofollow: bool
    tag: str  # the element (a, img, ...), or "style" for inline CSS


@dataclass(slots=True)
class Found:
    """What one pass over a page's tree found, before any href is resolved: hrefs as
    written (``links`` as (href, nofollow, tag), ``requisites`` as (href, tag)), and the
    robots meta folded into ``noindex``/``nofollow``."""

    title: str | None
    base_href: str | None
    canonical_href: str | None
    noindex: bool
    nofollow: bool
    links: list[tuple[str, bool, str]]
    requisites: list[tuple[str, str]] = field(default_factory=list)

    def encode_queries(self, codec: str) -> None:
        """Re-encode the hrefs' queries in the page's encoding ``codec`` (not UTF-8): a
        link's query is sent in the page's encoding (WHATWG). A CSS reference is not:
        a stylesheet's URLs are UTF-8."""
        self.links = [(query_in_document_encoding(h, codec), nf, t) for h, nf, t in self.links]
        self.requisites = [
            (h if t == "style" else query_in_document_encoding(h, codec), t)
            for h, t in self.requisites
        ]
        if self.canonical_href is not None:
            self.canonical_href = query_in_document_encoding(self.canonical_href, codec)


def requisite_markers_py(markup: bytes) -> tuple[bool, bool]:
    """Whether ``markup``, lowercased (ASCII), holds ``url(`` or ``@import`` (a CSS
    requisite may be there), and whether it holds a ``background`` attribute.

    :func:`requisite_markers` is the same in C where it was built
    (``crawlkit/html/_speedups.c``): lowercasing and searching a testweb page's 30 KB
    here cost ~55 µs, against ~3 there."""
    raw = markup.lower()
    return b"url(" in raw or b"@import" in raw, _BACKGROUND_ATTR.search(raw) is not None


try:
    from crawlkit.html._speedups import requisite_markers
except ImportError:  # built without a C compiler
    requisite_markers = requisite_markers_py


def collect(tree: Any, markup: bytes, agent: str, noindex: bool, nofollow: bool) -> Found:
    """Walk ``tree`` (a Lexbor parser) once for everything a page says but its text.

    ``markup`` is the page's markup as bytes: only a page whose bytes hold ``url(``,
    ``@import``, a style attribute with ``url(`` or a background attribute (ASCII
    case-insensitive) gets the passes that look for CSS requisites. ``agent`` is the
    crawler's product token, lowercased (which ``<meta name>`` speaks to it besides
    ``robots``); ``noindex`` and ``nofollow`` are what the X-Robots-Tag already said.
    """
    title: str | None = None
    base_href: str | None = None
    raw_links: list[tuple[str, bool, str]] = []
    reqs: list[tuple[str, str]] = []  # (href, tag) of the page's requisites
    canonical_href: str | None = None
    css, background_attrs = requisite_markers(markup)
    # node.attributes (one call, all attributes) is cheaper than two attrs.get().
    for node in tree.css(_SELECTOR if css else _SELECTOR_NO_STYLE):
        tag = node.tag
        if tag == "a" or tag == "area":
            attrs = node.attributes
            rel = attrs.get("rel")
            nf = rel is not None and "nofollow" in rel.lower().split()
            # (an SVG <a> may say xlink:href, SVG 1.1's spelling; href wins)
            href = attrs.get("href") or attrs.get("xlink:href") or ""
            raw_links.append((href, nf, tag))
        elif tag in _SRC_ATTRS:
            attrs = node.attributes
            for name in _SRC_ATTRS[tag]:
                value = attrs.get(name)
                if value:
                    reqs.append((value, tag))
            if tag == "img" or tag == "source":
                srcset = attrs.get("srcset")
                if srcset:
                    reqs.extend((u, tag) for u in parse_srcset(srcset))
        elif tag == "link":
            attrs = node.attributes
            rels = (attrs.get("rel") or "").lower().split()
            href = attrs.get("href") or ""
            if _REQUISITE_RELS.intersection(rels):
                if href:
                    reqs.append((href, "link"))
                srcset = attrs.get("imagesrcset")
                if srcset:
                    reqs.extend((u, "link") for u in parse_srcset(srcset))
            if not _LINK_RELS.intersection(rels):
                continue
            if "canonical" in rels and canonical_href is None:
                canonical_href = href
            raw_links.append((href, "nofollow" in rels, "link"))
        elif tag == "meta":
            attrs = node.attributes
            equiv = attrs.get("http-equiv")
            if equiv is not None and equiv.strip().lower() == "refresh":
                target = refresh_target(attrs.get("content") or "")
                if target:
                    raw_links.append((target, False, "meta"))
            meta_name = attrs.get("name")
            if meta_name is not None and meta_name.strip().lower() in ("robots", agent):
                ni, nf = parse_robots_directives(attrs.get("content"), agent)
                noindex = noindex or ni
                nofollow = nofollow or nf
        elif tag == "style":
            reqs.extend((ref.url, "style") for ref in css_refs(node.text(deep=True)))
        elif tag == "input":
            attrs = node.attributes
            if (attrs.get("type") or "").strip().lower() == "image":
                reqs.append((attrs.get("src") or "", "input"))
        elif tag == "frame" or tag == "iframe":
            raw_links.append((node.attributes.get("src") or "", False, tag))
        elif tag == "base":
            if base_href is None:
                base_href = trim_url(node.attributes.get("href") or "")
        elif tag == "title" and title is None and not _in_foreign(node):
            title = _ASCII_SPACES.sub(" ", node.text()).strip(ASCII_SPACE)

    if css and _STYLE_URL.search(markup.lower()):
        for node in tree.css("[style]"):
            style = node.attributes.get("style")
            if style:
                reqs.extend((ref.url, "style") for ref in css_refs(style))
    if background_attrs:
        for node in tree.css("[background]"):
            background = node.attributes.get("background")
            if background:
                reqs.append((background, "background"))
    return Found(title, base_href, canonical_href, noindex, nofollow, raw_links, reqs)


def resolve_links(
    raw_links: list[tuple[str, bool, str]],
    base: str,
    authority: str,
    resolve: Resolve,
    nofollow: bool,
    max_links: int,
    capped: list[str],
) -> list[Link]:
    """The links of ``raw_links`` resolved against ``base`` (whose scheme and host are
    ``authority``, :func:`authority_of`), canonical, http(s) only,
    each URL once (its first occurrence; nofollow, or ``nofollow`` for the whole page,
    only if every occurrence is), at most ``max_links`` (then "links" joins ``capped``).
    """
    links: list[Link] = []
    index: dict[str, int] = {}
    for href, link_nofollow, tag in raw_links:
        if not href.strip(_URL_SPACE):
            if tag not in _SELF_LINK_TAGS:
                continue  # an empty src or link href loads nothing
            href = base  # see _SELF_LINK_TAGS
        parsed = resolve(href, base, authority)
        if parsed is None:
            continue
        seen = index.get(parsed.fp)
        flag = nofollow or link_nofollow
        if seen is not None:
            if not flag:
                links[seen].nofollow = False
            continue
        if len(links) >= max_links:
            capped.append("links")
            break
        index[parsed.fp] = len(links)
        links.append(Link(parsed, flag, tag))
    return links


def resolve_requisites(
    reqs: list[tuple[str, str]],
    base: str,
    authority: str,
    resolve: Resolve,
    max_links: int,
    capped: list[str],
) -> list[Link]:
    """Resolved, canonical, once per URL, at most ``max_links`` (then "requisites"
    joins ``capped``). Requisites are never nofollow: a browser loads them anyway."""
    out: list[Link] = []
    seen: set[str] = set()
    for href, tag in reqs:
        if not href or not href.strip():
            continue
        parsed = resolve(href, base, authority)
        if parsed is None or parsed.fp in seen:
            continue
        if len(out) >= max_links:
            capped.append("requisites")
            break
        seen.add(parsed.fp)
        out.append(Link(parsed, False, tag))
    return out


def serialize(url: str, base: str | None) -> str | None:
    """The WHATWG serialization of ``url`` resolved against ``base``; None if unparsable."""
    try:
        return whatwg_href(url, base)
    except Exception:  # ada raises ValueError; odd text (lone surrogates) others
        return None


def _in_foreign(node: Any) -> bool:
    """Whether ``node`` is inside ``<svg>`` or ``<math>``: an SVG ``<title>`` (an
    icon's name) is not the page's title (``document.title`` reads HTML's only)."""
    parent = node.parent
    while parent is not None:
        if parent.tag in ("svg", "math"):
            return True
        parent = parent.parent
    return False


# What the URL parser strips from both ends of its input (C0 controls and space).
_URL_SPACE = "".join(map(chr, range(0x21)))
# The tags whose empty href (or one of spaces) is still a link: to the document's base
# URL, as the URL parser resolves an empty reference (HTML: <a> and <area> with an
# href are hyperlinks whatever its value; Chromium's document.links lists them). An
# empty iframe or frame src is about:blank, a <link> with an empty href fetches nothing.
_SELF_LINK_TAGS = frozenset({"a", "area"})


def authority_of(href: str) -> str:
    slash = href.find("/", href.find("://") + 3) if "://" in href else -1
    return href[:slash] if slash > 0 else href
