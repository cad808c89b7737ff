"""The cycle collector in a crawl's processes: collections by the clock, not by the count.

CPython collects its youngest generation each time 700 more container objects are
alive than at the last collection, and the middle one every tenth time. In a crawl
process that count is reached 35 to 55 times a second (a cycle's link records, the
responses in flight, the frontier's batches: all alive for a second or two), and
each collection walks whatever young containers are alive then. Measured (issue
27, ``gc.callbacks`` in the crawl process of a 40-s few-seed crawl of 2,000 hosts):
in its second 20 s, 1,091 young and 99 middle collections took 1.15 s with the
interpreter lock held and found **no** garbage (what a crawl frees, reference
counting frees); 2.0-2.7 s of collections in the whole run, 0.44 s with this module.
A crawl of 15,000 hosts, every 20 s: 0.6 s young, 0.85 s middle and ~0.2 s full
collections (8% of the process's time under the lock), 0 to 40 objects found.

So :func:`collect_by_clock` leaves the count only as a safety valve
(:data:`YOUNG_THRESHOLD` net new containers: a burst of garbage that reference
counting cannot free still starts a collection) and collects on a timer: the young
and middle generations every :data:`YOUNG_EVERY` seconds, all of them every
:data:`FULL_EVERY` seconds. Garbage in a reference cycle (an exception and its
frames, which can hold a response body) then lives at most that long, whatever the
count does. What is loaded at start-up (modules, options) is frozen out of every
collection (``gc.freeze``): a full collection walks only what the crawl made.

The extract and step processes collect the same way. An extract process, by the count,
made 1,111 young, 100 middle and 9 full collections in a 45-s few-seed crawl of 4,000
hosts: 0.68 s, 3.4% of its CPU, most of it the full ones (51 ms each, walking the link
resolver's cache of up to 200,000 results); the step process 0.10 s, 2.7% of its.
By the clock, the same crawl: 0.36 s (1.3%) and 0.008 s (0.2%). (A ``gc.callbacks``
probe loaded by ``sitecustomize`` in every process of the crawl.)
"""

from __future__ import annotations

import gc
import threading

__all__ = ["FULL_EVERY", "YOUNG_EVERY", "YOUNG_THRESHOLD", "collect_by_clock", "collected"]

#: Net new container objects that start a young collection between two ticks.
YOUNG_THRESHOLD = 50_000
#: Seconds between two collections of the young and middle generations.
YOUNG_EVERY = 10.0
#: Seconds between two full collections (a multiple of :data:`YOUNG_EVERY`).
FULL_EVERY = 60.0
#: A full collection after this many middle ones when the timer is late (CPython's
#: third threshold; the timer's full collections come first).
_OLD_THRESHOLD = 100
_collector: threading.Thread | None = None
#: Set after each timed collection (tests wait on it).
collected = threading.Event()


def collect_by_clock(young_every: float = YOUNG_EVERY, full_every: float = FULL_EVERY) -> bool:
    """Freeze what is alive now, raise the young threshold and start, once per
    process, a daemon thread that collects the young and middle generations every
    ``young_every`` seconds and all of them every ``full_every`` (module doc).
    False if the thread was already running (the thresholds are set again)."""
    global _collector
    gc.freeze()
    _young, middle, _old = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, middle, _OLD_THRESHOLD)
    if _collector is not None and _collector.is_alive():
        return False
    stop = threading.Event()  # never set: the thread ends with the process
    full_after = max(1, round(full_every / young_every))

    def run() -> None:
        ticks = 0
        while not stop.wait(young_every):
            ticks += 1
            gc.collect(2 if ticks % full_after == 0 else 1)
            collected.set()

    _collector = threading.Thread(target=run, name="gc-clock", daemon=True)
    _collector.start()
    return True
