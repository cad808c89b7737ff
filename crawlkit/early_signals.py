"""SIGINT and SIGTERM that come before a long command has its own handlers.

A job runner may stop a crawl at any moment, also in its first second, while Python
still imports the crawl's modules and opens its stores (a second or more on a loaded
machine): with no handler yet, the process died with status 143 and the summary was
never written. :func:`hold` installs, first thing, handlers that keep the first
signal; :func:`take` hands it to the command's own handling
(:func:`crawlkit.crawl.signals.graceful_signals`), which acts on it as on a signal
that came later: for ``crawlkit crawl`` a clean stop that says "interrupted".

Kept apart from :mod:`crawlkit.crawl` so that the command line can call :func:`hold`
before importing anything heavy. Handlers exist only in the main thread; elsewhere
both functions do nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

__all__ = ["KINDS", "blocked", "defaults", "drop_blocked", "hold", "take"]

KINDS = (signal.SIGINT, signal.SIGTERM)

_held: list[str] = []  # names of the signals kept, first first
_defaults: dict[signal.Signals, Any] = {}  # the handlers :func:`hold` replaced


def _keep(signum: int, _frame: object) -> None:
    # The first one is kept; the next one acts as it always does (stops at once).
    for sig, handler in _defaults.items():
        signal.signal(sig, handler)
    _held.append(signal.Signals(signum).name)


@contextlib.contextmanager
def blocked() -> Iterator[None]:
    """SIGINT and SIGTERM held back (blocked, not ignored) in this thread meanwhile:
    one that comes is delivered when the block ends. A process started meanwhile
    inherits the mask (fork and exec keep it), so a signal to the whole process group
    while it imports waits in it too, until :func:`drop_blocked`."""
    before = signal.pthread_sigmask(signal.SIG_BLOCK, KINDS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def drop_blocked() -> None:
    """Drop the SIGINT and SIGTERM that waited, blocked, since this process started
    (:func:`blocked`), and take them from now on as the handlers then say: a signal
    to a group is also its parent's, whose handling stands for both. Setting a
    signal's handler to SIG_IGN discards one pending (POSIX), before it is unblocked."""
    before = {sig: signal.signal(sig, signal.SIG_IGN) for sig in KINDS}
    signal.pthread_sigmask(signal.SIG_UNBLOCK, KINDS)
    for sig, handler in before.items():
        signal.signal(sig, handler)


def hold() -> None:
    """Keep the first SIGINT/SIGTERM from now on until :func:`take` is called."""
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in KINDS:
        current = signal.getsignal(sig)
        if current is not _keep:
            _defaults[sig] = current
        signal.signal(sig, _keep)


def take() -> str | None:
    """The name of the signal kept since :func:`hold` (None if none came); the
    handlers :func:`hold` replaced are put back, as :func:`defaults` says."""
    if threading.current_thread() is threading.main_thread():
        for sig, handler in _defaults.items():
            if signal.getsignal(sig) is _keep:
                signal.signal(sig, handler)
    name = _held[0] if _held else None
    _held.clear()
    return name


def defaults() -> dict[signal.Signals, Any]:
    """The handler of each signal as it was before :func:`hold` (the current one for
    a signal never held)."""
    return {sig: _defaults.get(sig, signal.getsignal(sig)) for sig in KINDS}
