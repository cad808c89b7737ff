"""A small asynchronous DNS stub resolver over UDP (``fetch --dns-server ADDR:PORT``).

Why our own and not aiodns: the fetcher needs record TTLs, exact failure kinds and
its own timeouts, on uvloop or asyncio, with nothing compiled. aiodns (c-ares through
pycares) changed its API in its last two major versions (query results, then
``query_dns``), hides timeouts behind c-ares's retry schedule and needs a C extension;
dnslib is pure Python, has kept its packet API for years, and parsing one answer
costs tens of microseconds, next to a millisecond round trip.

Contract of :meth:`DnsClient.lookup`:

* A and AAAA are asked at once; the answer is the addresses of both (IPv4 first) and
  the smallest TTL among the records that gave them. A host with only AAAA records is
  an IPv6-only host, not a failure.
* A CNAME chain in the answer is followed (at most 8 links); when the answer stops at
  a name without addresses, that name is asked in turn.
* Each query goes out from a new UDP socket (a fresh source port) with a random ID; a
  reply counts only from the server's address (a connected socket) with the same ID
  and question, so a stray or spoofed packet is ignored. A reply with the TC
  (truncated) bit set is used for the addresses it carries.
* Failures raise :class:`DnsFailure` with a code: ``dns-nxdomain`` (no such name),
  ``dns-no-address`` (the name exists, with neither A nor AAAA), ``dns-timeout`` (no
  reply after ``attempts`` tries of ``timeout`` seconds each), ``dns-servfail``,
  ``dns-refused``, or ``dns-error`` (another rcode, a CNAME loop).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import secrets
from dataclasses import dataclass
from typing import Any

from crawlkit.errors import UsageError

__all__ = ["DnsAnswer", "DnsClient", "DnsFailure", "parse_server"]

MAX_CHAIN = 8


class DnsFailure(Exception):
    """A lookup that gave no address; ``code`` is one of the codes above."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code


@dataclass(frozen=True)
class DnsAnswer:
    addresses: tuple[str, ...]
    ttl: float


def parse_server(text: str) -> tuple[str, int]:
    """``ADDR:PORT`` or ``[V6ADDR]:PORT`` (port 53 when left out) → (address, port)."""
    value = text.strip()
    if value.startswith("["):
        host, _, rest = value[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        host, _, port_text = value.partition(":")
    else:
        host, port_text = value, ""
    try:
        address = str(ipaddress.ip_address(host))
        port = int(port_text) if port_text else 53
        if not 0 < port < 65536:
            raise ValueError(port)
    except ValueError:
        raise UsageError(f"--dns-server: not ADDR:PORT: {text!r}") from None
    return address, port


class _Reply(asyncio.DatagramProtocol):
    """Waits for the one datagram that answers ``query``."""

    def __init__(self, query: Any, future: asyncio.Future[Any]):
        self.query = query
        self.future = future

    def datagram_received(self, data: bytes, addr: Any) -> None:
        from dnslib import DNSRecord

        try:
            reply = DNSRecord.parse(data)
        except Exception:  # dnslib raises several types for garbage: ignore the packet
            return
        q = self.query
        if (
            reply.header.id != q.header.id
            or not reply.header.qr
            or not reply.questions
            or reply.questions[0].qname != q.questions[0].qname
            or reply.questions[0].qtype != q.questions[0].qtype
        ):
            return
        if not self.future.done():
            self.future.set_result(reply)

    def error_received(self, exc: Exception) -> None:
        if not self.future.done():
            self.future.set_exception(exc)


class DnsClient:
    """Asks one DNS server; safe to share between tasks of one event loop."""

    def __init__(self, server: tuple[str, int], *, timeout: float = 1.5, attempts: int = 2):
        self.server = server
        self.timeout = timeout
        self.attempts = attempts

    async def lookup(self, name: str) -> DnsAnswer:
        """Addresses of ``name`` with their TTL; raises :class:`DnsFailure`."""
        results = await asyncio.gather(
            self._resolve(name, "A"), self._resolve(name, "AAAA"), return_exceptions=True
        )
        addresses: list[str] = []
        ttls: list[float] = []
        failures: list[DnsFailure] = []
        for res in results:
            if isinstance(res, DnsFailure):
                failures.append(res)
            elif isinstance(res, BaseException):
                raise res
            elif res.addresses:
                addresses.extend(res.addresses)
                ttls.append(res.ttl)
        if addresses:
            return DnsAnswer(tuple(addresses), min(ttls))
        for code in ("dns-nxdomain", "dns-servfail", "dns-refused", "dns-error", "dns-timeout"):
            for failure in failures:
                if failure.code == code:
                    raise failure
        raise DnsFailure("dns-no-address", f"{name} has no A or AAAA record")

    async def _resolve(self, name: str, qtype: str) -> DnsAnswer:
        """Follow CNAMEs from ``name`` to records of ``qtype``."""
        from dnslib import QTYPE

        want = getattr(QTYPE, qtype)
        current = name.lower().rstrip(".")
        seen = {current}
        for _ in range(MAX_CHAIN):
            reply = await self._query(current, qtype)
            rcode = reply.header.rcode
            if rcode == 3:
                raise DnsFailure("dns-nxdomain", f"{current} does not exist")
            if rcode != 0:
                code = {2: "dns-servfail", 5: "dns-refused"}.get(rcode, "dns-error")
                raise DnsFailure(code, f"{current}: the server answered rcode {rcode}")
            addresses, ttls, target = self._walk(reply, current, want, seen)
            if addresses:
                return DnsAnswer(tuple(addresses), min(ttls))
            if target is None:
                return DnsAnswer((), 0.0)
            current = target
        raise DnsFailure("dns-error", f"{name}: CNAME chain longer than {MAX_CHAIN}")

    @staticmethod
    def _walk(
        reply: Any, name: str, want: int, seen: set[str]
    ) -> tuple[list[str], list[float], str | None]:
        """(addresses, their TTLs, the name the chain ends at if it has none)."""
        from dnslib import QTYPE

        by_name: dict[str, list[Any]] = {}
        for rr in reply.rr:
            by_name.setdefault(str(rr.rname).lower().rstrip("."), []).append(rr)
        current = name
        chain_ttl: list[float] = []
        for _ in range(MAX_CHAIN + 1):
            records = by_name.get(current, [])
            found = [rr for rr in records if rr.rtype == want]
            if found:
                ttls = [float(rr.ttl) for rr in found] + chain_ttl
                return [str(ipaddress.ip_address(str(rr.rdata))) for rr in found], ttls, None
            cname = next((rr for rr in records if rr.rtype == QTYPE.CNAME), None)
            if cname is None:
                return [], [], (current if current != name else None)
            chain_ttl.append(float(cname.ttl))
            current = str(cname.rdata).lower().rstrip(".")
            if current in seen:
                raise DnsFailure("dns-error", f"{name}: CNAME loop at {current}")
            seen.add(current)
        raise DnsFailure("dns-error", f"{name}: CNAME chain longer than {MAX_CHAIN}")

    async def _query(self, name: str, qtype: str) -> Any:
        from dnslib import DNSRecord

        loop = asyncio.get_running_loop()
        for _ in range(self.attempts):
            query = DNSRecord.question(name, qtype)
            query.header.id = secrets.randbelow(65536)
            future: asyncio.Future[Any] = loop.create_future()
            try:
                transport, _ = await loop.create_datagram_endpoint(
                    functools.partial(_Reply, query, future), remote_addr=self.server
                )
            except OSError as exc:
                raise DnsFailure("dns-error", f"{self.server[0]}:{self.server[1]}: {exc}") from exc
            try:
                transport.sendto(query.pack())
                async with asyncio.timeout(self.timeout):
                    return await future
            except TimeoutError:
                continue
            except OSError as exc:  # e.g. ICMP port unreachable: nobody listens there
                raise DnsFailure("dns-error", f"{self.server[0]}:{self.server[1]}: {exc}") from exc
            finally:
                transport.close()
        tries = f"{self.attempts} tries of {self.timeout:g}s"
        raise DnsFailure("dns-timeout", f"no answer for {name} {qtype} ({tries})")
