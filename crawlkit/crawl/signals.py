"""SIGINT and SIGTERM during a crawl: the first one asks the run to stop cleanly."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator

from crawlkit import early_signals

__all__ = ["graceful_signals"]


@contextlib.contextmanager
def graceful_signals(on_signal: Callable[[str], None]) -> Iterator[None]:
    """SIGINT and SIGTERM call ``on_signal`` once; a second one acts as it always does.

    A fetch run inside installs handlers of its own and puts these back when it ends
    (:mod:`crawlkit.stages.fetch`), or leaves the defaults if the first signal came
    then. Outside the main thread signals cannot be handled, so nothing is installed
    there. The previous handlers come back at exit. A signal held since
    :func:`crawlkit.early_signals.hold` (the command line holds them from its start) is
    acted on at once, as the first one.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    kinds = early_signals.KINDS
    before = early_signals.defaults()  # not the holding handlers: the ones they replaced

    def handler(signum: int, _frame: object) -> None:
        for sig in kinds:  # the next one is not caught: stop now
            signal.signal(sig, before[sig])
        on_signal(signal.Signals(signum).name)

    for sig in kinds:
        signal.signal(sig, handler)
    held = early_signals.take()  # after install: no moment without a handler
    if held is not None:
        for sig in kinds:  # the next one is not caught: stop now
            signal.signal(sig, before[sig])
        on_signal(held)
    try:
        yield
    finally:
        for sig in kinds:
            signal.signal(sig, before[sig])
