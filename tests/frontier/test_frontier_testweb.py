"""The frontier on crawlkit testweb: the calendar, session-id and link-farm traps.

A small breadth-first crawl in the test: the frontier hands out batches (budgets on),
each URL is fetched from testweb with a plain HTTP client, links are taken from the
HTML and canonicalized, a set stands in for seen-merge, and the new links go back to
``frontier add``. The crawl runs until the frontier has nothing more to give this
cycle; then we look at what was fetched, refused and parked.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import orjson
from conftest import start_testweb

from crawlkit.errors import InvalidURL
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.store import NextOptions
from crawlkit.stages.frontier import frontier_add, frontier_links, frontier_next, frontier_stats
from crawlkit.url import Canonicalizer

NOW = 1_748_736_000.0  # 2025-06-01: calendar months from 2027 on are "the future"
_HREF = re.compile(r'<a href="([^"]+)"')
_BASE = re.compile(r'<base href="([^"]+)">')


def test_traps_and_link_farm_on_testweb(tmp_path: Path) -> None:
    args = ["--hosts", "4", "--pages", "10", "--special", "calendar,session-trap,link-farm"]
    with start_testweb(tmp_path, *args) as web:
        canon = Canonicalizer()
        state = tmp_path / "state"
        refused: list[dict] = []
        seeds = [canon.parse(u) for u in web.seeds.read_text().split()]
        seen = {p.url for p in seeds}
        frontier_add(
            state,
            [{"url": p.url, "reason": "seed", "depth": 0} for p in seeds],
            on_refused=refused.append,
            now=NOW,
        )
        fetched: list[dict] = []
        for _ in range(100):  # bounded; ends when the cycle's budgets are spent
            batch = frontier_next(
                state, NextOptions(max_urls=300, per_host=60, now=NOW), write=lambda b: None
            )
            if not batch.lines:
                break
            found: list[dict] = []
            every: list[dict] = []  # all link records, as extract writes them
            for line in batch.lines:
                rec = orjson.loads(line)
                fetched.append(rec)
                status, headers, body = web.get(rec["url"])
                if status != 200 or not headers.get("content-type", "").startswith("text/html"):
                    continue
                html = body.decode("utf-8", "replace")
                base = _BASE.search(html)
                base_url = base.group(1) if base else rec["url"]
                for href in _HREF.findall(html):
                    try:
                        target = canon.parse(href.replace("&amp;", "&"), base_url)
                    except InvalidURL:
                        continue
                    every.append({"url": target.url, "site": target.site, "from": rec["url"]})
                    if target.url in seen:
                        continue
                    seen.add(target.url)
                    found.append(
                        {
                            "url": target.url,
                            "host": target.host,
                            "site": target.site,
                            "fp": target.fp,
                            "reason": "link",
                            "depth": rec["depth"] + 1,
                            "from": rec["url"],
                        }
                    )
            frontier_links(state, every)  # the whole site graph...
            frontier_add(state, found, on_refused=refused.append, now=NOW)  # ...new URLs
        else:
            raise AssertionError("the crawl did not settle")

    by_host = Counter(r["host"].split(":")[0] for r in fetched)
    reasons = Counter((r["host"].split(":")[0].split("-")[0], r["refused"]) for r in refused)
    policy = BudgetPolicy()
    seeded_budget = policy.base + policy.seed_bonus
    stats = frontier_stats(state)

    # the link farm: seeded (the seed bonus), linked once from h0.test's partner list (a
    # trusted site: one linker's worth), and nothing for the endless links its sites
    # make to each other; the rest of the farm waits, parked
    farm = {h: n for h, n in by_host.items() if h.startswith("link-farm")}
    assert len(farm) == 3
    assert all(n == seeded_budget + policy.per_linker for n in farm.values()), farm
    # the calendar: months past next year refused by date, the rest bounded by depth
    # and the site's budget
    cal_fetched = [r["url"] for r in fetched if r["host"].startswith("calendar")]
    assert reasons[("calendar", "calendar")] > 0
    assert all(int(m) <= 2026 for m in re.findall(r"/calendar/(\d{4})/", " ".join(cal_fetched)))
    assert len(cal_fetched) <= seeded_budget + policy.per_linker  # h0.test links to it too
    # the session trap: ?sid= dropped by canonicalization, /s/<token>/ refused
    sess_fetched = [r["url"] for r in fetched if r["host"].startswith("session-trap")]
    assert reasons[("session", "session-id")] > 0
    assert not any("/s/" in u for u in sess_fetched)
    assert len(sess_fetched) <= 11  # the root and its ten catalogue items
    # ordinary hosts are crawled completely
    ordinary = {u for h in web.manifest["hosts"] if h["kind"] == "ordinary" for u in h["pages"]}
    assert ordinary <= {r["url"] for r in fetched}
    # nothing dropped: every discovered URL was fetched, refused, or is still waiting
    assert len(seen) == len(fetched) + len(refused) + stats["queued"] + stats["parked"]
    assert stats["parked"] > 0 and stats["budgets"]["sites_over_budget"] >= 3
