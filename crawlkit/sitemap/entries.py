"""Entries to URL records: the sitemap protocol's rules for one URL.

:class:`EntryRecords` takes what the readers found (an XML record's fields, an
hreflang alternate, a text line) and makes the URL record of docs/design.md, or
reports why not: a missing, relative (in a sitemap; a feed's resolve against the
base), invalid or overlong URL; another host's under ``same_host`` (unless a
vouched host's); beyond ``max_urls``. Bad ``lastmod``, ``changefreq`` and
``priority`` values are reported and left out. Records wait in a list until the
reader hands them on (:meth:`EntryRecords.drain`), after each chunk.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from crawlkit.diag import Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import URLRecord, url_record
from crawlkit.sitemap.dates import normalize_lastmod
from crawlkit.sitemap.model import ABSOLUTE, MAX_TEXT, SitemapStats
from crawlkit.url import Canonicalizer, ParsedURL

__all__ = ["EntryRecords"]

_CHANGEFREQ = frozenset({"always", "hourly", "daily", "weekly", "monthly", "yearly", "never"})


class EntryRecords:
    """The records of one document's entries, counted in ``stats`` and reported to
    ``reporter`` as ``source``. ``base`` is the sitemap's URL (``via``, and what a
    feed's relative links resolve against); ``same_host`` the only host whose URLs
    are kept, with ``vouched_hosts``, or None to keep every host's."""

    def __init__(
        self,
        *,
        base: str | None,
        source: str,
        reporter: Reporter,
        canon: Canonicalizer,
        stats: SitemapStats,
        max_urls: int,
        default_priority: float,
        same_host: str | None,
        vouched_hosts: Collection[str],
    ):
        self.base = base
        self.source = source
        self.reporter = reporter
        self.canon = canon
        self.stats = stats
        self.max_urls = max_urls
        self.default_priority = default_priority
        self.same_host = same_host
        self.vouched_hosts = frozenset(host.lower() for host in vouched_hosts)
        self._pending: list[URLRecord] = []
        self._listed: set[int] | None = None  # fingerprints given, once hreflang is seen
        # hreflang alternates not listed as a <loc> yet (their canonical URLs, by
        # fingerprint): held to the document's end, unless a <loc> takes their place
        self._alternates: dict[int, str] = {}

    def drain(self, final: bool = False) -> Iterator[URLRecord]:
        """The records made since the last call, in order; with ``final`` (the
        document ended, or broke), then the hreflang alternates held back, in the
        order first given (see :meth:`_first_listing`)."""
        pending, self._pending = self._pending, []
        yield from pending
        if final:
            held, self._alternates = self._alternates, {}
            for url in held.values():
                yield self._via(self._record(self.canon.parse(url)))  # (parsed before)

    def entry(self, entry: dict[str, str], line: int, alternates: list[tuple[str, int]]) -> None:
        """Turn one <url>/<sitemap>/<item>/<entry> into a pending record, or report it;
        then each of a <url>'s hreflang ``alternates`` (see :meth:`add`)."""
        if alternates and self._listed is None:
            self._listed = set()  # from here on each URL is listed once (see _first_listing)
        self._entry_loc(entry, line)
        for href, at in alternates:
            self.add(href, at, alternate=True)

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
        self.add(loc, line, kind, lastmod, entry.get("changefreq"), entry.get("priority"))

    def add(
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
            if stats.format not in ("rss", "rdf", "atom") and not ABSOLUTE.match(loc):
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
        listing = self._first_listing(parsed.fp, alternate)
        if listing is None:
            return
        if alternate and self._listed is not None:
            self._alternates[int(parsed.fp, 16)] = parsed.url  # out at the end, or replaced
            stats.urls += 1
            return
        record = self._record(parsed, self._priority(priority, line))
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
        if listing == "replaces":
            del self._alternates[int(parsed.fp, 16)]  # (counted when it was held)
        elif kind == "sitemap":
            stats.sitemaps += 1
        else:
            stats.urls += 1
        self._pending.append(self._via(record))

    def _record(self, parsed: ParsedURL, priority: float | None = None) -> URLRecord:
        """The URL record of ``parsed``, with ``priority`` (default: the default one)."""
        return url_record(
            parsed,
            depth=0,
            priority=self.default_priority if priority is None else priority,
            reason="sitemap",
        )

    def _via(self, record: URLRecord) -> URLRecord:
        """``record`` with ``via`` (the sitemap's URL), when known, as its last field."""
        if self.base is not None:
            record["via"] = self.base
        return record

    def _first_listing(self, fp: str, alternate: bool) -> str | None:
        """Whether to emit a URL: None when it is an hreflang alternate already listed
        (as a <loc> or an alternate) or a <loc> listed already, ``"replaces"`` for a
        <loc> given before as an alternate still held, else ``"new"``. Every <url> of
        a language cluster repeats the whole cluster, whose pages are <loc>s too; a
        French page in 30 languages came out 31 times. An alternate is held back to
        the document's end (:meth:`drain`): a <loc> of its URL coming later replaces
        it, so the URL comes out once with the <loc>'s lastmod, changefreq and
        priority (emitted at once, the alternate took the URL's one record and every
        page of a cluster but the first lost its lastmod). Fingerprints are kept from
        the first <url> with alternates on, so a sitemap without any keeps none
        (memory stays flat) and repeats of a plain <loc> are left as they were; the
        alternates held are bounded by the file's 50,000 URLs."""
        if self._listed is None:
            return "new"
        key = int(fp, 16)
        if key not in self._listed:
            self._listed.add(key)
            return "new"
        return "replaces" if not alternate and key in self._alternates else None

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

    def text_line(self, raw: bytes, lineno: int) -> None:
        """One line of a text sitemap (UTF-8) as a pending record, or reported; the
        URL is the line up to a tab, if it has one (what follows is reported)."""
        try:
            text = raw.decode("utf-8").strip()
        except UnicodeDecodeError:
            self.stats.invalid += 1
            self.reporter.bad_record(self.source, lineno, "invalid UTF-8 skipped")
            return
        url, tab, rest = text.partition("\t")
        if tab and rest.strip():
            # A tab ends the URL: a URL has none, and a line "URL<TAB>2024-05-01" (a
            # spreadsheet's export) came out as the invented URL ".../page2024-05-01"
            # (the URL parser drops tabs, as in an HTML attribute wrapped across lines).
            self.reporter.warn(
                f"{self.source}:{lineno}: text after a tab left out: {rest.strip()[:80]!r}",
                kind="bad field",
            )
        url = url.strip()
        if url:
            self.add(url, lineno)

    def overlong_line(self, lineno: int) -> None:
        """A text sitemap's line longer than 64 KiB: counted invalid and reported."""
        self.stats.invalid += 1
        self.reporter.bad_record(self.source, lineno, "line longer than 64 KiB skipped")
