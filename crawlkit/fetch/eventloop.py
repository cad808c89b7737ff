"""The fetch stage's event loop: uvloop, connecting to an address without resolving it.

Every connection the fetcher opens goes to an address it has already resolved and
checked (the pinned resolver, invariant 7), through aiohttp and aiohappyeyeballs to
``loop.sock_connect(sock, (address, port))``. uvloop's ``sock_connect`` passes even a
numeric address through ``getaddrinfo`` on libuv's thread pool before it connects:
184 µs of CPU a loopback connect against 89 connecting in place (`bench/bench_connect.py`,
3,000 connects, median of 5; the bare system call 34), and a crawl opens a connection
every three pages or so (a host's connection is let go after 4 s idle, and a few-seed crawl
comes back to most hosts a cycle later). asyncio's own loop takes a numeric address as
it is; :class:`FetchLoop` does the same on uvloop and leaves anything else (a name, an
IPv6 address with a zone, a socket that is not TCP over IP) to uvloop.
:func:`run` runs the fetch stage's coroutine on it.

The connect itself is asyncio's: ``connect()`` on the non-blocking socket, then wait
until it is writable and read ``SO_ERROR``; a failure raises the ``OSError`` subclass
of its errno with uvloop's message ("Connect call failed ('127.0.0.1', 1)"), so what
a failed fetch records does not change.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import socket
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import uvloop

__all__ = ["connect_in_place", "fetch_loop_class", "numeric_address", "run"]

T = TypeVar("T")

# connect() of a non-blocking TCP socket: under way (EINTR: a signal came, the
# connection goes on). EAGAIN is no such thing there (no local port was free).
_IN_PROGRESS = (errno.EINPROGRESS, errno.EINTR)


def numeric_address(sock: socket.socket, address: Any) -> bool:
    """Whether ``address`` is an IP literal ``sock`` can connect to as it is: a TCP
    socket of its family, the host a literal of that family (no zone), a port."""
    if sock.type != socket.SOCK_STREAM or not isinstance(address, tuple) or len(address) < 2:
        return False
    host, port = address[0], address[1]
    if not isinstance(host, str) or not isinstance(port, int):
        return False
    try:
        socket.inet_pton(sock.family, host)
    except (OSError, ValueError):  # a name, a zone ("fe80::1%eth0"), another family
        return False
    return True


async def connect_in_place(
    loop: asyncio.AbstractEventLoop, sock: socket.socket, address: tuple[Any, ...]
) -> None:
    """Connect the non-blocking ``sock`` to the numeric ``address`` on ``loop``."""
    failed = sock.connect_ex(address)
    if failed in _IN_PROGRESS:
        done = loop.create_future()
        fd = sock.fileno()
        loop.add_writer(fd, _settle, done)
        try:
            await done
        finally:
            loop.remove_writer(fd)  # also when cancelled: the fd is the caller's again
        failed = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
    if failed:
        raise OSError(failed, f"Connect call failed {address}")


def _settle(done: asyncio.Future[None]) -> None:
    if not done.done():
        done.set_result(None)


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run ``main`` on a :class:`FetchLoop`, or on asyncio's loop without uvloop."""
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency on Linux
        return asyncio.run(main)
    return uvloop.run(main, loop_factory=fetch_loop_class())


@functools.cache
def fetch_loop_class() -> type[uvloop.Loop]:
    """uvloop's loop class with :meth:`sock_connect` taking numeric addresses in place
    (made on first use, so importing this module does not import uvloop)."""
    import uvloop

    class FetchLoop(uvloop.Loop):
        """uvloop, with a numeric address connected in place (module docstring)."""

        async def sock_connect(self, sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6) and numeric_address(sock, address):
                return await connect_in_place(self, sock, address)
            return await super().sock_connect(sock, address)

    return FetchLoop
