"""A crawl process collects reference cycles by the clock (crawl/collector.py): the
count that starts CPython's young collections is raised past what the process
reaches, and a timer thread collects instead, so garbage in a cycle is freed within
the timer's period, young or old. Each case runs in a process of its own (the
collector's thresholds and thread are the process's)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import gc, importlib.util, os, sys, threading
import crawlkit
# the module alone: crawlkit.crawl's package imports the whole loop (seconds)
path = os.path.join(os.path.dirname(crawlkit.__file__), "crawl", "collector.py")
spec = importlib.util.spec_from_file_location("collector", path)
collector = importlib.util.module_from_spec(spec)
spec.loader.exec_module(collector)
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
    from crawlkit.crawl.collector import YOUNG_THRESHOLD

    assert _probe("timer") == [str(YOUNG_THRESHOLD), "young True", "old True"]


def test_without_the_clock_the_raised_threshold_leaves_them() -> None:
    # the probe's cycles need the timer: with the threshold alone they stay
    assert _probe("threshold")[1:] == ["young False", "old False"]
