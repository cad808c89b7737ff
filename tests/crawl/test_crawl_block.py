"""An operator block posted while a crawl runs is applied by that run (its frontier
stays open for the whole run): the frontier refuses the site's queued URLs and the
fetcher the ones it holds, so only what is in flight is still asked. Judged from the
server's request log."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
from conftest import ROOT, crawlkit, poll_until, start_testweb

from crawlkit import streams
from crawlkit.crawl.feed import FEW_HOSTS_PER_HOST
from crawlkit.frontier.store import Frontier

PER_HOST = 2
SHORT_GAP = 0.02  # a few hosts at this gap may each hold FEW_HOSTS_PER_HOST URLs


def _args(web, state: Path, *extra: str) -> list[str]:
    """A crawl of ``web`` into ``state`` to the end, with ``extra`` options."""
    return [
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--no-budgets",
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "3s",
        "--json",
        *extra,
    ]


def _wait_for_requests(web, proc: subprocess.Popen, host: str, n: int) -> None:
    """Wait until the server's log has ``n`` requests to hosts named ``host...`` (the
    event: the log is the server's only record of them, so it is polled), failing if
    the crawl ends first or 60 s pass."""

    def asked() -> int:
        return len([q for q in web.requests(settle=0.0) if q["host"].startswith(host)])

    poll_until(lambda: asked() >= n, proc, f"{n} requests to {host or 'the web'}", every=0.02)


def _crawl_and_block(
    tmp_path: Path, web_args: tuple[str, ...], crawl_args: tuple[str, ...], seen: int
) -> tuple[dict, list[dict], int, float, Path]:
    """Crawl the web, block h1.test once the server has had ``seen`` requests for it;
    the crawl's summary, the server's log, h1's pages, when the block was posted and
    the state."""
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        args = _args(web, state, *crawl_args)
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawlkit", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            _wait_for_requests(web, proc, "h1.test", seen)
            res = crawlkit("frontier", "block", "--state", str(state), "h1.test")
            assert res.code == 0, res.stderr
            posted = time.time()
            out, err = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
        assert proc.returncode == 0, err.decode()
        requests = web.requests()
        pages_h1 = len(web.host("h1.test")["pages"])
    return orjson.loads(out), requests, pages_h1, posted, state


def _after(requests: list[dict], posted: float) -> list[dict]:
    return [q for q in requests if q["host"].startswith("h1.test") and q["t_start"] > posted]


def test_a_block_posted_during_the_crawl_stops_that_site(tmp_path: Path) -> None:
    summary, requests, pages_h1, posted, _ = _crawl_and_block(
        tmp_path,
        ("--hosts", "3", "--pages", "40", "--special", "none", "--seed", "5"),
        ("--min-delay", "0.3s", "--per-host", str(PER_HOST)),
        seen=5,
    )
    after = _after(requests, posted)
    # At most what was in flight, and what the fetcher held (--per-host) until the
    # next batch applied the block.
    assert len(after) <= PER_HOST + 1, len(after)
    assert pages_h1 > 5 + PER_HOST + 1  # the block really kept pages away
    assert summary["refused"].get("blocked", 0) >= 1


def test_a_block_refuses_what_the_fetcher_holds_of_the_site(tmp_path: Path) -> None:
    # Three hosts at a short gap and no --per-host: each may hold up to a second of
    # gaps' worth of URLs (50 here), which a block used to let through.
    summary, requests, pages_h1, posted, state = _crawl_and_block(
        tmp_path,
        ("--hosts", "3", "--pages", "300", "--special", "none", "--seed", "5"),
        ("--min-delay", f"{SHORT_GAP}s", "--delay-factor", "0"),
        seen=20,
    )
    held = min(FEW_HOSTS_PER_HOST, int(1 / SHORT_GAP))
    after = _after(requests, posted)
    # What was in flight and what started before the next batch applied the block
    # (the fetcher looks for posted commands every REFILL_LOOK s): well under what it held.
    assert len(after) < held // 2, len(after)
    assert pages_h1 > 20 + held  # the block really kept pages away
    fetches = [
        orjson.loads(line)
        for log in state.glob("crawl/cycles/*/fetch.ndjson")
        for line in log.read_bytes().splitlines()
    ]
    # the URLs the fetcher held were answered refused, not asked
    refused = [r for r in fetches if r.get("refused") == "blocked"]
    assert refused and all(r["host"].startswith("h1.test") for r in refused)
    assert summary["refused"]["blocked"] >= len(refused)


def test_a_block_holds_in_every_worker_of_a_crawl_of_workers(tmp_path: Path) -> None:
    summary, requests, pages_h1, posted, _ = _crawl_and_block(
        tmp_path,
        ("--hosts", "3", "--pages", "40", "--special", "none", "--seed", "5"),
        ("--min-delay", "0.3s", "--per-host", str(PER_HOST), "--workers", "2"),
        seen=5,
    )
    after = _after(requests, posted)
    assert len(after) <= PER_HOST + 1, len(after)  # as in one process
    assert pages_h1 > 5 + PER_HOST + 1
    assert summary["refused"].get("blocked", 0) >= 1


def _page_requests(web, host: str, since: float) -> list[dict]:
    return [
        q
        for q in web.requests()
        if q["host"].startswith(host) and q["path"] != "/robots.txt" and q["t_start"] > since
    ]


def test_a_block_refuses_what_a_killed_run_left_to_fetch_again(tmp_path: Path) -> None:
    # Two sites at a short gap: the fetcher holds many of their URLs when the crawl is
    # killed; the next run hands them to the fetcher before any batch. One is blocked.
    web_args = ("--hosts", "2", "--pages", "200", "--special", "none", "--seed", "5")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        host = web.manifest["hosts"][0]["name"]
        args = _args(web, state, "--min-delay", f"{SHORT_GAP}s", "--delay-factor", "0")
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawlkit", *args],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            _wait_for_requests(web, proc, "", 20)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        killed = time.time()
        left = [
            r
            for path in (state / "crawl" / "batches").glob("*.ndjson.zst")
            for r in streams.read_records([path])
            if r["host"].startswith(host)
        ]
        assert left  # URLs of the site handed to the fetcher and not answered
        assert crawlkit("frontier", "block", "--state", str(state), host).code == 0
        res = crawlkit(*args, timeout=120)
        assert res.code == 0, res.stderr
        assert _page_requests(web, host, killed) == []
    assert orjson.loads(res.stdout)["refused"]["blocked"] >= len(left) > 0


def test_a_block_reaches_the_workers_a_crawl_grows_to(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "20", "--special", "none", "--seed", "11")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        args = _args(web, state, "--min-delay", "0.05s")
        res = crawlkit(*args, "--workers", "2", "--max-pages", "12", timeout=120)
        assert res.code == 0, res.stderr
        hosts = sorted(web.hosts)
        for host in hosts:
            assert crawlkit("frontier", "block", "--state", str(state), host).code == 0
        posted = time.time()
        res = crawlkit(*args, "--workers", "3", timeout=120)
        assert res.code == 0, res.stderr
        assert [q for q in web.requests() if q["t_start"] > posted] == []
    for k in range(3):  # the new worker's frontier holds the blocks too
        frontier = Frontier.open(state / "workers" / str(k) / "frontier", read_only=True)
        assert frontier.blocks == set(hosts), k


def test_a_block_posted_before_the_first_crawl_of_workers_holds(tmp_path: Path) -> None:
    web_args = ("--hosts", "3", "--pages", "10", "--special", "none", "--seed", "5")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        # no crawl yet: the state is not known to be one of workers
        assert crawlkit("frontier", "block", "--state", str(state), "h1.test").code == 0
        res = crawlkit(*_args(web, state, "--min-delay", "0.05s", "--workers", "2"), timeout=120)
        assert res.code == 0, res.stderr
        asked = {q["host"].split(":")[0] for q in web.requests() if q["path"] != "/robots.txt"}
    assert "h1.test" not in asked and {"h0.test", "h2.test"} <= asked
    assert orjson.loads(res.stdout)["refused"].get("blocked", 0) >= 1
