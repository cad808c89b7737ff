"""A DNS server for the test web (``crawlkit testweb --dns PORT``), on 127.0.0.1 over UDP.

It answers for every host of the web (A, or AAAA for a host on ``::1``; TTL 300) and
for a few names that exist only in DNS, each one way a resolver can be tested:

=====================  ===================================================================
name                   answer
=====================  ===================================================================
``alias-0.test``       CNAME ``alias-1.test`` → CNAME ``alias-2.test`` → CNAME ``h0.test``
                       → h0's address, the whole chain in one answer (served as h0)
``short-ttl.test``     h0's address with TTL 1 (served as h0)
``rebind.test``        TTL 0; the 1st, 3rd, ... A query get h0's address (inside
                       ``--allow-net 127.0.0.0/9``), the 2nd, 4th, ... get
                       ``127.255.255.254`` (outside it; the web listens there too, so a
                       request that went there is in the request log)
``silent.test``        never answered (the query is logged and dropped)
``servfail.test``      SERVFAIL
anything else          NXDOMAIN (with an SOA whose minimum, the negative TTL, is 60)
=====================  ===================================================================

The query log ``DIR/dns.ndjson`` has one line per query: ``t``, ``name``, ``type``,
``rcode`` (``NOERROR``, ``NXDOMAIN``, ``SERVFAIL``, or null when dropped) and
``answers`` (the addresses given). Needs the ``dnslib`` package (a dependency of
crawlkit: the fetcher's resolver uses it too).
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import orjson

from crawlkit.testweb.graph import Web

__all__ = ["DNS_NAMES", "REBIND_DISALLOWED", "DnsServer", "served_as"]

REBIND_DISALLOWED = "127.255.255.254"
HOST_TTL = 300
ALIASES = ("alias-0.test", "alias-1.test", "alias-2.test")


# The DNS-only names and what each is for (the ready line's ``dns_names``).
DNS_NAMES = {
    "cname_chain": ALIASES[0],
    "short_ttl": "short-ttl.test",
    "rebind": "rebind.test",
    "silent": "silent.test",
    "servfail": "servfail.test",
    "nxdomain": "no-such-host.test",
}


def served_as(name: str) -> str | None:
    """The web host a DNS-only name is served as over HTTP (None: not one of them)."""
    if name in ALIASES or name in ("short-ttl.test", "rebind.test"):
        return "h0.test"
    return None


class _Protocol(asyncio.DatagramProtocol):
    def __init__(self, server: DnsServer):
        self.server = server
        self.transport: Any = None

    def connection_made(self, transport: Any) -> None:
        self.transport = transport

    def datagram_received(self, data: bytes, addr: Any) -> None:
        reply = self.server.answer(data)
        if reply is not None:
            self.transport.sendto(reply, addr)


class DnsServer:
    """Answers queries for ``web`` (see the module docstring); ``start`` binds UDP."""

    def __init__(self, web: Web, log_file: Path):
        self.web = web
        self.log_path = log_file
        self._log = open(log_file, "wb")  # noqa: SIM115 (lives as long as the server)
        self._rebind_queries = 0
        self.transport: Any = None
        self.port = 0

    async def start(self, port: int) -> int:
        loop = asyncio.get_running_loop()
        self.transport, _ = await loop.create_datagram_endpoint(
            lambda: _Protocol(self), local_addr=("127.0.0.1", port)
        )
        self.port = self.transport.get_extra_info("sockname")[1]
        return self.port

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self._log.close()

    def _records(self, name: str, qtype: str) -> tuple[str | None, list[Any]]:
        """(rcode name or None to drop, answer resource records) for one question."""
        from dnslib import AAAA, CNAME, QTYPE, RR, A

        h0 = self.web.by_name.get("h0.test")
        if name == "silent.test":
            return None, []
        if name == "servfail.test":
            return "SERVFAIL", []
        chain: list[Any] = []
        target = name
        if name in ALIASES:
            for i in range(ALIASES.index(name), len(ALIASES)):
                nxt = ALIASES[i + 1] if i + 1 < len(ALIASES) else "h0.test"
                chain.append(RR(ALIASES[i], QTYPE.CNAME, rdata=CNAME(nxt), ttl=HOST_TTL))
            target = "h0.test"
        ttl = HOST_TTL
        if name == "short-ttl.test":
            target, ttl = "h0.test", 1
        if name == "rebind.test":
            ttl = 0
            if qtype != "A":
                return "NOERROR", []
            self._rebind_queries += 1
            addr = h0.addr if h0 is not None and self._rebind_queries % 2 else REBIND_DISALLOWED
            return "NOERROR", [RR(name, QTYPE.A, rdata=A(addr), ttl=ttl)]
        host = self.web.by_name.get(target)
        if host is None:
            return "NXDOMAIN", []
        v6 = ":" in host.addr
        if (qtype == "AAAA") == v6:
            rdata = AAAA(host.addr) if v6 else A(host.addr)
            owner = target if name in ALIASES else name  # the chain ends at h0.test
            chain.append(RR(owner, getattr(QTYPE, qtype), rdata=rdata, ttl=ttl))
        return "NOERROR", chain

    def answer(self, data: bytes) -> bytes | None:
        """The reply to one query packet (None: dropped, or not a query)."""
        from dnslib import QTYPE, RCODE, RR, SOA, DNSRecord

        try:
            query = DNSRecord.parse(data)
        except Exception:  # dnslib raises its own error types for garbage
            return None
        if query.header.qr or not query.questions:
            return None
        question = query.questions[0]
        name = str(question.qname).lower().rstrip(".")
        qtype = QTYPE.get(question.qtype, str(question.qtype))
        rcode, records = self._records(name, qtype)
        given = [str(r.rdata) for r in records if r.rtype != QTYPE.CNAME]
        self._write(
            {"t": time.time(), "name": name, "type": qtype, "rcode": rcode, "answers": given}
        )
        if rcode is None:
            return None
        reply = query.reply()
        reply.header.rcode = getattr(RCODE, rcode)
        for rr in records:
            reply.add_answer(rr)
        if rcode == "NXDOMAIN" or (rcode == "NOERROR" and not records):
            soa = SOA("ns.test", "hostmaster.test", (1, 3600, 600, 86400, 60))
            reply.add_auth(RR("test", QTYPE.SOA, rdata=soa, ttl=60))
        return bytes(reply.pack())

    def _write(self, record: dict[str, Any]) -> None:
        self._log.write(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        self._log.flush()
