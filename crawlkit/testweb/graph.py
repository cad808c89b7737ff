"""The shape of the test web: hosts, their addresses and kinds, and the link graph.

Contract:

* ``build_web(WebConfig)`` is a pure function of its configuration: the same config
  (seed, counts, specials, port) gives the same hosts, addresses, pages and links.
* Ordinary hosts are ``h0.test``, ``h1.test``...; their page counts follow a skewed
  (Pareto) distribution whose mean is ``pages``. Page 0 is ``/``; every page ``p > 0``
  is linked from page ``(p - 1) // 2``, so every page of a host is reachable from its
  root, and every root is a seed: all ordinary pages are reachable.
* Special hosts are named ``<kind>-<i>.test`` (see ``kinds.KINDS``).
* With ``ip_hosts`` the ordinary hosts are addressed by IP literal instead
  (``http://127.1.0.7:PORT/``: the name is the address, so none share one). With
  ``seed_hosts`` N only the first N ordinary hosts are seeds; the others are reached
  through links (every root ``j`` also links to the roots of hosts ``2j+1`` and
  ``2j+2``, so all stay reachable). ``robots_404`` is the share of ordinary hosts whose
  robots.txt answers 404, ``crawl_delay_hosts`` how many others ask for a Crawl-delay
  of ``crawl_delay`` seconds (``Host.robots``: ``allow``, ``404`` or ``delay``).
* With ``files`` (a directory) one more host, ``files_host``, serves that directory's
  files as they are (:mod:`crawlkit.testweb.files`); its root is a seed, and
  ``hosts`` may then be 0.
* Addresses: public hosts live in 127.0.0.0/9 (ordinary hosts in 127.1/16, specials in
  127.2/16, the files host at 127.3.0.1; about one ordinary host in five shares its
  address with the previous one, like shared hosting, and link-farm hosts all share
  one address). The simulated private network is 127.255.0.0/16: crawlers are told
  to allow only 127.0.0.0/9.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

from crawlkit.errors import UsageError
from crawlkit.testweb.kinds import KINDS
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
    robots: str = "allow"  # ordinary hosts: allow (all), 404, delay (Crawl-delay)


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
    ip_hosts: bool = False
    seed_hosts: int | None = None  # None: every public host is a seed
    robots_404: float = 0.0
    crawl_delay_hosts: int = 0
    files: str | None = None  # a directory served as it is by one more host (files.py)
    files_host: str = "files.test"


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

    def is_seed(self, host: Host) -> bool:
        """Whether ``host``'s root is in the seeds file (see the module docstring)."""
        limit = self.config.seed_hosts
        if host.kind == "files":
            return True  # its root is the way into the directory served
        return limit is None or (host.kind == "ordinary" and host.index < limit)

    def tree_children(self, host: Host) -> list[Host]:
        """Ordinary hosts whose roots ``host``'s root links to, so that a web with few
        seeds still reaches every host (none unless ``seed_hosts`` is set)."""
        if self.config.seed_hosts is None or host.kind != "ordinary":
            return []
        j = host.index  # ordinary hosts come first: index == place among them
        return [self.ordinary[c] for c in (2 * j + 1, 2 * j + 2) if c < len(self.ordinary)]


def _robots_kinds(config: WebConfig) -> list[str]:
    """Each ordinary host's robots.txt: a ``robots_404`` share answer 404, then
    ``crawl_delay_hosts`` of the others ask for a Crawl-delay (picked by the seed)."""
    rng = rng_for("robots", config.seed)
    kinds = ["404" if rng.random() < config.robots_404 else "allow" for _ in range(config.hosts)]
    others = [i for i, k in enumerate(kinds) if k == "allow" and i > 0]
    for i in rng_for("delay", config.seed).sample(
        others, min(config.crawl_delay_hosts, len(others))
    ):
        kinds[i] = "delay"
    return kinds


def build_web(config: WebConfig) -> Web:
    """Hosts and addresses for ``config`` (deterministic; see module docstring)."""
    if config.hosts < (0 if config.files else 1):
        raise UsageError("--hosts must be at least 1 (0 with --files)")
    if config.pages < 1:
        raise UsageError("--pages must be at least 1")
    if config.seed_hosts is not None and config.seed_hosts < 1:
        raise UsageError("--seed-hosts must be at least 1")
    if not 0.0 <= config.robots_404 <= 1.0:
        raise UsageError("--robots-404 must be a share between 0 and 1")
    hosts: list[Host] = []
    counts = _page_counts(config.hosts, config.pages, config.seed)
    robots = _robots_kinds(config)
    rng = rng_for("share", config.seed)
    slot = 0
    for i in range(config.hosts):
        if i > 0 and rng.random() < 0.2 and not config.ip_hosts:
            slot -= 1  # shared hosting: same address as the previous host
        addr = _addr(1, slot)
        name = addr if config.ip_hosts else f"h{i}.test"
        hosts.append(Host(i, name, addr, "ordinary", counts[i], robots=robots[i]))
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
    if config.files is not None:
        if config.files_host in {h.name for h in hosts}:
            raise UsageError(f"--files-host {config.files_host} is a host of the web already")
        hosts.append(Host(len(hosts), config.files_host, _addr(3, 0), "files"))
    return Web(config, hosts)
