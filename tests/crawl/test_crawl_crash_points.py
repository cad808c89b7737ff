"""`crawlkit crawl` killed at a named step, then run to the end: nothing lost, nothing twice.

The kill -9 test of ``test_crawl.py`` kills at random moments; here a child process
dies (``os._exit``: no clean-up, no flush, like a SIGKILL) at one chosen point, so the
window it probes is hit every time.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, crawlkit, start_testweb
from test_crawl import _crawl_args, _fetch_records, _strip_port

# Runs ``crawlkit ARGS`` and dies at the first seen-set commit of a cycle's links step
# (its seen merge, ``CycleRunner._merge_links``, run while the step process dedups),
# before it or after it (``when``): the cycle's new URLs are in its new-1 file, marked
# seen or not, and not queued.
CHILD = """
import os, sys, traceback
from crawlkit.seen.store import SeenStore
from crawlkit_cli.main import main

when = sys.argv[1]
real_commit = SeenStore.commit

def commit(self, *args, **kw):
    links_step = any(
        frame.name == "_merge_links" and frame.filename.endswith("cycle.py")
        for frame in traceback.extract_stack()
    )
    if links_step and when == "before":
        os._exit(9)
    real_commit(self, *args, **kw)
    if links_step:
        os._exit(9)

SeenStore.commit = commit
sys.argv = ["crawlkit", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_killed_at_the_seen_commit_queues_each_new_url_once(tmp_path: Path, when: str) -> None:
    """A kill between writing a cycle's new URLs and marking them seen: the next run's
    seen-merge finds them new again. Queued from both attempts' files, each would be
    handed out twice and counted twice against its site's budget, so a site near its
    budget had pages parked and never fetched (the kill -9 test under load). A kill
    after the commit: the URLs are seen, and only the first file has them."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "25", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--batch", "10", "--per-host", "5")
        child = subprocess.run(
            [sys.executable, "-c", CHILD, when, *args], cwd=ROOT, capture_output=True, timeout=180
        )
        assert child.returncode == 9, child.stderr.decode()[-2000:]
        # The crash point was reached: a cycle's new URLs on disk, its seen step not done.
        cut = [c for c in state.glob("crawl/cycles/*") if (c / "new-1.ndjson.zst").exists()]
        assert cut and not (cut[0] / "seen.done").exists()

        res = crawlkit(*args, timeout=180)
        assert res.code == 0, res.stderr
        requested = {_strip_port(f"http://{q['host']}{q['path']}") for q in web.requests()}
        pages = {_strip_port(u) for host in web.hosts_of_kind("ordinary") for u in host["pages"]}
    stats = orjson.loads(crawlkit("frontier", "stats", "--state", str(state)).stdout)
    # Nothing lost, from the server's view: every page of the web was requested.
    assert len(pages) >= 40
    assert sorted(pages - requested) == []
    # Nothing queued twice: every URL the frontier took in, it handed out once. A fetch
    # that failed (on a loaded machine the 3 s timeout can cut a request) is queued
    # again as a retry, and that second queuing is the design's, not the crash's.
    retries = sum(r["outcome"] == "error" for r in _fetch_records(state))
    assert stats["queued"] == stats["parked"] == 0
    assert stats["added"] == stats["handed_out"] == len(pages) + retries


# Runs ``crawlkit ARGS`` and dies when the fetcher cuts its first cycle, right after the
# next cycle's directory is made and before its fetch log is (``CrawlDir.new_cycle``).
CHILD_AT_CUT = """
import os, sys
from crawlkit.crawl.files import CrawlDir
from crawlkit_cli.main import main

real_new_cycle = CrawlDir.new_cycle
made = []

def new_cycle(self):
    path = real_new_cycle(self)
    made.append(path)
    if len(made) == 2:
        os._exit(9)
    return path

CrawlDir.new_cycle = new_cycle
sys.argv = ["crawlkit", *sys.argv[1:]]
main()
"""


def test_killed_between_a_new_cycle_and_its_fetch_log_loses_nothing(tmp_path: Path) -> None:
    """A cycle directory with no fetch log yet (a kill -9 at a cut, between the two):
    the next run finished the earlier cycles, then failed on the empty one's missing
    log, and so did every run after it."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "25", "--special", "none") as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--batch", "10", "--per-host", "5")
        child = subprocess.run(
            [sys.executable, "-c", CHILD_AT_CUT, *args], cwd=ROOT, capture_output=True, timeout=180
        )
        assert child.returncode == 9, child.stderr.decode()[-2000:]
        bare = [c for c in state.glob("crawl/cycles/*") if not (c / "fetch.ndjson").exists()]
        assert len(bare) == 1  # the crash point was reached

        res = crawlkit(*args, timeout=180)
        assert res.code == 0, res.stderr
        requested = {_strip_port(f"http://{q['host']}{q['path']}") for q in web.requests()}
        pages = {_strip_port(u) for host in web.hosts_of_kind("ordinary") for u in host["pages"]}
    assert len(pages) >= 40
    assert sorted(pages - requested) == []  # nothing lost, from the server's view
