"""Polite, safe fetching into WARC (the library behind ``crawlkit fetch``).

* :mod:`~crawlkit.fetch.scheduler` — one FIFO per host, a heap of hosts by
  next-allowed time, per-IP limits, backoff (docs/design.md invariant 2).
* :mod:`~crawlkit.fetch.netpolicy` — which addresses may be connected to (invariant 7).
* :mod:`~crawlkit.fetch.resolver` — hosts file, TTL cache, bounded negative cache.
* :mod:`~crawlkit.fetch.dns` — the ``--dns-server`` stub resolver (UDP, dnslib).
* :mod:`~crawlkit.fetch.client` — the HTTP client behind one small interface
  (aiohttp, pinned to the checked address, caps and one total timeout), with
  :mod:`~crawlkit.fetch.exchange` (the request and result records, the interface),
  :mod:`~crawlkit.fetch.connector` (pinned resolver, capped pool),
  :mod:`~crawlkit.fetch.codings` (body codings under caps) and
  :mod:`~crawlkit.fetch.failures` (failures classified and worded).
* :mod:`~crawlkit.fetch.tls` — trust (system store, ``--ca-file``, ``--insecure``)
  and the ``tls-*`` failure codes.
* :mod:`~crawlkit.fetch.netoptions` — :class:`NetOptions`, those choices as one record.
* :mod:`~crawlkit.warc.write` — the WARC writer (gzip per record, rotation, revisits).
* :mod:`~crawlkit.fetch.hoststate` — durable host clocks, backoffs, robots, DNS, digests.
* :mod:`~crawlkit.fetch.config` — :class:`FetchConfig`, the knobs of a run.
* :mod:`~crawlkit.fetch.outcome` — what each fetch record says.
* :mod:`~crawlkit.fetch.hosts` — host lifecycle: resolving, durable clocks, back-off,
  whole queues deferred or failed, idle hosts forgotten.
* :mod:`~crawlkit.fetch.robotsflow` — robots.txt fetched, cached and applied.
* :mod:`~crawlkit.fetch.archiver` — captures written on the WARC thread.
* :mod:`~crawlkit.fetch.intake` — which input records are queued, which answered at once.
* :mod:`~crawlkit.fetch.pages` — one page request from start to record.
* :mod:`~crawlkit.fetch.engine` — :class:`Fetcher`, which ties them together.

``crawlkit.stages.fetch.fetch_records`` builds all of it from plain arguments.
"""

from crawlkit.fetch.client import AiohttpClient, FetchRequest, FetchResult, HttpClient
from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver, read_hosts_file
from crawlkit.fetch.scheduler import HostQueue, Scheduler
from crawlkit.warc.write import Capture, WarcWriter

__all__ = [
    "AiohttpClient",
    "Capture",
    "FetchConfig",
    "FetchRequest",
    "FetchResult",
    "Fetcher",
    "HostQueue",
    "HostState",
    "HttpClient",
    "NetOptions",
    "NetPolicy",
    "Resolver",
    "Scheduler",
    "WarcWriter",
    "read_hosts_file",
]
