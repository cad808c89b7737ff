"""The robots flow: robots.txt is had before any other URL of its origin, and decides.

For each origin (``scheme://host:port``) :class:`RobotsFlow` keeps the
:class:`~crawlkit.robots.RobotsEntry` that a :class:`~crawlkit.robots.RobotsPolicy`
made of the last answer, in memory and in the host state (docs/design.md invariant 3):

* **Fetching.** When a host's next URL has no fresh entry, a :class:`RobotsTask` goes
  first, through the same politeness clock as any request. A 3xx is followed by the
  flow itself, up to the policy's ``max_redirects`` hops, each hop a request through
  its own host's clock (a hop to another host goes through that host's queue). A body
  cut off by a reset or by silence is a network error, not a file (RFC 9309 2.3.1.4:
  its missing rules would allow what they forbid).
* **Verdicts.** A URL its origin's rules disallow comes out ``robots-denied`` without
  a request, unless its host is in ``ignore_robots_for``; an allowed one takes the
  file's Crawl-delay into its host's clock.
* **Deferral.** When robots.txt cannot be had (network error, 5xx, 429: RFC 9309 says
  disallow all and retry later), the origin's URLs come out ``deferred`` until the
  entry expires, at once rather than at the host's next turn.
* **Capture reporting.** Each robots.txt response is archived (``--archive-robots``,
  metadata ``robots: yes``); since it has no fetch record, its WARC location is told
  to ``on_capture`` as ``{"url", "warc"}`` (crawl's extract reads the Sitemap lines of
  robots.txt by those ranges).

Hosts waiting on a robots.txt being fetched through another host (a redirect) are
rescheduled when it is settled.

Memory: with a state directory the entries in memory are a cache of the state's,
least recently used first out past ``ROBOTS_CACHE_BYTES`` (an estimate:
:func:`entry_cost`, ~1 KB plus ~400 bytes a line and ~600 more a wildcard rule,
parsed rules and their per-agent views included; a 512 KiB file costs ~10-20 MB). An
entry evicted is read back from the state when its origin shows up again. Without a
state nothing is evicted (the entry would be fetched again).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import zlib
from collections import OrderedDict
from collections.abc import Callable
from urllib.parse import urlsplit

from crawlkit.errors import InvalidURL
from crawlkit.fetch.archiver import WarcArchiver
from crawlkit.fetch.config import DEADLINE_GRACE, FetchConfig
from crawlkit.fetch.exchange import FetchRequest, FetchResult, HttpClient
from crawlkit.fetch.hosts import (
    Host,
    HostTable,
    Item,
    RobotsTask,
    Split,
    StateCommits,
    Task,
    split_url,
)
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.outcome import Outbox, Record, fetch_record, iso_time, resolve_location
from crawlkit.robots import MAX_ROBOTS_BYTES, RobotsEntry, RobotsPolicy

__all__ = [
    "MAX_CRAWL_DELAY",
    "ROBOTS_CACHE_BYTES",
    "ROBOTS_MAX_BYTES",
    "RobotsFlow",
    "entry_cost",
    "unavailable",
]

MAX_CRAWL_DELAY = 86_400.0
# RFC 9309: parse at least 500 KiB. One byte more is read than the parser takes
# (RobotsTxt.parse), so it sees that the file goes on and drops the line the limit
# cuts: read to exactly 512 KiB, "Allow: /public-docs/x" cut to "Allow: /p" allowed
# what the whole file forbids.
ROBOTS_MAX_BYTES = MAX_ROBOTS_BYTES + 1
# Entries kept in memory (with a state directory), by estimated bytes (entry_cost);
# one evicted is read back from the state, never fetched again. 12 MiB (~2,900 entries
# of a few lines, ~8.5 MiB really, about what 8 MiB of the first estimate held) rather
# than 64: in a 10-minute crawl finding ~700 hosts a minute, 64 MiB was never reached
# and robots entries were half the live growth (issue 27; RSS slope from minute 3 +3.9
# against +4.4 MiB a minute, RSS 187 against 202 MiB at the end, as many pages, two
# crawls side by side: README "Memory").
ROBOTS_CACHE_BYTES = 12 * 1024 * 1024
# Measured with tracemalloc (bench/bench_host_memory.py, tests/fetch/test_cache_bounds.py)
# on distinct files, after the verdicts a crawl asks for (check and Crawl-delay build a
# per-agent view of the rules), the interpreter's free lists emptied first (blocks they
# hand out are otherwise not seen): ~1.5 KB an entry, ~400 bytes a rule line, 450-600
# more for a rule with a wildcard (compiled into a regex), and the text itself about
# three times (body, rule text, normalised pattern). 3.0 KB for 3 lines, 50 KB for the
# 122 lines of tests/data/robots/typical.txt, 1.8 MB for 2,000 wildcard rules. The first
# estimate, by body bytes alone (1.6 KB + 10 x the body), was up to 2.7x under that.
_ENTRY_BYTES = 1300
_LINE_BYTES = 420
_WILDCARD_BYTES = 600


def entry_cost(origin: str, entry: RobotsEntry) -> int:
    """Estimated bytes of ``entry`` in memory, its parsed rules and their per-agent
    views included: an upper estimate (comments and blank lines count as rules),
    1.08-1.4x what tracemalloc measures."""
    body = entry.body or b""
    if not body:
        return _ENTRY_BYTES + len(origin)
    ends = 1 if body[-1:] in (b"\n", b"\r") else 0
    lines = max(body.count(b"\n"), body.count(b"\r")) + 1 - ends
    wildcards = min(body.count(b"*"), lines)
    return (
        _ENTRY_BYTES
        + len(origin)
        + _LINE_BYTES * lines
        + _WILDCARD_BYTES * wildcards
        + 7 * len(body) // 2
    )


def robots_ignored(origin: str, config: FetchConfig) -> bool:
    """Whether ``origin``'s host is one of ``config.ignore_robots_for`` (exact name)."""
    if not config.ignore_robots_for:
        return False
    host = (urlsplit(origin).hostname or "").lower()
    return host in config.ignore_robots_for


def unavailable(entry: RobotsEntry) -> bool:
    """robots.txt could not be had (network error, 5xx, 429): everything is disallowed
    until it can be fetched, and the URLs waiting on it are deferred, not denied."""
    return entry.body is None and (
        entry.status is None or entry.status >= 500 or entry.status == 429
    )


def robots_deferral(item: Item, entry: RobotsEntry) -> Record:
    """The record of a URL whose robots.txt could not be had: deferred until the
    entry expires and robots.txt is asked again (RFC 9309: disallow all meanwhile)."""
    return fetch_record(
        item.record,
        item.url,
        "deferred",
        retry_at=iso_time(entry.expires_at),
        error=f"robots.txt unavailable: {entry.error}",
    )


class RobotsFlow:
    """robots.txt for every origin of a run: fetched first, cached, applied.

    ``hosts`` is the run's host table (robots tasks queue on hosts, waiters are
    rescheduled through it); records go to ``outbox``; ``state`` (optional) keeps
    entries across runs, and a new entry asks ``commits`` for a prompt commit (its
    Crawl-delay is part of the host's clock). ``headers`` are the run's base request
    headers: robots.txt is asked for without per-URL extras.
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        policy: RobotsPolicy,
        client: HttpClient,
        headers: dict[str, str],
        hosts: HostTable,
        outbox: Outbox,
        state: HostState | None,
        commits: StateCommits,
        archiver: WarcArchiver,
        on_capture: Callable[[Record], None] | None,
        clock: Callable[[], float],
        on_proxy_failure: Callable[[FetchResult], None] | None = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.client = client
        self.headers = headers
        self.hosts = hosts
        self.outbox = outbox
        self.state = state
        self.commits = commits
        self.archiver = archiver
        self.on_capture = on_capture
        self.clock = clock
        self.on_proxy_failure = on_proxy_failure
        # The cut scopes of the requests in flight (the engine's: its stop() moves them)
        self.in_flight: set[asyncio.Timeout] = set()
        # origin -> entry, least recently used first; _bytes: their entry_cost sum
        self._entries: OrderedDict[str, RobotsEntry] = OrderedDict()
        self._bytes = 0
        self.max_bytes = ROBOTS_CACHE_BYTES
        self._inflight: dict[str, list[Host]] = {}  # origin -> hosts waiting on it

    # ------------------------------------------------------------------ the cache
    def entry(self, origin: str) -> RobotsEntry | None:
        """The entry of ``origin`` from memory, else from the state, else None."""
        entry = self._entries.get(origin)
        if entry is not None:
            self._entries.move_to_end(origin)
        elif self.state is not None:
            saved = self.state.robots(origin)
            if saved is not None:
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    entry = RobotsEntry.from_dict(saved)
                    self._keep(origin, entry)
        return entry

    def _keep(self, origin: str, entry: RobotsEntry) -> None:
        """Keep ``entry`` in memory, the least recently used ones out past
        ``max_bytes`` when they are on disk (not those being fetched)."""
        old = self._entries.pop(origin, None)
        if old is not None:
            self._bytes -= entry_cost(origin, old)
        self._entries[origin] = entry
        self._bytes += entry_cost(origin, entry)
        if self.state is None:
            return
        # Oldest first; one being fetched is passed over (moved to the young end), so
        # each eviction costs O(1), not a walk of every entry.
        passed = 0
        while self._bytes > self.max_bytes and passed < len(self._entries) - 1:
            key = next(iter(self._entries))
            if key in self._inflight:
                self._entries.move_to_end(key)
                passed += 1
                continue
            self._bytes -= entry_cost(key, self._entries.pop(key))

    def cache_bytes(self) -> int:
        """Estimated bytes of the entries in memory (see :func:`entry_cost`)."""
        return self._bytes

    def settle(self, origin: str, entry: RobotsEntry) -> None:
        """``origin``'s robots.txt is now ``entry``: kept, and the hosts waiting on it
        go back to the scheduler."""
        self._keep(origin, entry)
        if self.state is not None:
            self.state.put_robots(origin, entry.to_dict())
            self.commits.mark_urgent()  # its Crawl-delay is part of the host's clock
        for waiter in self._inflight.pop(origin, []):
            if not waiter.busy and not waiter.queued:
                self.hosts.schedule(waiter, self.clock())

    def give_up(self, task: RobotsTask, why: str) -> None:
        """``task`` will not be fetched (its host failed or was deferred): the origin's
        robots.txt is settled as unreachable for ``why``."""
        self.settle(task.origin, self.policy.on_error(why, self.clock(), task.previous))

    def release_all(self) -> None:
        """Settle every robots.txt still awaited as lost. Called when nothing runs:
        cannot happen by construction, but a host must never hang on it."""
        for origin in list(self._inflight):
            self.settle(origin, self.policy.on_error("robots fetch lost", self.clock()))

    def waiting_hosts(self) -> set[int]:
        """Ids of the hosts waiting on a robots.txt fetched through another host."""
        return {id(h) for hosts in self._inflight.values() for h in hosts}

    # ------------------------------------------------------------------ verdicts
    def next_task(self, host: Host, now: float) -> Task | None:
        """The next request for ``host``; robots verdicts are settled on the way.

        A URL whose origin has no fresh entry yields a robots task (or, when that
        robots.txt is being fetched through another host, None: ``host`` waits on it).
        Disallowed URLs come out ``robots-denied`` (or ``deferred`` when robots.txt is
        unavailable) and the next one is looked at.
        """
        agent = self.config.agent
        items = host.items
        while items:
            item = items[0]
            if isinstance(item, RobotsTask):
                return items.popleft()
            entry = self.entry(item.origin)
            if entry is None or not self.policy.is_fresh(entry, now):
                waiters = self._inflight.get(item.origin)
                if waiters is not None:  # being fetched through another host (a redirect)
                    waiters.append(host)
                    return None
                self._inflight[item.origin] = []
                return RobotsTask(item.origin, robots_url(item.origin), 0, entry, host.key)
            rules = entry.rules()
            verdict = rules.check(agent, item.url)
            if not verdict.allowed and not robots_ignored(item.origin, self.config):
                items.popleft()
                if unavailable(entry):
                    self.outbox.emit(robots_deferral(item, entry))
                else:
                    rule = verdict.rule or "disallow all"
                    self.outbox.emit(
                        fetch_record(
                            item.record, item.url, "robots-denied", error=f"robots.txt: {rule}"
                        )
                    )
                continue
            delay = rules.crawl_delay(agent)
            host.crawl_delay = min(delay, MAX_CRAWL_DELAY) if delay else 0.0
            return items.popleft()
        return None

    # ------------------------------------------------------------------ fetching
    async def fetch(self, host: Host, task: RobotsTask) -> None:
        """Fetch one robots.txt hop through ``host``'s clock, settle or follow it, move
        the host's clock on, then archive the response and report the capture."""
        cfg = self.config
        # Bounded by the run's end as a page request is (pages.PageFlow.fetch): a robots.txt
        # that stalls (a TLS handshake never answered) held --for and SIGTERM for the
        # whole --timeout. Cut so, it gives no verdict: the host's URLs come out
        # deferred by the stop, and the next run asks again.
        deadline = self.hosts.deadline + DEADLINE_GRACE
        timeout = min(cfg.timeout, max(0.0, deadline - self.clock()))
        scope = asyncio.timeout(None)
        res: FetchResult | None = None
        with contextlib.suppress(TimeoutError):
            async with scope:
                self.in_flight.add(scope)
                try:
                    res = await self.client.fetch(
                        FetchRequest(
                            task.url,
                            host.address or "",
                            self.headers,
                            timeout,
                            ROBOTS_MAX_BYTES,
                            cfg.max_decoded,
                            on_sent=functools.partial(self.hosts.sent, host),
                        )
                    )
                finally:
                    self.in_flight.discard(scope)
        if res is None and not scope.expired():
            raise RuntimeError("robots.txt fetch ended without a result")  # (never)
        if res is not None and res.proxy_failed:
            # The proxy's failure, not the site's: no verdict (robots.txt is not
            # "unavailable", the host is not deferred an hour); the run stops.
            if self.on_proxy_failure is not None:
                self.on_proxy_failure(res)
            self._cut(host, task, res)
            return
        if res is None or (timeout < cfg.timeout and _cut_for_time(res)):
            self._cut(host, task, res)
            return
        entry = await self._judge(host, task, res)
        if entry is not None:
            self.settle(task.origin, entry)
            if task.owner == host.key and unavailable(entry):
                self._defer_unreachable(host, task.origin, entry)
            if task.owner == host.key:
                delay = entry.rules().crawl_delay(cfg.agent)
                host.crawl_delay = min(delay, MAX_CRAWL_DELAY) if delay else 0.0
        now = self.hosts.finish(host, res)
        self.hosts.schedule(host, now)
        if cfg.archive_robots and res.status is not None:
            extra = {"robots": "yes"}
            if res.tls_unverified:
                extra["tlsUnverified"] = res.tls_unverified
            _, location = await self.archiver.archive(res, task.url, None, extra)
            if location is not None and self.on_capture is not None:
                self.on_capture({"url": task.url, "warc": location})

    def _cut(self, host: Host, task: RobotsTask, res: FetchResult | None) -> None:
        """The run ended during ``task``: no entry is settled or saved; the hosts
        waiting on it go back to the scheduler, which defers their URLs (the stop)."""
        now = self.clock()
        if res is None:
            res = FetchResult(error="the run ended during the request", started=now)
        self.hosts.finish(host, res)
        self.hosts.schedule(host, now)
        for waiter in self._inflight.pop(task.origin, []):
            if not waiter.busy and not waiter.queued:
                self.hosts.schedule(waiter, now)

    async def _judge(self, host: Host, task: RobotsTask, res: FetchResult) -> RobotsEntry | None:
        """The entry ``res`` makes, or None when it is a redirect being followed."""
        now = self.clock()
        status = res.status
        if status is None or res.truncated in ("time", "disconnect"):
            # A body cut by a reset or by silence is not the file the server meant:
            # parsed, its missing rules would allow what they forbid (RFC 9309 2.3.1.4).
            why = res.error or "fetch failed"
            return self.policy.on_error(
                why if status is None else f"robots.txt cut off mid-body ({why})",
                now,
                task.previous,
            )
        conflict = res.location_conflict() if 300 <= status < 400 else None
        if conflict is not None:  # no target the server meant: as a failed fetch
            return self.policy.on_error(f"robots.txt redirect: {conflict}", now, task.previous)
        if 300 <= status < 400 and res.location() and task.hops < self.policy.max_redirects:
            target = resolve_location(task.url, res.location() or "")
            try:
                if target is None:
                    raise InvalidURL(f"not a URL: {res.location()!r}")
                sp = split_url(target)
            except InvalidURL as exc:
                return self.policy.on_error(f"robots.txt redirect: {exc}", now, task.previous)
            self._hop(
                host,
                sp,
                RobotsTask(task.origin, target, task.hops + 1, task.previous, task.owner),
            )
            return None
        body = _decode_body(res, ROBOTS_MAX_BYTES) if 200 <= status < 300 else b""
        if body is None:
            # Read as it came, a compressed file is no rules at all: allow what it forbids
            coding = res.header("Content-Encoding")
            why = f"robots.txt in a Content-Encoding that cannot be read ({coding})"
            return self.policy.on_error(why, now, task.previous)
        entry = self.policy.on_response(status, body, now, task.previous)
        if len(body) > 64 * 1024:
            # Parsing and compiling a big file takes ~0.5 s: keep the loop serving.
            await asyncio.get_running_loop().run_in_executor(
                None, _warm_rules, entry, self.config.agent, task.origin
            )
        return entry

    def _defer_unreachable(self, host: Host, origin: str, entry: RobotsEntry) -> None:
        """robots.txt of ``origin`` could not be had (disallow all until it can): the
        host's URLs of that origin are deferred now: left in the queue, they would wait
        for the host's next turn, ten times the failed fetch (5 min after a 30 s
        timeout), only to be deferred then."""
        keep = [i for i in host.items if not (isinstance(i, Item) and i.origin == origin)]
        for item in host.items:
            if isinstance(item, Item) and item.origin == origin:
                self.outbox.emit(robots_deferral(item, entry))
        host.items.clear()
        host.items.extend(keep)

    def _hop(self, host: Host, sp: Split, task: RobotsTask) -> None:
        """Queue a redirect hop first on its target's host, and get that host going."""
        hosts = self.hosts
        target = hosts.get(sp)
        target.items.appendleft(task)
        if target is host:
            return  # rescheduled with its gap after this request
        if target.state == "new":
            hosts.prepare(target)
        elif target.state == "failed":
            hosts.fail(target, "error", "host failed")
        elif not target.busy and not target.queued:
            hosts.schedule(target, self.clock())


def _warm_rules(entry: RobotsEntry, agent: str, origin: str) -> None:
    """Worker thread: parse and compile the rules once, off the event loop."""
    entry.rules().check(agent, origin + "/")


def _decode_body(res: FetchResult, cap: int) -> bytes | None:
    """The body with its Content-Encoding undone (gzip, deflate, stacked too), at most
    ``cap`` bytes; None when it cannot be undone (a coding never asked for, br or zstd;
    a damaged stream). One gzip or deflate label on a body that is plain text is the
    text: many servers label what they send so and do not compress it."""
    codings = [c.strip().lower() for c in (res.header("Content-Encoding") or "").split(",")]
    codings = [c for c in codings if c and c != "identity"]
    body = res.body
    for coding in reversed(codings):  # the last applied is undone first (RFC 9110 8.4)
        decoded = _inflate(body, cap) if coding in ("gzip", "x-gzip", "deflate") else None
        if decoded is None:
            return body[:cap] if len(codings) == 1 and _plain_text(body) else None
        body = decoded
    return body[:cap]


def _inflate(data: bytes, cap: int) -> bytes | None:
    for wbits in (47, -15):  # gzip or zlib by the header; raw deflate
        try:
            return zlib.decompressobj(wbits).decompress(data, cap)
        except zlib.error:
            continue
    return None


def _plain_text(data: bytes) -> bool:
    """No control bytes but white space in its first 4 KiB (compressed data has)."""
    head = data[:4096]
    return not head.startswith(b"\x1f\x8b") and not any(
        b < 32 and b not in (9, 10, 12, 13) for b in head
    )


def robots_url(origin: str) -> str:
    """The robots.txt URL of ``origin`` (``scheme://host:port``), the default port left
    out as in every other captured URL: a WARC-Target-URI with ``:80`` is a URL
    replay tools and indexes do not match with the site's own."""
    for scheme, port in (("http://", ":80"), ("https://", ":443")):
        if origin.startswith(scheme) and origin.endswith(port):
            return origin[: -len(port)] + "/robots.txt"
    return origin + "/robots.txt"


def _cut_for_time(res: FetchResult) -> bool:
    """Whether a request ended for want of time (before or during the response)."""
    error = res.error or ""
    return res.truncated == "time" or (
        res.status is None and (error.startswith("timeout") or "handshake-timeout" in error)
    )
