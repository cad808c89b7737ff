"""The fetch stage's loop connects to a numeric address in place, as asyncio does, and
leaves anything else to uvloop (crawlkit/fetch/eventloop.py). Real sockets on loopback."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from typing import Any, cast

import pytest
import uvloop

from crawlkit.fetch import eventloop


class CountingLoop(eventloop.fetch_loop_class()):  # type: ignore[misc]
    """The fetch loop, counting what it asks the resolver."""

    def __init__(self) -> None:
        super().__init__()
        self.lookups: list[Any] = []

    async def getaddrinfo(self, host: Any, port: Any, **kwargs: Any) -> Any:
        self.lookups.append(host)
        return await super().getaddrinfo(host, port, **kwargs)


def run_on(loop_class: type, main: Any) -> Any:
    with asyncio.Runner(loop_factory=loop_class) as runner:
        return runner.run(main())


@pytest.fixture
def listener() -> Iterator[tuple[str, int]]:
    with socket.create_server(("127.0.0.1", 0), backlog=64) as server:
        yield server.getsockname()


def closed_port() -> int:
    """A loopback port nothing listens on (bound, never listened to, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def nonblocking(family: int = socket.AF_INET) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setblocking(False)
    return sock


@pytest.mark.parametrize(
    ("family", "kind", "address", "numeric"),
    [
        (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 80), True),
        (socket.AF_INET, socket.SOCK_STREAM, ("10.1.2.3", 8080), True),
        (socket.AF_INET, socket.SOCK_STREAM, ("localhost", 80), False),
        (socket.AF_INET, socket.SOCK_STREAM, ("127.1", 80), False),  # inet_aton's, not pton's
        (socket.AF_INET, socket.SOCK_STREAM, ("::1", 80), False),  # another family
        (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", "80"), False),  # a service name
        (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1",), False),
        (socket.AF_INET, socket.SOCK_STREAM, "127.0.0.1:80", False),
        (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 53), False),
        (socket.AF_INET6, socket.SOCK_STREAM, ("::1", 80, 0, 0), True),
        (socket.AF_INET6, socket.SOCK_STREAM, ("fe80::1%lo", 80, 0, 0), False),  # a zone
        (socket.AF_INET6, socket.SOCK_STREAM, ("127.0.0.1", 80, 0, 0), False),
    ],
)
def test_numeric_address(family: int, kind: int, address: Any, numeric: bool) -> None:
    with socket.socket(family, kind) as sock:
        assert eventloop.numeric_address(sock, address) is numeric


def test_a_numeric_address_is_connected_without_the_resolver(listener: tuple[str, int]) -> None:
    async def main() -> tuple[Any, list[Any]]:
        loop = asyncio.get_running_loop()
        with nonblocking() as sock:
            await loop.sock_connect(sock, listener)
            return sock.getpeername(), loop.lookups  # type: ignore[attr-defined]

    peer, lookups = run_on(CountingLoop, main)
    assert peer == listener
    assert lookups == []


def test_a_name_is_left_to_uvloop_and_resolved(listener: tuple[str, int]) -> None:
    async def main() -> tuple[Any, list[Any]]:
        loop = asyncio.get_running_loop()
        with nonblocking() as sock:
            await loop.sock_connect(sock, ("localhost", listener[1]))
            return sock.getpeername()[1], loop.lookups  # type: ignore[attr-defined]

    port, lookups = run_on(CountingLoop, main)
    assert port == listener[1]
    assert lookups == ["localhost"]


def test_ipv6_loopback_is_connected_in_place() -> None:
    with socket.create_server(("::1", 0), family=socket.AF_INET6) as server:
        address = server.getsockname()

        async def main() -> tuple[Any, list[Any]]:
            loop = asyncio.get_running_loop()
            with nonblocking(socket.AF_INET6) as sock:
                await loop.sock_connect(sock, address)
                return sock.getpeername()[:2], loop.lookups  # type: ignore[attr-defined]

        peer, lookups = run_on(CountingLoop, main)
    assert peer == address[:2]
    assert lookups == []


def refusal_on(loop_class: type, port: int) -> OSError:
    async def main() -> OSError:
        loop = asyncio.get_running_loop()
        with nonblocking() as sock:
            try:
                await loop.sock_connect(sock, ("127.0.0.1", port))
            except OSError as refused:
                return refused
        raise AssertionError("connected to a closed port")

    return run_on(loop_class, main)  # type: ignore[no-any-return]


def test_a_refusal_is_what_uvloop_raises() -> None:
    port = closed_port()
    ours, uvloops = refusal_on(CountingLoop, port), refusal_on(uvloop.Loop, port)
    assert type(ours) is type(uvloops) is ConnectionRefusedError
    assert (ours.errno, str(ours)) == (uvloops.errno, str(uvloops))


class WatchedLoop(CountingLoop):
    """The fetch loop, keeping the file descriptors it is asked to watch for writing
    and saying (``watching``) when it is first asked."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: set[int] = set()
        self.watching = asyncio.Event()

    def add_writer(self, fd: Any, callback: Any, *args: Any) -> None:
        self.writers.add(fd)
        super().add_writer(fd, callback, *args)
        self.watching.set()

    def remove_writer(self, fd: Any) -> bool:
        self.writers.discard(fd)
        return bool(super().remove_writer(fd))  # (uvloop's says None either way)


def test_a_cancelled_connect_leaves_no_writer_on_the_socket() -> None:
    # A listener with no room in its accept queue (backlog 0: one connection, made
    # first) drops the next SYN, so that connect stays under way until cancelled.
    with socket.create_server(("127.0.0.1", 0), backlog=0) as server:
        address = server.getsockname()

        async def main() -> tuple[bool, bool, bool]:
            loop = cast(WatchedLoop, asyncio.get_running_loop())
            with nonblocking() as first, nonblocking() as second:
                await loop.sock_connect(first, address)
                loop.watching.clear()
                connecting = asyncio.ensure_future(loop.sock_connect(second, address))
                await loop.watching.wait()  # the connect is waiting for its socket
                watched = second.fileno() in loop.writers
                connecting.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await connecting
                return watched, connecting.cancelled(), second.fileno() in loop.writers

        watched, cancelled, writer_left = run_on(WatchedLoop, main)
    assert watched and cancelled
    assert not writer_left


def test_run_runs_on_the_fetch_loop() -> None:
    async def main() -> str:
        loop = asyncio.get_running_loop()
        return f"{isinstance(loop, uvloop.Loop)} {type(loop).__name__}"

    assert eventloop.run(main()) == "True FetchLoop"
