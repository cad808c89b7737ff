"""A system clock that a test can step: ``time.time()`` (and ``time.time_ns()``) plus
the seconds written in the file ``$CRAWLKIT_TEST_CLOCK_STEP`` (0 when it is absent or
empty); the monotonic clocks are left alone, as an NTP step leaves them.

Loaded by putting this directory first on ``PYTHONPATH`` (tests/crawl/test_crawl_clock.py).
"""

import os
import time

_STEP_FILE = os.environ.get("CRAWLKIT_TEST_CLOCK_STEP")

if _STEP_FILE:
    _time, _time_ns = time.time, time.time_ns

    def _step() -> float:
        try:
            with open(_STEP_FILE) as f:
                return float(f.read().strip() or 0)
        except (OSError, ValueError):
            return 0.0

    time.time = lambda: _time() + _step()
    time.time_ns = lambda: _time_ns() + int(_step() * 1e9)
