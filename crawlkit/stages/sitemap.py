"""``crawlkit sitemap``: sitemap files (any format, gzip or not) to URL records.

One document is :class:`crawlkit.sitemap.parse.SitemapReader`'s job; this stage reads
a list of files in order, adds up their counts and goes on past a file it cannot
read (reported, counted as failed), so one bad sitemap does not lose the others.
"""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import InputError
from crawlkit.records import URLRecord
from crawlkit.sitemap.parse import (
    DEFAULT_PRIORITY,
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_URLS,
    SitemapReader,
    SitemapStats,
)
from crawlkit.url import Canonicalizer

__all__ = ["SitemapRun", "read_sitemaps"]


@dataclass
class SitemapRun:
    """The counts of every file read so far, and how many could not be read on."""

    total: SitemapStats = field(default_factory=SitemapStats)
    failed: int = 0

    def add(self, stats: SitemapStats) -> None:
        self.total.urls += stats.urls
        self.total.sitemaps += stats.sitemaps
        self.total.invalid += stats.invalid
        self.total.over_limit += stats.over_limit
        self.total.foreign += stats.foreign


def read_sitemaps(
    paths: list[str],
    run: SitemapRun,
    reporter: Reporter,
    *,
    base: str | None = None,
    canonicalizer: Canonicalizer | None = None,
    max_urls: int = MAX_SITEMAP_URLS,
    max_bytes: int = MAX_SITEMAP_BYTES,
    default_priority: float = DEFAULT_PRIORITY,
    same_host: bool = False,
    vouched_hosts: Collection[str] = (),
) -> Iterator[URLRecord]:
    """The URL records of every file in ``paths`` (``-`` is stdin), in order.

    A file that cannot be read on (malformed XML, corrupt gzip) keeps the records
    before the damage, is reported as an error and counted in ``run.failed``. With
    ``same_host``, URLs of hosts other than ``base``'s are skipped unless their host is
    in ``vouched_hosts`` (hosts whose robots.txt names ``base``: cross-submission).
    """
    canon = canonicalizer if canonicalizer is not None else Canonicalizer()
    for path in paths:
        reader = SitemapReader(
            base=base,
            source=streams.display_name(path),
            reporter=reporter,
            canonicalizer=canon,
            max_urls=max_urls,
            max_bytes=max_bytes,
            default_priority=default_priority,
            same_host=same_host,
            vouched_hosts=vouched_hosts,
        )
        try:
            with contextlib.closing(streams.open_input(path)) as stream:
                yield from reader.read(stream)
        except InputError as exc:
            run.failed += 1
            reporter.warn(str(exc), kind="error")
        run.add(reader.stats)
