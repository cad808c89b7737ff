"""Bytes per known host and per known site in a crawl's processes (issue 27 item 5).

Builds the structures a crawl keeps per host and per site with N synthetic hosts (the
real classes, filled as a crawl fills them) and measures each with tracemalloc:

    .venv/bin/python bench/bench_host_memory.py                 # 10k and 100k hosts
    .venv/bin/python bench/bench_host_memory.py --hosts 10000 --sites-per-host 1

Per host: the fetcher's host (clock, address, empty queue) while it is in memory, its
DNS cache entry, its address's network-policy verdict, its robots.txt entry (a few
lines, parsed), its site in ``site_of_host``'s cache, and its count in the frontier.
Per site: the frontier's site table entry with 3 linkers, and the trust and budget
structures computed over it; and a site whose linkers are full (256), trust kept. In
the step process, per site: dedup's recent counts, the recrawl columns' site and
host names, the history's site priors. Per distinct page: dedup's near-copy index and
its whole store, and per tracked URL the recrawl columns (a crawl's step process keeps
these open all run: they grow with the pages). Which of these are bounded, and how, is
printed with them (the README's "Memory" section has the figures).
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from crawlkit.dedup.nearindex import NearIndex
from crawlkit.dedup.store import DedupStore
from crawlkit.fetch.hosts import Host
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolution, Resolver
from crawlkit.fetch.robotsflow import ROBOTS_CACHE_BYTES, entry_cost
from crawlkit.fetch.scheduler import HostQueue, Scheduler
from crawlkit.frontier.budgets import SiteTable
from crawlkit.frontier.journal import HostCounts
from crawlkit.html.resolve import RESOLVE_CACHE_BYTES
from crawlkit.recrawl import Entry, History
from crawlkit.recrawl.columns import Columns
from crawlkit.robots import RobotsPolicy
from crawlkit.url import site_of_host

ROBOTS = b"User-agent: *\nDisallow: /private/\nCrawl-delay: 1\nSitemap: http://h/s.xml\n"


def measure(build: Callable[[], Any]) -> tuple[int, Any]:
    """Bytes still held by what ``build`` returns (and its side effects)."""
    gc.collect()
    tracemalloc.start()
    kept = build()
    gc.collect()
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return held, kept


def per_host(n: int, sites_per_host: float) -> list[tuple[str, float, str]]:
    names = [f"www{i}.site{int(i * sites_per_host)}.example.com" for i in range(n)]
    addrs = [f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}" for i in range(n)]
    now = time.time()
    rows: list[tuple[str, float, str]] = []

    def hosts() -> dict[str, Host]:
        table = {}
        for name, addr in zip(names, addrs, strict=True):
            key = f"{name}:80"
            table[key] = Host(key, name=name, address=addr, durable=True, state="ready")
            table[key].next_allowed = now
        return table

    held, _ = measure(hosts)
    rows.append(("fetcher host (clock, address, queue)", held / n, "swept 60 s past due"))

    def dns() -> Resolver:
        r = Resolver(max_positive=n + 1)
        for name, addr in zip(names, addrs, strict=True):
            r._store(name, Resolution((addr,), None, now + 300))
        return r

    held, _ = measure(dns)
    rows.append(("DNS cache entry", held / n, "LRU, 200,000 entries"))

    def net() -> NetPolicy:
        policy = NetPolicy(["10.0.0.0/8"])
        for addr in addrs:
            policy.refusal(addr)
        return policy

    held, _ = measure(net)
    rows.append(("network-policy verdict per address", held / n, "100,000 entries"))

    queues = [HostQueue(name, address=addr) for name, addr in zip(names, addrs, strict=True)]

    def clocks() -> Scheduler:
        sched = Scheduler(min_delay=0.0, per_ip_delay=1.0)
        for q in queues:
            sched.start(q, now)
            sched.finish(q, now, elapsed=0.1, status=200)
        return sched

    held, _ = measure(clocks)
    rows.append(("scheduler clock per address", held / n, "dropped 60 s after it passed"))

    def robots() -> list[Any]:
        policy = RobotsPolicy()
        out = []
        for name in names:
            # distinct files (equal ones would share compiled patterns), with the
            # verdicts a crawl asks for (they build the per-agent view of the rules)
            entry = policy.on_response(200, ROBOTS.replace(b"/private/", f"/{name}/".encode()), now)
            rules = entry.rules()
            rules.check("crawlkit", f"http://{name}/a")
            rules.crawl_delay("crawlkit")
            out.append(entry)
        return out

    held, kept = measure(robots)
    estimate = sum(entry_cost(f"http://{name}:80", e) for name, e in zip(names, kept, strict=True))
    rows.append(
        (
            "robots.txt entry, parsed and asked (a few lines)",
            held / n,
            f"LRU, {ROBOTS_CACHE_BYTES >> 20} MiB estimated ({estimate / n:.0f} B each)",
        )
    )

    def sites() -> None:
        site_of_host.cache_clear()
        for name in names:
            site_of_host(name)

    site_of_host("warm.example.com")  # the suffix list is loaded once, not per host
    held, _ = measure(sites)
    rows.append(("site_of_host cache entry", held / n, "LRU, 262,144 entries"))

    def counts() -> HostCounts:
        c = HostCounts()
        for name in names:
            c[f"{name}:80"] = 3
        c.changed.clear()
        return c

    held, _ = measure(counts)
    rows.append(("frontier queued count per host", held / n, "only hosts with URLs queued"))
    return rows


def per_site(n: int) -> list[tuple[str, float, str]]:
    names = [f"site{i}.example.com" for i in range(n)]

    def table(linkers: int = 3) -> SiteTable:
        t = SiteTable()
        rng = np.random.default_rng(2)
        for i, name in enumerate(names):
            info = t.get(name)
            info.queued, info.fetched = 5, 10
            if i % 100 == 0:
                t.note_seed(name)  # a few seeds: trust spreads from them
            if linkers == 3:
                for j in (1, 2, 3):
                    t.note_link(name, names[(i + j) % n])
            else:
                # As a crawl learns them: each linker's name a new string (parsed from
                # a record), linkers drawn from all sites with a few hubs among them.
                picks = rng.zipf(1.3, linkers) % n
                for k in picks:
                    t.note_link(name, "site%d.example.com" % k)  # noqa: UP031 - a new str
        t.changed.clear()
        return t

    held, _ = measure(lambda: table(20))
    rows = [("frontier site entry (20 linkers, zipf)", held / n, "one per known site")]
    held, kept = measure(table)
    rows.append(("frontier site entry (3 linkers)", held / n, "one per known site, not evicted"))
    # What a crawl adds per site on top: the trusted set, its votes, ranks and out-links
    # (kept up to date once computed) and the budgets' memo.

    def trust() -> None:
        kept.trusted()
        for name in names:
            kept.budget(name)

    held, _ = measure(trust)
    rows.append(("frontier site trust and budget memo", held / n, "one per known site"))
    rows.append(("frontier site at 256 linkers, trust kept", saturated(), "max_linkers a site"))
    return rows


SATURATED_SITES = 2000


def saturated() -> float:
    """Bytes a site once its linkers are full (a web where every site links to many,
    like bench_crawl's seeded one), trust kept up to date link by link as a crawl's
    budgets keep it, each name a fresh string as parsed from a record. Measured on
    :data:`SATURATED_SITES` sites whatever ``--hosts`` (it is per site, and a site
    takes 256 links to fill)."""
    n = SATURATED_SITES
    rng = np.random.default_rng(4)

    def build() -> SiteTable:
        t = SiteTable()
        for i in range(n):
            t.get(f"s{i}.example.com").queued = 1
            if i % 100 == 0:
                t.note_seed(f"s{i}.example.com")
        for _ in range(300):
            t.trusted()
            for i, k in enumerate(rng.integers(n, size=n).tolist()):
                t.note_link("s%d.example.com" % i, "s%d.example.com" % k)  # noqa: UP031
        t.changed.clear()
        return t

    held, _ = measure(build)
    return held / n


def per_page(n: int) -> list[tuple[str, float, str]]:
    """What a crawl's step process keeps per distinct page (dedup's near-copy index and
    store) and per tracked URL (the recrawl columns)."""
    rng = np.random.default_rng(1)
    simhashes = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64)

    def index() -> NearIndex:
        ix = NearIndex()
        for start in range(0, n, 500):  # as cycles add them
            chunk = simhashes[start : start + 500]
            ix.add(np.arange(start, start + len(chunk), dtype=np.uint32), simhashes)
        return ix

    held, _ = measure(index)
    rows = [("dedup near-copy index", held / n, "none: 10 tables of ids + directories")]
    with tempfile.TemporaryDirectory() as tmp:

        def store() -> DedupStore:
            st = DedupStore(tmp)
            for start in range(0, n, 500):
                for i in range(start, min(n, start + 500)):
                    st.add(int(simhashes[i]), i + 1, i, f"http://h{i}.example/", True)
                st.seal_batch(start)
            st.commit()
            return st

        held, st = measure(store)
        st.close()
    rows.append(("dedup store, all of it (index, columns)", held / n, "none: grows per page"))

    def columns() -> Columns:
        kept = Columns([], ["fetched"])
        for start in range(0, n, 500):  # as cycles put them, names parsed afresh
            kept.put(
                Entry(
                    fp=int(simhashes[i]) * 2 + 1,
                    url=f"http://h{i}.example/",
                    site="".join(("h", str(i % 2000), ".example")),
                    host="".join(("h", str(i % 2000), ".example")),
                    rate=1e-5,
                    last_fetch=1.78e9 + i,
                    outcome="fetched",
                )
                for i in range(start, min(n, start + 500))
            )
        return kept

    held, _ = measure(columns)
    rows.append(("recrawl columns, per tracked URL", held / n, "none: grows per URL"))
    return rows


def step_per_site(n: int) -> list[tuple[str, float, str]]:
    """What a crawl's step process keeps per known site, beside what it keeps per
    page: dedup's recent counts, the recrawl columns' site and host names (one URL a
    site, host ``www.`` + site, each name a fresh string as parsed from a record), and
    the history's site priors."""
    names = [f"site{i}.example.com" for i in range(n)]
    with tempfile.TemporaryDirectory() as tmp:
        store = DedupStore(tmp)

        def counts() -> None:
            for name in names:
                fresh = "".join(("site", name[4:]))  # a record's own string
                for kind in ("unique", "unique", "exact", "near"):
                    store.count_site(fresh, kind)
            store.commit()  # as every cycle of a crawl does

        held, _ = measure(counts)
        store.close()
    rows = [("step: dedup's recent counts", held / n, "one per site the crawl met")]

    def entries(sites: int) -> list[Entry]:
        return [
            Entry(
                fp=i * 2 + 1,
                url=f"http://www.site{i % sites}.example.com/",
                site="".join(("site", str(i % sites), ".example.com")),
                host="".join(("www.site", str(i % sites), ".example.com")),
                rate=1e-5,
                last_fetch=1.78e9 + i,
                outcome="fetched",
            )
            for i in range(n)
        ]

    def columns(sites: int) -> Callable[[], Columns]:
        def build() -> Columns:
            kept = Columns([], ["fetched"])
            todo = entries(sites)
            for start in range(0, n, 500):
                kept.put(todo[start : start + 500])
            return kept

        return build

    one_site, _ = measure(columns(1))
    held, _ = measure(columns(n))
    rows.append(
        ("step: recrawl columns' site and host names", (held - one_site) / n, "one per site")
    )
    with tempfile.TemporaryDirectory() as tmp:
        history = History(Path(tmp))
        rates = 1e-5 * (1 + np.arange(n) % 7)

        def priors() -> None:
            # As a plan hands them each cycle; the history keeps what it wrote, to
            # write only what moved the next time.
            history.set_site_priors(names, rates * 1.0)

        held, _ = measure(priors)
        history.close()
    rows.append(("step: recrawl history's site priors", held / n, "one per site with a prior"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--hosts", type=int, action="append", help="default: 10000 and 100000")
    ap.add_argument("--sites-per-host", type=float, default=1.0, help="sites / hosts")
    args = ap.parse_args()
    for n in args.hosts or [10_000, 100_000]:
        print(f"\n{n:,} hosts, {int(n * args.sites_per_host):,} sites: bytes each")
        rows = per_host(n, args.sites_per_host) + per_site(int(n * args.sites_per_host))
        for label, size, bound in rows:
            print(f"  {label:42s} {size:8.0f}  {bound}")
        host_total = sum(size for label, size, _ in rows if "frontier site" not in label)
        typical = [r for r in rows if "20 linkers" not in r[0] and "256" not in r[0]]
        site_total = sum(size for label, size, _ in typical if "frontier site" in label)
        print(f"  {'per known host, all of the above':42s} {host_total:8.0f}")
        print(f"  {'per known site':42s} {site_total:8.0f}")
        step = step_per_site(int(n * args.sites_per_host))
        for label, size, bound in step:
            print(f"  {label:42s} {size:8.0f}  {bound}")
        print(f"  {'per known site, step process':42s} {sum(r[1] for r in step):8.0f}")
        for label, size, bound in per_page(n):
            print(f"  per distinct page: {label:23s} {size:8.0f}  {bound}")
    print(
        f"\nBounded whatever the crawl: the link resolver's cache "
        f"({RESOLVE_CACHE_BYTES >> 20} MiB estimated, per extract process), robots.txt "
        f"entries ({ROBOTS_CACHE_BYTES >> 20} MiB estimated)."
    )


if __name__ == "__main__":
    main()
