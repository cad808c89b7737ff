"""HTML pages: is it HTML, which charset, and what does it say (links, robots, text).

One job: turn the bytes of one HTTP response body into a :class:`Page`. The caller
(``crawlkit.stages.extract``) decides which records to feed in and what to write.

Contracts:

* :func:`looks_like_html` answers from the Content-Type, and sniffs the first bytes
  when the type is missing or generic (``text/plain``, ``application/octet-stream``) or
  when an HTML type is declared over bytes that are plainly something else (PNG, PDF,
  gzip, ...), as browsers do (WHATWG MIME Sniffing).
* :func:`detect_charset` follows the WHATWG encoding sniffing order: a byte order mark,
  then the Content-Type ``charset``, then a ``<meta charset>`` or ``<meta http-equiv>``
  in the first 4 KiB as HTML's prescan reads tags (not in a comment, not in another
  tag's attribute: :mod:`crawlkit.html.prescan`), then UTF-8 if the bytes are valid
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
from typing import Any

import numpy as np
from selectolax.lexbor import LexborHTMLParser

from crawlkit.dedup.simhash import simhash
from crawlkit.html.css import css_refs
from crawlkit.html.encoding import codec_for_label, query_in_document_encoding
from crawlkit.html.guard import guard_markup
from crawlkit.html.guess import guess_legacy
from crawlkit.html.prescan import prescan, xml_declared
from crawlkit.html.resolve import LinkResolver
from crawlkit.url import Canonicalizer, ParsedURL, trim_url, whatwg_href

__all__ = [
    "BOILERPLATE_TAGS",
    "HTML_TYPES",
    "HtmlExtractor",
    "Link",
    "LinkResolver",
    "Page",
    "detect_charset",
    "looks_like_html",
    "parse_robots_directives",
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

_SELECTOR = (
    "a[href], a[xlink\\:href], area[href], link[href], frame[src], iframe[src], meta, "
    "base[href], title, img, source, script[src], video, audio, track[src], object[data], "
    "embed[src], input[src], image, style"
)
# Without url( or @import anywhere in the page, <style> blocks hold no requisite.
_SELECTOR_NO_STYLE = _SELECTOR.removesuffix(", style")
# Attribute selectors cost on every element, so style and background attributes are
# looked for in a second pass, only on pages whose bytes can hold such a requisite: a
# style attribute whose value has url( in it, a background attribute.
# (Searched in the lowercased bytes, about 20 us for 20 KB: a case-insensitive
# pattern loses re's fast scan for a literal prefix and cost ten times that.)
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
_ASCII_SPACE = " \t\n\r\f"

# ---------------------------------------------------------------- content type


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


def media_type(content_type: str | None) -> str:
    """The lowercased ``type/subtype`` of a Content-Type value ('' when absent)."""
    if not content_type:
        return ""
    return content_type.split(";", 1)[0].strip().lower()


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

# A title's whitespace as document.title strips and collapses it: ASCII's only. str.split
# took U+3000 and U+00A0 for spaces too ("…電話　習氏…" became "…電話 習氏…").
_ASCII_SPACES = re.compile("[\t\n\x0c\r ]+")
_CT_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^"';\s,]+)""", re.IGNORECASE)


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
    if content_type:
        match = _CT_CHARSET.search(content_type)
        codec = codec_for_label(match.group(1)) if match else None
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


# ---------------------------------------------------------------- robots


# Directives that take a value after a colon (not an agent's name before one).
_VALUED_DIRECTIVES = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)
_AGENT_NAME = re.compile(r"[a-z0-9_.-]+")


def parse_robots_directives(value: str | None, agent: str = "crawlkit") -> tuple[bool, bool]:
    """``(noindex, nofollow)`` from a meta robots content or X-Robots-Tag values.

    ``none`` means both; tokens are case-insensitive. ``value`` may hold several
    X-Robots-Tag header lines, one a line (each is read on its own). On a line, a name
    and a colon (``otherbot: noindex, nofollow``) aim the directives after it, up to
    the next name, at that agent: they count when the name is ``agent`` (the product
    token of ``--agent``, as robots.txt matches it), ``robots`` or ``all``, and are
    passed over otherwise (Google's and Bing's reading of the header).
    """
    if not value:
        return False, False
    ours = {"robots", "all", agent.lower()}
    noindex = nofollow = False
    for line in value.split("\n"):
        applies = True  # directives before any name are everyone's
        for part in line.split(","):
            token = part.strip().lower()
            name, colon, rest = token.partition(":")
            name = name.strip()
            if (
                colon
                and name not in _VALUED_DIRECTIVES
                and (_AGENT_NAME.fullmatch(name) or not name)
            ):
                applies = not name or name in ours
                token = rest.strip()
            if not applies:
                continue
            if token == "noindex":
                noindex = True
            elif token == "nofollow":
                nofollow = True
            elif token == "none":
                noindex = nofollow = True
    return noindex, nofollow


_DIGITS = re.compile(r"[0-9]*")
_DIGITS_AND_DOTS = re.compile(r"[0-9.]*")
_SKIP_SPACE = re.compile(r"[\t\n\f\r ]*")
_URL_EQUALS = re.compile(r"url[\t\n\f\r ]*=[\t\n\f\r ]*", re.IGNORECASE)


def refresh_target(content: str) -> str | None:
    """The URL of a ``<meta http-equiv=refresh content="5; url=...">``, or None.

    HTML's "shared declarative refresh steps": the content starts with a delay (digits,
    or a dot), then ``;``, ``,`` or white space, then the URL, optionally after
    ``url=`` and in quotes. Anything else (``url=/x`` alone, ``-1; url=/x``,
    ``1e0; url=/x``, ``text/html; charset=utf-8``) is no refresh at all, and was read
    as a link to a URL nobody wrote.
    """
    pos = _SKIP_SPACE.match(content).end()  # type: ignore[union-attr]
    digits = _DIGITS.match(content, pos).end()  # type: ignore[union-attr]
    if digits == pos and content[pos : pos + 1] != ".":
        return None
    pos = _DIGITS_AND_DOTS.match(content, digits).end()  # type: ignore[union-attr]
    if pos < len(content):
        if content[pos] not in ";," + _ASCII_SPACE:
            return None
        pos = _SKIP_SPACE.match(content, pos).end()  # type: ignore[union-attr]
        if content[pos : pos + 1] in (";", ","):
            pos += 1
        pos = _SKIP_SPACE.match(content, pos).end()  # type: ignore[union-attr]
    if pos >= len(content):
        return None  # a refresh of the page itself
    url_equals = _URL_EQUALS.match(content, pos)
    target = content[url_equals.end() if url_equals is not None else pos :]
    if target[:1] in ("'", '"'):
        target = target[1:].split(target[0], 1)[0]
    return trim_url(target) or None


# ---------------------------------------------------------------- links


def parse_srcset(value: str) -> list[str]:
    """The URLs of a ``srcset`` value, in order (HTML's "parse a srcset attribute").

    A candidate is a URL then optional descriptors up to a comma; a URL that ends in
    commas loses them (``a.png,b.png`` is two candidates), and a comma inside the
    descriptors' parentheses (from a ``(`` to the first ``)``) does not end the
    candidate.
    """
    urls: list[str] = []
    pos, end = 0, len(value)
    while pos < end:
        while pos < end and (value[pos] in _ASCII_SPACE or value[pos] == ","):
            pos += 1
        start = pos
        while pos < end and value[pos] not in _ASCII_SPACE:
            pos += 1
        url = value[start:pos]
        if url.endswith(","):
            url = url.rstrip(",")
        else:
            # Skip the descriptors up to the next comma outside parentheses: the
            # standard's tokenizer is "in parens" from a "(" to the first ")" (they
            # do not nest, and a ")" outside them is a character like any other).
            in_parens = False
            while pos < end:
                char = value[pos]
                if in_parens:
                    in_parens = char != ")"
                elif char == ",":
                    break
                elif char == "(":
                    in_parens = True
                pos += 1
        if url:
            urls.append(url)
    return urls


@dataclass(slots=True)
class Link:
    """One outgoing link: its canonical URL, whether it is nofollow, and its element."""

    url: ParsedURL
    nofollow: bool
    tag: str  # the element (a, img, ...), or "style" for inline CSS


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


def collapsed_length(text: str) -> int:
    """UTF-8 bytes of ``text`` once runs of ASCII whitespace are one space, ends trimmed.

    Counted with numpy instead of building the collapsed string: on a 100 KB page
    ``" ".join(text.split())`` alone costs more than the parse.
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


def _serialize(url: str, base: str | None) -> str | None:
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


def _authority(href: str) -> str:
    slash = href.find("/", href.find("://") + 3) if "://" in href else -1
    return href[:slash] if slash > 0 else href


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
        base = _serialize(base_url, None) or base_url
        return self.resolver.resolve(href, base, _authority(base))

    def base_of(self, url: str, base_href: str | None) -> str:
        """The WHATWG serialization of the base URL of a page at ``url`` with a
        ``<base href>`` of ``base_href`` (None: no such element)."""
        base = _serialize(url, None) or url
        if base_href:
            href = _serialize(base_href, base)
            # A base that fails to parse, or is a data: or javascript: URL, is passed
            # over (HTML's "set the frozen base URL"): the page's own URL stays.
            if href is not None and not href.startswith(("data:", "javascript:")):
                base = href
        return base

    def resolve_on(self, href: str, base: str) -> ParsedURL | None:
        """The canonical http(s) URL of ``href`` against ``base`` (from :meth:`base_of`)."""
        return self.resolver.resolve(href, base, _authority(base))

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

        # One pass over the tree for everything but the text.
        title: str | None = None
        base_href: str | None = None
        raw_links: list[tuple[str, bool, str]] = []
        reqs: list[tuple[str, str]] = []  # (href, tag) of the page's requisites
        canonical_href: str | None = None
        # Lower-cased bytes, to tell cheaply whether the page can hold inline CSS
        # requisites at all (most style blocks have no url() or @import).
        raw = (body if isinstance(markup, bytes) else markup.encode("utf-8", "replace")).lower()
        css = b"url(" in raw or b"@import" in raw
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
                if meta_name is not None and meta_name.strip().lower() in ("robots", self.agent):
                    ni, nf = parse_robots_directives(attrs.get("content"), self.agent)
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
                title = _ASCII_SPACES.sub(" ", node.text()).strip(_ASCII_SPACE)

        if css and _STYLE_URL.search(raw):
            for node in tree.css("[style]"):
                style = node.attributes.get("style")
                if style:
                    reqs.extend((ref.url, "style") for ref in css_refs(style))
        if _BACKGROUND_ATTR.search(raw):
            for node in tree.css("[background]"):
                background = node.attributes.get("background")
                if background:
                    reqs.append((background, "background"))

        if codec != "utf-8":  # a link's query is sent in the page's encoding (WHATWG)
            raw_links = [(query_in_document_encoding(h, codec), nf, t) for h, nf, t in raw_links]
            reqs = [
                (h if t == "style" else query_in_document_encoding(h, codec), t) for h, t in reqs
            ]
            if canonical_href is not None:
                canonical_href = query_in_document_encoding(canonical_href, codec)
        base = self.base_of(url, base_href)
        authority = _authority(base)

        canonical: str | None = None
        if canonical_href is not None and canonical_href.strip():
            parsed = self.resolver.resolve(canonical_href, base, authority)
            canonical = parsed.url if parsed is not None else None

        links: list[Link] = []
        index: dict[str, int] = {}
        resolve = self.resolver.resolve
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
            if len(links) >= self.max_links:
                capped.append("links")
                break
            index[parsed.fp] = len(links)
            links.append(Link(parsed, flag, tag))
        requisites = self._resolve_requisites(reqs, base, authority, capped)

        tree.strip_tags(BOILERPLATE_TAGS)
        body_node = tree.body
        raw_text = body_node.text(separator=" ") if body_node is not None else ""
        return Page(
            title=title,
            canonical=canonical,
            noindex=noindex,
            nofollow=nofollow,
            links=links,
            raw_text=raw_text,
            text_bytes=collapsed_length(raw_text),
            simhash=simhash(raw_text),
            charset=codec,
            capped=capped,
            requisites=requisites,
            error=error,
        )

    def _resolve_requisites(
        self, reqs: list[tuple[str, str]], base: str, authority: str, capped: list[str]
    ) -> list[Link]:
        """Resolved, canonical, once per URL, at most ``max_links`` (then "requisites"
        joins ``capped``)."""
        out: list[Link] = []
        seen: set[str] = set()
        resolve = self.resolver.resolve
        for href, tag in reqs:
            if not href or not href.strip():
                continue
            parsed = resolve(href, base, authority)
            if parsed is None or parsed.fp in seen:
                continue
            if len(out) >= self.max_links:
                capped.append("requisites")
                break
            seen.add(parsed.fp)
            out.append(Link(parsed, False, tag))
        return out
