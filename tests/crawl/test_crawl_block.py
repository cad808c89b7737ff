"""An operator block posted while a crawl runs is applied by that run (its frontier
stays open for the whole run)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson
from conftest import ROOT, crawlkit, start_testweb

PER_HOST = 2


def test_a_block_posted_during_the_crawl_stops_that_site(tmp_path: Path) -> None:
    web_args = ("--hosts", "3", "--pages", "40", "--special", "none", "--seed", "5")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        args = [
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            "--min-delay",
            "0.3s",
            "--per-host",
            str(PER_HOST),
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
                seen = [q for q in web.requests(settle=0.0) if q["host"].startswith("h1.test")]
                if len(seen) >= 5:
                    break
                time.sleep(0.05)
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
    after = [q for q in requests if q["host"].startswith("h1.test") and q["t_start"] > posted]
    # Only what the fetcher already held (at most --per-host) and what was in flight.
    assert len(after) <= PER_HOST + 1, len(after)
    assert pages_h1 > 5 + PER_HOST + 1  # the block really kept pages away
    assert orjson.loads(out)["refused"].get("blocked", 0) >= 1
