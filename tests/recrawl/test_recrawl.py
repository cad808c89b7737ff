"""crawlkit recrawl: change history, adaptive intervals, due URL records."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import crawlkit
from crawlkit_cli.main import run as cli_run

from crawlkit.recrawl import Entry, Event, History, RecrawlPolicy, apply_event
from crawlkit.recrawl.estimate import CHANGED, UNCHANGED, unpack
from crawlkit.recrawl.history import http_date
from crawlkit.stages.recrawl import recrawl, recrawl_stats
from crawlkit.times import parse_time
from crawlkit.url import fingerprint_int

H = 3600.0
DAY = 86400.0
T0 = 1_780_000_000.0
P = RecrawlPolicy(mu=0.2 * DAY)  # about 0.8 days for a page changing once a day


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


def test_first_fetch_takes_the_prior_and_the_optimal_interval() -> None:
    policy = RecrawlPolicy(mu=0.2 * DAY)
    e = apply_event(None, fetch(T0), 1, policy)
    assert e is not None and e.checks == 1 and e.observations is None
    assert math.isclose(e.rate, 1 / DAY, rel_tol=1e-2)  # the prior: --initial
    assert e.interval == policy.interval(e.rate, 2) and e.due == T0 + e.interval
    site = apply_event(None, fetch(T0), 1, policy, prior=1 / H)
    assert math.isclose(site.rate, 1 / H, rel_tol=0.1)  # the site's rate when known
    lm = "Thu, 28 May 2026 08:26:40 GMT"  # 12 hours before the fetch
    dated = apply_event(None, fetch(T0, last_modified=lm), 1, policy)
    assert unpack(dated.observations) == [(12 * H, 12 * H)]  # no change for 12 h, one then


def _codes(e: Entry) -> list[float]:
    return [c for _, c in unpack(e.observations)]


def test_change_no_change_and_dates_are_observations() -> None:
    e = apply_event(None, fetch(T0, "a", simhash=0xFF00), 1, P)
    changed = apply_event(e, fetch(T0 + DAY, "b"), 1, P)
    assert _codes(changed) == [CHANGED] and changed.changes == 1 and changed.checks == 2
    assert unpack(changed.observations)[0][0] == DAY
    e304 = apply_event(e, fetch(T0 + DAY, None, outcome="not-modified", status=304), 1, P)
    assert _codes(e304) == [UNCHANGED] and e304.digest == "a"
    same = apply_event(e, fetch(T0 + DAY, "a"), 1, P)
    assert _codes(same) == [UNCHANGED]
    near = apply_event(e, fetch(T0 + DAY, "b", simhash=0xFF00 ^ 0b111), 1, P)  # 3 bits
    assert _codes(near) == [UNCHANGED]
    far = apply_event(e, fetch(T0 + DAY, "b", simhash=0xFF00 ^ 0b1111), 1, P)  # 4 bits
    assert _codes(far) == [CHANGED]
    lm = "Fri, 29 May 2026 12:00:00 GMT"  # between the two fetches
    dated = apply_event(e, fetch(T0 + DAY, "b", last_modified=lm), 1, P)
    assert _codes(dated) == [T0 + DAY - http_date(lm)]
    stale = apply_event(
        e, fetch(T0 + DAY, "b", last_modified="Thu, 01 Jan 2026 00:00:00 GMT"), 1, P
    )
    assert _codes(stale) == [CHANGED]  # a date before the last fetch dates nothing
    assert changed.rate > e.rate > same.rate


def test_intervals_stay_between_the_clamps_and_follow_importance() -> None:
    policy = RecrawlPolicy(mu=3 * DAY)
    fast = apply_event(None, fetch(T0, "0"), 1, policy)
    still = fast
    waits = [still.interval]
    for i in range(1, 40):
        fast = apply_event(fast, fetch(T0 + i * H, str(i)), 1, policy)
        still = apply_event(still, fetch(still.due, "0"), 1, policy)
        waits.append(still.interval)
        assert policy.min <= fast.interval <= policy.max
    assert fast.interval == policy.max  # changes hourly: w/λ below μ, not chased
    assert waits[1:] == sorted(waits[1:]) and waits[-1] == policy.max  # never changes: drifts up
    waits = [P.interval(1 / DAY, importance) for importance in range(4)]
    assert waits == sorted(waits) and waits[0] < waits[-1]  # 0 most important: soonest


def test_sitemap_reads_are_observations_and_count_a_change_once() -> None:
    e = apply_event(None, fetch(T0, "a"), 1, P)
    hint = Event(kind="lastmod", at=T0 + H, url="https://a.test/", lastmod=T0 + 60)
    e = apply_event(e, hint, 1, P)
    # the read: a change in the hour since the fetch, dated 60 s after it
    assert e.pending_change and e.due == T0 + H and e.changes == 1
    assert unpack(e.observations) == [(H, H - 60)]
    e = apply_event(e, fetch(T0 + 2 * H, "b"), 1, P)  # the change the sitemap announced
    assert e.changes == 1 and not e.pending_change and len(unpack(e.observations)) == 1
    same = Event(kind="lastmod", at=T0 + 5 * H, url="https://a.test/", lastmod=T0 + 60)
    quiet = apply_event(e, same, 1, P)  # read again, nothing newer: 3 h without a change
    assert not quiet.pending_change and unpack(quiet.observations)[-1] == (3 * H, UNCHANGED)
    assert quiet.rate < e.rate


def test_deferred_error_and_replays() -> None:
    e = apply_event(None, fetch(T0, "a"), 1, P)
    d = apply_event(e, fetch(T0 + DAY, None, outcome="deferred", retry_at=T0 + DAY + 600), 1, P)
    assert d.due == T0 + DAY + 600 and d.interval == e.interval
    err = apply_event(e, fetch(T0 + DAY, None, outcome="error", status=None), 1, P)
    assert err.due == T0 + DAY + H and err.errors == 1 and err.interval == e.interval
    err2 = apply_event(err, fetch(T0 + DAY + H, None, outcome="error", status=None), 1, P)
    assert err2.due == T0 + DAY + H + 2 * H
    # the same fetch applied twice changes nothing the second time
    again = apply_event(e, fetch(T0, "zzz"), 1, P)
    assert again is e


@pytest.mark.parametrize("poisson", [False, True])
def test_estimate_converges_on_a_page_fetched_when_due(poisson: bool) -> None:
    """A page changing every 6 h (strictly, or at random), fetched whenever due: after
    60 visits the estimated rate is within 25% of the truth."""
    import bisect
    import random

    period = 6 * H
    rng = random.Random(5)
    changes, t = [], 0.0
    while t < 400 * DAY:
        t += rng.expovariate(1 / period) if poisson else period
        changes.append(t)
    policy = RecrawlPolicy(mu=0.05 * period)
    e: Entry | None = None
    now = 1.0
    for _ in range(60):
        version = bisect.bisect_right(changes, now)
        e = apply_event(e, fetch(now, f"v{version}"), 1, policy)
        now = e.due
    assert 0.75 / period < e.rate < 1.25 / period


# --------------------------------------------------------------------------- the stage


def _fetch_rec(url: str, at: float, digest: str | None, **kw) -> dict:
    rec = {"url": url, "status": 200, "outcome": "fetched", "fetched_at": at, "digest": digest}
    rec.update(kw)
    return rec


def test_stage_emits_due_urls_once_with_validators(tmp_path: Path) -> None:
    state = tmp_path / "s"
    recs = [
        _fetch_rec("https://a.test/x", T0, "sha1:A", etag='"e1"'),
        # (a Last-Modified of the fetch time itself: no dated observation)
        _fetch_rec("https://a.test/y", T0, "sha1:B", last_modified="Thu, 28 May 2026 20:26:40 GMT"),
        {"url": "https://a.test/x", "digest": "sha1:A", "simhash": "00000000000000ff"},
    ]
    assert run(state, recs, now=T0 + H) == []
    due = run(state, [], now=T0 + DAY + 1)
    assert sorted(r["url"] for r in due) == ["https://a.test/x", "https://a.test/y"]
    x = next(r for r in due if r["url"].endswith("x"))
    assert x["reason"] == "recrawl" and x["etag"] == '"e1"' and x["last_modified"] is None
    assert x["host"] == "a.test" and x["site"] == "a.test" and len(x["fp"]) == 16
    # the default budget, one visit a day per URL, split between two alike URLs
    assert x["due"] == "2026-05-29T20:26:40Z" and math.isclose(x["interval"], DAY, rel_tol=1e-6)
    assert run(state, [], now=T0 + DAY + 2) == []  # emitted, not fetched since: not again
    assert len(run(state, [], now=T0 + 3 * DAY)) == 2  # ...until max(interval, 1 day) passes
    # a 304 for x: no change, its rate falls, its interval grows past y's
    run(
        state,
        [_fetch_rec("https://a.test/x", T0 + 3 * DAY, None, outcome="not-modified", status=304)],
        now=T0 + 3 * DAY,
    )
    history = History(state / "recrawl")
    x_entry, y_entry = (history.get(fingerprint_int(f"https://a.test/{u}")) for u in "xy")
    history.close()
    assert x_entry.rate < y_entry.rate and x_entry.interval > DAY > y_entry.interval
    assert x_entry.checks == 2 and x_entry.due == T0 + 3 * DAY + x_entry.interval


@pytest.mark.parametrize(("truncated", "errors"), [("disconnect", 1), ("time", 1), ("length", 0)])
def test_a_body_cut_by_the_server_is_retried_not_observed(
    tmp_path: Path, truncated: str, errors: int
) -> None:
    """A body the server broke off has another digest than the page: read as a fetch,
    it was a change the page never made, and the page waited a whole interval."""
    state = tmp_path / "s"
    url = "https://a.test/p"
    run(state, [_fetch_rec(url, T0, "sha1:A")], now=T0)
    cut = _fetch_rec(url, T0 + DAY, "sha1:CUT", truncated=truncated)
    run(state, [cut], now=T0 + DAY)
    history = History(state / "recrawl")
    entry = history.get(fingerprint_int(url))
    history.close()
    assert entry.errors == errors
    if errors:
        assert entry.checks == 1 and entry.due == T0 + DAY + H  # retried after the backoff
    else:  # a size cap cuts every fetch alike: the page as the crawl keeps it
        assert entry.checks == 2


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
    assert rec["changes"] == 0 and rec["checks"] == 2


def test_stage_rerun_on_same_input_is_harmless(tmp_path: Path) -> None:
    state = tmp_path / "s"
    url = "https://a.test/p"
    first = [_fetch_rec(url, T0, "A")]
    second = [_fetch_rec(url, T0 + DAY, "B")]
    run(state, first, now=T0)
    run(state, second, now=T0 + DAY)
    run(state, first + second, now=T0 + DAY)  # the whole log again
    (rec,) = run(state, [], now=T0 + 5 * DAY)
    assert rec["changes"] == 1 and rec["checks"] == 2
    history = History(state / "recrawl")
    entry = history.get(fingerprint_int(url))
    history.close()
    assert len(unpack(entry.observations)) == 1


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


def test_cli_converges_with_simulated_time(tmp_path: Path, capfdbinary) -> None:
    """Fourteen 12-hour cycles through the command line, time moved by --now, 10
    visits a day to spend: a page changing every 6 hours gets short intervals, an
    unchanged one keeps growing. The first cycle runs ``python -m crawlkit``; the
    others the same command line in this process (crawlkit_cli.main.run), which
    spares 13 interpreter start-ups."""
    state = str(tmp_path / "s")
    period = {"https://fast.test/": 6 * H, "https://still.test/": 10**12}
    now = T0
    fetched = [_fetch_rec(u, now, "v0") for u in period]
    intervals: dict[str, float] = {}
    log = tmp_path / "fetched.ndjson"
    for cycle in range(14):
        log.write_text("".join(json.dumps(r) + "\n" for r in fetched))
        argv = ["recrawl", "--state", state, "--now", str(now), "--budget", "10", str(log)]
        if cycle == 0:
            r = crawlkit(*argv)
            assert r.code == 0, r.stderr
            lines = r.lines
        else:
            capfdbinary.readouterr()
            assert cli_run(argv) == 0
            lines = capfdbinary.readouterr().out.decode().splitlines()
        due = [json.loads(x) for x in lines]
        fetched = [_fetch_rec(d["url"], now, f"v{int(now // period[d['url']])}") for d in due]
        for d in due:
            intervals[d["url"]] = d["interval"]
        now += 12 * H
    assert intervals["https://fast.test/"] <= 6 * H
    assert intervals["https://still.test/"] > 3 * intervals["https://fast.test/"]


def test_cli_usage_errors(tmp_path: Path) -> None:
    r = crawlkit("recrawl", "--state", str(tmp_path / "s"), "--now", "yesterday", input=b"")
    assert r.code == 2 and "--now" in r.stderr
    r = crawlkit("recrawl", "--state", str(tmp_path / "s"), "--min", "200d", input=b"")
    assert r.code == 2 and "--min" in r.stderr


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


def test_a_history_of_the_previous_release_opens_and_is_migrated(tmp_path: Path) -> None:
    """tests/data/recrawl-v1 was written by crawlkit 1e5e1a1 (make.py says how)."""
    state = tmp_path / "s"
    shutil.copytree(Path(__file__).parent.parent / "data" / "recrawl-v1", state)
    history = History(state / "recrawl")
    fast = history.get(fingerprint_int("https://a.test/fast"))
    still = history.get(fingerprint_int("https://a.test/still"))
    new = history.get(fingerprint_int("https://b.test/new"))
    history.close()
    assert fast.checks == 8 and fast.changes == 7 and fast.etag == '"f7"'
    assert _codes(fast) == [CHANGED] * 7 and _codes(still) == [UNCHANGED] * 7
    assert fast.rate > 1 / DAY > still.rate and new.observations is None
    db = sqlite3.connect(state / "recrawl" / "history.sqlite")
    assert db.execute("PRAGMA user_version").fetchone() == (2,)
    db.close()
    # and the stage runs on it: at 3 visits a day the page changing hourly is not
    # chased (the longest interval), the others are
    run(state, [], now=T0 + 3 * DAY)
    history = History(state / "recrawl")
    fast = history.get(fingerprint_int("https://a.test/fast"))
    new = history.get(fingerprint_int("https://b.test/new"))
    history.close()
    assert fast.interval == 90 * DAY and new.interval < 90 * DAY
    lines = recrawl_stats(state, now=T0 + 3 * DAY)
    assert lines[0].startswith("URLs tracked: 3, with a rate from their own visits: 2")


def test_max_urls_alone_spends_them_where_freshness_is_bought(tmp_path: Path) -> None:
    """Without --budget, --max-urls N emits N URLs by value, at most --host-max-urls
    per host, due or not: a page seen changing beats a page seen unchanged."""
    state = tmp_path / "s"
    urls = [f"https://h{h}.test/{i}" for h in range(3) for i in range(4)]
    run(state, [_fetch_rec(u, T0, "A") for u in urls], now=T0)
    second = [_fetch_rec(u, T0 + H * 6, "B" if u.endswith(("0", "1")) else "A") for u in urls]
    out = run(state, second, now=T0 + 7 * H, max_urls=5, host_max=2)
    assert len(out) == 5
    assert max(Counter(r["host"] for r in out).values()) <= 2
    changing = {u for u in urls if u.endswith(("0", "1"))}
    assert {r["url"] for r in out} <= changing
    # picked now, so due now: a pick's later due made frontier add hold it waiting,
    # and the pipeline fetched none of them
    assert all(parse_time(r["due"]) <= T0 + 7 * H for r in out), [r["due"] for r in out]


def test_stats_show_rates_freshness_and_days_ahead(tmp_path: Path) -> None:
    state = str(tmp_path / "s")
    log = tmp_path / "f.ndjson"
    log.write_text(
        "".join(json.dumps(_fetch_rec(f"https://a.test/{i}", T0, "A")) + "\n" for i in range(5))
    )
    assert crawlkit("recrawl", "--state", state, "--now", str(T0), str(log)).code == 0
    r = crawlkit("recrawl", "--state", state, "--stats", "--now", str(T0), input=b"")
    assert r.code == 0, r.stderr
    text = r.stdout.decode()
    assert "URLs tracked: 5" in text and "expected freshness:" in text
    assert "budget: 5 visits a day" in text  # one a day per URL by default
    assert "URLs due per day ahead" in text and "d0:" in text and "d6:" in text
    assert "estimated time between changes" in text


def test_kill_9_while_writing_loses_nothing(tmp_path: Path) -> None:
    """The history commits only after the due records are written: a run killed while
    blocked writing them (its reader stopped) leaves the history as before, and the
    same input run again emits every URL."""
    log = tmp_path / "f.ndjson"
    urls = [f"https://k{i % 7}.test/page/{i}" for i in range(600)]  # > a pipe's 64 KiB out
    log.write_text("".join(json.dumps(_fetch_rec(u, T0, "A")) + "\n" for u in urls))
    state = str(tmp_path / "s")
    later = str(T0 + 100 * DAY)
    args = [sys.executable, "-m", "crawlkit", "recrawl", "--state", state, "--now", later]
    with subprocess.Popen(
        [*args, str(log)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    ) as proc:
        assert proc.stdout is not None
        assert proc.stdout.read(1) == b"{"  # writing has begun; nobody reads the rest
        proc.kill()
        proc.wait()
    history = History(Path(state) / "recrawl")
    assert history.count() == 0  # nothing of the killed run committed
    history.close()
    r = crawlkit("recrawl", "--state", state, "--now", later, str(log))
    assert r.code == 0, r.stderr
    assert sorted(json.loads(x)["url"] for x in r.lines) == sorted(urls)


def test_the_report_gets_a_recrawl_section(tmp_path: Path) -> None:
    from crawlkit.recrawl.stats import html_section, report_data, report_section

    assert report_data(tmp_path, T0) is None and html_section(None) == ""
    assert report_section(tmp_path, T0) == []
    run(tmp_path, [_fetch_rec(f"https://a.test/{i}", T0, "A") for i in range(3)], now=T0)
    data = report_data(tmp_path, T0 + H)
    assert data is not None and data["tracked"] == 3
    json.dumps(data)  # goes into the report's JSON as it is
    page = html_section(data)
    assert page.startswith("<h2>Recrawl</h2>") and "3 URLs tracked" in page
    assert report_section(tmp_path, T0 + H)[0].startswith("URLs tracked: 3")
    # and `crawlkit report` carries it, in its JSON and on its HTML page
    from crawlkit.report import render_html
    from crawlkit.stages.report import crawl_report

    report = crawl_report(tmp_path)
    assert report["recrawl"]["tracked"] == 3
    assert "<h2>Recrawl</h2>" in render_html(report)


def test_site_rates_write_only_the_rows_that_changed(tmp_path: Path) -> None:
    from crawlkit.recrawl import History

    history = History(tmp_path)
    history.set_site_rates({"a.test": 0.5, "b.test": 0.25, "c.test": 1.0})
    history.commit()
    before = history.db.total_changes
    history.set_site_rates({"a.test": 0.5, "b.test": 0.125, "d.test": 2.0})
    assert history.db.total_changes - before == 3  # b changed, c gone, d new
    assert history.site_rates() == {"a.test": 0.5, "b.test": 0.125, "d.test": 2.0}
    history.rollback()
    assert history.site_rates() == {"a.test": 0.5, "b.test": 0.25, "c.test": 1.0}
    other = History(tmp_path)  # another connection's commit is read again
    other.set_site_rates({"e.test": 3.0})
    other.commit()
    other.close()
    assert history.site_rates() == {"e.test": 3.0}
    history.site_rates()["x.test"] = 1.0  # a copy: the kept table is not changed
    assert history.site_rates() == {"e.test": 3.0}
    history.close()


def test_site_priors_from_the_plan_write_only_what_moved(tmp_path: Path) -> None:
    """The plan hands its priors as an array by the kept columns' site index; the
    history keeps the last one (8 bytes a site) and writes the rows that moved, or
    compares with the table on disk once the columns were read again."""
    import numpy as np

    history = History(tmp_path)
    history.put([Entry(fp=i + 1, url=f"https://s{i}.test/", site=f"s{i}.test") for i in range(4)])
    sites = history.table().sites
    assert sites == ["s0.test", "s1.test", "s2.test", "s3.test"]
    nan = math.nan
    history.set_site_priors(sites, np.array([0.5, 0.25, nan, 1.0]))
    assert history.site_rates() == {"s0.test": 0.5, "s1.test": 0.25, "s3.test": 1.0}
    history.put([Entry(fp=9, url="https://s4.test/", site="s4.test")])  # a new site
    sites = history.table().sites
    before = history.db.total_changes
    history.set_site_priors(sites, np.array([0.5, 0.125, nan, nan, 2.0]))
    assert history.db.total_changes - before == 3  # s1 moved, s3 gone, s4 new
    assert history.site_rates() == {"s0.test": 0.5, "s1.test": 0.125, "s4.test": 2.0}
    assert history.site_rates(["s1.test", "s2.test", "nowhere.test"]) == {"s1.test": 0.125}
    history.commit()
    before = history.db.total_changes
    history.set_site_priors(sites, np.array([0.5, 0.125, nan, nan, 2.0]))
    assert history.db.total_changes == before  # nothing moved: nothing written
    # Another connection's commit: the columns are read again, and the priors are
    # compared with the table on disk, not with what this one wrote last.
    other = History(tmp_path)
    other.set_site_rates({"s0.test": 9.0})
    other.commit()
    other.close()
    sites = history.table().sites
    history.set_site_priors(sites, np.array([0.5, 0.125, nan, nan, 2.0]))
    assert history.site_rates() == {"s0.test": 0.5, "s1.test": 0.125, "s4.test": 2.0}
    history.rollback()  # and after a rollback
    assert history.site_rates() == {"s0.test": 9.0}
    sites = history.table().sites
    history.set_site_priors(sites, np.array([0.5, 0.125, nan, nan, 2.0]))
    assert history.site_rates() == {"s0.test": 0.5, "s1.test": 0.125, "s4.test": 2.0}
    history.close()


def test_site_priors_are_rewritten_once_they_move_past_the_tolerance(tmp_path: Path) -> None:
    """A site's prior leans on the crawl's, which moves at every cycle: a stored prior
    is rewritten only once the plan's is more than PRIOR_TOLERANCE away from it
    (measured from what is stored, so small moves add up)."""
    import numpy as np

    from crawlkit.recrawl.history import PRIOR_TOLERANCE

    history = History(tmp_path)
    history.put([Entry(fp=i + 1, url=f"https://s{i}.test/", site=f"s{i}.test") for i in range(2)])
    sites = history.table().sites
    history.set_site_priors(sites, np.array([1.0, 2.0]))
    small, over = 1 + 0.6 * PRIOR_TOLERANCE, 1 + 1.2 * PRIOR_TOLERANCE
    before = history.db.total_changes
    history.set_site_priors(sites, np.array([small, 2.0]))
    assert history.db.total_changes == before  # within the tolerance: nothing written
    assert history.site_rates() == {"s0.test": 1.0, "s1.test": 2.0}
    # 0.6% from the last plan's, 1.2% from the stored one: written
    history.set_site_priors(sites, np.array([over, 2.0]))
    assert history.db.total_changes - before == 1
    assert history.site_rates() == {"s0.test": over, "s1.test": 2.0}
    # Compared with the table on disk once the kept priors are forgotten (a rollback)
    history.commit()
    history.rollback()
    sites = history.table().sites
    before = history.db.total_changes
    history.set_site_priors(sites, np.array([over * small, 2.0 / small]))
    assert history.db.total_changes == before
    history.set_site_priors(sites, np.array([over, 2.0 * over]))
    assert history.site_rates() == {"s0.test": over, "s1.test": 2.0 * over}
    history.close()


def test_cli_hold_mu_keeps_the_solved_multiplier_between_runs(tmp_path: Path, capfdbinary) -> None:
    """--hold-mu (what crawl's recrawl step passes): a run within the hold and with
    few URLs updated keeps the μ an earlier run solved; without it each run solves."""

    def solved_at(state: Path) -> float:
        history = History(state / "recrawl")
        try:
            return float(history.meta("solved_at"))
        finally:
            history.close()

    urls = [f"https://h{i}.test/p" for i in range(40)]
    log = tmp_path / "fetched.ndjson"
    log.write_text("".join(json.dumps(_fetch_rec(u, T0, "v0")) + "\n" for u in urls))
    again = tmp_path / "again.ndjson"  # one URL of the 40 fetched again: 2.5% updated
    again.write_text(json.dumps(_fetch_rec(urls[0], T0 + 60, "v1")) + "\n")
    for hold, second_solve in (("30s", T0), ("0s", T0 + 10)):
        state = tmp_path / f"s{hold}"
        for now, path in ((T0, log), (T0 + 10, again)):
            argv = ["recrawl", "--state", str(state), "--now", str(now), "--hold-mu", hold]
            assert cli_run([*argv, str(path)]) == 0
            capfdbinary.readouterr()
        assert solved_at(state) == second_solve
    # past the hold the next run solves again
    argv = ["recrawl", "--state", str(tmp_path / "s30s"), "--now", str(T0 + 45), "--hold-mu", "30s"]
    assert cli_run([*argv, str(again)]) == 0
    assert solved_at(tmp_path / "s30s") == T0 + 45


def test_in_lists_come_in_ten_lengths_and_find_every_entry(tmp_path: Path) -> None:
    """sqlite3 keeps a connection's last 128 statements prepared, each holding memory
    in proportion to its parameters: IN lists of every length kept 6.6 MiB in the step
    process, so they are padded to powers of two (at most 512)."""
    from crawlkit.recrawl.inlists import IN_LIST_MAX, in_lists

    lengths = set()
    for n in range(1, 1200):
        values = list(range(n))
        got: list[int] = []
        for marks, chunk in in_lists(values):
            assert marks.count("?") == len(chunk) <= IN_LIST_MAX
            lengths.add(len(chunk))
            got += chunk
        assert set(got) == set(values)
    assert lengths == {1 << k for k in range(10)}
    history = History(tmp_path)
    history.put([Entry(fp=(i * 0x9E3779B97F4A7C15) % (1 << 64), url=f"u{i}") for i in range(700)])
    for n in (1, 3, 512, 513, 700):
        fps = [(i * 0x9E3779B97F4A7C15) % (1 << 64) for i in range(n)] + [12345]  # untracked
        found = sorted(e.fp for e in history.entries(fps))
        assert found == sorted(fps[:-1])
    history.close()


def test_extracts_page_record_is_joined_to_its_fetch_not_a_second_fetch(tmp_path: Path) -> None:
    """extract's page record carries the fetch's status and time (to the microsecond,
    the fetch record's to the millisecond): it was read as a second fetch, so every
    page crawled had two checks after one visit and no outcome, and a URL without an
    outcome is never rescheduled."""
    state = tmp_path / "s"
    url = "https://a.test/p"
    fetched = _fetch_rec(url, "2026-06-01T10:00:00.123Z", "sha1:A")
    page = {
        "url": url,
        "status": 200,
        "fetched_at": "2026-06-01T10:00:00.123456Z",
        "content_type": "text/html",
        "digest": "sha1:A",
        "simhash": "f0f0f0f0f0f0f0f0",
        "links": 3,
    }
    summary = recrawl(tmp_path / "s", [("t", 1, fetched), ("t", 2, page)], write=list, now=T0)
    assert (summary.fetches, summary.pages) == (1, 1)
    history = History(state / "recrawl")
    entry = history.get(fingerprint_int(url))
    history.close()
    assert entry.checks == 1 and entry.outcome == "fetched"
    assert entry.simhash == int("f0f0f0f0f0f0f0f0", 16)  # the page's, joined to its fetch


def test_a_server_error_is_an_error_not_the_pages_content() -> None:
    """A 500 on a recrawl became the page's digest: a false change, and the next 304
    was archived as a revisit of the error page."""
    e = apply_event(None, fetch(T0, "page"), 1, P)
    e = apply_event(e, fetch(T0 + DAY, "error-page", status=500), 1, P)
    assert e is not None and e.digest == "page" and e.changes == 0 and e.errors == 1
    assert e.due - (T0 + DAY) < 2 * H  # backs off as an error (1 h), not the interval


def test_a_304_the_fetcher_called_an_error_counts_as_no_visit() -> None:
    """A 304 to a GET without validators captured nothing ("error"): the history took
    it for "not modified", so a page never captured drifted to the longest interval."""
    e = apply_event(None, fetch(T0, None, outcome="error", status=304), 1, P)
    assert e is not None and e.last_fetch is None and e.errors == 1


def test_validators_a_response_drops_are_dropped() -> None:
    """The page lost its ETag: the old one, sent as If-None-Match forever, outranked
    If-Modified-Since, and every visit of an unchanged page was a 200."""
    e = apply_event(
        None, fetch(T0, "d", etag='"v1"', last_modified="Thu, 01 Jan 2026 00:00:00 GMT"), 1, P
    )
    e = apply_event(e, fetch(T0 + DAY, "d2", last_modified="Fri, 02 Jan 2026 00:00:00 GMT"), 1, P)
    assert e is not None and e.etag is None and e.last_modified.startswith("Fri")
    e = apply_event(e, fetch(T0 + 2 * DAY, None, outcome="not-modified", status=304), 1, P)
    assert e is not None and e.last_modified.startswith("Fri")  # a 304 keeps them


def test_the_stage_leaves_deferred_urls_to_the_waiting_room(tmp_path: Path) -> None:
    """Fed the fetch log, the stage learned its deferred URLs and made them due as
    recrawls: the README pipeline fetched them twice (crawl's own step skips them)."""
    rec = {
        "url": "https://a.test/p",
        "outcome": "deferred",
        "status": 503,
        "fetched_at": "2026-05-01T00:00:00Z",
        "retry_at": "2026-05-01T00:01:00Z",
    }
    due = run(tmp_path / "s", [rec], T0 + 30 * DAY)
    assert due == []
