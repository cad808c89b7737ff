"""The cross-site links of link records, gathered a slice of records at a time.

The frontier's site graph learns from every link record a crawl extracts
(:meth:`crawlkit.frontier.store.Frontier.note_links`). What it learns from them is
only which site links to which: :class:`SiteLinks` keeps each such pair once, in the
order first met, so a caller can read a cycle's links a slice at a time and let each
slice go, rather than hold every record until the graph is updated. A cycle's links
were read as one list: some 150,000 short-lived blocks whose peak left the crawl
process's allocator with arenas the long-lived objects made among them then kept
(issue 27). Learning the pairs in the order first met gives the same graph as
learning every link in order, since a link met again changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from crawlkit.records import Record
from crawlkit.url import site_of_url

__all__ = ["SiteLinks"]


class SiteLinks:
    """Each (site, linking site) pair of the link records added, once, in order."""

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, str], None] = {}
        self.read = 0  # records added
        self.noted = 0  # cross-site links among them (repeats included)

    def add(self, records: Iterable[Record]) -> None:
        """Take in link records: nofollow links and links within a site are skipped."""
        pairs = self.pairs
        # A page's links come one after another: its site is worked out once for them.
        last_from: Any = None
        last_site: str | None = None
        for rec in records:
            self.read += 1
            if rec.get("nofollow") is True:
                continue
            page = rec.get("from") or rec.get("via")
            if page != last_from or type(page) is not str:
                last_from, last_site = page, site_of_url(page)
            from_site = last_site
            if not from_site:
                continue
            site = rec.get("site")
            if type(site) is not str:
                site = site_of_url(rec.get("url"))
                if not site:
                    continue
            if site != from_site:
                pairs[site, from_site] = None
                self.noted += 1
