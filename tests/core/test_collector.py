"""A crawl's processes collect reference cycles by the clock (crawlkit/collector.py): the
count that starts CPython's young collections is raised past what the process
reaches, and a timer thread collects instead, so garbage in a cycle is freed within
the timer's period, young or old. Each case runs in a process of its own (the
collector's thresholds and thread are the process's)."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROBE = """
import gc, sys, threading
from crawlkit import collector
mode = sys.argv[1]

class Cycle:
    def __init__(self):
        self.me = self  # reference counting alone never frees it
        self.freed = threading.Event()
    def __del__(self):
        self.freed.set()

if mode == "timer":
    started = collector.collect_by_clock(young_every=0.05, full_every=0.2)
    assert started and not collector.collect_by_clock(0.05, 0.2)  # one thread a process
else:  # the raised threshold without the timer: nothing collects the cycle
    gc.freeze()
    gc.set_threshold(collector.YOUNG_THRESHOLD, 10, 100)
print(gc.get_threshold()[0])
young = Cycle()
freed = young.freed
del young
print("young", freed.wait(10 if mode == "timer" else 1))
old = Cycle()
gc.collect(1)
gc.collect(1)  # survived the middle generation: only a full collection finds it now
if mode == "timer":
    collector.collected.clear()
    collector.collected.wait(30)  # a young tick passes over it
freed = old.freed
del old
print("old", freed.wait(30 if mode == "timer" else 1))
"""


def _probe(mode: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return out.stdout.split("\n")[:3]


def test_cycles_are_collected_by_the_clock_young_and_old() -> None:
    from crawlkit.collector import YOUNG_THRESHOLD

    assert _probe("timer") == [str(YOUNG_THRESHOLD), "young True", "old True"]


def test_without_the_clock_the_raised_threshold_leaves_them() -> None:
    # the probe's cycles need the timer: with the threshold alone they stay
    assert _probe("threshold")[1:] == ["young False", "old False"]


# Each of a crawl's other processes, set up by its own initializer in a process of its
# own: the young threshold raised and the clock's thread running.
INITIALIZERS = {
    "extract": """
from crawlkit.stages.extract_page import ExtractOptions, init_worker
init_worker(ExtractOptions(), owner=os.getpid())
""",
    "step": """
from crawlkit.crawl.step_process import _open_stores
_open_stores(os.path.join(sys.argv[1], "dedup"), os.path.join(sys.argv[1], "recrawl"), os.getpid())
""",
}


@pytest.mark.parametrize("process", sorted(INITIALIZERS))
def test_the_extract_and_step_processes_collect_by_the_clock(process: str, tmp_path) -> None:
    code = (
        "import gc, os, sys, threading\n"
        + INITIALIZERS[process]
        + ("print(gc.get_threshold()[0], sorted(t.name for t in threading.enumerate()))\n")
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    from crawlkit.collector import YOUNG_THRESHOLD

    threshold, _, threads = out.stdout.strip().partition(" ")
    assert int(threshold) == YOUNG_THRESHOLD
    assert "'gc-clock'" in threads
