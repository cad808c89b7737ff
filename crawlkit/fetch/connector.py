"""How the client's connections are made: a resolver that answers only with the
addresses the caller pinned (never DNS), a connection pool capped by the open-file
budget, and the watch on the sockets a connection attempt opens (a timeout then tells
a stalled TLS handshake from a stalled TCP connect).

Used by :class:`crawlkit.fetch.client.AiohttpClient`; aiohttp is passed in, not
imported here (only fetching needs it).
"""

from __future__ import annotations

import os
import resource
import socket
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from crawlkit.fetch.protocol import crawl_protocol_factory, mark_idle

__all__ = [
    "CONNECTING",
    "MAX_PINS",
    "PinnedResolver",
    "capped_connector",
    "connection_budget",
    "env_proxies",
    "socket_factory",
    "tcp_connected",
]

MAX_PINS = 100_000  # names with a pinned address kept by the resolver
NO_FILE_LIMIT = 1 << 20  # what an unlimited RLIMIT_NOFILE counts as


class PinnedResolver:
    """aiohttp resolver that only answers with addresses the caller pinned."""

    def __init__(self) -> None:
        self.pins: dict[str, str] = {}
        self.proxies: set[str] = set()

    async def resolve(
        self, host: str, port: int = 0, family: int = socket.AF_INET
    ) -> list[dict[str, Any]]:
        address = self.pins.get(host.lower().rstrip("."))
        if address is None:
            raise OSError(f"no checked address for {host}")
        fam = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": fam,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass

    def pin_proxy(self, url: str) -> None:
        """Pin the address of a proxy's host (looked up now), so connections to it work."""
        host = urlsplit(url).hostname
        if not host:
            return
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError:
            return  # the fetch then fails with "no checked address", reported per URL
        if infos:
            self.proxies.add(host.lower())
            self.pins[host.lower().rstrip(".")] = str(infos[0][4][0])


def connection_budget() -> int:
    """How many connections, in use and idle together, a client keeps open at most:
    half the soft RLIMIT_NOFILE as it is when the client is made (the CLI raised it to
    the hard limit at start), the other half left for WARC files, state, logs, DNS
    sockets and the duplicates kept while a TLS handshake runs."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = NO_FILE_LIMIT
    return max(8, soft // 2)


def capped_connector(aiohttp: Any, idle_cap: int, **kwargs: Any) -> Any:
    """An aiohttp TCPConnector that closes idle connections, the longest idle first,
    past ``idle_cap``. aiohttp's own ``limit`` counts connections in use only, and with
    a keep-alive connection per host a crawl of thousands of hosts ran out of files
    on idle ones (issue 25). With ``limit_per_host=1`` a pool key holds at most one
    connection, so the number of keys with idle connections is the idle count."""

    class CappedConnector(aiohttp.TCPConnector):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            # each connection's protocol: crawlkit/fetch/protocol.py
            self._factory = crawl_protocol_factory(self._loop)

        def _release(self, key: Any, protocol: Any, *, should_close: bool = False) -> None:
            mark_idle(protocol)
            super()._release(key, protocol, should_close=should_close)
            idle = self._conns
            while len(idle) > idle_cap:
                oldest = next(iter(idle))  # keys are added when a connection goes idle
                for proto, _ in idle.pop(oldest):
                    transport = proto.transport
                    proto.close()
                    if oldest.is_ssl and not self._cleanup_closed_disabled:
                        self._cleanup_closed_transports.append(transport)

    return CappedConnector(**kwargs)


def env_proxies() -> list[str]:
    """The proxies named by HTTP_PROXY / HTTPS_PROXY (either case)."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return [os.environ[n] for n in names if os.environ.get(n)]


# The sockets a fetch creates while connecting (duplicates of them, so they outlive the
# transport): a timeout then tells "TCP connected, TLS handshake stalled" from "TCP
# connect stalled". Set per fetch; aiohttp calls the factory inside the fetch's task.
CONNECTING: ContextVar[list[socket.socket] | None] = ContextVar("connecting", default=None)


def socket_factory(addr_info: Any) -> socket.socket:
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    watch = CONNECTING.get()
    if watch is not None:
        watch.append(sock.dup())
    return sock


def tcp_connected(sockets: list[socket.socket]) -> bool:
    for sock in sockets:
        try:
            sock.getpeername()
        except OSError:
            continue
        return True
    return False
