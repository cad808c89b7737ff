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
from conftest import ROOT, crawlkit, start_testweb

from crawlkit.crawl.feed import FEW_HOSTS_PER_HOST

PER_HOST = 2
SHORT_GAP = 0.02  # a few hosts at this gap may each hold FEW_HOSTS_PER_HOST URLs


def _crawl_and_block(
    tmp_path: Path, web_args: tuple[str, ...], crawl_args: tuple[str, ...], seen: int
) -> tuple[dict, list[dict], int, float, Path]:
    """Crawl the web, block h1.test once the server has had ``seen`` requests for it;
    the crawl's summary, the server's log, h1's pages, when the block was posted and
    the state."""
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        args = [
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            *crawl_args,
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "3s",
            "--json",
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawlkit", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                log = web.requests(settle=0.0)
                if len([q for q in log if q["host"].startswith("h1.test")]) >= seen:
                    break
                time.sleep(0.02)
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
