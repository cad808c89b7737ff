"""Name resolution for the fetcher: hosts-file override, TTL cache, bounded negative cache.

A host's name is resolved once, when its queue is made; the fetcher then connects to
the address that was checked by :class:`~crawlkit.fetch.netpolicy.NetPolicy` and to
no other (docs/design.md invariant 7), while the Host header and TLS SNI keep the name.

Names go to ``getaddrinfo`` (the system resolver, run in a worker thread) or, with
a ``dns`` client (``--dns-server``), to one DNS server asked directly
(:mod:`crawlkit.fetch.dns`). ``getaddrinfo`` does not report record TTLs, so its
answers are kept for ``ttl`` seconds (default 5 minutes); a DNS server's TTLs are
honoured but kept between ``min_ttl`` (30 s: a TTL of 0 would mean a query per
request) and ``max_ttl`` (1 h). Failures are kept for ``negative_ttl`` seconds
(default 1 minute) and say what failed with a code at the start of the error
(``dns-nxdomain``, ``dns-no-address``, ``dns-timeout``, ``dns-servfail``, ...,
see :mod:`crawlkit.fetch.dns`; getaddrinfo's EAI_AGAIN, which does not say whether
it timed out, is ``dns-temporary``). The negative cache holds at most
``max_negative`` names, oldest dropped first, so a batch of junk names cannot grow
memory without bound. A hosts file (``/etc/hosts`` format, as written by ``crawlkit
testweb``) answers before any cache or DNS and never expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import os
import socket
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from crawlkit.errors import InputError
from crawlkit.fetch.dns import DnsClient, DnsFailure

__all__ = ["Resolution", "Resolver", "read_hosts_file"]


@dataclass(frozen=True)
class Resolution:
    """Addresses of a name (IPv4 first), or an error; ``expires_at`` is a wall time."""

    addresses: tuple[str, ...]
    error: str | None
    expires_at: float

    def to_list(self) -> list[object]:
        return [list(self.addresses), self.error, self.expires_at]

    @classmethod
    def from_list(cls, value: list[object]) -> Resolution:
        addrs, error, expires = value
        return cls(tuple(addrs), error, float(expires))  # type: ignore[arg-type]


def read_hosts_file(path: str | os.PathLike[str]) -> dict[str, tuple[str, ...]]:
    """Parse an ``/etc/hosts``-style file: ``ADDRESS NAME [NAME ...]``, ``#`` comments."""
    table: dict[str, list[str]] = {}
    try:
        text = Path(path).read_text("utf-8")
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), source=str(path)) from exc
    for lineno, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        try:
            address = str(ipaddress.ip_address(words[0]))
        except ValueError as exc:
            raise InputError(
                f"not an address: {words[0]!r}", source=str(path), line=lineno
            ) from exc
        for name in words[1:]:
            table.setdefault(name.lower().rstrip("."), []).append(address)
    return {name: tuple(addrs) for name, addrs in table.items()}


class Resolver:
    """Resolves host names; safe to share between tasks of one event loop."""

    def __init__(
        self,
        *,
        hosts: dict[str, tuple[str, ...]] | None = None,
        ttl: float = 300.0,
        negative_ttl: float = 60.0,
        max_negative: int = 10_000,
        max_positive: int = 200_000,
        concurrency: int = 32,
        clock: Callable[[], float] | None = None,
        lookup: Callable[[str], list[str]] | None = None,
        dns: DnsClient | None = None,
        min_ttl: float = 30.0,
        max_ttl: float = 3600.0,
    ):
        self.hosts = hosts or {}
        self.ttl = ttl
        self.negative_ttl = negative_ttl
        self.max_negative = max_negative
        self.max_positive = max_positive
        self._clock = clock or time.time
        self._lookup = lookup or _system_lookup
        self._dns = dns
        self.min_ttl = min_ttl
        self.max_ttl = max_ttl
        self._positive: OrderedDict[str, Resolution] = OrderedDict()
        self._negative: OrderedDict[str, Resolution] = OrderedDict()
        self._inflight: dict[str, asyncio.Future[Resolution]] = {}
        self._sem: asyncio.Semaphore | None = None
        self._concurrency = concurrency

    # -- persistence (the fetcher keeps the cache in its state directory) ----------
    def export(self) -> dict[str, list[object]]:
        now = self._clock()
        out = {n: r.to_list() for n, r in self._positive.items() if r.expires_at > now}
        out.update({n: r.to_list() for n, r in self._negative.items() if r.expires_at > now})
        return out

    def load(self, cache: dict[str, list[object]]) -> None:
        now = self._clock()
        for name, value in cache.items():
            try:
                res = Resolution.from_list(value)
            except (TypeError, ValueError):
                continue
            if res.expires_at > now:
                self._store(name, res)

    # -- lookups ---------------------------------------------------------------------
    def cached(self, name: str) -> Resolution | None:
        """A still-valid answer without a lookup (hosts file, literal or cache), else None."""
        name = name.lower().rstrip(".")
        if name in self.hosts:
            return Resolution(self.hosts[name], None, float("inf"))
        literal = _literal(name)
        if literal is not None:
            return Resolution((literal,), None, float("inf"))
        now = self._clock()
        for cache in (self._positive, self._negative):
            res = cache.get(name)
            if res is not None:
                if res.expires_at > now:
                    return res
                del cache[name]
        return None

    async def resolve(self, name: str) -> Resolution:
        """Addresses for ``name``; never raises for lookup failures (see ``error``)."""
        name = name.lower().rstrip(".")
        hit = self.cached(name)
        if hit is not None:
            return hit
        pending = self._inflight.get(name)
        if pending is not None:
            return await asyncio.shield(pending)
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Resolution] = loop.create_future()
        self._inflight[name] = future
        try:
            if self._sem is None:
                self._sem = asyncio.Semaphore(self._concurrency)
            async with self._sem:
                res = await (self._ask_server(name) if self._dns else self._ask_system(name))
            self._store(name, res)
            future.set_result(res)
            return res
        except asyncio.CancelledError:
            # The run stops: the tasks waiting on this lookup stop too, rather than
            # wait for an answer that will never be set.
            future.cancel()
            raise
        finally:
            self._inflight.pop(name, None)

    async def _ask_server(self, name: str) -> Resolution:
        assert self._dns is not None
        try:
            answer = await self._dns.lookup(name)
        except DnsFailure as exc:
            return Resolution((), str(exc), self._clock() + self.negative_ttl)
        ttl = min(max(answer.ttl, self.min_ttl), self.max_ttl)
        return Resolution(answer.addresses, None, self._clock() + ttl)

    async def _ask_system(self, name: str) -> Resolution:
        try:
            addrs = await _on_own_thread(self._lookup, name)
        except OSError as exc:
            code = _GAI_CODES.get(getattr(exc, "errno", None), "dns-error")
            msg = exc.strerror or str(exc)
            return Resolution((), f"{code}: {msg}", self._clock() + self.negative_ttl)
        if not addrs:
            error = f"dns-no-address: {name} has no address"
            return Resolution((), error, self._clock() + self.negative_ttl)
        return Resolution(tuple(addrs), None, self._clock() + self.ttl)

    def held(self) -> int:
        """Answers held in the cache (expired ones not yet dropped included). A method,
        not ``__len__``: that would make a resolver with an empty cache false."""
        return len(self._positive) + len(self._negative)

    def _store(self, name: str, res: Resolution) -> None:
        cache, cap = (
            (self._positive, self.max_positive)
            if res.addresses
            else (self._negative, self.max_negative)
        )
        cache[name] = res
        cache.move_to_end(name)
        while len(cache) > cap:
            cache.popitem(last=False)
        # The oldest answers go once expired: a crawl that meets new hosts all run
        # would otherwise keep each one's answer until the count cap (200,000, ~47
        # MB), though none is used past its TTL. The cache is in the order answers
        # were stored, so this holds what the last TTL's worth of lookups stored,
        # plus at most one longer-lived answer's wait (max_ttl, 1 h) behind it.
        now = self._clock()
        for held in (self._positive, self._negative):
            while held and next(iter(held.values())).expires_at <= now:
                held.popitem(last=False)


_GAI_CODES = {
    socket.EAI_NONAME: "dns-nxdomain",
    getattr(socket, "EAI_NODATA", -5): "dns-no-address",
    # "Temporary failure in name resolution": no resolver reachable (at once), a
    # SERVFAIL or a timeout; getaddrinfo does not say which.
    socket.EAI_AGAIN: "dns-temporary",
    socket.EAI_FAIL: "dns-servfail",
}


def _on_own_thread(lookup: Callable[[str], list[str]], name: str) -> asyncio.Future[list[str]]:
    """``lookup(name)`` on a daemon thread of its own, its result in a future of the
    running loop. Not the loop's executor: a lookup a stop abandons (getaddrinfo
    cannot be cancelled, and may wait 10 s or more for a resolver) would hold the
    loop's shutdown, which joins the executor's threads, and the process's exit.
    The resolver's semaphore bounds how many run at once."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[list[str]] = loop.create_future()

    def settle(result: list[str] | None, exc: BaseException | None) -> None:
        if future.done():
            return  # abandoned
        if exc is not None:
            future.set_exception(exc)
        else:
            future.set_result(result or [])

    def work() -> None:
        try:
            result, exc = lookup(name), None
        except BaseException as caught:
            result, exc = None, caught
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
            loop.call_soon_threadsafe(settle, result, exc)

    threading.Thread(target=work, name="dns-lookup", daemon=True).start()
    return future


def _literal(name: str) -> str | None:
    text = name[1:-1] if name.startswith("[") and name.endswith("]") else name
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _system_lookup(name: str) -> list[str]:
    infos = socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for family, *_rest, sockaddr in sorted(infos, key=lambda i: i[0] != socket.AF_INET):
        address = str(sockaddr[0])
        if address not in seen and family in (socket.AF_INET, socket.AF_INET6):
            seen.append(address)
    return seen
