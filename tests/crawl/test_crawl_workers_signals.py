"""`crawl --workers N` stopped by a signal in its first moments: a clean stop, exit 0.

Each worker is a fresh interpreter that imports the crawl for a second or more before
it can take a signal. A SIGTERM in that time, forwarded by the parent, killed the
worker and failed the crawl ("worker died", exit 1); one that came while the parent
itself started was lost, and the crawl ran on to its end.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
from conftest import ROOT, poll_until, start_testweb

from crawlkit.crawl.options import CrawlOptions
from crawlkit.crawl.workers import WorkerFleet
from crawlkit.diag import Reporter

# 4 hosts of 20 pages, a quarter of a second between requests to a host: a crawl of
# several seconds, so a stop is seen
WEB = ("--hosts", "4", "--pages", "20", "--special", "none", "--seed", "11")


def _args(web, state: Path, seeds: Path | None = None) -> list[str]:
    return [
        "crawl",
        str(seeds or web.seeds),
        "--state",
        str(state),
        "--min-delay",
        "0.25s",
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--workers",
        "2",
        "--json",
    ]


def _popen(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _workers_spawned(pid: int) -> int:
    """The crawl's worker processes that exist (spawned, maybe still importing)."""
    found = 0
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids = (task / "children").read_text().split()
        except OSError:
            continue
        for kid in kids:
            try:
                cmdline = Path(f"/proc/{kid}/cmdline").read_bytes()
            except OSError:
                continue
            found += b"spawn_main" in cmdline
    return found


def _stopped_cleanly(proc: subprocess.Popen, signal_name: str) -> dict:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, (proc.returncode, err.decode()[-2000:])
    assert "died" not in err.decode(), err.decode()
    summary = orjson.loads(out)
    assert summary["stopped"] == f"interrupted ({signal_name})", summary
    return summary


def test_a_sigterm_while_the_workers_start_is_a_clean_stop(tmp_path: Path) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        proc = _popen(_args(web, tmp_path / "s"))
        try:
            # both spawned: they import for a second or more before they hold signals
            poll_until(lambda: _workers_spawned(proc.pid) >= 2, proc, "both workers", every=0.005)
        finally:
            proc.send_signal(signal.SIGTERM)
        summary = _stopped_cleanly(proc, "SIGTERM")
        requests = [q for q in web.requests() if q["path"] != "/robots.txt"]
    assert summary["failed"] is False
    assert len(requests) < 80  # stopped, not crawled to the end


def test_a_sigterm_before_the_workers_start_is_not_lost(tmp_path: Path) -> None:
    """The seeds file is a FIFO, so the signal lands while the command reads its seeds:
    held from the command's start (crawlkit.early_signals), before the parent's own
    handlers. It was never acted on: the crawl ran to its end."""
    fifo = tmp_path / "seeds"
    os.mkfifo(fifo)
    with start_testweb(tmp_path, *WEB) as web:
        proc = _popen(_args(web, tmp_path / "s", seeds=fifo))
        try:
            with open(fifo, "w") as seeds:  # opens once the command opens it to read
                proc.send_signal(signal.SIGTERM)
                seeds.write(web.seeds.read_text())
        finally:
            summary = _stopped_cleanly(proc, "SIGTERM")
        requests = [q for q in web.requests() if q["path"] != "/robots.txt"]
    assert summary["fetched"] == 0 and len(requests) < 80, summary


def test_a_worker_ended_by_the_stop_the_crawl_sent_did_not_die(tmp_path: Path) -> None:
    """A worker whose own handling of signals is over (its run ended, it closes its
    stores) ends of the parent's SIGTERM at once: that is the stop the crawl sent (a
    peer's failed --proxy, here), not a death. It was said "worker 0 died (signal
    SIGTERM)" beside the proxy's one line (CI, 1 run in ~30). A SIGTERM the crawl did
    not send is still a death."""
    said = tmp_path / "said.txt"
    for sent_by_the_crawl in (True, False):
        with said.open("w") as out:
            fleet = WorkerFleet(tmp_path / "s", [], CrawlOptions(), 2, reporter=Reporter("t", out))
            worker = fleet.workers[0]
            fleet.workers = [worker]
            worker.process = multiprocessing.get_context("spawn").Process(
                target=time.sleep, args=(60,)
            )
            worker.process.start()
            if sent_by_the_crawl:
                fleet.stopped = "worker 1 failed"  # its --proxy: the crawl stops
                worker.stops_sent = 1
            os.kill(worker.process.pid, signal.SIGTERM)  # default action: the process ends
            worker.process.join(60)
            fleet._reap()
        if sent_by_the_crawl:
            assert worker.state == "ended" and not fleet.failed
            assert said.read_text() == ""
        else:
            assert worker.state == "failed" and fleet.failed
            assert (
                "worker 0 (pid" in said.read_text() and "died (signal SIGTERM)" in said.read_text()
            )
