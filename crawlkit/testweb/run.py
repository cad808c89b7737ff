"""Run a test web until a signal or a deadline (the body of ``crawlkit testweb``)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable
from typing import Any

from crawlkit.testweb.graph import WebConfig
from crawlkit.testweb.server import TestWebServer


def new_event_loop() -> asyncio.AbstractEventLoop:
    """A uvloop loop when uvloop is installed, else the standard one."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


async def serve(
    server: TestWebServer, duration: float | None, on_ready: Callable[[dict[str, Any]], None]
) -> None:
    """Start ``server``, report readiness, stop on SIGINT/SIGTERM or after ``duration``,
    or when the reader of its request log goes away (then raise its BrokenPipeError).

    SIGUSR1 asks for a flush of the request log (see :meth:`TestWebServer.flush_mark`).
    """
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    installed: list[int] = []
    handlers: list[tuple[int, Callable[[], object]]] = [
        (signal.SIGINT, stop.set),
        (signal.SIGTERM, stop.set),
        (signal.SIGUSR1, lambda: loop.create_task(server.flush_mark())),
    ]
    for sig, handler in handlers:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, handler)
            installed.append(sig)
    try:
        info = await server.start()
        server.log.on_gone = stop.set  # (its reader gone: --log /dev/stdout | head)
        try:
            on_ready(info)
            if duration is None:
                await stop.wait()
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), duration)
        finally:
            await server.stop()
        server.log.end()
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def run_testweb(
    config: WebConfig,
    directory: str | os.PathLike[str],
    *,
    duration: float | None = None,
    on_ready: Callable[[dict[str, Any]], None] = lambda info: None,
    **server_options: Any,
) -> int:
    """Serve the web described by ``config`` (blocking); returns the request count."""
    server = TestWebServer(config, directory, **server_options)
    loop = new_event_loop()
    try:
        loop.run_until_complete(serve(server, duration, on_ready))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
    return server.log.count if server.log is not None else 0
