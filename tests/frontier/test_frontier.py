"""crawlkit frontier: trap limits, batch shape, priorities, budgets, blocks, durability."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import orjson
import pytest
import zstandard
from conftest import crawlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.frontier.budgets import BudgetPolicy, SiteTable
from crawlkit.frontier.priority import split
from crawlkit.frontier.queues import SMALL_SEGMENT, SegmentQueue, SegmentStore
from crawlkit.frontier.store import NextOptions
from crawlkit.frontier.traps import TrapChecker, TrapLimits, depth_refusal
from crawlkit.stages.frontier import frontier_add, frontier_links, frontier_next, frontier_stats

NOW = 1_780_000_000.0  # 2026-05-28


def add(state: Path, records, **kw):
    refused: list[dict] = []
    result = frontier_add(state, records, on_refused=refused.append, now=kw.pop("now", NOW), **kw)
    return result, refused


def take(state: Path, max_urls: int, **kw):
    kw.setdefault("now", NOW)
    policy = kw.pop("policy", None)
    batch = frontier_next(
        state, NextOptions(max_urls=max_urls, **kw), write=lambda b: None, policy=policy
    )
    return [orjson.loads(line) for line in batch.lines], batch.refused


def link(url: str, frm: str | None = None, depth: int = 1, **extra) -> dict:
    rec = {"url": url, "reason": "link", "depth": depth, **extra}
    if frm:
        rec["from"] = frm
    return rec


# --------------------------------------------------------------------------- traps


@pytest.mark.parametrize(
    ("url", "depth", "reason"),
    [
        ("https://a.test/" + "x" * 2001, 1, "url-length"),
        ("https://a.test/" + "/".join(f"d{i}" for i in range(16)), 1, "path-depth"),
        ("https://a.test/a/b/a/b/a/", 1, "repeated-segment"),
        ("https://a.test/x/x/x", 1, "repeated-segment"),
        ("https://a.test/s?" + "&".join(f"f{i}=1" for i in range(11)), 1, "query-params"),
        ("https://a.test/p?sid=8f3a9c0d", 1, "param-denylist"),
        ("https://a.test/p?sid=0000000000012345", 1, "param-denylist"),
        ("https://a.test/p?session=4x20931877", 1, "param-denylist"),
        ("https://a.test/p?PHPSESSID=abc", 1, "param-denylist"),
        ("https://a.test/p?BV_SessionID=@@@@0417.2231@@@@", 1, "param-denylist"),
        ("https://a.test/p?n=1&_sessionid=k2v9x7", 1, "param-denylist"),
        ("https://a.test/p?_sid=3e1f0c9a2b7d4e6f", 1, "param-denylist"),
        ("https://a.test/p;jsessionid=ABC123/x", 1, "session-id"),
        ("https://a.test/(S(lit3py55t21z5v55vlm25s55))/page.aspx", 1, "session-id"),
        # the same with other cookieless values beside the session's, and ASP.NET 1.x's
        # bare id: a new URL per session too, which the trap let through
        ("https://a.test/(X(1)S(q2vb1d45ofz3ri55kh0wtr45))/shop/cart.aspx", 1, "session-id"),
        (
            "https://a.test/(A(Zm9vYmFyLWFub24taWQtMDAx)S(q2vb1d45ofz3ri55kh0wtr45))/",
            1,
            "session-id",
        ),
        ("https://a.test/app/(q2vb1d45ofz3ri55kh0wtr45)/list.aspx?p=2", 1, "session-id"),
        ("https://a.test/s/4x20931877/catalog/item-2.html", 1, "session-id"),
        ("https://a.test/session/9f8e7d6c5b4a/", 1, "session-id"),
        ("https://a.test/cal/2031/01/", 3, "calendar"),
        ("https://a.test/events?date=2040-02-11", 3, "calendar"),
        ("https://a.test/events?year=2035&month=3", 3, "calendar"),
        ("https://a.test/page", 21, "max-depth"),
    ],
)
def test_trap_limits_refuse(url: str, depth: int, reason: str) -> None:
    verdict = TrapChecker(TrapLimits(), now=NOW).check(url, depth)
    assert verdict is not None and verdict[0] == reason


@pytest.mark.parametrize(
    "url",
    [
        "https://a.test/",
        "https://a.test/" + "/".join(f"d{i}" for i in range(15)),
        "https://a.test/a/b/a/b/",  # a segment twice is fine
        "https://a.test/s?" + "&".join(f"f{i}=1" for i in range(10)),
        "https://a.test/blog/2019/05/post",  # archives of the past are content
        "https://a.test/cal/2027/12/",  # next year's calendar is allowed
        "https://a.test/item/2999",  # a number is not a date
        "https://a.test/p?side=1&sidebar=2",  # names that merely start like "sid"
        "https://a.test/story.php?sid=12",  # a story's id, not a session's
        "https://a.test/story.php?_sid=12",
        "https://a.test/article.pl?sid=06/12/05/1234567",
        "https://a.test/talks?session=keynote",
        "https://a.test/s/about/",  # a segment "s" followed by a word
        "https://a.test/docs/s3/v2/",
        "https://a.test/wiki/Set_(mathematics)/talk",  # parentheses of a title
        "https://a.test/f(x)/(S(short))/",  # no generated id among them
        "https://a.test/(abcdefghijklmnopqrstuvwx)/",  # 24 letters, no digit
    ],
)
def test_trap_limits_accept(url: str) -> None:
    assert TrapChecker(TrapLimits(), now=NOW).check(url, 20) is None


def test_a_page_requisite_has_no_link_depth_limit(tmp_path: Path) -> None:
    """The deepest pages get their images: a requisite's limit is its own hops."""
    deep_link = link("https://a.test/deep", depth=21)
    image = link("https://a.test/deep.png", depth=21, reason="requisite")
    result, refused = add(tmp_path / "s", [deep_link, image])
    assert [(r["url"], r["refused"]) for r in refused] == [(deep_link["url"], "max-depth")]
    assert result.queued == 1
    assert depth_refusal(image, 20) is None
    assert depth_refusal(deep_link, 20) == ("max-depth", "depth 21 > 20")
    assert depth_refusal(deep_link, None) is None and depth_refusal({"depth": "x"}, 1) is None


def test_calendar_and_session_traps_are_stopped_end_to_end(tmp_path: Path) -> None:
    """A calendar walking forward month by month and a session-id trap, as link records."""
    state = tmp_path / "s"
    cal = [
        link(f"https://cal.test/cal/{2026 + m // 12}/{m % 12 + 1:02d}/", depth=m + 1)
        for m in range(4, 200)
    ]
    # the same page under ever new session ids, already canonicalized upstream (fp set)
    sess = [
        {
            **link(f"https://sess.test/page?sid={i:08x}{i * 7919:08x}", depth=2),
            "host": "sess.test",
            "site": "sess.test",
            "fp": f"{i:016x}",
        }
        for i in range(100)
    ]
    result, refused = add(state, cal + sess)
    reasons = Counter(r["refused"] for r in refused)
    # months up to December 2027 are allowed (next year), later ones refused by date, and
    # the walk's depth limit would stop it anyway
    assert reasons["param-denylist"] == 100
    assert reasons["calendar"] + reasons["max-depth"] == len(cal) - result.queued
    assert result.queued == 16  # May 2026 .. Dec 2027 minus nothing: depth <= 20 there
    assert result.queued + result.refused == len(cal) + len(sess)  # invariant 1
    assert {r["outcome"] for r in refused} == {"refused"}


# --------------------------------------------------------------------------- add


def test_add_canonicalizes_and_keeps_unknown_fields(tmp_path: Path) -> None:
    state = tmp_path / "s"
    result, refused = add(
        state,
        [
            {
                "url": "HTTP://WWW.Example.COM:80/a/../b?utm_source=x",
                "reason": "seed",
                "mine": [1, 2],
            }
        ],
    )
    assert result.queued == 1 and not refused
    batch, _ = take(state, 10)
    (rec,) = batch
    assert rec["url"] == "http://www.example.com/b"
    assert rec["host"] == "www.example.com" and rec["site"] == "example.com"
    assert len(rec["fp"]) == 16 and rec["mine"] == [1, 2] and rec["level"] == 0


def test_invalid_and_urlless_records_come_out_refused(tmp_path: Path) -> None:
    result, refused = add(tmp_path / "s", [{"url": "mailto:x@y"}, {"url": 5}, {"nourl": 1}])
    assert result.queued == 0
    assert [r["refused"] for r in refused] == ["invalid-url", "invalid-url", "bad-record"]


def test_recrawl_of_queued_url_is_not_queued_twice(tmp_path: Path) -> None:
    state = tmp_path / "s"
    rec = {"url": "https://a.test/x", "reason": "recrawl", "due": NOW - 10, "interval": 86400}
    add(state, [dict(rec)])
    result, _ = add(state, [dict(rec), dict(rec)])
    assert result.duplicates == 2 and result.queued == 0
    batch, _ = take(state, 10)
    assert len(batch) == 1
    result, _ = add(state, [dict(rec)])  # handed out: it may be queued again
    assert result.queued == 1


def test_every_accepted_url_comes_out_exactly_once(tmp_path: Path) -> None:
    state = tmp_path / "s"
    recs = [
        link(f"https://h{i % 37}.test/p{i}", frm=f"https://h{(i + 1) % 37}.test/")
        for i in range(3000)
    ]
    add(state, recs)
    seen: Counter[str] = Counter()
    for _ in range(200):
        batch, _ = take(state, 250, per_host=5, budgets=False)
        if not batch:
            break
        seen.update(r["url"] for r in batch)
    assert set(seen) == {r["url"] for r in recs}
    assert max(seen.values()) == 1
    assert frontier_stats(state)["queued"] == 0


# --------------------------------------------------------------------------- batch shape


def test_batch_shape_per_host_cap_and_spread(tmp_path: Path) -> None:
    state = tmp_path / "s"
    # one huge host first in the queue, then 200 hosts with 5 URLs each
    big = [link(f"https://big.test/p{i}") for i in range(5000)]
    small = [link(f"https://h{h}.test/p{i}") for i in range(5) for h in range(200)]
    add(state, big + small)
    batch, _ = take(state, 400, per_host=3, budgets=False)
    hosts = Counter(r["host"] for r in batch)
    assert len(batch) == 400
    assert max(hosts.values()) <= 3
    assert len(hosts) >= 134  # 400 / 3: as many hosts as the cap requires, or more
    # spread: hosts take turns, so the first 200 records come from 150+ distinct hosts
    assert len({r["host"] for r in batch[:200]}) >= 150


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records read from the queue heads, appended per ``SegmentQueue.take`` call."""
    reads: list[int] = []
    take = SegmentQueue.take

    def counting(self: SegmentQueue, n: int) -> list[bytes]:
        lines = take(self, n)
        reads.append(len(lines))
        return lines

    monkeypatch.setattr(SegmentQueue, "take", counting)
    return reads


def test_a_batch_stops_reading_once_every_host_queued_is_busy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A one-site crawl: the fetcher holds --per-host URLs of the one host, so a batch
    can give nothing; it reads a window at most, not eight (the whole queue, rotated to
    its tail on every call), and for the host's last free places little more."""
    state = tmp_path / "s"
    add(state, [link(f"https://one.test/p{i}") for i in range(20_000)])
    reads = _count_reads(monkeypatch)
    batch, _ = take(state, 1000, per_host=10, budgets=False, outstanding={"one.test": 10})
    assert batch == []
    window = 2 * 1000 + 256
    assert sum(reads) <= window, reads
    reads.clear()
    batch, _ = take(state, 1000, per_host=10, budgets=False, outstanding={"one.test": 4})
    assert len(batch) == 6  # the rest of its --per-host, then nothing more to read for
    assert sum(reads) <= window, reads
    assert frontier_stats(state)["queued"] == 20_000 - 6


def test_a_busy_host_does_not_hide_the_hosts_queued_behind_it(tmp_path: Path) -> None:
    state = tmp_path / "s"
    big = [link(f"https://big.test/p{i}") for i in range(5000)]
    small = [link(f"https://h{h}.test/p{i}") for i in range(5) for h in range(200)]
    add(state, big + small)
    seen: Counter[str] = Counter()
    batch, _ = take(state, 400, per_host=3, budgets=False, outstanding={"big.test": 3})
    # Rounds that give nothing read on while other hosts have URLs queued: through
    # the big host's 5,000 to the small hosts' (a URL of each, at least).
    assert len(batch) >= 200
    assert "big.test" not in {r["host"] for r in batch}
    seen.update(r["url"] for r in batch)
    for _ in range(100):  # then the big host is free again: every URL comes out once
        batch, _ = take(state, 400, per_host=400, budgets=False)
        if not batch:
            break
        seen.update(r["url"] for r in batch)
    assert set(seen) == {r["url"] for r in big + small}
    assert max(seen.values()) == 1


def test_priority_levels_weighted_and_low_levels_trickle(tmp_path: Path) -> None:
    state = tmp_path / "s"
    seeds = [{"url": f"https://s{i}.test/", "reason": "seed"} for i in range(600)]
    deep = [link(f"https://d{i}.test/x", depth=7) for i in range(600)]  # level 3
    add(state, seeds + deep)
    add(state, [link(f"https://d{i}.test/y", depth=7) for i in range(600)])  # level 3, not new
    batch, _ = take(state, 90, per_host=1, discovery_share=0.0)
    levels = Counter(r["level"] for r in batch)
    assert levels[0] > levels[3] > 0  # order honoured, low level still let through
    assert levels[0] == 80 and levels[3] == 10  # 8 : 1 between the two non-empty levels


def test_split_weights() -> None:
    assert split(15, {"a": 8, "b": 4, "c": 2, "d": 1}) == {"a": 8, "b": 4, "c": 2, "d": 1}
    assert split(4, {"a": 8, "b": 4, "c": 2, "d": 1})["d"] == 1  # never rounded away
    assert sum(split(1001, {"a": 8, "b": 0, "c": 2}).values()) == 1001


def test_recrawl_share(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, [link(f"https://n{i}.test/") for i in range(500)])
    add(state, [{"url": f"https://r{i}.test/", "reason": "recrawl"} for i in range(500)])
    batch, _ = take(state, 100)
    reasons = Counter(r["reason"] for r in batch)
    assert reasons["recrawl"] == 60 and reasons["link"] == 40
    batch, _ = take(state, 100, recrawl_share=0.25)
    assert Counter(r["reason"] for r in batch)["recrawl"] == 25


def test_discovery_share_reaches_new_sites(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, [{"url": f"https://old.test/{i}", "reason": "seed"} for i in range(10)])
    take(state, 10, per_host=100)  # old.test has been fetched now
    add(state, [link(f"https://old.test/more{i}", frm="https://x.test/") for i in range(500)])
    add(state, [link(f"https://new{i}.test/", depth=6) for i in range(50)])  # level 3, unseen
    batch, _ = take(state, 100, per_host=100)
    new_sites = [r for r in batch if r["site"].startswith("new")]
    assert len(new_sites) == 10  # --discovery-share 0.1 of the new URLs


# --------------------------------------------------------------------------- budgets


def _farm_records(n_farm: int = 10, pages: int = 200) -> list[dict]:
    recs = [{"url": "https://seed.test/", "reason": "seed"}]
    recs.append(link("https://farm0.test/", frm="https://seed.test/"))  # the one way in
    for f in range(n_farm):
        for p in range(pages):
            other = (f + p + 1) % n_farm
            recs.append(link(f"https://farm{f}.test/p{p}", frm=f"https://farm{other}.test/p{p}"))
    return recs


def test_link_farm_stays_inside_its_small_budget(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, _farm_records())
    # an honest site linked from two seeds, with the same number of pages
    add(state, [{"url": "https://s2.test/", "reason": "seed"}])
    add(state, [link(f"https://good.test/p{i}", frm="https://seed.test/") for i in range(200)])
    add(state, [link("https://good.test/", frm="https://s2.test/")])
    handed: Counter[str] = Counter()
    for _ in range(30):
        batch, _ = take(state, 500, per_host=1000)
        if not batch:
            break
        handed.update(r["site"] for r in batch)
    policy = BudgetPolicy()
    farm = {s: n for s, n in handed.items() if s.startswith("farm")}
    assert farm["farm0.test"] == policy.base + policy.per_linker * 1  # one trusted linker
    assert all(n == policy.base for s, n in farm.items() if s != "farm0.test")
    assert sum(farm.values()) <= 10 * policy.base + policy.per_linker
    assert handed["good.test"] == 201  # 2 trusted linkers: budget 210, all its pages
    stats = frontier_stats(state)
    assert stats["parked"] == 10 * 200 + 1 - sum(farm.values())  # waiting, not dropped
    assert stats["budgets"]["sites_over_budget"] == 10
    # next cycle: the budget refills, the parked URLs come back
    batch, _ = take(state, 5000, per_host=1000, now=NOW + 86400 + 1)
    again = Counter(r["site"] for r in batch if r["site"].startswith("farm"))
    assert again["farm3.test"] == policy.base
    # --no-budgets: everything goes
    batch, _ = take(state, 5000, per_host=1000, budgets=False, now=NOW + 86400 + 2)
    assert len(batch) == stats["parked"] - sum(again.values())


def test_farm_without_outside_links_earns_no_trust() -> None:
    table = SiteTable()
    for a in range(20):
        for b in range(20):
            table.note_link(f"f{a}.test", f"f{b}.test")
    table.note_seed("seed.test")
    table.note_link("f0.test", "seed.test")
    assert table.trusted() == {"seed.test"}
    assert table.budget("f5.test") == table.policy.base
    assert table.budget("f0.test") == table.policy.base + table.policy.per_linker
    # two trusted linkers make a site trusted, but its links back and forth with the
    # other farm sites are reciprocal: worth nothing
    table.note_seed("seed2.test")
    table.note_link("f0.test", "seed2.test")
    assert "f0.test" in table.trusted()
    assert table.credited("f5.test") == 0
    # a one-way link from a trusted site does count
    table.note_link("oneway.test", "f0.test")
    assert table.credited("oneway.test") == 1


def test_seeded_farm_earns_nothing_from_its_own_links() -> None:
    """Every farm site given as a seed (as testweb's seeds file does): the seed bonus,
    and nothing for the links the farm sites make to each other."""
    table = SiteTable()
    farm = [f"farm{i}.test" for i in range(5)]
    for a in farm:
        table.note_seed(a)
        for b in farm:
            table.note_link(a, b)
    policy = table.policy
    assert {table.budget(f) for f in farm} == {policy.base + policy.seed_bonus}
    # an honest seeded site with two one-way links from other seeds grows
    table.note_seed("honest.test")
    table.note_link("honest.test", "farm0.test")
    table.note_link("honest.test", "farm1.test")
    assert table.budget("honest.test") == policy.base + policy.seed_bonus + 2 * policy.per_linker


def test_parked_urls_come_back_in_the_same_cycle_when_the_budget_rises(tmp_path: Path) -> None:
    # A site's URLs are parked over its budget; then a trusted site's link to it is
    # learned (later in the crawl, or from another shard): it may take more now, not a
    # whole budget cycle later.
    state = tmp_path / "s"
    policy = BudgetPolicy()
    add(state, [link(f"https://late.test/p{i}") for i in range(60)])
    first, _ = take(state, 500, per_host=1000)
    assert len(first) == policy.base
    assert frontier_stats(state)["parked"] == 60 - policy.base
    add(state, [{"url": "https://seed.test/", "reason": "seed"}])
    frontier_links(state, [link("https://late.test/", frm="https://seed.test/")])
    second, _ = take(state, 500, per_host=1000, now=NOW + 60)  # same budget cycle
    assert sum(r["site"] == "late.test" for r in second) == 60 - policy.base
    assert frontier_stats(state)["parked"] == 0


def test_subdomains_share_one_site_budget(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(
        state,
        [
            link(f"https://x{i}.spam.example.com/", frm=f"https://y{i}.spam.example.com/")
            for i in range(300)
        ],
    )
    batch, _ = take(state, 1000, per_host=10)
    assert len(batch) == BudgetPolicy().base
    assert len({r["host"] for r in batch}) == len(batch)


def test_dedup_yield_cuts_the_budget(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(
        state,
        [
            {"url": "https://seed.test/", "reason": "seed"},
            {"url": "https://s2.test/", "reason": "seed"},
        ],
    )
    recs = [
        link(f"https://copies.test/p{i}", frm=f"https://{s}.test/")
        for i in range(500)
        for s in ("seed", "s2")
    ]
    add(state, recs)
    result, _ = add(
        state, [{"site": "copies.test", "pages": 100, "exact": 60, "near": 30, "yield": 0.9}]
    )
    assert result.site_records == 1
    batch, _ = take(state, 5000, per_host=1000)
    got = sum(1 for r in batch if r["site"] == "copies.test")
    assert got == int((10 + 2 * 100) * 0.1)


# --------------------------------------------------------------------------- blocks


def test_block_takes_effect_on_next_batch_and_nothing_is_dropped(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(
        state,
        [
            link(f"https://{h}/p{i}")
            for i in range(20)
            for h in ("a.bad.test", "b.bad.test", "ok.test", "c.other.test")
        ],
    )
    r = crawlkit("frontier", "block", "--state", str(state), "bad.test")
    assert r.code == 0, r.stderr
    r = crawlkit("frontier", "block", "--state", str(state), "c.other.test")
    assert r.code == 0, r.stderr
    assert set(frontier_stats(state)["blocked"]) == {"bad.test", "c.other.test"}
    add(state, [link("https://ok.test/late")])  # an add applies the block first...
    batch, refused = take(state, 5, per_host=5)  # ...and the next batch still purges
    assert len(refused) == 60  # every queued URL of the blocked site and host, at once
    assert {r["refused"] for r in refused} == {"blocked"}
    assert {r["host"] for r in batch} == {"ok.test"}
    _, refused_add = add(state, [link("https://z.bad.test/new")])
    assert [r["refused"] for r in refused_add] == ["blocked"]
    crawlkit("frontier", "unblock", "--state", str(state), "bad.test")
    result, _ = add(state, [link("https://z.bad.test/new")])
    assert result.queued == 1
    stats = frontier_stats(state)
    assert stats["queued"] == 17 and stats["refused"]["blocked"] == 61


# --------------------------------------------------------------------------- queues


def test_segment_queue_fifo_push_front_and_back(tmp_path: Path) -> None:
    store = SegmentStore(tmp_path)
    q = SegmentQueue(store)
    q.push_back([b"%d\n" % i for i in range(10)])
    q.push_back([b"%d\n" % i for i in range(10, 20)])
    assert q.take(3) == [b"0\n", b"1\n", b"2\n"]
    q.push_front([b"x\n"])
    q.push_back([b"y\n"])
    assert q.take_all() == [b"x\n"] + [b"%d\n" % i for i in range(3, 20)] + [b"y\n"]
    # segments are zstd NDJSON files
    q.push_back([b'{"a":1}\n'])
    ((seg_id, _, _),) = q.segs
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(store.path(seg_id).read_bytes())
    assert json.loads(raw) == {"a": 1}


def test_a_segment_is_decompressed_once_while_takes_put_lines_back(tmp_path: Path) -> None:
    # The frontier's next takes a window from the head, hands out part of it and puts
    # the rest back at the head as a segment of its own: the big segment behind is
    # still the one read, and is not decompressed again by every refill.
    store = SegmentStore(tmp_path)
    reads: Counter[int] = Counter()
    read_raw = store.read_raw

    def counted(seg_id: int) -> bytes:
        reads[seg_id] += 1
        return read_raw(seg_id)

    store.read_raw = counted  # type: ignore[method-assign]
    q = SegmentQueue(store)
    q.push_back([b"%d\n" % i for i in range(5000)])
    ((big, _, _),) = q.segs
    handed: list[bytes] = []
    while len(q):
        window = q.take(300)
        handed += window[:100]
        q.push_front(window[100:])
    assert handed == [b"%d\n" % i for i in range(5000)]
    assert reads[big] == 1
    # every segment put back was read once, when its turn came
    assert set(reads.values()) == {1}


def test_state_survives_reopen_and_orphans_are_removed(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, [link(f"https://h{i}.test/") for i in range(100)])
    junk = state / "frontier" / "seg-000000999999.ndjson.zst"
    junk.write_bytes(b"junk")
    take(state, 30, per_host=1)
    assert not junk.exists()
    stats = frontier_stats(state)
    assert stats["queued"] == 70 and stats["handed_out"] == 30 and stats["hosts"] == 70


def test_leftovers_of_every_writer_are_removed_and_the_rest_kept(tmp_path: Path) -> None:
    """What a crash leaves in ``DIR/frontier`` (this version's ``.tmp-`` names, an older
    one's ``*.tmp`` names, side files and segments of a commit that never happened) is
    removed on the next open; the committed state and files the frontier does not own
    are untouched."""
    state = tmp_path / "s"
    add(state, [link(f"https://h{i}.test/") for i in range(40)])
    d = state / "frontier"
    debris = [
        ".tmp-seg-000000000077.ndjson.zst",
        "seg-000000000078.ndjson.zst.tmp",
        ".manifest.json.a1b2c3.tmp",
        ".tmp-manifest.json",
        "sites-99.json.zst",
        "hosts-99.json.zst",
        "recrawl-99.fps",
        "seg-000000000079.ndjson.zst",
    ]
    for name in debris:
        (d / name).write_bytes(b"half")
    (d / "README.operator").write_text("not the frontier's")
    batch, _ = take(state, 100)
    assert len(batch) == 40  # every committed URL, none lost to the clean-up
    after = {p.name for p in d.iterdir()}
    assert not after & set(debris)
    assert "README.operator" in after and "manifest.json" in after


def test_failed_write_hands_the_batch_out_again(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, [link(f"https://h{i}.test/") for i in range(10)])

    def boom(batch):
        raise OSError("disk full")

    with pytest.raises(OSError):
        frontier_next(state, NextOptions(max_urls=5, now=NOW), write=boom)
    batch, _ = take(state, 100)
    assert len(batch) == 10


# --------------------------------------------------------------------------- CLI


def test_cli_add_next_stats(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    lines = [
        json.dumps({"url": f"https://h{i % 4}.test/p{i}", "reason": "seed"}) for i in range(12)
    ]
    lines.append(json.dumps({"url": "https://h1.test/a/a/a/"}))
    lines.append("not json")
    lines.append(json.dumps({"href": "https://h1.test/no-url-field"}))
    r = crawlkit("frontier", "add", "--state", state, input="\n".join(lines).encode() + b"\n")
    assert r.code == 0, r.stderr
    (refused,) = [json.loads(x) for x in r.lines]
    assert refused["refused"] == "repeated-segment" and refused["outcome"] == "refused"
    assert (
        "12 queued, 1 refused" in r.stderr
        and "2 bad records" in r.stderr
        and ":15: neither a URL record" in r.stderr
    )
    out = tmp_path / "batch.ndjson.zst"
    r = crawlkit(
        "frontier", "next", "--state", state, "--max", "8", "--per-host", "2", "-o", str(out)
    )
    assert r.code == 0, r.stderr
    raw = zstandard.ZstdDecompressor().decompressobj().decompress(out.read_bytes())
    batch = [json.loads(x) for x in raw.splitlines()]
    assert len(batch) == 8 and max(Counter(b["host"] for b in batch).values()) == 2
    r = crawlkit("frontier", "stats", "--state", state)
    stats = json.loads(r.stdout)
    assert stats["queued"] == 4 and stats["refused"] == {"repeated-segment": 1}
    assert stats["levels"]["new"][0] == 4


def test_cli_pipe_between_stages_on_one_state_dir(tmp_path: Path) -> None:
    """recrawl holds the lock while it writes into the pipe; add reads first, then waits."""
    import subprocess
    import sys

    state = str(tmp_path / "s")
    fetches = tmp_path / "fetched.ndjson"
    fetches.write_text(
        "".join(
            json.dumps(
                {
                    "url": f"https://h{i}.test/",
                    "status": 200,
                    "outcome": "fetched",
                    "fetched_at": NOW - 2 * 86400,
                    "digest": f"d{i}",
                }
            )
            + "\n"
            for i in range(3000)
        )
    )
    py = sys.executable
    cmd = (
        f"{py} -m crawlkit recrawl --state {state} --now {NOW} {fetches} "
        f"| {py} -m crawlkit frontier add --state {state} --now {NOW}"
    )
    proc = subprocess.run(cmd, shell=True, capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(crawlkit("frontier", "stats", "--state", state).stdout)["queued"] == 3000


# --------------------------------------------------------------------------- properties

_urls = st.builds(
    lambda host, path, q: f"https://{host}.test/{path}" + (f"?{q}" if q else ""),
    st.sampled_from(["a", "b", "c", "www.d", "e.d"]),
    st.sampled_from(["", "x", "a/b/a/b/a/", "cal/2040/01/", "p;jsessionid=ABC123", "deep/" * 16]),
    st.sampled_from(["", "sid=abc123", "q=1", "&".join(f"k{i}=1" for i in range(12))]),
)
_records = st.lists(
    st.fixed_dictionaries(
        {"url": _urls, "reason": st.sampled_from(["seed", "link", "sitemap", "recrawl"])},
        optional={"depth": st.integers(0, 25)},
    ),
    max_size=40,
)


@settings(max_examples=25, deadline=None)
@given(_records, st.integers(1, 15), st.integers(0, 3), st.booleans())
def test_every_input_url_is_refused_or_handed_out(
    tmp_path_factory, records, size, per_host, budgets
) -> None:
    """Invariant 1: each URL record comes out as a refusal or in a batch, exactly once
    (recrawls of an already queued URL are counted duplicates), whatever the limits."""
    state = tmp_path_factory.mktemp("prop") / "s"
    result, refused = add(state, [dict(r) for r in records])
    out: list[dict] = []
    for _ in range(200):
        batch, blocked = take(state, size, per_host=per_host, budgets=budgets)
        assert not blocked
        if not batch:
            break
        assert per_host == 0 or max(Counter(r["host"] for r in batch).values()) <= per_host
        out.extend(batch)
    stats = frontier_stats(state)
    assert len(refused) + result.queued + result.duplicates == len(records)
    assert len(out) + stats["queued"] + stats["parked"] == result.queued
    assert stats["queued"] == 0  # all handed out, or parked over budget


def test_nofollow_links_earn_nothing(tmp_path: Path) -> None:
    state = tmp_path / "s"
    add(state, [{"url": f"https://s{i}.test/", "reason": "seed"} for i in range(3)])
    add(
        state,
        [
            link(f"https://t.test/p{i}", frm=f"https://s{i % 3}.test/", nofollow=True)
            for i in range(300)
        ],
    )
    batch, _ = take(state, 1000, per_host=1000)
    assert sum(1 for r in batch if r["site"] == "t.test") == BudgetPolicy().base


def test_cli_add_reports_unusable_times_as_bad_records(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    lines = [
        {"url": "http://a.test/ok", "reason": "seed", "lastmod": "2026-01-01T00:00:00Z"},
        {"url": "http://a.test/r", "reason": "recrawl", "due": "notatime"},
        {"url": "http://a.test/l", "reason": "sitemap", "lastmod": 1e308},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines).encode()
    r = crawlkit("frontier", "add", "--state", state, input=data)
    assert r.code == 0, r.stderr
    assert "<stdin>:2: due 'notatime' is not a time" in r.stderr
    assert "<stdin>:3: lastmod 1e+308 is out of range" in r.stderr
    assert "1 queued" in r.stderr and "2 bad records skipped" in r.stderr


def test_cli_next_says_why_urls_wait_and_stats_names_the_sites(tmp_path: Path) -> None:
    """100 URLs of one unseeded site: 10 come out, 90 wait a whole cycle. Before, no
    word why; now next's stderr and stats name the site, its budget and the remedy."""
    state = str(tmp_path / "s")
    urls = "".join(f"http://a.test/p{i}\n" for i in range(100)).encode()
    r = crawlkit("frontier", "add", "--state", state, "--urls", input=urls)
    assert r.code == 0, r.stderr
    first = crawlkit("frontier", "next", "--state", state, "--now", str(NOW))
    assert len(first.lines) == 10
    second = crawlkit("frontier", "next", "--state", state, "--now", str(NOW + 60))
    assert second.lines == []
    for res in (first, second):
        assert (
            "90 URLs of 1 sites are over their budget and wait for the next "
            "--budget-period at 2026-05-29T" in res.stderr
        )
        assert "a.test used 10 of 10, not a seed and no trusted linkers" in res.stderr
        assert "'frontier add --reason seed'" in res.stderr
    stats = json.loads(crawlkit("frontier", "stats", "--state", state).stdout)
    assert stats["parked"] == 90
    assert stats["budgets"]["parked_sites"] == [
        {
            "site": "a.test",
            "parked": 90,
            "budget": 10,
            "used": 10,
            "seed": False,
            "trusted_linkers": 0,
        }
    ]
    # seeded as the note says, the site gets 110 a cycle: only --per-host holds URLs back
    seeded = str(tmp_path / "seeded")
    crawlkit("frontier", "add", "--state", seeded, "--urls", "--reason", "seed", input=urls)
    runs = [crawlkit("frontier", "next", "--state", seeded, "--now", str(NOW)) for _ in range(2)]
    assert [len(x.lines) for x in runs] == [10, 10]
    assert "80 more URLs of hosts at --per-host 10 wait for the next batch" in runs[1].stderr
    assert "over their budget" not in runs[1].stderr


def test_cli_plain_urls_as_seeds(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("https://Example.com/a\n# a comment\n\nhttp://x.test/\nnot a url\n")
    state = str(tmp_path / "s")
    r = crawlkit("frontier", "add", "--state", state, "--urls", "--reason", "seed", str(seeds))
    assert r.code == 0, r.stderr
    assert [json.loads(x)["refused"] for x in r.lines] == ["invalid-url"]
    r = crawlkit("frontier", "next", "--state", state)
    batch = [json.loads(x) for x in r.lines]
    assert [b["url"] for b in batch] == ["https://example.com/a", "http://x.test/"]
    assert {b["reason"] for b in batch} == {"seed"} and {b["level"] for b in batch} == {0}
    r = crawlkit("frontier", "add", "--state", state, "--reason", "bogus", input=b"")
    assert r.code == 2


def test_cli_links_feed_the_site_graph(tmp_path: Path) -> None:
    """Links to URLs already seen never reach 'add' (seen-merge drops them); 'links'
    counts them: ten one-way linking sites make a site more urgent and richer."""
    state = str(tmp_path / "s")
    seeds = "".join(
        json.dumps({"url": f"https://s{i}.test/", "reason": "seed"}) + "\n" for i in range(10)
    )
    assert crawlkit("frontier", "add", "--state", state, input=seeds.encode()).code == 0
    links = tmp_path / "links.ndjson"
    links.write_text(
        "".join(
            json.dumps(
                {"url": "https://pop.test/", "site": "pop.test", "from": f"https://s{i}.test/x"}
            )
            + "\n"
            for i in range(10)
        )
        + json.dumps({"url": "https://pop.test/a", "from": "https://pop.test/"})
        + "\n"
        + json.dumps({"url": "https://pop.test/b", "from": "https://z.test/", "nofollow": True})
        + "\n"
    )
    r = crawlkit("frontier", "links", "--state", state, str(links))
    assert r.code == 0 and r.stdout == b"" and "12 link records, 10 between sites" in r.stderr
    r = crawlkit(
        "frontier",
        "add",
        "--state",
        state,
        input=json.dumps({"url": "https://pop.test/new", "from": "https://s0.test/"}).encode(),
    )
    assert r.code == 0, r.stderr
    batch = [json.loads(x) for x in crawlkit("frontier", "next", "--state", state).lines]
    (pop,) = [b for b in batch if b["site"] == "pop.test"]
    assert pop["level"] == 1  # 3+ linking sites: one level more urgent than a plain link
    table = SiteTable()
    for i in range(10):
        table.note_seed(f"s{i}.test")
        table.note_link("pop.test", f"s{i}.test")
    assert table.budget("pop.test") == 10 + 100 * 10


def test_cli_next_budget_period_and_its_hidden_old_name_cycle(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    urls = "".join(f"http://a.test/p{i}\n" for i in range(100)).encode()
    assert crawlkit("frontier", "add", "--state", state, "--urls", input=urls).code == 0
    nxt = ["frontier", "next", "--state", state]
    first = crawlkit(*nxt, "--now", str(NOW), "--budget-period", "1h")
    assert len(first.lines) == 10, first.stderr
    day = crawlkit(*nxt, "--now", str(NOW + 7200))  # the default period, a day, goes on
    assert day.lines == []
    hour = crawlkit(*nxt, "--now", str(NOW + 7200), "--cycle", "1h")  # refilled after 1 h
    assert len(hour.lines) == 10, hour.stderr
    both = crawlkit(*nxt, "--now", str(NOW + 9000), "--budget-period", "2h", "--cycle", "1h")
    assert both.code == 2
    assert "--cycle is the old name of --budget-period" in both.stderr
    helptext = crawlkit("frontier", "next", "--help").stdout.decode()
    assert "--budget-period" in helptext and "--cycle" not in helptext


def _lines_written(store: SegmentStore) -> list[int]:
    """Count the lines of every segment the store writes (a list of one counter)."""
    written = [0]
    write_raw = store.write_raw

    def counted(raw: bytes) -> int:
        written[0] += raw.count(b"\n")
        return write_raw(raw)

    store.write_raw = counted  # type: ignore[method-assign]
    return written


@pytest.mark.parametrize("sizes", [[100] * 200, list(range(400, 0, -2)), [1] * 500])
def test_small_pushes_at_the_tail_rewrite_each_line_a_few_times(
    tmp_path: Path, sizes: list[int]
) -> None:
    # The frontier's next pushes the lines it rotates to the tail, a few hundred at a
    # time; a small tail segment is merged with them. Merging the whole small tail at
    # every push rewrote each line ~SMALL_SEGMENT / push times; merged as a binary
    # counter carries, a line is rewritten a few times, and few small files are left.
    store = SegmentStore(tmp_path)
    written = _lines_written(store)
    q = SegmentQueue(store)
    pushed: list[bytes] = []
    for size in sizes:
        lines = [b"%d\n" % (len(pushed) + i) for i in range(size)]
        q.push_back(lines)
        pushed += lines
        small = [count - start for _, count, start in q.segs if count - start < SMALL_SEGMENT]
        assert len(small) <= 13
    assert written[0] <= 12 * len(pushed)
    assert q.take_all() == pushed


def test_a_url_handed_back_unfetched_is_not_charged_twice(tmp_path: Path) -> None:
    # A URL handed out and deferred before its request (the run's --for ended, its
    # robots.txt could not be had) used the site's budget again when handed out from
    # the waiting room: a site crawled in --for slices got 69 pages of its 110. One
    # that was asked (a 503) is charged again: the server was.
    from crawlkit.stages.frontier import frontier_defer

    state = tmp_path / "s"
    base = BudgetPolicy().base
    add(state, [link(f"https://slices.test/p{i}") for i in range(base + 5)])
    first, _ = take(state, 500, per_host=1000)
    assert len(first) == base
    assert {r["budget_period"] for r in first} == {1}
    past = "2026-05-28T00:00:00Z"  # due again at once
    deferred = [
        {**r, "outcome": "deferred", "status": None, "retry_at": past, "stopped": True}
        for r in first[:-1]
    ] + [{**first[-1], "outcome": "deferred", "status": 503, "retry_at": past}]
    assert frontier_defer(state, deferred) == (base, base)
    again, _ = take(state, 500, per_host=1000, now=NOW + 60)  # the same budget period
    assert sorted(r["url"] for r in again) == sorted(r["url"] for r in first[:-1])
    assert frontier_stats(state)["budgets"]["used"] == base
