"""Which addresses a fetch may connect to (docs/design.md invariant 7, SSRF).

A URL chosen by a stranger must not reach a private network. The check is made on the
*address* the connection will use (the resolver pins it, see :mod:`resolver`), never
on the URL text, so DNS tricks and decimal or hex IP spellings cannot get around it.

Refused unless an ``--allow-net`` CIDR covers the address: everything that is not
globally routable (loopback, RFC 1918 private, link-local, shared address space,
documentation, benchmarking, reserved, unspecified; for IPv6 also ``::1``, ``::``,
link-local ``fe80::/10``, site-local ``fec0::/10``, unique local ``fc00::/7``),
multicast, and IPv6 addresses that embed an IPv4 address (IPv4-mapped
``::ffff:0:0/96``, IPv4-compatible, NAT64, 6to4, Teredo), since a connection to those
can end up on an IPv4 address that was never checked.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from crawlkit.errors import UsageError

__all__ = ["NetPolicy"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_EMBEDDING_V6 = [
    ipaddress.IPv6Network("::ffff:0:0/96"),  # IPv4-mapped
    ipaddress.IPv6Network("::/96"),  # IPv4-compatible (deprecated)
    ipaddress.IPv6Network("64:ff9b::/96"),  # NAT64 well-known prefix
    ipaddress.IPv6Network("64:ff9b:1::/48"),  # NAT64 local use
    ipaddress.IPv6Network("2002::/16"),  # 6to4
    ipaddress.IPv6Network("2001::/32"),  # Teredo
]


class NetPolicy:
    """Decides per address; immutable once built, cheap to call (a few µs)."""

    def __init__(self, allow: Iterable[str | IPNetwork] = ()):
        nets: list[IPNetwork] = []
        for item in allow:
            if isinstance(item, str):
                try:
                    item = ipaddress.ip_network(item.strip(), strict=False)
                except ValueError as exc:
                    raise UsageError(f"--allow-net: not a CIDR: {item!r}") from exc
            nets.append(item)
        self.allow = tuple(nets)
        self._cache: dict[str, str | None] = {}

    def refusal(self, address: str) -> str | None:
        """None when ``address`` may be connected to, else a short reason."""
        cached = self._cache.get(address, ...)
        if cached is not ...:
            return cached
        reason = self._decide(address)
        if len(self._cache) < 100_000:
            self._cache[address] = reason
        return reason

    def allowed(self, address: str) -> bool:
        return self.refusal(address) is None

    def _decide(self, address: str) -> str | None:
        try:
            ip = ipaddress.ip_address(address.split("%", 1)[0])
        except ValueError:
            return f"not an IP address: {address!r}"
        if any(ip.version == net.version and ip in net for net in self.allow):
            return None
        kind = _classify(ip)
        if kind is None:
            return None
        return f"{kind} address {ip} refused (allow it with --allow-net)"


def _classify(ip: IPAddress) -> str | None:
    """The reason class for a refused address, or None for a public unicast address."""
    if isinstance(ip, ipaddress.IPv6Address):
        # ::1 and :: lie in ::/96 (IPv4-compatible), but they are loopback and
        # unspecified, and that is what a user needs to read.
        if ip.is_loopback:
            return "loopback"
        if ip.is_unspecified:
            return "unspecified"
        if ip.is_site_local:  # fec0::/10, deprecated (RFC 3879) but still private
            return "site-local"
        if ip.ipv4_mapped is not None:
            return "IPv4-mapped"
        if any(ip in net for net in _EMBEDDING_V6):
            return "IPv4-embedding IPv6"
    for attr, name in (
        ("is_loopback", "loopback"),
        ("is_unspecified", "unspecified"),
        ("is_link_local", "link-local"),
        ("is_multicast", "multicast"),
        ("is_private", "private"),
        ("is_reserved", "reserved"),
    ):
        if getattr(ip, attr):
            return name
    if not ip.is_global:
        return "non-global"
    return None
