"""expat callbacks that turn one XML document, sitemap or feed, into entries.

:class:`XMLHandler` is told the document's elements by expat and hands each record
(``<url>``, ``<sitemap>``, ``<item>``, ``<entry>``) on as an entry: a dict of its
fields' text by key (``loc``, ``lastmod``, ``changefreq``, ``priority``, ``guid``,
``published``), its line, and its hreflang alternates. Which elements count is
:mod:`crawlkit.sitemap.formats`'. Feeds' own ways are here too: Atom's
``<link rel="alternate">`` and RSS ``<link>`` resolved against ``xml:base``, RSS
``<guid>`` permalinks,
Dublin Core and Google News dates. Entity declarations and nesting deeper than
``MAX_DEPTH`` raise :class:`Hostile`; a root element of no known format raises
:class:`SitemapError`.
"""

from __future__ import annotations

import html.entities
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urljoin

from crawlkit.sitemap.formats import (
    ATOM03_NS,
    DC_NS,
    FEED_NS,
    FIELDS,
    FORMATS,
    NEWS_NS,
    OTHER_RECORD,
    RSS1_NS,
    SITEMAP_NS,
    XHTML_NS,
    XML_BASE,
    split_name,
)
from crawlkit.sitemap.model import ABSOLUTE, MAX_DEPTH, MAX_TEXT, SitemapError, SitemapStats

__all__ = ["Hostile", "OnEntry", "UndefinedEntity", "XMLHandler"]

_SITEMAP_FORMATS = ("urlset", "sitemapindex")
# the protocol's element names (urlset and sitemap index)
_SITEMAP_NAMES = frozenset(
    {"urlset", "sitemapindex", "url", "sitemap", "loc", "lastmod", "changefreq", "priority"}
)
_HTTP_URL = re.compile(r"https?://\S+\Z", re.IGNORECASE)

# (fields by key, line, [(hreflang href, line)]) of one record
OnEntry = Callable[[dict[str, str], int, list[tuple[str, int]]], None]


class Hostile(Exception):
    """Raised inside expat callbacks; turned into a SitemapError with a position."""


class UndefinedEntity(Exception):
    """An entity reference no declaration defines (see :meth:`XMLHandler.skipped`)."""


class XMLHandler:
    """expat callbacks that turn one XML document into pending entries."""

    def __init__(
        self,
        parser: Any,
        on_entry: OnEntry,
        stats: SitemapStats,
    ):
        self.parser = parser
        self.stats = stats
        self.on_entry = on_entry
        self.depth = 0
        self.format: str | None = None
        self.root_ns = ""
        self.record_name = ""
        self.fields: dict[str, str] = {}
        self.record_depth = 0  # depth of the open record element, 0 if none
        self.line = 0  # line of the record's URL (or of the record) for reports
        self.entry: dict[str, str] = {}
        self.alternates: list[tuple[str, int]] = []  # (href, line) of a <url>'s hreflang links
        self.field: str | None = None  # key of the field whose text is being collected
        self.field_depth = 0  # depth of that field's element
        self.text: list[str] = []
        self.text_len = 0
        # text of the open <url>/<sitemap> itself, outside its fields (see _bare_loc)
        self.bare: list[str] = []
        self.bare_len = 0
        self.bases: list[tuple[int, str]] = []  # (depth, xml:base) of open elements

    # ---- refusals

    def refuse_entity(self, *args: Any) -> None:
        raise Hostile("entity declarations are refused (entity expansion or external entities)")

    def entity_decl(
        self, name: str, is_parameter: int, value: str | None, *rest: str | None
    ) -> None:
        """Refuse every entity declaration but an external parameter entity's, which
        is never loaded (parameter entity parsing is off) and, unreferenced, does
        nothing: Drupal 4.7 to 6 began every RSS feed with ``<!DOCTYPE rss [<!ENTITY
        % HTMLlat1 PUBLIC "..." "http://www.w3.org/TR/xhtml1/DTD/xhtml-lat1.ent">]>``,
        and each such feed was refused whole as hostile. A reference to it is
        refused (:meth:`doctype_text`)."""
        if is_parameter and value is None:
            return
        self.refuse_entity()

    def start_doctype(self, *args: Any) -> None:
        """Watch the DOCTYPE's markup that has no handler of its own (see
        :meth:`doctype_text`), there only: elsewhere it costs a call a comment."""
        self.parser.DefaultHandlerExpand = self.doctype_text

    def end_doctype(self) -> None:
        self.parser.DefaultHandlerExpand = None

    def doctype_text(self, data: str) -> None:
        """Refuse a parameter entity reference (``%p;``) in the DOCTYPE. expat skips
        it unloaded, and then holds an undefined entity no error but skips it too:
        ``&eacute;`` would vanish from a URL with nothing said."""
        if data.startswith("%"):
            raise Hostile(f"parameter entity references are refused ({data[:80]})")

    def refuse_external(self, *args: Any) -> int:
        raise Hostile("external entities are refused")

    # ---- structure

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise Hostile(f"elements nested deeper than {MAX_DEPTH} levels are refused")
        base = attrs.get(XML_BASE)
        if base is not None:
            self.bases.append((self.depth, base.strip()))
        ns, local = split_name(name)
        local = self._fold_case(ns, local)
        if self.format is None:
            known = FORMATS.get(local)
            if known is None:
                raise SitemapError(f"not a sitemap or feed: the root element is <{local}>")
            self.format, self.record_name = known
            self.stats.format = self.format
            self.fields = FIELDS[self.format]
            if self.format == "atom" and ns == ATOM03_NS:
                # Atom 0.3's dates: its entries' <modified> and <issued> were not
                # read, and a Blogger feed of the 2000s gave no lastmod at all.
                self.fields = FIELDS["atom03"]
            self.root_ns = ns
            return
        if self.record_depth == 0:
            if local == self.record_name and self._record_ns_ok(ns):
                self.record_depth = self.depth
                self._new_entry()
                self.line = self.parser.CurrentLineNumber
            elif self.depth == 2 and local in OTHER_RECORD.get(self.format, ()):
                self.stats.misplaced += 1  # (was dropped with nothing said)
            return
        if local == "publication_date" and ns == NEWS_NS and self.field is None:
            # Google News sitemaps date their URLs inside <news:news>, not <lastmod>.
            self._collect("published")
            return
        if self.depth != self.record_depth + 1:
            return
        if ns == XHTML_NS and local == "link" and self.format == "urlset":
            self._alternate(attrs)
            return
        if not self._field_ns_ok(ns, local):
            return
        if self.format == "atom" and local == "link":
            rel = attrs.get("rel", "alternate")
            href = attrs.get("href", "").strip()
            if rel == "alternate" and href and "loc" not in self.entry:
                self.entry["loc"] = self._based(href)
                self.line = self.parser.CurrentLineNumber
            return
        permalink = attrs.get("isPermaLink", "true").strip().lower() != "false"
        if self.format == "rss" and local == "guid" and not permalink:
            return
        key = self.fields.get(local)
        if key is None and local == "date" and ns == DC_NS:
            key = "lastmod"
        if key == "loc" and "loc" in self.entry and self.format in _SITEMAP_FORMATS:
            self._split_record()
        if key == "loc" and "loc" not in self.entry:
            self.line = self.parser.CurrentLineNumber
        if key is not None:
            self._collect(key)

    def _split_record(self) -> None:
        """A second ``<loc>`` in one ``<url>`` or ``<sitemap>`` (a generator that forgot
        to close the record and open the next): hand on what came so far as a record
        of its own and start the next at this ``<loc>``, so the fields that follow are
        its own. Only the first ``<loc>`` was kept and the others were lost in
        silence; an index so written lost all its sitemaps but one."""
        self.stats.split += 1
        self.on_entry(self.entry, self.line, self.alternates)
        self._new_entry()

    def _fold_case(self, ns: str, local: str) -> str:
        """The protocol's name of a sitemap element written in another case
        (``<URL>``, ``<Loc>``, ``<LastMod>``, as some generators write them), counted;
        other names as they are. XML names are case-sensitive, but such a document
        means nothing else: its records were skipped with nothing said (0 URLs, exit
        0), and an upper-case root was refused. Only the protocol's own elements (in
        no namespace or a sitemap one) of a urlset or index, never a feed's or an
        extension's."""
        if local in _SITEMAP_NAMES or local.lower() not in _SITEMAP_NAMES:
            return local
        if self.format is not None and (
            self.format not in _SITEMAP_FORMATS or not self._record_ns_ok(ns)
        ):
            return local
        self.stats.case_folded += 1
        return local.lower()

    def close_open_record(self) -> None:
        """The document broke off (malformed from here, cut at the size limit or in
        its gzip stream): hand on the open record if its ``<loc>`` was closed before
        the break, with the fields closed before it. Such a record was lost with
        the damage: a cut index lost the sitemap whose ``<loc>`` it had read whole.
        A ``<loc>`` still open is not taken, its URL may be cut short."""
        if self.record_depth and "loc" in self.entry:
            self.record_depth = 0
            self.field = None
            self.on_entry(self.entry, self.line, self.alternates)
            self._new_entry()

    def _new_entry(self) -> None:
        self.entry = {}
        self.alternates = []
        self.bare = []
        self.bare_len = 0

    def _bare_loc(self) -> None:
        """A ``<sitemap>`` or ``<url>`` without ``<loc>`` whose own text is an http(s)
        URL (``<sitemap>https://example.com/sm.xml</sitemap>``, as some generators
        write it): that URL is its ``<loc>``. It was reported as an entry without a
        URL and skipped, and an index so written gave no sitemap at all. Text that
        is no URL is left alone (the entry is reported as before)."""
        if "loc" in self.entry or self.format not in _SITEMAP_FORMATS:
            return
        text = "".join(self.bare).strip()
        if _HTTP_URL.match(text):
            self.entry["loc"] = text
            self.stats.bare += 1

    def _alternate(self, attrs: dict[str, str]) -> None:
        """Keep the ``href`` of a ``<xhtml:link rel="alternate" hreflang=...>`` of a
        ``<url>`` (Google's hreflang sitemaps): another language's version of the
        page, a URL search engines crawl as they do ``<loc>``."""
        rel = attrs.get("rel", "").lower().split()
        href = attrs.get("href", "").strip()
        if "alternate" in rel and "hreflang" in attrs and href:
            self.alternates.append((href, self.parser.CurrentLineNumber))

    def _based(self, href: str) -> str:
        """``href`` resolved against the ``xml:base`` of the elements it is in (Atom,
        RFC 4287 2): ignored, a feed's relative links resolved against the feed's own
        URL, URLs the feed never named. The outermost base is left to the document's
        URL, as a relative ``href`` is."""
        for _, base in reversed(self.bases):
            href = urljoin(base, href)
            if ABSOLUTE.match(href):
                break
        return href

    def _field_text(self) -> str:
        """The text of the field just closed; an RSS ``<link>`` resolved against the
        ``xml:base`` it is in, as an Atom link is (:meth:`_based`). xml:base is XML's,
        not Atom's alone: Drupal sets it on every feed's ``<rss>``, and a relative
        ``<link>`` resolved against the feed's own URL instead. Not a ``<guid>``: most
        are no URL (``123@example.com``) and a base would make them one."""
        text = "".join(self.text).strip()
        if self.field == "loc" and self.format in ("rss", "rdf") and self.bases:
            return self._based(text)
        return text

    def _collect(self, key: str) -> None:
        """Gather the text of the element just opened as the entry's ``key``."""
        self.field = key
        self.field_depth = self.depth
        self.text = []
        self.text_len = 0

    def _record_ns_ok(self, ns: str) -> bool:
        if self.format in FEED_NS:
            return ns == RSS1_NS or ns in FEED_NS[self.format]
        return ns == self.root_ns or (self.format != "atom" and ns in SITEMAP_NS)

    def _field_ns_ok(self, ns: str, local: str) -> bool:
        if ns == DC_NS:
            return local == "date"
        if self.format in FEED_NS:
            return ns in FEED_NS[self.format]
        return ns == self.root_ns or (self.format != "atom" and ns in SITEMAP_NS)

    def skipped(self, name: str, is_parameter: int) -> None:
        """An entity expat skipped: one no declaration it read defines, which is no
        error to it in a document naming an external DTD (never loaded), such as RSS
        0.91's Netscape DTD, which defines HTML's entities. Dropped, ``&eacute;`` made
        another URL than the document wrote (``http://a.test/caf&eacute;`` came out
        ``http://a.test/caf``, a page the site never named). An HTML named entity is
        its character, as that DTD has it; any other ends the document."""
        if is_parameter:
            return  # (a reference in the DOCTYPE was refused there: doctype_text)
        char = html.entities.html5.get(name + ";")
        if char is None:
            raise UndefinedEntity(f"undefined entity &{name}; (external DTDs are never read)")
        self.chars(char)

    def chars(self, data: str) -> None:
        if self.field is not None:
            if self.text_len <= MAX_TEXT:
                self.text.append(data)
                self.text_len += len(data)
        elif self.record_depth and self.depth == self.record_depth and self.bare_len <= MAX_TEXT:
            self.bare.append(data)
            self.bare_len += len(data)

    def end(self, name: str) -> None:
        if self.field is not None and self.depth == self.field_depth:
            # Text past MAX_TEXT was not kept; what was is still longer than MAX_TEXT, so
            # an overlong URL is reported as such.
            self.entry.setdefault(self.field, self._field_text())
            self.field = None
        elif self.record_depth and self.depth == self.record_depth:
            self.record_depth = 0
            self._bare_loc()
            self.on_entry(self.entry, self.line, self.alternates)
            self._new_entry()
        if self.bases and self.bases[-1][0] == self.depth:
            self.bases.pop()
        self.depth -= 1
