"""The shape of the test web: hosts, their addresses and kinds, and the link graph.

Contract:

* ``build_web(WebConfig)`` is a pure function of its configuration: the same config
  (seed, counts, specials, port) gives the same hosts, addresses, pages and links.
* Ordinary hosts are ``h0.test``, ``h1.test``...; their page counts follow a skewed
  (Pareto) distribution whose mean is ``pages``. Page 0 is ``/``; every page ``p > 0``
  is linked from page ``(p - 1) // 2``, so every page of a host is reachable from its
  root, and every root is a seed: all ordinary pages are reachable.
* Special hosts are named ``<kind>-<i>.test`` (see ``specials.KINDS``).
* Addresses: public hosts live in 127.0.0.0/9 (ordinary hosts in 127.1/16, specials in
  127.2/16; about one ordinary host in five shares its address with the previous one,
  like shared hosting, and link-farm hosts all share one address). The simulated
  private network is 127.255.0.0/16: crawlers are told to allow only 127.0.0.0/9.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from crawlkit.errors import UsageError
from crawlkit.testweb.model import rng_for

PUBLIC_NET = "127.0.0.0/9"
PRIVATE_NET = "127.255.0.0/16"
IPV6_ADDR = "::1"  # the ipv6 kind's hosts (crawl them with --allow-net ::1/128)
SECTIONS = ("news", "blog", "docs", "shop", "wiki", "about")


@dataclass(frozen=True, slots=True)
class Host:
    """One virtual host. ``pages`` is its page count (ordinary hosts) or a kind's size."""

    index: int
    name: str
    addr: str
    kind: str
    pages: int = 0
    ordinal: int = 0


@dataclass(slots=True)
class WebConfig:
    """Everything that determines the web's bytes (plus the port, chosen at start)."""

    hosts: int = 10
    pages: int = 50
    page_kb: float = 20.0
    seed: int = 0
    specials: dict[str, int] = field(default_factory=dict)
    slow_delay: float = 0.5
    retry_after: float = 3.0
    crawl_delay: float = 1.0
    change_every: float = 5.0
    drip_interval: float = 0.5


def _addr(net: int, slot: int) -> str:
    return f"127.{net}.{slot // 250}.{slot % 250 + 1}"


def _page_counts(n: int, mean: int, seed: int) -> list[int]:
    if n == 0:
        return []
    rng = rng_for("sizes", seed)
    raw = [min(rng.paretovariate(1.6), 40.0) for _ in range(n)]
    scale = mean * n / sum(raw)
    counts = [max(1, round(r * scale)) for r in raw]
    # The first host is the demo's entry point: never a one-page site.
    counts[0] = max(counts[0], min(mean, 10))
    return counts


def _attachment_weights(n: int, seed: int) -> list[float]:
    """Host popularity by preferential attachment (Barabási-Albert, m = 2)."""
    if n <= 1:
        return [1.0] * n
    rng = rng_for("attach", seed)
    ends: list[int] = [0, 1]
    degree = [1] * n
    for i in range(2, n):
        for _ in range(2):
            j = ends[rng.randrange(len(ends))]
            degree[j] += 1
            ends.append(j)
        ends.extend((i, i))
        degree[i] += 1
    return [float(d) for d in degree]


class Web:
    """The hosts of one test web and their link graph (computed on demand)."""

    def __init__(self, config: WebConfig, host_list: list[Host]):
        self.config = config
        self.hosts = host_list
        self.by_name = {h.name: h for h in host_list}
        self.ordinary = [h for h in host_list if h.kind == "ordinary"]
        weights = _attachment_weights(len(self.ordinary), config.seed)
        cum: list[float] = []
        total = 0.0
        for w in weights:
            total += w
            cum.append(total)
        self._cum = cum
        self.specials_of: dict[str, list[Host]] = {}
        for h in host_list:
            if h.kind != "ordinary":
                self.specials_of.setdefault(h.kind, []).append(h)

    def pick_host(self, r: float, exclude: int) -> Host | None:
        """The ordinary host at cumulative position ``r`` in [0, 1) (preferential)."""
        if len(self.ordinary) < 2:
            return None
        i = bisect.bisect_right(self._cum, r * self._cum[-1])
        i = min(i, len(self.ordinary) - 1)
        if self.ordinary[i].index == exclude:
            i = (i + 1) % len(self.ordinary)
        return self.ordinary[i]


def build_web(config: WebConfig) -> Web:
    """Hosts and addresses for ``config`` (deterministic; see module docstring)."""
    from crawlkit.testweb.specials import KINDS

    if config.hosts < 1:
        raise UsageError("--hosts must be at least 1")
    if config.pages < 1:
        raise UsageError("--pages must be at least 1")
    hosts: list[Host] = []
    counts = _page_counts(config.hosts, config.pages, config.seed)
    rng = rng_for("share", config.seed)
    slot = 0
    for i in range(config.hosts):
        if i > 0 and rng.random() < 0.2:
            slot -= 1  # shared hosting: same address as the previous host
        hosts.append(Host(i, f"h{i}.test", _addr(1, slot), "ordinary", counts[i]))
        slot += 1
    special_slot = 0
    for kind, count in config.specials.items():
        spec = KINDS.get(kind)
        if spec is None:
            raise UsageError(f"unknown special kind {kind!r}")
        shared = _addr(2, special_slot) if spec.shared_address else None
        if shared:
            special_slot += 1
        for k in range(count):
            for sub in spec.host_kinds:
                name = f"{sub}-{k}.test"
                if sub == "private":
                    addr = f"127.255.{k // 250}.{k % 250 + 1}"
                elif sub == "ipv6":
                    addr = IPV6_ADDR  # IPv6 loopback is one address: ipv6-* share it
                elif shared:
                    addr = shared
                else:
                    addr = _addr(2, special_slot)
                    special_slot += 1
                hosts.append(Host(len(hosts), name, addr, sub, spec.size, k))
    return Web(config, hosts)
