"""Sitemaps to URL records: XML urlset, sitemap index, plain text, RSS and Atom feeds.

One reader handles every format; the format is decided by the content, never by the
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
``<published>``. Feed entries take RSS ``<link>`` (else a permalink ``<guid>``) or
Atom ``<link rel="alternate">``; relative feed links resolve against ``base``.
Sitemaps must list absolute URLs; with ``same_host`` URLs of other hosts are
skipped and reported (the protocol's rule), except those of ``vouched_hosts``: hosts
whose robots.txt names this sitemap in a ``Sitemap:`` line (the protocol's
cross-submission), which the caller has checked.

Limits (sitemaps.org protocol): at most 50,000 URLs and 50 MiB uncompressed per
file. Records up to the limit are emitted; what lies beyond is counted and reported
once, never silently dropped. Invalid URLs (not http(s), unparsable) are reported
with their line number and skipped. Bad ``lastmod``, ``changefreq`` or ``priority``
values are reported and left out (priority falls back to the default).

Streaming: the input is read in 64 KiB chunks through expat, a push parser, and
records are handed on after each chunk; memory does not grow with the file.

Hostile XML is refused with :class:`SitemapError` before it can do harm: any entity
declaration (entity expansion such as "billion laughs", external entities reaching
for files or URLs), and nesting deeper than 64 elements. External DTDs are never
loaded. Records emitted before the refusal or a syntax error are kept (they were
well-formed), and the error says where the document broke.
"""

from __future__ import annotations

import codecs
import contextlib
import io
import re
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime
from typing import Any, BinaryIO
from urllib.parse import urljoin
from xml.parsers import expat

from crawlkit.decoders import GzipReader
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError, InvalidURL, UsageError
from crawlkit.html.encoding import codec_for_label
from crawlkit.records import URLRecord, url_record
from crawlkit.times import parse_time
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

MAX_SITEMAP_URLS = 50_000
MAX_SITEMAP_BYTES = 50 * 1024 * 1024
DEFAULT_PRIORITY = 0.5
MAX_DEPTH = 64  # real sitemaps and feeds nest fewer than 10 levels
MAX_TEXT = 64 * 1024  # longest field text or text line kept (URLs are capped far lower)
_CHUNK = 64 * 1024

_CHANGEFREQ = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})
_RSS1_NS = "http://purl.org/rss/1.0/"
_DC_NS = "http://purl.org/dc/elements/1.1/"
_NEWS_NS = "http://www.google.com/schemas/sitemap-news/0.9"
_XHTML_NS = "http://www.w3.org/1999/xhtml"  # <xhtml:link rel="alternate" hreflang=...>
# The namespaces a sitemap's own elements are found in: the protocol's, the older
# Google one, and none. A <url xmlns=""> under a namespaced <urlset> (a case scrapy
# keeps a fixture of), or plain <url> under <sm:urlset>, was skipped whole: 0 URLs,
# exit 0, nothing said. Extensions (image:, video:, news:, xhtml:) stay apart.
_SITEMAP_NS = frozenset(
    {
        "",
        "http://www.sitemaps.org/schemas/sitemap/0.9",
        "https://www.sitemaps.org/schemas/sitemap/0.9",
        "http://www.google.com/schemas/sitemap/0.84",
    }
)
_XML_ENCODING = re.compile(rb"""\s*<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:\-]+)["']""")
# What expat decodes itself. Not its iso-8859-1 and us-ascii: on the web those labels
# are windows-1252 (the WHATWG Encoding Standard), and expat read bytes 0x80-0x9F as
# C1 controls (a "€" in a URL became %C2%80 where a browser has %E2%82%AC).
_EXPAT_ENCODINGS = frozenset({"utf-8", "utf-16"})
_ABSOLUTE = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.\-]*:")
_TEXT_LINES = re.compile(rb"\r\n|\r|\n")
_XML_BASE = "http://www.w3.org/XML/1998/namespace\x1fbase"  # xml:base, as expat names it
_SEP = "\x1f"  # expat namespace separator: "ns\x1flocal"; cannot occur in a name


_UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def _utf16_is_xml(body: bytes) -> bool:
    """Whether ``body`` (UTF-16, BOM first) is XML: its first character after white
    space is ``<``; else it is a text sitemap."""
    return body[:4096].decode("utf-16", errors="replace").lstrip().startswith("<")


_XML_START = re.compile(
    rb"<\?xml[\t\r\n ]|<(?:[A-Za-z_][\w.-]*:)?(?:urlset|sitemapindex)[\t\r\n >]"
)


def _xml_after_junk(body: bytes) -> int | None:
    """Where a sitemap's XML starts in ``body`` (the first chunk), when something that
    is no sitemap text came before it: a line that is not a URL, then an XML
    declaration or a sitemap root on a later line. None otherwise."""
    found = _XML_START.search(body, 0, 64 * 1024)
    if found is None:
        return None
    if re.match(rb"\s*https?://", body, re.IGNORECASE):
        return None  # a text sitemap: its first line is a URL
    return found.start()


class SitemapError(InputError):
    """A sitemap that cannot be read on: malformed or hostile XML, corrupt gzip."""


@dataclass
class SitemapStats:
    """What one document gave: counts for the summary line."""

    format: str = "unknown"  # urlset, sitemapindex, rss, rdf, atom, text, empty
    urls: int = 0  # URL records emitted
    sitemaps: int = 0  # sitemap-index children emitted
    invalid: int = 0  # entries skipped for a bad or missing URL
    over_limit: int = 0  # entries beyond max_urls (counted, not emitted)
    foreign: int = 0  # skipped for naming another host (same_host only)
    misplaced: int = 0  # <url> in a sitemap index, <sitemap> in a urlset (skipped)
    bytes: int = 0  # uncompressed bytes read
    truncated: bool = False  # stopped at max_bytes


# --------------------------------------------------------------------------------------
# Dates

_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"\s*(Z|z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)


def normalize_lastmod(text: str) -> str | None:
    """A W3C datetime (any precision, with or without zone) or an RFC 822 date
    (RSS ``pubDate``) as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; None if it is neither.

    A date without a time is midnight UTC; a time without a zone is taken as UTC.
    """
    text = text.strip()
    if not text:
        return None
    m = _W3C.fullmatch(text)
    try:
        if m is not None:
            year, month, day, hh, mm, ss, _frac, zone = m.groups()
            tz: timezone = UTC
            if zone and zone[0] in "+-":
                digits = zone[1:].replace(":", "")
                minutes = int(digits[:2]) * 60 + int(digits[2:4] or 0)
                if minutes >= 24 * 60:
                    return None
                tz = timezone(timedelta(minutes=minutes if zone[0] == "+" else -minutes))
            when = datetime(
                int(year),
                int(month or 1),
                int(day or 1),
                int(hh or 0),
                int(mm or 0),
                int(ss or 0),
                tzinfo=tz,
            )
        else:
            when = parsedate_to_datetime(text)
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
        if parse_time(when.timestamp()) is None:  # before 1970: no stage could use it
            return None
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, TypeError, OverflowError, IndexError):
        return None


# --------------------------------------------------------------------------------------
# XML formats: which element is a record and which children are its fields

_FORMATS = {
    # root local name -> (format, record local name)
    "urlset": ("urlset", "url"),
    "sitemapindex": ("sitemapindex", "sitemap"),
    "rss": ("rss", "item"),
    "RDF": ("rdf", "item"),
    "feed": ("atom", "entry"),
}
# format -> the record name of the other sitemap format, skipped and counted there
_OTHER_RECORD = {"urlset": ("sitemap",), "sitemapindex": ("url",)}
# format -> {field local name: record key}
_FIELDS = {
    "urlset": {
        "loc": "loc",
        "lastmod": "lastmod",
        "changefreq": "changefreq",
        "priority": "priority",
    },
    "sitemapindex": {"loc": "loc", "lastmod": "lastmod"},
    "rss": {"link": "loc", "guid": "guid", "pubDate": "lastmod"},
    "rdf": {"link": "loc"},
    "atom": {"updated": "lastmod", "published": "published"},
}


def _split(name: str) -> tuple[str, str]:
    ns, _, local = name.rpartition(_SEP)
    return ns, local


class _Hostile(Exception):
    """Raised inside expat callbacks; turned into a SitemapError with a position."""


class _XMLHandler:
    """expat callbacks that turn one XML document into pending entries."""

    def __init__(
        self,
        parser: Any,
        on_entry: Callable[[dict[str, str], int, list[tuple[str, int]]], None],
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
        self.bases: list[tuple[int, str]] = []  # (depth, xml:base) of open elements

    # ---- refusals

    def refuse_entity(self, *args: Any) -> None:
        raise _Hostile("entity declarations are refused (entity expansion or external entities)")

    def refuse_external(self, *args: Any) -> int:
        raise _Hostile("external entities are refused")

    # ---- structure

    def start(self, name: str, attrs: dict[str, str]) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Hostile(f"elements nested deeper than {MAX_DEPTH} levels are refused")
        base = attrs.get(_XML_BASE)
        if base is not None:
            self.bases.append((self.depth, base.strip()))
        ns, local = _split(name)
        if self.format is None:
            known = _FORMATS.get(local)
            if known is None:
                raise SitemapError(f"not a sitemap or feed: the root element is <{local}>")
            self.format, self.record_name = known
            self.stats.format = self.format
            self.fields = _FIELDS[self.format]
            self.root_ns = ns
            return
        if self.record_depth == 0:
            if local == self.record_name and self._record_ns_ok(ns):
                self.record_depth = self.depth
                self.entry = {}
                self.alternates = []
                self.line = self.parser.CurrentLineNumber
            elif self.depth == 2 and local in _OTHER_RECORD.get(self.format, ()):
                self.stats.misplaced += 1  # (was dropped with nothing said)
            return
        if local == "publication_date" and ns == _NEWS_NS and self.field is None:
            # Google News sitemaps date their URLs inside <news:news>, not <lastmod>.
            self._collect("published")
            return
        if self.depth != self.record_depth + 1:
            return
        if ns == _XHTML_NS and local == "link" and self.format == "urlset":
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
        if key is None and local == "date" and ns == _DC_NS:
            key = "lastmod"
        if key == "loc" and "loc" not in self.entry:
            self.line = self.parser.CurrentLineNumber
        if key is not None:
            self._collect(key)

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
            if _ABSOLUTE.match(href):
                break
        return href

    def _collect(self, key: str) -> None:
        """Gather the text of the element just opened as the entry's ``key``."""
        self.field = key
        self.field_depth = self.depth
        self.text = []
        self.text_len = 0

    def _record_ns_ok(self, ns: str) -> bool:
        if self.format in ("rss", "rdf"):
            return ns in ("", _RSS1_NS)
        return ns == self.root_ns or (self.format != "atom" and ns in _SITEMAP_NS)

    def _field_ns_ok(self, ns: str, local: str) -> bool:
        if ns == _DC_NS:
            return local == "date"
        if self.format == "rdf":
            return ns in ("", _RSS1_NS)
        if self.format == "rss":
            return ns == ""
        return ns == self.root_ns or (self.format != "atom" and ns in _SITEMAP_NS)

    def chars(self, data: str) -> None:
        if self.field is not None and self.text_len <= MAX_TEXT:
            self.text.append(data)
            self.text_len += len(data)

    def end(self, name: str) -> None:
        if self.field is not None and self.depth == self.field_depth:
            # Text past MAX_TEXT was not kept; what was is still longer than MAX_TEXT, so
            # an overlong URL is reported as such.
            self.entry.setdefault(self.field, "".join(self.text).strip())
            self.field = None
        elif self.record_depth and self.depth == self.record_depth:
            self.record_depth = 0
            self.on_entry(self.entry, self.line, self.alternates)
            self.entry = {}
            self.alternates = []
        if self.bases and self.bases[-1][0] == self.depth:
            self.bases.pop()
        self.depth -= 1


# --------------------------------------------------------------------------------------
# The reader


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
        self.same_host: str | None = None
        if same_host:
            if base is None:
                raise UsageError("checking hosts needs the sitemap's own URL (base)")
            self.same_host = self.canon.parse(base).host
        self.vouched_hosts = frozenset(host.lower() for host in vouched_hosts)
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.default_priority = default_priority
        self.stats = SitemapStats()
        self._pending: list[URLRecord] = []
        self._listed: set[int] | None = None  # fingerprints given, once hreflang is seen
        self._alternates: set[int] = set()  # those given as hreflang alternates

    # ---- input

    def _chunks(self, stream: BinaryIO) -> Iterator[bytes]:
        """Uncompressed chunks, gzip undone, stopped at ``max_bytes``.

        Each read takes what one read of the source gives (``read1``): a buffered
        reader's ``read(n)`` drops what it gathered when the source then raises, and
        a gzip input cut short (decoded by :func:`crawlkit.streams.open_input`, or
        here when the bytes came from a fetch) raised after up to 64 KiB of entries,
        all of a small file's, where the records before the damage are kept.
        """
        read = getattr(stream, "read1", stream.read)
        try:
            chunk = read(_CHUNK)
            if chunk.startswith(b"\x1f\x8b"):
                gunzip = GzipReader(_Prefixed(chunk, stream), "")  # type: ignore[arg-type]
                read = gunzip.read  # a raw stream: one read of the source a call
                chunk = read(_CHUNK)
            while chunk:
                room = self.max_bytes - self.stats.bytes
                if len(chunk) > room:
                    if room > 0:
                        self.stats.bytes += room
                        yield chunk[:room]
                    self.stats.truncated = True
                    return
                self.stats.bytes += len(chunk)
                yield chunk
                chunk = read(_CHUNK)
        except InputError as exc:
            if exc.source:  # the input's own reader: it says where already
                raise
            raise SitemapError(
                f"corrupt or truncated gzip data ({exc})", source=self.source
            ) from exc

    def read(self, stream: BinaryIO) -> Iterator[URLRecord]:
        """Yield the records of the document in ``stream`` (see the class docstring)."""
        chunks = self._chunks(stream)
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
        elif body.startswith(_UTF16_BOMS):
            # A BOM names the encoding beyond doubt (the protocol wants UTF-8, but a
            # Windows editor saves "Unicode" text so): a text sitemap in UTF-16 was
            # read as XML and refused as malformed, all of its URLs lost.
            if _utf16_is_xml(body):
                yield from self._read_xml(first, chunks)
            else:
                self.stats.format = "text"
                decoded = self._from_utf16(body, chunks)
                yield from self._read_text(next(decoded), decoded)
        elif (start := _xml_after_junk(body)) is not None:
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

    def _from_utf16(self, body: bytes, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """``body`` (BOM first) and the ``chunks`` after it, UTF-16 decoded to UTF-8 as
        they come. Bytes that are no UTF-16 end the document with a SitemapError, after
        the text before them (replacement characters would invent URLs)."""
        codec = "utf-16-le" if body.startswith(b"\xff\xfe") else "utf-16-be"
        decoder = codecs.getincrementaldecoder(codec)()
        try:
            yield decoder.decode(body[2:]).encode("utf-8")
            for chunk in chunks:
                yield decoder.decode(chunk).encode("utf-8")
            if not self.stats.truncated:  # (a cut at max_bytes may split a character)
                decoder.decode(b"", final=True)  # an odd byte or a lone surrogate at the end
        except UnicodeDecodeError as exc:
            yield exc.object[: exc.start].decode(codec).encode("utf-8")  # whole up to there
            raise SitemapError(
                f"invalid UTF-16 text ({exc.reason}); the file has a UTF-16 byte order mark",
                source=self.source,
            ) from exc

    def _report_limits(self) -> None:
        s = self.stats
        if s.misplaced:
            other = "<url>" if s.format == "sitemapindex" else "<sitemap>"
            self.reporter.warn(
                f"{self.source}: {s.misplaced:,} {other} records in a <{s.format}> skipped "
                "(a sitemap index lists sitemaps, a urlset URLs)",
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

    # ---- XML

    def _read_xml(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[URLRecord]:
        declared = _XML_ENCODING.match(first.removeprefix(b"\xef\xbb\xbf"))
        encoding = declared.group(1).decode("ascii").lower() if declared else None
        if encoding is not None and encoding not in _EXPAT_ENCODINGS:
            # expat decodes UTF-8/16; Python decodes the rest (windows-1252, shift_jis,
            # ...) to UTF-8 on the way in, chunk by chunk. Only the web's encodings (the
            # WHATWG labels): any other Python codec name ("undefined", "zlib") crashed.
            codec = codec_for_label(encoding)
            if codec is None:
                raise SitemapError(f"unknown encoding {encoding!r}", source=self.source)
            decoder = codecs.getincrementaldecoder(codec)(errors="replace")
            first = decoder.decode(first).encode("utf-8")
            chunks = _transcode(chunks, decoder)
            parser = expat.ParserCreate("UTF-8", namespace_separator=_SEP)
        else:
            parser = expat.ParserCreate(namespace_separator=_SEP)
        handler = _XMLHandler(parser, self._entry, self.stats)
        parser.buffer_text = True
        parser.buffer_size = _CHUNK
        # Refuse what hostile documents need; an external DTD is never fetched.
        parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.EntityDeclHandler = handler.refuse_entity
        parser.UnparsedEntityDeclHandler = handler.refuse_entity
        parser.ExternalEntityRefHandler = handler.refuse_external
        parser.StartElementHandler = handler.start
        parser.EndElementHandler = handler.end
        parser.CharacterDataHandler = handler.chars
        data: bytes | None = first
        try:
            while data is not None:
                parser.Parse(data, False)
                yield from self._drain()
                data = next(chunks, None)
            if not self.stats.truncated:
                parser.Parse(b"", True)
        except expat.ExpatError as exc:
            yield from self._drain()
            raise SitemapError(
                f"malformed XML at line {exc.lineno}, column {exc.offset}: "
                f"{expat.ErrorString(exc.code)}",
                source=self.source,
            ) from exc
        except _Hostile as exc:
            yield from self._drain()
            raise SitemapError(
                f"hostile XML refused at line {parser.CurrentLineNumber}: {exc}",
                source=self.source,
            ) from exc
        except SitemapError as exc:
            if exc.source is None:
                raise SitemapError(str(exc), source=self.source) from exc
            raise
        yield from self._drain()

    def _drain(self) -> Iterator[URLRecord]:
        pending, self._pending = self._pending, []
        yield from pending

    def _entry(self, entry: dict[str, str], line: int, alternates: list[tuple[str, int]]) -> None:
        """Turn one <url>/<sitemap>/<item>/<entry> into a pending record, or report it;
        then each of a <url>'s hreflang ``alternates`` (see :meth:`_add`)."""
        if alternates and self._listed is None:
            self._listed = set()  # from here on each URL is listed once (see _first_listing)
        self._entry_loc(entry, line)
        for href, at in alternates:
            self._add(href, at, alternate=True)

    def _entry_loc(self, entry: dict[str, str], line: int) -> None:
        loc = entry.get("loc") or ""
        guid = entry.get("guid") or ""
        if not loc and guid.startswith(("http://", "https://")):
            loc = guid  # an RSS item without <link> but with a permalink <guid>
        if not loc:
            self.stats.invalid += 1
            self.reporter.bad_record(self.source, line, "entry without a URL skipped")
            return
        kind = "sitemap" if self.stats.format == "sitemapindex" else None
        lastmod = entry.get("lastmod") or entry.get("published")
        self._add(loc, line, kind, lastmod, entry.get("changefreq"), entry.get("priority"))

    def _add(
        self,
        loc: str,
        line: int,
        kind: str | None = None,
        lastmod: str | None = None,
        changefreq: str | None = None,
        priority: str | None = None,
        alternate: bool = False,
    ) -> None:
        """One URL as a pending record, or reported. An hreflang ``alternate`` has the
        <loc>'s rules (absolute, same host, the limits) but the default priority and no
        lastmod or changefreq (those are the <loc>'s)."""
        stats = self.stats
        if stats.urls + stats.sitemaps >= self.max_urls:
            stats.over_limit += 1
            return
        try:
            if len(loc) > MAX_TEXT:
                raise InvalidURL("URL longer than 64 KiB")
            # The protocol wants absolute URLs in sitemaps; feeds may be relative.
            if stats.format not in ("rss", "rdf", "atom") and not _ABSOLUTE.match(loc):
                raise InvalidURL(f"relative URL {loc[:200]!r} (a sitemap needs absolute URLs)")
            parsed = self.canon.parse(loc, self.base)
        except InvalidURL as exc:
            stats.invalid += 1
            self.reporter.bad_record(self.source, line, f"invalid URL skipped: {exc}")
            return
        if self.same_host is not None and not self._own_host(parsed.host):
            stats.foreign += 1
            self.reporter.bad_record(
                self.source, line, f"URL on another host than the sitemap skipped: {parsed.url}"
            )
            return
        if not self._first_listing(parsed.fp, alternate):
            return
        record = url_record(
            parsed, depth=0, priority=self._priority(priority, line), reason="sitemap"
        )
        if kind is not None:
            record["kind"] = kind
        if lastmod is not None:
            when = normalize_lastmod(lastmod)
            if when is None:
                self.reporter.warn(
                    f"{self.source}:{line}: unreadable lastmod {lastmod[:80]!r} left out",
                    kind="bad field",
                )
            else:
                record["lastmod"] = when
        if changefreq is not None:
            freq = changefreq.strip().lower()
            if freq in _CHANGEFREQ:
                record["changefreq"] = freq
            else:
                self.reporter.warn(
                    f"{self.source}:{line}: unknown changefreq {changefreq[:80]!r} left out",
                    kind="bad field",
                )
        if self.base is not None:
            record["via"] = self.base
        if kind == "sitemap":
            stats.sitemaps += 1
        else:
            stats.urls += 1
        self._pending.append(record)

    def _first_listing(self, fp: str, alternate: bool) -> bool:
        """Whether to emit a URL: not when it is an hreflang alternate already listed
        (as a <loc> or an alternate), nor a <loc> already given as an alternate. Every
        <url> of a language cluster repeats the whole cluster, whose pages are <loc>s
        too; a French page in 30 languages came out 31 times. Fingerprints are kept
        from the first <url> with alternates on, so a sitemap without any keeps none
        (memory stays flat) and repeats of a plain <loc> are left as they were."""
        if self._listed is None:
            return True
        key = int(fp, 16)
        if key in self._listed:
            return not alternate and key not in self._alternates
        self._listed.add(key)
        if alternate:
            self._alternates.add(key)
        return True

    def _own_host(self, host: str) -> bool:
        """Whether a URL of ``host`` may be listed here: the sitemap's own host, or one
        whose robots.txt names this sitemap (sitemaps.org, cross-submission)."""
        return host == self.same_host or host in self.vouched_hosts

    def _priority(self, text: str | None, line: int) -> float:
        if text is None:
            return self.default_priority
        try:
            value = float(text)
        except ValueError:
            value = -1.0
        if not 0.0 <= value <= 1.0:  # also NaN
            self.reporter.warn(
                f"{self.source}:{line}: priority {text[:80]!r} is not 0.0-1.0; default used",
                kind="bad field",
            )
            return self.default_priority
        return value

    # ---- plain text

    def _read_text(self, first: bytes, chunks: Iterator[bytes]) -> Iterator[URLRecord]:
        """One URL a line (UTF-8, UTF-16 decoded to it before); blank lines skipped;
        overlong lines reported."""
        buf = first.removeprefix(b"\xef\xbb\xbf")
        lineno = 0  # lines completed so far
        skipping = False  # inside an overlong line
        while True:
            # CR alone ends a line too (old Mac editors): split on \n only, such a
            # file's URLs were glued into one invented URL (the parser drops the CRs).
            lines = _TEXT_LINES.split(buf)
            buf = lines.pop()  # the unfinished last line
            for i, line in enumerate(lines):
                if skipping:
                    skipping = False  # this piece ends the overlong line
                elif line and not line.isspace():
                    self._text_line(line, lineno + i + 1)
            lineno += len(lines)
            if len(buf) > MAX_TEXT:
                if not skipping:
                    self.stats.invalid += 1
                    self.reporter.bad_record(
                        self.source, lineno + 1, "line longer than 64 KiB skipped"
                    )
                skipping = True
                buf = b""
            yield from self._drain()
            chunk = next(chunks, None)
            if chunk is None:
                break
            buf += chunk
        if buf and not skipping and not self.stats.truncated and not buf.isspace():
            self._text_line(buf, lineno + 1)
        yield from self._drain()

    def _text_line(self, raw: bytes, lineno: int) -> None:
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            self.stats.invalid += 1
            self.reporter.bad_record(self.source, lineno, "invalid UTF-8 skipped")
            return
        if text:
            self._add(text, lineno)


def _transcode(chunks: Iterator[bytes], decoder: codecs.IncrementalDecoder) -> Iterator[bytes]:
    for chunk in chunks:
        yield decoder.decode(chunk).encode("utf-8")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8")


class _Prefixed(io.RawIOBase):
    """A stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)


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
