"""`crawlkit crawl --workers N`: one crawl as N processes, judged from the server's log.

One one-process crawl of WEB (the ``baseline`` fixture, once for the module) is what
every workers crawl is compared with: the same pages, the same summary and report."""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import multiprocessing
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import orjson
import pytest
from conftest import ROOT, crawlkit, poll_until, start_testweb
from warcio.archiveiterator import ArchiveIterator

from crawlkit import streams
from crawlkit.crawl import Crawl, CrawlOptions
from crawlkit.crawl import workers as workers_mod
from crawlkit.crawl.admission import Admission
from crawlkit.crawl.budget import PageBudget, reset
from crawlkit.crawl.feed import INBOX_EVERY, Feed
from crawlkit.crawl.files import is_done, write_file
from crawlkit.crawl.summary import NOTHING_FETCHED, CrawlSummary
from crawlkit.crawl.worker_process import _Linger
from crawlkit.crawl.workers import WORKER_MARGIN, merge_summaries, prepare, worker_deadline
from crawlkit.diag import NullReporter
from crawlkit.errors import UsageError
from crawlkit.fleet.handoff import copy_history
from crawlkit.records import url_record
from crawlkit.recrawl import Entry, History
from crawlkit.shard.routing import grow
from crawlkit.shard.slots import SlotMap
from crawlkit.stages.report_collection import warcinfo_fields
from crawlkit.state import open_state
from crawlkit.url import Canonicalizer

GAP = "0.05s"
# 4 hosts of 20 pages (81 pages with the seeds): small enough for seconds a crawl,
# enough that each worker owns hosts and a worker killed after its first cycle is
# killed mid-crawl (with SLOW, a host takes 20 x 0.25 s at least)
WEB = ("--hosts", "4", "--pages", "20", "--special", "none", "--seed", "11")
SLOW = ("--min-delay", "0.25s", "--batch", "40", "--per-host", "5")
# the figures of one crawl that must not depend on how many processes ran it
SAME = ("fetched", "requests", "pages", "links", "new_urls", "queued", "waiting")


def _args(web, state: Path, *extra: str) -> list[str]:
    return [
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--min-delay",
        GAP,
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "3s",
        "--no-budgets",
        "--json",
        *extra,
    ]


def _fetches(state: Path) -> list[dict]:
    logs = sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
    logs += sorted(state.glob("workers/*/crawl/cycles/*/fetch.ndjson"))
    return [r for log in logs for r in streams.read_records([log])]


def _wait_for_fetch_logs(
    proc: subprocess.Popen, state: Path, where: str, n: int, name: str = "fetch.ndjson"
) -> None:
    """Wait until ``n`` fetch logs (or other files ``name``) exist in the cycles under
    ``state/where`` (the event: a worker's cycle has fetch records, or is done;
    polled, as a file has no other signal here), failing if the crawl ends first or
    90 s pass."""
    poll_until(
        lambda: len(list(state.glob(f"{where}/crawl/cycles/*/{name}"))) >= n,
        proc,
        f"{where} wrote {n} {name}",
        timeout=90,
        every=0.02,
    )


def _fetched_in(cycles: list[Path]) -> int:
    logs = [c / "fetch.ndjson" for c in cycles if (c / "fetch.ndjson").exists()]
    return sum(r["outcome"] == "fetched" for r in streams.read_records(logs))


def _pages(state: Path) -> set[str]:
    return {_path(r["url"]) for r in _fetches(state) if r["outcome"] == "fetched"}


def _path(url: str) -> str:
    head, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    return f"{head}://{host.split(':')[0]}/{path}"


def _served(web) -> Counter[str]:
    """Requests per URL (host and path) the server answered, robots.txt aside."""
    return Counter(
        f"{q['host'].split(':')[0]}{q['path']}"
        for q in web.requests()
        if not q["path"].startswith("/robots.txt")
    )


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """One process's crawl of WEB: its pages, summary and report."""
    tmp = tmp_path_factory.mktemp("one")
    with start_testweb(tmp, *WEB) as web:
        one = crawlkit(*_args(web, tmp / "one"), timeout=180)
        assert one.code == 0, one.stderr
    res = crawlkit("report", "--state", str(tmp / "one"))
    assert res.code == 0, res.stderr
    return {
        "pages": _pages(tmp / "one"),
        "summary": orjson.loads(one.stdout),
        "report": orjson.loads(res.stdout),
    }


def test_two_workers_fetch_what_one_process_fetches_each_url_once(
    tmp_path: Path, baseline: dict
) -> None:
    expected = baseline["pages"]
    with start_testweb(tmp_path, *WEB) as web:
        state = tmp_path / "two"
        timeline = tmp_path / "loop.ndjson"
        res = crawlkit(
            *_args(web, state, "--workers", "2", "--timeline", str(timeline)), timeout=180
        )
        assert res.code == 0, res.stderr
        served = _served(web)
        robots = Counter(
            q["host"].split(":")[0] for q in web.requests() if q["path"] == "/robots.txt"
        )
    summary = orjson.loads(res.stdout)  # one summary for the crawl: one JSON document
    assert summary["workers"] == 2 and summary["stopped"] == "frontier empty"
    assert len(expected) >= 80
    assert _pages(state) == expected
    # one summary of the crawl: the figures one process gives (new URLs were lost by
    # a worker's refill and post thread adding at once: 103 of 145 on a bigger web)
    one = baseline["summary"]
    assert {k: summary[k] for k in SAME} == {k: one[k] for k in SAME}
    assert summary["seen"]["new"] == one["seen"]["new"] and summary["outcomes"] == one["outcomes"]
    # each URL once, robots.txt once per host, from the server's log
    assert served and max(served.values()) == 1, served.most_common(3)
    assert robots and max(robots.values()) == 1, robots
    # both workers worked, and their figures are summed
    per_worker = [len(list(state.glob(f"workers/{k}/crawl/cycles/*"))) for k in (0, 1)]
    assert all(per_worker), per_worker
    # --timeline: a file a worker (made when its fetch run starts), named as the help says
    assert (tmp_path / "loop-w0.ndjson").exists() and (tmp_path / "loop-w1.ndjson").exists()
    assert not timeline.exists()
    assert summary["outcomes"]["fetched"] == sum(
        1 for r in _fetches(state) if r["outcome"] == "fetched"
    )
    # one WARC directory, distinct names per worker, readable, and one CDXJ index
    warcs = sorted((state / "warc").glob("*.warc.gz"))
    assert {w.name.split("-")[1] for w in warcs} == {"w0", "w1"}, [w.name for w in warcs]
    responses = 0
    for warc in warcs:
        with open(warc, "rb") as f:
            responses += sum(rec.rec_type == "response" for rec in ArchiveIterator(f))
    assert responses >= len(expected)
    index = (state / "warc" / "index.cdxj").read_text().splitlines()
    assert len(index) >= responses
    # each file's index is the one its writer kept, moved in by its worker before the
    # worker ended, so the parent merged them and read no WARC file again
    for warc in warcs:
        part = state / "warc" / "indexes" / f"{warc.name}.cdxj"
        totals = state / "workers" / warc.name.split("-")[1][1:] / "crawl" / "totals.json"
        assert part.stat().st_mtime_ns <= totals.stat().st_mtime_ns, warc.name
    # one report of the whole crawl: every worker's fetches, seen set and frontier
    res = crawlkit("report", "--state", str(state))
    assert res.code == 0, res.stderr
    report = orjson.loads(res.stdout)
    assert report["fetches"] == len(_fetches(state)) == baseline["report"]["fetches"]
    counters, one_counters = report["counters"], baseline["report"]["counters"]
    for key in ("seen_urls", "frontier_queued", "frontier_parked", "runs"):
        assert counters.get(key) == one_counters.get(key) is not None, key
    assert report["recrawl"]["tracked"] == baseline["report"]["recrawl"]["tracked"] > 0


def _start(args: list[str], env: dict[str, str] | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _importing_workers(parent: int) -> list[int]:
    """The pids of ``parent``'s spawned children (the workers as they start)."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == parent and b"spawn_main" in cmdline:
            out.append(int(entry.name))
    return out


def test_ctrl_c_to_the_group_while_workers_import_stops_cleanly(tmp_path: Path) -> None:
    """A terminal's Ctrl-C reaches the whole process group, a worker too while it
    still imports (before it has a group of its own): it died of it with a traceback,
    and the crawl exited 1. It waits, blocked, in the worker, which drops it: the
    parent got it too and stops the crawl as on any first signal (exit 0)."""
    with start_testweb(tmp_path, *WEB) as web:
        state = tmp_path / "state"
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawlkit", *_args(web, state, "--workers", "2")],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # a group of its own, as a terminal's job has
        )
        try:
            # the moment a worker exists it is importing (a second or so): signal then
            poll_until(lambda: _importing_workers(proc.pid), proc, "a worker started", 60, 0.002)
            os.killpg(proc.pid, signal.SIGINT)
            out, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    text = err.decode()
    assert proc.returncode == 0, text
    assert "Traceback" not in text and "died" not in text
    assert json.loads(out)["stopped"].startswith("interrupted")


def test_kill9_of_a_worker_then_sigterm_lose_nothing(
    tmp_path: Path, baseline: dict, request: pytest.FixtureRequest
) -> None:
    """One crawl cut twice: kill -9 of worker 1 (the crawl fails, exit 1), then SIGTERM
    to the parent (a clean stop, exit 0); the third run finishes it."""
    expected = baseline["pages"]
    with start_testweb(tmp_path, *WEB) as web:
        state = tmp_path / "state"
        args = _args(web, state, *SLOW, "--workers", "2")
        # the crawl's TMPDIR, empty again after each run (short: a fork server's
        # socket path under a worker's directory in it has at most 107 bytes)
        temp = Path(tempfile.mkdtemp(prefix="ck-"))
        request.addfinalizer(lambda: shutil.rmtree(temp, ignore_errors=True))
        env = {**os.environ, "TMPDIR": str(temp)}
        proc = _start(args, env)
        # worker 1 has finished two cycles: its progress after the first has been sent
        _wait_for_fetch_logs(proc, state, "workers/1", 2, "cycle.done")
        owner = (state / "workers" / "1" / "LOCK").read_text()
        pid = int(next(w for w in owner.split() if w.isdigit()))
        os.kill(pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err.decode()
        assert "worker 1" in err.decode() and "died" in err.decode()
        # nothing left behind: no pool's semaphores to warn of, no fork server's socket
        assert "leaked" not in err.decode()
        assert list(temp.iterdir()) == []
        assert len(_pages(state)) < len(expected)  # cut mid-crawl
        # the summary counts the dead worker's run to a finished cycle, and no more
        # than was fetched: worker 0's whole run, worker 1's first cycle at least
        fetched = orjson.loads(out)["fetched"]
        w0 = sorted(state.glob("workers/0/crawl/cycles/*"))
        w1 = sorted(c for c in state.glob("workers/1/crawl/cycles/*") if is_done(c, "cycle"))
        assert fetched >= _fetched_in(w0) + _fetched_in(w1[:1]) > _fetched_in(w0)
        assert fetched <= len([r for r in _fetches(state) if r["outcome"] == "fetched"])
        # SIGTERM once both workers have a cycle more: each stops cleanly
        logs = len(list(state.glob("workers/*/crawl/cycles/*/fetch.ndjson")))
        proc = _start(args, env)
        _wait_for_fetch_logs(proc, state, "workers/*", logs + 2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert list(temp.iterdir()) == []
        assert orjson.loads(out)["stopped"] == "interrupted (SIGTERM)"
        assert len(_pages(state)) < len(expected)  # stopped early
        assert not list(state.glob("warc/new/*.open"))  # every worker closed its WARC
        res = crawlkit(*args, timeout=180)
        assert res.code == 0, res.stderr
        served = _served(web)
    assert orjson.loads(res.stdout)["stopped"] == "frontier empty"
    assert _pages(state) == expected
    # fetched twice only what the killed worker had in flight (its cut cycle)
    twice = [u for u, c in served.items() if c > 1]
    assert len(twice) <= 40, twice[:5]


def test_prepare_keeps_the_number_of_workers(tmp_path: Path) -> None:
    prepare(tmp_path, 2)
    prepare(tmp_path, 3)  # more: grown (workers that never ran have nothing to hand over)
    assert streams.read_json(tmp_path / "workers" / "fleet.json") == {"workers": 3}
    assert streams.read_json(tmp_path / "workers" / "map.json")["shards"] == 3
    assert streams.read_json(tmp_path / "workers" / "2" / "shard.json")["shard"] == 2
    prepare(tmp_path, 3)
    with pytest.raises(UsageError, match="--workers 3 or more"):
        prepare(tmp_path, 2)
    # a rebalance cut after the map grew: only its own number goes on with it
    cut = tmp_path / "cut"
    prepare(cut, 1)
    grow(SlotMap.load(cut / "workers" / "map.json"), 2).save(cut / "workers" / "map.json")
    with pytest.raises(UsageError, match=r"run it with --workers 2$"):
        prepare(cut, 3)
    prepare(cut, 2)
    assert streams.read_json(cut / "workers" / "fleet.json") == {"workers": 2}
    single = tmp_path / "single"
    (single / "crawl" / "cycles").mkdir(parents=True)
    with pytest.raises(UsageError, match="one-process crawl"):
        prepare(single, 2)


def test_merged_summary_sums_the_workers() -> None:
    a = {"outcomes": {"fetched": 3, "error": 1}, "pages": 3, "stopped": "frontier empty"}
    a |= {"errors": {"timeout": {"count": 1, "example": "http://a/"}}, "next_retry_at": None}
    b = {"outcomes": {"fetched": 2}, "pages": 2, "stopped": "frontier empty", "parked": 0}
    b |= {"errors": {"timeout": {"count": 2, "example": "http://b/"}}}
    b |= {"next_retry_at": "2026-01-01T00:00:00Z"}
    s = merge_summaries([a, b], elapsed=1.5)
    assert s["outcomes"] == {"fetched": 5, "error": 1} and s["fetched"] == 5 and s["pages"] == 5
    assert s["errors"] == {"timeout": {"count": 3, "example": "http://a/"}}
    assert s["next_retry_at"] == "2026-01-01T00:00:00Z" and s["stopped"] == "frontier empty"
    c = {**b, "stopped": "time limit (--for)"}
    assert merge_summaries([a, c], elapsed=1).get("stopped").startswith("worker 0: frontier")
    assert merge_summaries([a, c], elapsed=1, stopped="interrupted (SIGTERM)")["stopped"] == (
        "interrupted (SIGTERM)"
    )


def test_explain_with_workers_shows_the_worker_pipeline_and_the_delivery(tmp_path: Path) -> None:
    state = tmp_path / "s"
    res = crawlkit(
        "crawl", "https://example.org/", "--state", str(state), "--workers", "3", "--explain"
    )
    assert res.code == 0, res.stderr
    out = res.stdout.decode()
    assert "not a stage" in out and f"{state}/workers/0" in out
    assert "--shard 0 --slot-map" in out and "prefix crawlkit-wK" in out
    assert f"--deliver {state}/workers/2" in out
    assert not state.exists() or not (state / "workers").exists()  # explain writes nothing
    # worker 0's fetch runs with its own settings: its share of --concurrency, the
    # shared per-IP table, its WARC prefix (it showed the user's flags)
    shown = crawlkit(
        *("crawl", "https://example.org/", "--state", str(state), "--workers", "3"),
        *("--explain", "--concurrency", "90", "--min-delay", "2s"),
    )
    [fetch] = [
        line for line in shown.stdout.decode().splitlines() if line.startswith("crawlkit fetch")
    ]
    assert "--concurrency 30 " in fetch and "--concurrency 90" not in fetch
    assert f"--ip-table {state.resolve()}/workers/ip-table" in fetch
    assert "--warc-prefix crawlkit-w0" in fetch and "--min-delay 2s" in fetch


PER_IP_GAP = 0.08


def _link_farm_crawl(tmp_path: Path, *extra: str) -> list[dict]:
    """Crawl a link farm (6 hosts on one address) with --per-ip 1 and PER_IP_GAP;
    the server's log of the requests to the address, in the order they started."""
    web_args = ("--hosts", "1", "--pages", "2", "--special", "none,link-farm:6")
    with start_testweb(tmp_path, *web_args) as web:
        farm = [h for h in web.manifest["hosts"] if h["kind"] == "link-farm"]
        (addr,) = {h["addr"] for h in farm}
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{h['root']}\n" for h in farm))
        args = _args(web, tmp_path / "state", *extra, "--per-ip", "1")
        args[1] = str(seeds)
        args += ["--per-ip-delay", f"{PER_IP_GAP}s", "--min-delay", "0s", "--max-pages", "60"]
        res = crawlkit(*args, timeout=180)
        assert res.code == 0, res.stderr
        return sorted((r for r in web.requests() if r["addr"] == addr), key=lambda r: r["t_start"])


def test_per_ip_holds_across_workers_from_the_server_log(tmp_path: Path) -> None:
    to_addr = _link_farm_crawl(tmp_path, "--workers", "2")
    # the farm's hosts were crawled by both workers (so the limit had to hold across them)
    state = tmp_path / "state"
    hosts = [
        {r["url"].split("/")[2] for r in _fetches(state / "workers" / str(k)) if "farm" in r["url"]}
        for k in (0, 1)
    ]
    assert all(hosts), hosts
    assert len(to_addr) >= 12
    # never two requests in flight to the address, each the gap after the last one ended
    for a, b in itertools.pairwise(to_addr):
        assert b["t_start"] - a["t_end"] >= PER_IP_GAP, (a, b)


def test_per_ip_gap_holds_in_one_process_from_the_server_log(tmp_path: Path) -> None:
    """One process counts --per-ip-delay from a request's end too, as the shared table
    does: counted from its launch only, 10-23 of 960 starts to one address came up to
    16 ms inside the gap by the server's log (a fresh host's clock is committed and the
    connection made after the launch)."""
    to_addr = _link_farm_crawl(tmp_path)
    assert len(to_addr) >= 12
    for a, b in itertools.pairwise(to_addr):
        assert b["t_start"] - a["t_end"] >= PER_IP_GAP, (a, b)


def test_max_pages_holds_across_workers_and_more_workers_rebalance(
    tmp_path: Path, baseline: dict
) -> None:
    """--max-pages from the server's log over runs of 2, then 3 workers; the third
    worker takes its sites from the other two and the crawl finishes as one process
    does, no URL requested twice."""
    with start_testweb(tmp_path, *WEB) as web:
        state = tmp_path / "state"
        first = crawlkit(*_args(web, state, "--workers", "2", "--max-pages", "40"), timeout=180)
        assert first.code == 0, first.stderr
        after_first = sum(_served(web).values())
        # the limit counts every run of the crawl: a second run with 70 adds 30
        second = crawlkit(*_args(web, state, "--workers", "3", "--max-pages", "70"), timeout=180)
        assert second.code == 0, second.stderr
        after_second = sum(_served(web).values())
        third = crawlkit(*_args(web, state, "--workers", "3"), timeout=180)
        assert third.code == 0, third.stderr
        served = _served(web)
    assert orjson.loads(first.stdout)["stopped"] == "page limit (--max-pages)"
    assert orjson.loads(second.stdout)["stopped"] == "page limit (--max-pages)"
    # page requests (robots.txt aside) from the server's log, those in flight included
    assert after_first == 40 and after_second == 70
    # rebalanced: worker 2 fetched, nothing was lost, no URL was requested twice
    assert "workers 2 -> 3" in second.stderr
    assert list(state.glob("workers/2/crawl/cycles/*/fetch.ndjson"))
    assert orjson.loads(third.stdout)["stopped"] == "frontier empty"
    assert _pages(state) == baseline["pages"]
    assert max(served.values()) == 1, served.most_common(3)
    # fewer workers, or one process, are refused in one line
    for fewer in ("2", "1"):
        res = crawlkit("crawl", "--state", str(state), "--workers", fewer)
        assert res.code != 0 and "--workers 3 or more" in res.stderr, res.stderr
        assert len(res.stderr.splitlines()) == 1


def test_page_budget_grants_never_pass_the_limit_and_come_back(tmp_path: Path) -> None:
    path = tmp_path / "budget"
    reset(path, [3, 0])  # worker 0 made 3 requests in an earlier run
    a, b = PageBudget(path, 0, 2, 10), PageBudget(path, 1, 2, 10)
    assert a.grant(used=3, held=0) == 4  # a half of the 7 left, rounded up
    assert b.grant(used=0, held=0) == 2  # a half of the 3 the claim of a leaves
    assert a.grant(used=3, held=4) == 1 and b.grant(used=0, held=2) == 0
    assert a.total_claimed() == 10  # 8 of a (3 made, 5 held), 2 of b (held)
    assert b.exhausted(used=2)  # b's 2 answered, nothing held: no room while a holds 5
    a.attach(lambda: 5)  # a lingers: 5 requests made in all, its claim falls to them
    a.release()
    assert not b.exhausted(used=2) and b.grant(used=2, held=0) == 2
    assert b.total_claimed() == 9
    b.attach(lambda: 2)
    b.release()
    assert a.total_claimed() == 7


def test_merged_summary_takes_the_end_figures_of_each_worker_last_run() -> None:
    first = {"queued": 5, "stopped": "page limit (--max-pages)", "requests": 4}
    again = {"queued": 2, "stopped": "page limit (--max-pages)", "requests": 3}
    other = {"queued": 0, "stopped": "frontier empty", "requests": 6}
    s = merge_summaries([first, again, other], elapsed=1, last=[again, other])
    assert s["queued"] == 2 and s["requests"] == 13
    assert s["stopped"] == "page limit (--max-pages)"


def test_merged_summary_says_nothing_could_be_fetched_as_one_process_does() -> None:
    """Every seed's host down, all of them one worker's: the other had nothing at all."""
    failed = {"outcomes": {"deferred": 1}, "stopped": NOTHING_FETCHED}
    idle = {"outcomes": {}, "stopped": "frontier empty"}
    assert merge_summaries([failed, idle], elapsed=1)["stopped"] == NOTHING_FETCHED
    worked = {"outcomes": {"fetched": 3}, "stopped": "frontier empty"}  # one got answers
    assert merge_summaries([failed, worked], elapsed=1)["stopped"].startswith("worker 0: ")


def test_new_urls_of_the_inbox_and_of_the_post_thread_are_both_counted(tmp_path: Path) -> None:
    """The refill's inbox admission and the post thread's links add new URLs at once:
    the post thread's count, added while an inbox file is admitted, is kept (2 workers
    counted 103 new URLs where one process counted 145 when it was lost)."""
    summary = CrawlSummary()
    gate = SimpleNamespace(
        summary=summary, note_links=lambda records: None, route=lambda records, tag: records
    )
    (tmp_path / "inbox").mkdir()
    write_file(tmp_path / "inbox" / "1-a.ndjson.zst", [{"url": "http://a.test/"}] * 5)

    class Racing(Admission):
        def admit(self, records: list, tag: str) -> int:
            summary.new_urls += 7  # the post thread, meanwhile
            return len(records)

    racing = Racing.__new__(Racing)
    racing.gate, racing.rep = gate, NullReporter()  # type: ignore[assignment]
    racing.dir = SimpleNamespace(state_path=tmp_path)  # type: ignore[assignment]
    racing.inbox_lock, racing.clock = threading.Lock(), lambda: 0.0
    assert racing.ingest_inbox()
    assert summary.to_json()["new_urls"] == 12


def test_a_refill_reads_the_inbox_only_when_no_links_step_has_for_a_while() -> None:
    """While its frontier has URLs, a refill reads the inbox (an admission: commits
    with fsyncs) only when no links step (which takes it in with the cycle's links)
    nor refill has for INBOX_EVERY; at every refill when the frontier has none."""
    now = [100.0]
    reads: list[float] = []
    feed = Feed.__new__(Feed)
    feed.limits = SimpleNamespace(clock=lambda: now[0])  # type: ignore[assignment]
    admission = SimpleNamespace(inbox_taken=now[0])

    def ingest() -> bool:
        reads.append(now[0])
        admission.inbox_taken = now[0]
        return True

    admission.ingest_inbox = ingest
    feed.admission = admission  # type: ignore[assignment]
    for k in range(40):  # a refill every 0.5 s, its frontier never empty
        if k == 6:
            admission.inbox_taken = now[0]  # a links step took the inbox in at 103 s
        feed._ingest_inbox(due_only=True)
        now[0] += 0.5
    assert reads == [103.0 + INBOX_EVERY * k for k in range(1, math.ceil(17 / INBOX_EVERY))]
    reads.clear()
    assert feed._ingest_inbox()  # the frontier had nothing: read now
    assert reads == [now[0]]


def test_a_cycle_admits_the_inbox_with_its_own_links_in_one_commit_of_each_store(
    tmp_path: Path,
) -> None:
    """A shard's links step takes the inbox in: its URLs and site links are admitted
    with the cycle's links, in one seen-set commit and one site-graph and one queue
    commit of the frontier for both, and the files are kept in the cycle (read again
    by the step after a crash). Admitted apart, at refills, they cost a worker of
    --workers 2 about 2x one process's commits per page (issue 27)."""
    the_map = SlotMap.even(2)
    a, b, c = [s for s in (f"s{i}.test" for i in range(200)) if the_map.shard_of_site(s) == 0][:3]
    other = next(s for s in (f"o{i}.test" for i in range(200)) if the_map.shard_of_site(s) == 1)
    canon = Canonicalizer()

    def link(url: str, source: str) -> dict:
        return {**url_record(canon.parse(url), depth=1, reason="link"), "from": source}

    options = CrawlOptions(scope="any", budgets=False, shard=0, shards=2)
    with open_state(tmp_path / "s") as state:
        run = Crawl(state, options, reporter=NullReporter())
        try:
            cycle = run.dir.new_cycle()
            (cycle / "fetch.ndjson").write_bytes(b"")
            links = [
                link(f"http://{a}/found", f"http://{a}/"),
                link(f"http://{other}/x", f"http://{a}/"),
            ]
            write_file(cycle / "links.ndjson.zst", links)
            inbox = tmp_path / "s" / "inbox"
            inbox.mkdir()
            delivered = [
                link(f"http://{b}/delivered", f"http://{other}/"),
                {"site": c, "from": f"http://{other}/", "reason": "site-link"},
            ]
            write_file(inbox / "1-peer.ndjson.zst", delivered)
            commits: Counter[str] = Counter()
            seen, frontier = run.stores.seen, run.stores.frontier
            seen_commit, frontier_commit = seen.commit, frontier.commit

            def count_seen(keys: object) -> None:
                commits["seen"] += 1
                seen_commit(keys)  # type: ignore[arg-type]

            def count_frontier() -> None:
                commits["frontier"] += frontier._changed()
                frontier_commit()

            seen.commit = count_seen  # type: ignore[method-assign]
            frontier.commit = count_frontier  # type: ignore[method-assign]
            run.cycles.links(cycle)
            of_links = dict(commits)
            queued = [r["url"] for r in run.feed.next_batch(cycle, lambda p, r: None)]
        finally:
            run.close()
    assert sorted(queued) == [f"http://{a}/found", f"http://{b}/delivered"]
    assert of_links == {"seen": 1, "frontier": 2}
    assert not list(inbox.iterdir())
    assert [p.name for p in cycle.glob("inbox-*")] == ["inbox-1-peer.ndjson.zst"]
    # one outbox file for the peer: the URL of its site and the cycle's site links
    (sent,) = (tmp_path / "s" / "outbox" / "shard-1").iterdir()
    records = list(streams.read_records([sent]))
    assert [r.get("url") for r in records] == [f"http://{other}/x", None]
    assert records[1]["site"] == other and records[1]["reason"] == "site-link"


def test_a_workers_cycle_is_delivered_when_it_is_done_not_at_the_next_round(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parent delivers the outboxes as soon as a worker reports a finished cycle
    (its links for the others are in its outbox then), not up to DELIVER_EVERY later:
    on the few-seed web the first cycles' links are the whole crawl's work."""
    monkeypatch.setattr(workers_mod, "DELIVER_EVERY", 1000.0)  # no round comes in time
    fleet = workers_mod.WorkerFleet(tmp_path, [], CrawlOptions(), 2)
    fleet.map_path = tmp_path / "map.json"
    turns = [0]

    class Process:
        exitcode, pid = 0, None
        alive = True

        def __init__(self) -> None:
            # an always-readable "sentinel": the loop never blocks on it
            self.sentinel, self.w = os.pipe()
            os.write(self.w, b"x")

        def is_alive(self) -> bool:
            turns[0] += 1
            return self.alive and turns[0] < 2000  # old code: ends here, undelivered

        def join(self) -> None:
            pass

    ends = []
    for w in fleet.workers:
        (tmp_path / "workers" / str(w.k)).mkdir(parents=True)
        (tmp_path / "workers" / str(w.k) / "shard.json").write_text("{}")
        parent, child = multiprocessing.Pipe()
        w.process, w.conn, w.killed = Process(), parent, True
        ends.append(child)
    calls: list[int] = []

    def deliver(dirs: list, reporter: object = None) -> dict:
        calls.append(turns[0])
        if len(calls) == 1:  # the first round: worker 0 then finishes a cycle
            ends[0].send(("progress", {"fetched": 1}))
        elif len(calls) == 2:
            for w in fleet.workers:
                w.process.alive = False
        return {"files": 0}

    monkeypatch.setattr(workers_mod, "deliver", deliver)
    try:
        fleet._loop()
    finally:
        for w in fleet.workers:
            os.close(w.process.sentinel)
            os.close(w.process.w)
    assert len(calls) == 3  # the first round, the finished cycle's, the last one
    assert calls[1] < 2000


def test_a_new_worker_gets_the_history_of_its_own_sites_and_no_other(tmp_path: Path) -> None:
    """A grown worker's recrawl history: every entry of the sites the map gives it,
    from each old worker, and none of another's (a row names its site by index)."""
    slot_map = SlotMap.even(3)
    sites = [f"site{i}.test" for i in range(40)]
    ours = {s for s in sites if slot_map.shard_of_site(s) == 2}
    assert ours and len(ours) < len(sites)
    for k in range(2):
        history = History(tmp_path / str(k) / "recrawl")
        history.put(
            [
                Entry(fp=1000 * k + i, url=f"https://{s}/{k}", site=s, last_fetch=1.0)
                for i, s in enumerate(sites)
            ]
        )
        history.commit()
        history.close()
    copied = copy_history([tmp_path / "0", tmp_path / "1"], tmp_path / "2", slot_map, 2)
    out = History(tmp_path / "2" / "recrawl")
    got = out.entries([1000 * k + i for k in range(2) for i in range(len(sites))])
    assert sorted((e.site, e.url) for e in got) == sorted(
        (s, f"https://{s}/{k}") for k in range(2) for s in ours
    )
    assert copied == 2 * len(ours)
    out.close()


def test_a_worker_gets_a_temp_dir_only_where_a_socket_fits_under_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = Path(tempfile.mkdtemp(prefix="ck-"))
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(short))
        made = workers_mod._worker_temp_dir(3)
        assert made is not None and made.parent == short and made.name.startswith("ckw3-")
        deep = tmp_path / ("d" * 60)
        deep.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(deep))
        assert workers_mod._worker_temp_dir(3) is None
        assert list(deep.iterdir()) == []  # the directory tried is removed
    finally:
        shutil.rmtree(short)


def test_the_workers_margin_before_the_deadline_is_a_share_of_a_short_for() -> None:
    """Workers stop fetching before --for to end in time, but a short --for keeps most
    of its time: a 3-s margin left `--for 5s` with 3 workers (started 2.3 s in on a
    loaded machine) 0.1 s to fetch, and it ended with no request."""
    assert worker_deadline(1000.0, 60.0) == 1000.0 - WORKER_MARGIN
    assert worker_deadline(1000.0, 5.0) == pytest.approx(999.5)
    assert worker_deadline(None, None) is None and worker_deadline(1000.0, None) == 1000.0


def test_a_worker_started_again_first_waits_for_its_last_run_to_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker is started again once its summary came (its inbox got files), and the
    summary comes before its process exits, which until then holds the worker's state
    lock: the new run would find it locked."""
    fleet = workers_mod.WorkerFleet(tmp_path, [], CrawlOptions(), 2)
    fleet.map_path = tmp_path / "map.json"
    fleet.own_seeds = [[], []]
    events: list[str] = []

    class Old:
        alive = True

        def is_alive(self) -> bool:
            return self.alive

        def join(self, timeout: float | None = None) -> None:
            events.append(f"join {timeout}")
            self.alive = False

    class New:
        def __init__(self, **_kwargs: object) -> None:
            pass

        def start(self) -> None:
            events.append("start")

        def is_alive(self) -> bool:
            return False  # ended by the time it is started again below

    class Context:
        Process = New

        @staticmethod
        def Pipe() -> tuple:  # multiprocessing's name
            return multiprocessing.Pipe()

    monkeypatch.setattr(fleet, "_ctx", Context())
    w = fleet.workers[0]
    w.process, w.state = Old(), "ended"
    fleet._start(w)
    assert events == [f"join {workers_mod.RESTART_JOIN}", "start"]
    assert isinstance(w.process, New) and w.state == "busy"
    fleet._start(w)  # a process that has ended is not waited for
    assert events[-1] == "start" and len(events) == 3
    if w.temp_dir is not None:
        shutil.rmtree(w.temp_dir, ignore_errors=True)


def test_a_stopped_crawl_ends_a_worker_that_waits_for_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that lost the parent's SIGTERM (a fetch run's closed loop took it) went
    on to wait for work, and the parent, stopped by the other worker's death, sent it
    neither work nor "end": the crawl never ended (bench/crash_hunt.py, about one kill
    in 30). A stop now ends the workers that wait."""
    fleet = workers_mod.WorkerFleet(tmp_path, [], CrawlOptions(), 2)
    for w in fleet.workers:
        (tmp_path / "workers" / str(w.k)).mkdir(parents=True)
        (tmp_path / "workers" / str(w.k) / "shard.json").write_text("{}")
    monkeypatch.setattr(workers_mod, "deliver", lambda dirs, reporter=None: {"files": 0})
    parent, child = multiprocessing.Pipe()
    fleet.workers[0].state = "failed"
    fleet.workers[1].conn, fleet.workers[1].state = parent, "idle"
    fleet._stop("worker 0 died")
    fleet._deliver_and_check()
    assert child.poll(0) and child.recv() == "end"


def test_a_worker_started_again_in_a_crawl_is_not_given_its_seeds_to_queue_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker started again (its inbox got links after its run ended) was given its
    seeds as if named again: a seed's failed robots.txt was asked again seconds after
    the first run asked it, and the summary counted the seed's deferral twice. Its
    seeds still widen its scope, as the others' do."""
    fleet = workers_mod.WorkerFleet(tmp_path, [], CrawlOptions(), 2)
    fleet.map_path = tmp_path / "map.json"
    fleet.own_seeds = [["http://a.test/"], ["http://b.test/"]]
    given: list[tuple[list[str], list[str]]] = []

    class Started:
        def __init__(self, args: tuple, **_kwargs: object) -> None:
            given.append(args[2])

        def start(self) -> None:
            pass

        def is_alive(self) -> bool:
            return False

    class Context:
        Process = Started

        @staticmethod
        def Pipe() -> tuple:  # multiprocessing's name
            return multiprocessing.Pipe()

    monkeypatch.setattr(fleet, "_ctx", Context())
    w = fleet.workers[0]
    try:
        fleet._start(w)
        w.state = "ended"
        fleet._start(w)
    finally:
        if w.temp_dir is not None:
            shutil.rmtree(w.temp_dir, ignore_errors=True)
    assert given == [
        (["http://a.test/"], ["http://b.test/"]),
        ([], ["http://a.test/", "http://b.test/"]),
    ]


def test_a_workers_settings_name_no_object_of_its_process(tmp_path: Path) -> None:
    """A worker's settings.json and its WARC files' warcinfo held "<..._Linger object at
    0x7f...>": an address of the process, different in every run."""
    budget = PageBudget(tmp_path / "budget", 0, 2, 10)
    options = dataclasses.replace(
        CrawlOptions(),
        linger=_Linger(tmp_path, lambda message: None, None, budget),
        page_budget=budget,
    )
    settings = warcinfo_fields(options)["crawlkit-settings"]
    assert " at 0x" not in settings
    assert json.loads(settings)["page_budget"] == {
        "max_pages": 10,
        "workers": 2,
        "file": str(tmp_path / "budget"),
    }


def test_a_workers_state_moved_elsewhere_crawls_on(tmp_path: Path) -> None:
    """Each worker's shard.json named its slot map by the path it had then: a state of
    `crawl --workers 2` moved (mv) refused to run ("STATE/workers/map.json: not a slot
    map"), where a moved state of one process runs on."""
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "6", "--special", "none") as web:
        args = [
            "--workers",
            "2",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--min-delay",
            "0.05s",
        ]
        first = crawlkit(
            "crawl", str(web.seeds), "--state", str(tmp_path / "a"), "--max-pages", "4", *args
        )
        assert first.code == 0, first.stderr
        (tmp_path / "a").rename(tmp_path / "b")
        again = crawlkit("crawl", str(web.seeds), "--state", str(tmp_path / "b"), *args)
        assert again.code == 0, again.stderr
        web.flush()
        pages = [q for q in web.requests() if q["path"] != "/robots.txt"]
    assert len(pages) == len({(q["host"], q["path"]) for q in pages}) > 4  # on, none twice


def test_a_crawl_with_work_a_kill_cut_is_not_grown(tmp_path: Path) -> None:
    # Growing copies the moved sites' history before the killed worker's cut cycles
    # are post-processed: the new owners fetched those cycles' pages again (seed pages,
    # 44 in a helper's server log, --workers 2 with one killed, then 3).
    prepare(tmp_path, 2)
    crawl_dir = tmp_path / "workers" / "1" / "crawl"
    (crawl_dir / "cycles" / "000002").mkdir(parents=True)
    with pytest.raises(UsageError, match=r"worker 1 has cycle 000002 left by a run that was"):
        prepare(tmp_path, 3)
    (crawl_dir / "cycles" / "000002" / "cycle.done").write_text("{}\n")
    (crawl_dir / "batches").mkdir()
    (crawl_dir / "batches" / "000003-1.ndjson.zst").write_bytes(b"")
    with pytest.raises(UsageError, match=r"once with --workers 2 .*then with --workers 3$"):
        prepare(tmp_path, 3)
    assert streams.read_json(tmp_path / "workers" / "fleet.json") == {"workers": 2}
    (crawl_dir / "batches" / "000003-1.ndjson.zst").unlink()
    prepare(tmp_path, 3)  # nothing cut: grown
    assert streams.read_json(tmp_path / "workers" / "fleet.json") == {"workers": 3}


def test_a_proxy_that_fails_ends_the_workers_crawl_as_it_ends_one_process(tmp_path):
    """A --proxy that cannot be reached stops each worker's fetch run (every URL not
    fetched deferred). The crawl says so in the one line one process ends on, once,
    and not as workers that "died" (a crash's words: each worker's exception, twice);
    nothing reached the web, and the next run without the proxy fetches the seeds."""
    # bound, not listening: a connection to it is refused, and no one else takes it
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    proxy = f"http://user:secret@127.0.0.1:{closed.getsockname()[1]}"
    try:
        with start_testweb(tmp_path, *WEB) as web:
            ends = []
            for n in ("1", "2"):
                res = crawlkit(
                    *_args(web, tmp_path / f"state{n}", "--workers", n, "--proxy", proxy)
                )
                assert res.code == 1, res.stderr
                lines = res.stderr.splitlines()
                assert "died" not in res.stderr and "ProxyError" not in res.stderr
                ends.append(lines[-1])
            web.flush()
            assert web.requests() == []
            assert ends[1] == ends[0]
            assert ends[0].startswith("crawlkit crawl: proxy-unreachable: cannot connect to")
            assert "secret" not in ends[0] and "***" in ends[0]
            again = crawlkit(*_args(web, tmp_path / "state2", "--workers", "2"))
            assert again.code == 0, again.stderr
            web.flush()
            asked = {f"http://{q['host']}:{q['port']}{q['path']}" for q in web.requests()}
            assert set(web.seeds.read_text().split()) <= asked
    finally:
        closed.close()
