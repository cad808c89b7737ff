"""How URLs enter a crawl besides its own links: seeds, a shard's inbox, and a crash's leftovers.

A URL marked seen is always queued (invariant 4): new URLs are written to
``STATE/crawl/admitted/`` before the seen set commits them and removed once queued;
:meth:`Admission.requeue_admitted` queues what a crash left there.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from crawlkit.crawl.core import Gate
from crawlkit.crawl.files import CrawlDir, read_file
from crawlkit.crawl.retry import never_fetched
from crawlkit.crawl.stores import Stores
from crawlkit.diag import Reporter
from crawlkit.errors import InvalidURL
from crawlkit.fetch.hosts import split_url
from crawlkit.fetch.robotsflow import unavailable
from crawlkit.records import url_record
from crawlkit.robots import RobotsEntry
from crawlkit.shard.routing import inbox_files
from crawlkit.streams import Record
from crawlkit.url import site_of_url, trim_url

__all__ = ["INBOX_PREFIX", "Admission"]

INBOX_PREFIX = "inbox-"  # a cycle's copy of an inbox file its links step admitted


class Admission:
    """Seeds, a shard's inbox, what a crash left admitted, and the site links a shard
    shares with the others; URLs enter through the run's :class:`Gate`."""

    def __init__(
        self,
        gate: Gate,
        stores: Stores,
        dir: CrawlDir,
        reporter: Reporter,
        clock: Callable[[], float],
    ):
        self.gate = gate
        self.stores = stores
        self.dir = dir
        self.rep = reporter
        self.clock = clock
        # The inbox is taken in by the post thread's links step and the fetch side's
        # refill: one at a time, else both read a file and one finds it gone.
        self.inbox_lock = threading.Lock()
        self.inbox_taken = clock()  # when it was last taken in (see Feed._ingest_inbox)

    def add_seeds(self, urls: Iterable[str]) -> int:
        """Canonicalize seeds, widen the scope, and queue those never seen before."""
        records: list[Record] = []
        for raw in urls:
            try:
                parsed = self.gate.canon.parse(trim_url(raw))
            except InvalidURL as exc:
                self.rep.warn(f"seed skipped: {exc}", "bad seed")
                continue
            rec: Record = dict(url_record(parsed, depth=0, priority=1.0, reason="seed"))
            records.append(rec)
            self.gate.scope.add_seed(rec)  # every shard's scope has every seed
        self.gate.scope.save()
        if self.gate.role is not None:  # every shard gets every seed and keeps its own
            # ... but trusts every seed's site, as one shard would (site budgets)
            with self.stores.lock:
                self.stores.frontier.note_seeds({str(r["site"]) for r in records})
                self.stores.frontier.commit()
            records = [r for r in records if self.gate.role.owns(str(r["site"]))]
        if not records:
            return 0
        return self.admit(records, "seeds")

    def trust_seed_sites(self, urls: Iterable[str]) -> None:
        """Trust the sites of other shards' seeds (site budgets), queueing nothing: a
        worker of ``crawl --workers`` is given only its own seeds to queue."""
        sites: set[str] = set()
        for raw in urls:
            try:
                parsed = self.gate.canon.parse(trim_url(raw))
            except InvalidURL:
                continue
            sites.add(str(url_record(parsed, depth=0, reason="seed")["site"]))
        if sites:
            with self.stores.lock:
                self.stores.frontier.note_seeds(sites)
                self.stores.frontier.commit()

    def recheck_seeds(self, urls: Iterable[str]) -> None:
        """Make the seeds never fetched due now, asking again what kept them out.

        The operator named them again: each seed with no answer over HTTP leaves the
        waiting room (call this once they are queued: a crash in between queues a
        seed twice, never loses it), its origin's robots.txt, if it could not be had
        (a network error, 5xx, 429), is asked again before it instead of waiting out
        the retry time, and a failed name lookup is not taken from the DNS cache.
        A host's backoff after 429/503 still holds (politeness, invariant 2).
        """
        seeds = never_fetched(self.dir.state_path, urls, self.gate.canon, self.stores.history)
        if not seeds:
            return
        with self.stores.lock:
            if self.stores.waiting.take(str(r["url"]) for r in seeds):
                self.stores.waiting.save()
        now = self.clock()
        names: set[str] = set()
        origins: set[str] = set()
        for rec in seeds:
            try:
                sp = split_url(str(rec["url"]))
            except InvalidURL:
                continue
            names.add(sp.hostname.lower())
            origins.add(sp.origin)
        for origin in origins:
            saved = self.stores.hosts.robots(origin)
            try:
                entry = RobotsEntry.from_dict(saved) if saved is not None else None
            except (KeyError, TypeError, ValueError):
                entry = None
            if entry is not None and unavailable(entry) and entry.expires_at > now:
                self.stores.hosts.put_robots(origin, {**entry.to_dict(), "expires_at": now})
        cache = self.stores.hosts.dns()
        failed = {n for n, v in cache.items() if n in names and not v[0]}
        if failed:
            self.stores.hosts.save_dns({n: v for n, v in cache.items() if n not in failed})
        self.stores.hosts.commit()

    def widen_scope(self, urls: Iterable[str]) -> None:
        """Widen the scope by the seeds alone, queueing nothing (:meth:`add_seeds`
        queues them, and reports a bad one): done before a recovery, whose cycles'
        links are judged by the run's whole scope."""
        for raw in urls:
            try:
                parsed = self.gate.canon.parse(trim_url(raw))
            except InvalidURL:
                continue
            self.gate.scope.add_seed(dict(url_record(parsed, depth=0, priority=1.0, reason="seed")))
        self.gate.scope.save()

    def admit(self, records: list[Record], tag: str) -> int:
        """Queue the records never seen before; returns how many.

        The new URLs are written to ``STATE/crawl/admitted/`` before the seen set
        commits them and removed once they are queued; :meth:`requeue_admitted`
        queues what a crash left there. So a URL is never seen without being queued
        (invariant 4): a crash repeats it, never loses it.
        """
        path = self.dir.admitted / f"{time.time_ns():020d}-{tag}.ndjson.zst"
        fresh = self.gate.seen_merge(
            records, path, self.dir.root / f"{tag}-scope-refused.ndjson.zst"
        ).fresh
        self.gate.queue(fresh, self.dir.root / f"{tag}-refused.ndjson.zst")
        path.unlink(missing_ok=True)
        return len(fresh)

    def requeue_admitted(self) -> None:
        for path in sorted(self.dir.admitted.glob("*.ndjson.zst")):
            tag = path.name.split("-", 1)[1].split(".", 1)[0]
            self.gate.queue(read_file(path), self.dir.root / f"{tag}-refused.ndjson.zst")
            path.unlink()

    def ingest_inbox(self) -> bool:
        """Queue the URLs other shards (or a handoff) delivered; True if there were any.

        The fetch side's way in, for when no cycle's links step takes them in (see
        :meth:`take_inbox`): the frontier has nothing to give, or no cycle came for
        a while."""
        with self.inbox_lock:  # the post thread's take_inbox moves the same files
            files = inbox_files(self.dir.state_path, self.rep)
            if not files:
                return False
            # All the files at once: each admission commits the site graph, the seen
            # set and the frontier (fsyncs), and a worker of crawl --workers finds a
            # file from each peer's every cycle. (A crash before the unlinks: the files
            # are read again, and the seen set admits their URLs once.)
            records = [rec for path in files for rec in read_file(path)]
            # Delivered links (and other shards' site links) complete this shard's site
            # graph, on which site budgets rest; then the URLs among them are admitted.
            self.gate.note_links(records)
            urls = [r for r in records if r.get("url")]
            mine = self.gate.route(urls, "reroute")
            self.gate.summary.inbox_new_urls += self.admit(mine, "inbox")  # this thread's
            for path in files:
                path.unlink()
            self.inbox_taken = self.clock()
        return True

    def take_inbox(self, cycle: Path) -> list[Record]:
        """Move the inbox's files into ``cycle`` (as ``inbox-NAME``) and return the
        records of every such file the cycle holds (an earlier attempt's too).

        The links step admits them with the cycle's own links: one site-graph, one
        seen-set and one frontier commit for both. Admitted apart, at a refill, they
        cost a worker of ``crawl --workers 2`` about 2x one process's commits per page
        (issue 27). A crash before the links step's seen commit leaves them in the
        cycle, whose links step reads them again; after it, the seen set has them.
        """
        if self.gate.role is None:
            return []
        with self.inbox_lock:
            for path in inbox_files(self.dir.state_path, self.rep):
                os.rename(path, cycle / f"{INBOX_PREFIX}{path.name}")
            self.inbox_taken = self.clock()
        return [
            rec
            for path in sorted(cycle.glob(f"{INBOX_PREFIX}*.ndjson.zst"))
            for rec in read_file(path)
        ]

    def site_link_pairs(self, links: Iterable[Record]) -> set[tuple[str, str]]:
        """The cycle's cross-site links as distinct (linking site, site) pairs, for
        every other shard (none for an unsharded crawl); :func:`site_edges` makes them
        records. A union of those of each slice of a cycle's links is those of all.

        Site budgets trust a site by who links to it, transitively from the seeds, so
        each shard needs the whole site graph, not only the links to its own sites
        (which reach it as URLs). :meth:`Gate.route` writes them to every other
        shard's outbox in the file of the cycle's URLs for that shard.
        """
        pairs: set[tuple[str, str]] = set()
        if self.gate.role is None or self.gate.role.slot_map.shards < 2:
            return pairs
        for rec in links:
            if rec.get("nofollow") is True:
                continue
            site = rec.get("site")
            source = rec.get("from") or rec.get("via")
            if not isinstance(site, str) or not isinstance(source, str):
                continue
            from_site = site_of_url(source)
            if from_site and from_site != site:
                pairs.add((from_site, site))
        return pairs


def site_edges(pairs: Iterable[tuple[str, str]]) -> list[Record]:
    """A site-link record for each (linking site, site) pair, in sorted order."""
    return [
        {"site": site, "from": f"http://{from_site}/", "reason": "site-link"}
        for from_site, site in sorted(pairs)
    ]
