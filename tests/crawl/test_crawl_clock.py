"""A crawl whose system clock steps back mid-run goes on, and its --for still holds.

Deadlines and host gaps were kept in ``time.time()``: an NTP step back by an hour
left every host's next request an hour away and ``--for`` an hour off, so the crawl
sat idle until a signal ended it (invariant 8: a run given --for ends within seconds).
The clock is stepped by tests/tools/clock_step/sitecustomize.py, which offsets
``time.time()`` and leaves the monotonic clocks alone, as a step does.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from conftest import ROOT, poll_until, start_crawlkit, start_testweb

SHIM = ROOT / "tests" / "tools" / "clock_step"


def _stepped_clock(tmp_path: Path, seconds: str) -> tuple[Path, dict[str, str]]:
    """The step file (its ``seconds`` to start with) and the environment that loads
    the shim reading it."""
    step = tmp_path / "step"
    step.write_text(seconds)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SHIM), os.environ.get("PYTHONPATH", "")]),
        "CRAWLKIT_TEST_CLOCK_STEP": str(step),
    }
    return step, env


def _flags(web: Any) -> tuple[str, ...]:
    """crawl flags for the test web: its addresses, any scope, no budgets, short gaps."""
    return (
        *("--hosts-file", str(web.hosts_file), "--allow-net", web.info["allow_net"]),
        *("--scope", "any", "--no-budgets", "--min-delay", "0.05s", "--delay-factor", "0"),
    )


def test_a_clock_step_back_mid_run_neither_stalls_nor_outlasts_for(tmp_path: Path) -> None:
    step, env = _stepped_clock(tmp_path, "0")
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "150", "--special", "none") as web:
        started = time.monotonic()
        crawl = start_crawlkit(
            *("crawl", str(web.seeds), "--state", str(tmp_path / "s")),
            *_flags(web),
            *("--for", "15s"),
            env=env,
        )
        try:
            poll_until(lambda: len(web.requests(settle=0)) >= 10, crawl, "the first requests")
            step.write_text("-3600")  # the system clock set back an hour
            before = len(web.requests(settle=0))
            crawl.wait(timeout=60)
        finally:
            crawl.kill()
            crawl.wait()
        took = time.monotonic() - started
        after = len(web.requests())
    assert crawl.returncode == 0
    assert took < 15 + 10, took  # --for held
    assert after >= before + 20, (before, after)  # and the crawl went on fetching


def test_a_run_after_the_clock_was_set_right_fetches_at_once(tmp_path: Path) -> None:
    # The first run's clock was an hour ahead; the next run's is right. Its hosts'
    # saved clocks said "next request in an hour", and the run deferred every URL:
    # "nothing due before the time limit". A saved clock past the host's gap (and
    # backoff) is taken for the clock's error.
    step, env = _stepped_clock(tmp_path, "3600")
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "150", "--special", "none") as web:
        flags = _flags(web)
        first = start_crawlkit(
            "crawl", str(web.seeds), "--state", str(tmp_path / "s"), *flags, "--for", "4s", env=env
        )
        assert first.wait(timeout=60) == 0
        step.write_text("0")  # set right
        before = len(web.requests())
        second = start_crawlkit(
            "crawl", str(web.seeds), "--state", str(tmp_path / "s"), *flags, "--for", "6s", env=env
        )
        assert second.wait(timeout=60) == 0
        after = len(web.requests())
    assert after >= before + 20, (before, after)
