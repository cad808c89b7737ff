"""Time the process did not run, kept out of its requests' timeouts and timings.

A crawl stopped with SIGSTOP (Ctrl-Z, a paused container or VM) and resumed found every
request that was in flight past its timeout: the monotonic clock ran on while nothing
read the sockets, and answers that had arrived during the pause were recorded as
"timeout after 30s" (and the hosts' last fetch times as a minute, which stretches
their gaps tenfold). :class:`FreezeWatch` ticks on the event loop; a tick that comes
much later than asked for means the process did not run (or its loop was held), and
that time is added to the deadline of every request under way and counted in
:attr:`FreezeWatch.frozen`, which a request's elapsed time leaves out.

Why it works on resume: the tick was due before any deadline pending when the pause
began but the nearest (it is never more than :data:`TICK` seconds ahead), and both
event loops run due timers in the order they were due, so the tick moves the other
deadlines (cancelling their pending handles) before they fire.
"""

from __future__ import annotations

import asyncio

__all__ = ["FROZEN", "TICK", "FreezeWatch"]

TICK = 0.5
"""Seconds between two ticks."""
FROZEN = 2.0
"""A tick this much later than asked for counts as time the process did not run."""


class FreezeWatch:
    """Ticks on one event loop (:meth:`start` from inside it) until :meth:`stop`."""

    def __init__(self) -> None:
        self.frozen = 0.0  # seconds the process did not run, in all
        self._timeouts: set[asyncio.Timeout] = set()
        self._handle: asyncio.TimerHandle | None = None
        self._last = 0.0

    def start(self) -> None:
        """Start ticking on the running loop (again after :meth:`stop`)."""
        if self._handle is None:
            loop = asyncio.get_running_loop()
            self._last = loop.time()
            self._handle = loop.call_later(TICK, self._tick, loop)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def watch(self, timeout: asyncio.Timeout) -> None:
        """Move ``timeout`` by the time the process does not run, until :meth:`unwatch`."""
        self._timeouts.add(timeout)

    def unwatch(self, timeout: asyncio.Timeout | None) -> None:
        if timeout is not None:
            self._timeouts.discard(timeout)

    def _tick(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        late = now - self._last - TICK
        if late > FROZEN:
            self.frozen += late
            for timeout in self._timeouts:
                when = timeout.when()
                if when is not None:
                    timeout.reschedule(when + late)
        self._last = now
        self._handle = loop.call_later(TICK, self._tick, loop)
