"""crawlkit recrawl: change history, adaptive intervals, due URL records."""

from __future__ import annotations

import json
import math
import sqlite3
import statistics
from pathlib import Path

import pytest
from conftest import crawlkit

from crawlkit.recrawl import Entry, Event, History, RecrawlPolicy, apply_event
from crawlkit.stages.recrawl import recrawl

H = 3600.0
DAY = 86400.0
T0 = 1_780_000_000.0
P = RecrawlPolicy()


def fetch(at: float, digest: str | None = "d", **kw) -> Event:
    kw.setdefault("outcome", "fetched")
    kw.setdefault("status", 200)
    return Event(kind="fetch", at=at, url="https://a.test/", digest=digest, **kw)


def run(state: Path, records: list[dict], now: float, **kw) -> list[dict]:
    out: list[dict] = []
    lines = [("test", i + 1, dict(r)) for i, r in enumerate(records)]
    recrawl(state, lines, write=out.extend, now=now, **kw)
    return out


# --------------------------------------------------------------------------- the rule


def test_first_fetch_starts_at_initial_interval() -> None:
    e = apply_event(None, fetch(T0), 1, P)
    assert e is not None and e.interval == DAY and e.due == T0 + DAY and e.checks == 1


def test_change_halves_no_change_grows_by_half() -> None:
    e = apply_event(None, fetch(T0, "a"), 1, P)
    e = apply_event(e, fetch(T0 + DAY, "b"), 1, P)
    assert e.interval == DAY / 2 and e.changes == 1
    e = apply_event(e, fetch(T0 + 2 * DAY, "b"), 1, P)
    assert e.interval == DAY * 0.75 and e.changes == 1 and e.checks == 3


def test_not_modified_and_near_duplicate_count_as_no_change() -> None:
    e = apply_event(None, fetch(T0, "a", simhash=0xFF00), 1, P)
    e304 = apply_event(e, fetch(T0 + DAY, None, outcome="not-modified", status=304), 1, P)
    assert e304.interval == 1.5 * DAY and e304.digest == "a"
    near = apply_event(e, fetch(T0 + DAY, "b", simhash=0xFF00 ^ 0b111), 1, P)  # 3 bits
    assert near.interval == 1.5 * DAY
    far = apply_event(e, fetch(T0 + DAY, "b", simhash=0xFF00 ^ 0b1111), 1, P)  # 4 bits
    assert far.interval == 0.5 * DAY


def test_interval_is_clamped_between_one_hour_and_ninety_days() -> None:
    e = apply_event(None, fetch(T0, "0"), 1, P)
    for i in range(1, 40):
        e = apply_event(e, fetch(e.due, str(i)), 1, P)
    assert e.interval == H
    for _ in range(60):
        e = apply_event(e, fetch(e.due, "same"), 1, P)
    assert e.interval == 90 * DAY


def test_importance_scales_the_wait() -> None:
    waits = []
    for prio in range(4):
        e = apply_event(None, fetch(T0, importance=prio), 1, P)
        waits.append(e.due - T0)
    assert waits == [DAY * 0.5, DAY * 0.75, DAY, DAY * 1.5]


def test_sitemap_lastmod_counts_as_a_change_once() -> None:
    e = apply_event(None, fetch(T0, "a"), 1, P)
    hint = Event(kind="lastmod", at=T0 + H, url="https://a.test/", lastmod=T0 + 60)
    e = apply_event(e, hint, 1, P)
    assert e.interval == DAY / 2 and e.due == T0 + H and e.changes == 1
    e = apply_event(e, fetch(T0 + 2 * H, "b"), 1, P)  # the change the sitemap announced
    assert e.interval == DAY / 2 and e.changes == 1
    old = Event(kind="lastmod", at=T0 + 3 * H, url="https://a.test/", lastmod=T0 - DAY)
    assert apply_event(e, old, 1, P).interval == DAY / 2  # older than the fetch: no news


def test_deferred_error_and_replays() -> None:
    e = apply_event(None, fetch(T0, "a"), 1, P)
    d = apply_event(e, fetch(T0 + DAY, None, outcome="deferred", retry_at=T0 + DAY + 600), 1, P)
    assert d.due == T0 + DAY + 600 and d.interval == DAY
    err = apply_event(e, fetch(T0 + DAY, None, outcome="error", status=None), 1, P)
    assert err.due == T0 + DAY + H and err.errors == 1 and err.interval == DAY
    err2 = apply_event(err, fetch(T0 + DAY + H, None, outcome="error", status=None), 1, P)
    assert err2.due == T0 + DAY + H + 2 * H
    # the same fetch applied twice changes nothing the second time
    again = apply_event(e, fetch(T0, "zzz"), 1, P)
    assert again is e


def _simulate(change_every: float, steps: int, *, poisson_seed: int | None = None) -> list[float]:
    """Fetch whenever due; the page's content changes every ``change_every`` seconds."""
    import random

    rng = random.Random(poisson_seed)
    changes: list[float] = []
    t = 0.0
    while len(changes) < 100000 and t < change_every * steps * 4:
        t += rng.expovariate(1 / change_every) if poisson_seed is not None else change_every
        changes.append(t)
    import bisect

    e: Entry | None = None
    now = 1.0
    intervals = []
    for _ in range(steps):
        version = (
            bisect.bisect_right(changes, now)
            if poisson_seed is not None
            else int(now // change_every)
        )
        e = apply_event(
            e,
            Event(
                kind="fetch", at=now, url="u", outcome="fetched", status=200, digest=f"v{version}"
            ),
            1,
            P,
        )
        intervals.append(e.interval)
        now = e.due
    return intervals


@pytest.mark.parametrize("period", [6 * H, DAY, 7 * DAY])
def test_page_changing_every_t_settles_near_t(period: float) -> None:
    intervals = _simulate(period, 300)
    settled = intervals[100:]
    gm = statistics.geometric_mean(settled)
    # the fixed point of halve/grow-by-half: P(change seen) = ln 1.5 / ln 3, i.e. 0.37 T
    assert 0.25 * period < gm < period
    assert max(settled) < 1.0 * period and min(settled) > 0.15 * period
    # and it does not depend on where it started: T and 20 T apart stay 20x apart
    assert math.isclose(
        gm / period,
        statistics.geometric_mean(_simulate(20 * period, 300)[100:]) / (20 * period),
        rel_tol=0.2,
    )


def test_random_changes_settle_near_mean_gap() -> None:
    intervals = _simulate(DAY, 400, poisson_seed=7)[100:]
    assert 0.3 * DAY < statistics.geometric_mean(intervals) < 1.0 * DAY


def test_unchanged_page_drifts_to_the_maximum() -> None:
    intervals = _simulate(10**12, 20)
    assert intervals[-1] == 90 * DAY
    assert intervals.index(90 * DAY) <= 12  # 1 d * 1.5^11 > 90 d


# --------------------------------------------------------------------------- the stage


def _fetch_rec(url: str, at: float, digest: str | None, **kw) -> dict:
    rec = {"url": url, "status": 200, "outcome": "fetched", "fetched_at": at, "digest": digest}
    rec.update(kw)
    return rec


def test_stage_emits_due_urls_once_with_validators(tmp_path: Path) -> None:
    state = tmp_path / "s"
    recs = [
        _fetch_rec("https://a.test/x", T0, "sha1:A", etag='"e1"'),
        _fetch_rec("https://a.test/y", T0, "sha1:B", last_modified="Tue, 01 Jan 2026 00:00:00 GMT"),
        {"url": "https://a.test/x", "digest": "sha1:A", "simhash": "00000000000000ff"},
    ]
    assert run(state, recs, now=T0 + H) == []
    due = run(state, [], now=T0 + DAY + 1)
    assert sorted(r["url"] for r in due) == ["https://a.test/x", "https://a.test/y"]
    x = next(r for r in due if r["url"].endswith("x"))
    assert x["reason"] == "recrawl" and x["etag"] == '"e1"' and x["last_modified"] is None
    assert x["host"] == "a.test" and x["site"] == "a.test" and len(x["fp"]) == 16
    assert x["due"] == "2026-05-29T20:26:40Z" and x["interval"] == DAY
    assert run(state, [], now=T0 + DAY + 2) == []  # emitted, not fetched since: not again
    assert len(run(state, [], now=T0 + 3 * DAY)) == 2  # ...until max(interval, 1 day) passes
    # a 304 for x: no change, interval grows, not due again for 1.5 days
    run(
        state,
        [_fetch_rec("https://a.test/x", T0 + 3 * DAY, None, outcome="not-modified", status=304)],
        now=T0 + 3 * DAY,
    )
    assert [r["url"] for r in run(state, [], now=T0 + 4.4 * DAY)] == ["https://a.test/y"]
    later = run(state, [], now=T0 + 4.6 * DAY)
    assert [r["url"] for r in later] == ["https://a.test/x"]
    assert later[0]["interval"] == 1.5 * DAY and later[0]["checks"] == 2


def test_stage_page_record_decides_near_duplicate(tmp_path: Path) -> None:
    """The digest changes but the simhash (from the page record) is 2 bits away."""
    state = tmp_path / "s"
    url = "https://a.test/p"
    page = {"url": url, "digest": "sha1:A", "simhash": "f0f0f0f0f0f0f0f0"}
    run(state, [_fetch_rec(url, T0, "sha1:A"), page], now=T0)
    run(
        state,
        [
            {"url": url, "digest": "sha1:B", "simhash": "f0f0f0f0f0f0f0f3"},
            _fetch_rec(url, T0 + DAY, "sha1:B"),
        ],
        now=T0 + DAY,
    )
    (rec,) = run(state, [], now=T0 + 10 * DAY)
    assert rec["interval"] == 1.5 * DAY and rec["changes"] == 0


def test_stage_rerun_on_same_input_is_harmless(tmp_path: Path) -> None:
    state = tmp_path / "s"
    url = "https://a.test/p"
    first = [_fetch_rec(url, T0, "A")]
    second = [_fetch_rec(url, T0 + DAY, "B")]
    run(state, first, now=T0)
    run(state, second, now=T0 + DAY)
    run(state, first + second, now=T0 + DAY)  # the whole log again
    (rec,) = run(state, [], now=T0 + 5 * DAY)
    assert rec["interval"] == DAY / 2 and rec["changes"] == 1 and rec["checks"] == 2


def test_stage_sitemap_lastmod_makes_url_due_now(tmp_path: Path) -> None:
    state = tmp_path / "s"
    url = "https://a.test/p"
    run(state, [_fetch_rec(url, T0, "A")], now=T0)
    (rec,) = run(
        state,
        [{"url": url, "reason": "sitemap", "lastmod": "2026-05-28T21:00:00Z"}],
        now=T0 + 2 * H,
    )
    assert rec["url"] == url and rec["changes"] == 1


def test_cli_converges_with_simulated_time(tmp_path: Path) -> None:
    """Fourteen 12-hour cycles through the real command, time moved by --now: a page
    changing every 6 hours drops to short intervals, an unchanged one keeps growing."""
    state = str(tmp_path / "s")
    period = {"https://fast.test/": 6 * H, "https://still.test/": 10**12}
    now = T0
    fetched = [_fetch_rec(u, now, "v0") for u in period]
    intervals: dict[str, float] = {}
    log = tmp_path / "fetched.ndjson"
    for _ in range(14):
        log.write_text("".join(json.dumps(r) + "\n" for r in fetched))
        r = crawlkit("recrawl", "--state", state, "--now", str(now), str(log))
        assert r.code == 0, r.stderr
        due = [json.loads(x) for x in r.lines]
        fetched = [_fetch_rec(d["url"], now, f"v{int(now // period[d['url']])}") for d in due]
        for d in due:
            intervals[d["url"]] = d["interval"]
        now += 12 * H
    assert intervals["https://fast.test/"] <= 6 * H
    assert intervals["https://still.test/"] >= 2 * DAY  # 1 d, 1.5 d, 2.25 d, ...


def test_cli_usage_errors(tmp_path: Path) -> None:
    r = crawlkit("recrawl", "--state", str(tmp_path / "s"), "--now", "yesterday", input=b"")
    assert r.code == 2 and "--now" in r.stderr
    r = crawlkit("recrawl", "--state", str(tmp_path / "s"), "--min", "2d", input=b"")
    assert r.code == 2


def test_bad_times_are_bad_records_and_the_rest_commits(tmp_path: Path) -> None:
    """-1e18 crashed the run (gmtime overflow), "notatime" was taken as now, 1e308 made a
    URL never due: each is a bad record with FILE:LINE, and the good record commits."""
    good = {
        "url": "https://a.test/ok",
        "outcome": "fetched",
        "status": 200,
        "fetched_at": "2026-05-01T00:00:00Z",
    }
    bad = [
        {**good, "url": "https://a.test/neg", "fetched_at": -1e18},
        {**good, "url": "https://a.test/word", "fetched_at": "notatime"},
        {**good, "url": "https://a.test/huge", "fetched_at": 1e308},
        {**good, "url": "https://a.test/nan", "fetched_at": "nan"},
        {**good, "url": "https://a.test/r", "outcome": "deferred", "retry_at": "soon"},
        {"url": "https://a.test/lm", "reason": "sitemap", "lastmod": -5},
    ]
    log = tmp_path / "fetched.ndjson"
    log.write_text("".join(json.dumps(r) + "\n" for r in [good, *bad]))
    state = str(tmp_path / "s")
    for due in (["https://a.test/ok"], []):  # the rerun finds the first run committed
        r = crawlkit("recrawl", "--state", state, "--now", "2026-05-03T00:00:00Z", str(log))
        assert r.code == 0, r.stderr
        assert [json.loads(x)["url"] for x in r.lines] == due
        assert "internal error" not in r.stderr
        assert f"{log}:2: fetched_at -1e+18 is out of range" in r.stderr
        assert f"{log}:3: fetched_at 'notatime' is not a time" in r.stderr
        assert f"{log}:4: fetched_at 1e+308 is out of range" in r.stderr
        assert f"{log}:5: fetched_at 'nan' is not a time" in r.stderr
        assert f"{log}:6: retry_at 'soon' is not a time" in r.stderr
        assert f"{log}:7: lastmod -5 is out of range" in r.stderr
        assert "6 bad" in r.stderr and "1 tracked" in r.stderr


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        (0, 0.0),
        ("2026-05-01T00:00:00Z", 1_777_593_600.0),
        ("Fri, 01 May 2026 00:00:00 GMT", 1_777_593_600.0),
        ("9999-12-31T23:59:59Z", 253_402_300_799.0),
        (-1, None),
        (-1e18, None),
        (1e308, None),
        (float("nan"), None),
        ("inf", None),
        ("notatime", None),
        (True, None),
        ("0001-01-01T00:00:00+01:00", None),
        ("10000-01-01", None),
    ],
)
def test_the_shared_time_parser_takes_only_1970_to_9999(value, seconds) -> None:
    from crawlkit.sitemap.parse import normalize_lastmod
    from crawlkit.times import parse_time, time_problem

    assert parse_time(value) == seconds
    assert (time_problem({"t": value}, "t") is None) == (seconds is not None)
    assert normalize_lastmod("1969-12-31") is None  # a sitemap gives no unusable lastmod


def test_importance_is_stored_in_the_history_tables_priority_column(tmp_path: Path) -> None:
    """A history table written before importance had its own name keeps opening."""
    history = History(tmp_path)
    history.put([Entry(fp=7, url="https://a.test/", importance=0)])
    history.commit()
    history.close()
    db = sqlite3.connect(tmp_path / "history.sqlite")
    columns = [row[1] for row in db.execute("PRAGMA table_info(history)")]
    assert "priority" in columns and "importance" not in columns
    assert db.execute("SELECT priority FROM history WHERE fp = 7").fetchone() == (0,)
    db.close()
    again = History(tmp_path)
    entry = again.get(7)
    again.close()
    assert entry is not None and entry.importance == 0
