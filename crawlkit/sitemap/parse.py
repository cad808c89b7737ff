"""Sitemaps to URL records: XML urlset, sitemap index, plain text, RSS and Atom feeds.

One reader handles every format (:class:`SitemapReader`, made of the modules in
crawlkit/sitemap/README.md); the format is decided by the content, never by the
name: gzip (magic bytes) is decompressed first, then a document whose first
character is ``<`` is XML and is told apart by its root element (``urlset``,
``sitemapindex``, ``rss``, ``rdf:RDF``, ``feed``), and anything else is a plain text
sitemap (one URL a line, UTF-8; UTF-16 when a byte order mark says so, as it does
for XML).

Records (docs/design.md "Records"): every URL becomes a URL record ``{"url", "host",
"site", "fp", "depth": 0, "priority", "reason": "sitemap"}`` with ``lastmod`` (ISO
8601 in UTC, ``2024-05-01T12:00:00Z``) and ``changefreq`` when the document gives
them, and ``via`` (the sitemap's own URL) when it is known. ``priority`` is the
sitemap's ``<priority>`` (0.0-1.0) or the default (0.5, the protocol's default).
A child of a sitemap index is the same record with ``"kind": "sitemap"``, so a
pipeline can fetch it and skip children whose ``lastmod`` has not changed. A
``<url>``'s hreflang alternates (``<xhtml:link rel="alternate" hreflang="de"
href="..."/>``, Google's multilingual sitemaps) are URL records too, after its
``<loc>``, under the same rules, with the default priority and no ``lastmod``; each
URL once a document (a cluster's pages each repeat the whole cluster).
``lastmod`` comes from ``<lastmod>``, else Google News ``<news:publication_date>``;
in feeds from RSS ``<pubDate>`` or ``<dc:date>``, Atom ``<updated>`` or
``<published>`` (Atom 0.3: ``<modified>`` or ``<issued>``). Feed entries take RSS
``<link>`` (else a permalink ``<guid>``) or Atom ``<link rel="alternate">``; relative
feed links resolve against the ``xml:base`` they are in, then ``base``.
Sitemaps must list absolute URLs; with ``same_host`` URLs of other hosts are
skipped and reported (the protocol's rule), except those of ``vouched_hosts``: hosts
whose robots.txt names this sitemap in a ``Sitemap:`` line (the protocol's
cross-submission), which the caller has checked.

Limits (sitemaps.org protocol): at most 50,000 URLs and 50 MiB uncompressed per
file. Records up to the limit are emitted; what lies beyond is counted and reported
once, never silently dropped. Invalid URLs (not http(s), unparsable) are reported
with their line number and skipped. Bad ``lastmod``, ``changefreq`` or ``priority``
values are reported and left out (priority falls back to the default). A ``<url>``
or ``<sitemap>`` holding several ``<loc>`` is read as one record a ``<loc>``, each
with the fields that follow it, and reported; one without ``<loc>`` whose own text
is an http(s) URL has that URL for its ``<loc>`` (reported too).
The protocol's element names written in another case (``<URL>``, ``<Loc>``) are
read as the protocol's, and reported.

Streaming: the input is read in 64 KiB chunks through expat, a push parser, and
records are handed on after each chunk; memory does not grow with the file.

Hostile XML is refused with :class:`SitemapError` before it can do harm: any entity
declaration (entity expansion such as "billion laughs", external entities reaching
for files or URLs) but an external parameter entity's, which is never loaded (Drupal
declares one in every RSS feed), any parameter entity reference, and nesting deeper
than 64 elements. External DTDs are never loaded. Records emitted before the refusal
or a syntax error are kept (they were well-formed), and so is a record the damage (or
the size limit) cut after its ``<loc>`` was closed, with the fields closed before it;
the error says where the document broke. Text after the root element's end (a PHP
warning printed after the feed) is no damage to what came before: it is skipped and
reported, and the document read without error.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Collection, Iterator
from typing import BinaryIO

from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import UsageError
from crawlkit.records import URLRecord
from crawlkit.sitemap.dates import normalize_lastmod
from crawlkit.sitemap.entries import EntryRecords
from crawlkit.sitemap.model import (
    DEFAULT_PRIORITY,
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_URLS,
    SitemapError,
    SitemapStats,
)
from crawlkit.sitemap.source import UTF16_BOMS, document_chunks, utf16_as_utf8, utf16_is_xml
from crawlkit.sitemap.textreader import read_lines
from crawlkit.sitemap.xmlreader import parse_xml, xml_after_junk
from crawlkit.url import Canonicalizer

__all__ = [
    "DEFAULT_PRIORITY",
    "MAX_SITEMAP_BYTES",
    "MAX_SITEMAP_URLS",
    "SitemapError",
    "SitemapReader",
    "SitemapStats",
    "normalize_lastmod",
    "parse_sitemap",
]


class SitemapReader:
    """Reads one sitemap document (any format) into records; see the module docstring.

    ``read`` is a generator; after it finishes, ``stats`` holds the counts. It raises
    :class:`SitemapError` for malformed or hostile XML or corrupt gzip, after yielding
    every record that came before the damage. Limits and invalid entries are reported
    through ``reporter`` and do not raise.
    """

    def __init__(
        self,
        *,
        base: str | None = None,
        source: str = "<sitemap>",
        reporter: Reporter | None = None,
        canonicalizer: Canonicalizer | None = None,
        max_urls: int = MAX_SITEMAP_URLS,
        max_bytes: int = MAX_SITEMAP_BYTES,
        default_priority: float = DEFAULT_PRIORITY,
        same_host: bool = False,
        vouched_hosts: Collection[str] = (),
    ):
        self.base = base
        self.source = source
        self.reporter = reporter if reporter is not None else NullReporter()
        self.canon = canonicalizer if canonicalizer is not None else Canonicalizer()
        # The protocol: a sitemap lists URLs of its own host only (a robots.txt may
        # vouch for others; a caller that knows so leaves this off).
        own_host: str | None = None
        if same_host:
            if base is None:
                raise UsageError("checking hosts needs the sitemap's own URL (base)")
            own_host = self.canon.parse(base).host
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.stats = SitemapStats()
        self._entries = EntryRecords(
            base=base,
            source=source,
            reporter=self.reporter,
            canon=self.canon,
            stats=self.stats,
            max_urls=max_urls,
            default_priority=default_priority,
            same_host=own_host,
            vouched_hosts=vouched_hosts,
        )

    def read(self, stream: BinaryIO) -> Iterator[URLRecord]:
        """Yield the records of the document in ``stream`` (see the class docstring)."""
        chunks = document_chunks(stream, self.stats, self.max_bytes, self.source)
        first = b""
        for chunk in chunks:
            first += chunk
            if first.lstrip(b"\xef\xbb\xbf \t\r\n"):
                break
        body = first.lstrip(b"\xef\xbb\xbf \t\r\n")
        if not body:
            self.stats.format = "empty"
            self.reporter.warn(f"{self.source}: empty sitemap", kind="empty sitemap")
        elif body.startswith(b"<"):
            # From the first "<": white space before the XML declaration (many CMS
            # plugins send it) makes expat refuse the whole document.
            yield from self._read_xml(body, chunks)
        elif body.startswith(UTF16_BOMS):
            # A BOM names the encoding beyond doubt (the protocol wants UTF-8, but a
            # Windows editor saves "Unicode" text so): a text sitemap in UTF-16 was
            # read as XML and refused as malformed, all of its URLs lost.
            if utf16_is_xml(body):
                yield from self._read_xml(first, chunks)
            else:
                self.stats.format = "text"
                decoded = utf16_as_utf8(body, chunks, self.stats, self.source)
                yield from self._read_text(next(decoded), decoded)
        elif (start := xml_after_junk(body)) is not None:
            # A PHP notice or a stray line printed before the XML declaration: read
            # as text, it gave one invented URL (a schema URL) and lost the real ones.
            self.reporter.warn(
                f"{self.source}: {start} bytes before the XML declaration skipped",
                kind="malformed sitemap",
            )
            yield from self._read_xml(body[start:], chunks)
        else:
            self.stats.format = "text"
            yield from self._read_text(first, chunks)
        self._report_limits()

    def _report_limits(self) -> None:
        s = self.stats
        record = "<sitemap>" if s.format == "sitemapindex" else "<url>"
        other = "<url>" if s.format == "sitemapindex" else "<sitemap>"
        malformed = (
            (
                s.misplaced,
                f"{other} records in a <{s.format}> skipped "
                "(a sitemap index lists sitemaps, a urlset URLs)",
            ),
            (
                s.split,
                f"<loc> after the first in a {record} record, each read as a record of its own",
            ),
            (
                s.bare,
                f"{record} records without <loc> give their URL as text; taken as their <loc>",
            ),
            (
                s.case_folded,
                "elements named in another case than the sitemap protocol's (<Loc> for <loc>) "
                "read as the protocol's",
            ),
            (s.ampersands, "bare & (beginning no entity or character reference) read as &amp;"),
        )
        for count, what in malformed:
            if count:
                self.reporter.warn(f"{self.source}: {count:,} {what}", kind="malformed sitemap")
        if s.trailing:
            self.reporter.warn(
                f"{self.source}: text after the end of the document (from line "
                f"{s.trailing:,}) skipped",
                kind="malformed sitemap",
            )
        if s.truncated:
            self.reporter.warn(
                f"{self.source}: larger than {self.max_bytes:,} bytes uncompressed (the "
                f"sitemap protocol limit); stopped there after {s.urls + s.sitemaps:,} "
                "records",
                kind="limit",
            )
        if s.over_limit:
            self.reporter.warn(
                f"{self.source}: {s.over_limit:,} URLs beyond the first {self.max_urls:,} "
                "(the sitemap protocol limit) were ignored",
                kind="limit",
            )

    def _read_xml(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[URLRecord]:
        entries = self._entries
        try:
            for _ in parse_xml(first, chunks, entries.entry, self.stats, self.source):
                yield from entries.drain()
        except SitemapError:
            yield from entries.drain(final=True)  # the records before the damage stand
            raise
        yield from entries.drain(final=True)

    def _read_text(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[URLRecord]:
        """One URL a line (UTF-8, UTF-16 decoded to it before); blank lines skipped;
        overlong lines reported."""
        entries = self._entries
        for _ in read_lines(first, chunks, self.stats, entries.text_line, entries.overlong_line):
            yield from entries.drain()
        yield from entries.drain(final=True)


def parse_sitemap(
    data: bytes,
    base: str | None = None,
    *,
    reporter: Reporter | None = None,
    max_urls: int = MAX_SITEMAP_URLS,
    max_bytes: int = MAX_SITEMAP_BYTES,
    default_priority: float = DEFAULT_PRIORITY,
    same_host: bool = False,
) -> Iterator[URLRecord]:
    """The records of one sitemap document given as bytes (gzip or not).

    ``base`` is the sitemap's own URL: it becomes ``via``, and relative links in feeds
    resolve against it (a sitemap's ``<loc>`` and text lines must be absolute).
    Raises :class:`SitemapError` as :meth:`SitemapReader.read` does.
    """
    reader = SitemapReader(
        base=base,
        source=base or "<sitemap>",
        reporter=reporter,
        max_urls=max_urls,
        max_bytes=max_bytes,
        default_priority=default_priority,
        same_host=same_host,
    )
    with contextlib.closing(io.BytesIO(data)) as stream:
        yield from reader.read(stream)
