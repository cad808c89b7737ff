"""The fetch engine: URL records in, exactly one fetch record per URL out.

:class:`Fetcher` ties the parts together. For each input URL record it yields one
fetch record (DESIGN.md invariant 1) with an ``outcome``:

``fetched``        a response arrived (any status but 304/429/503; 3xx with a
                   Location is ``redirect``); archived in the WARC
``not-modified``   304 to a conditional GET (``etag`` / ``last_modified`` of the input)
``redirect``       3xx; ``location`` is the target, which also comes out as a URL
                   record (``reason: "redirect"``, ``hops``, ``via``) through
                   ``on_redirect`` unless the hop limit (5) is reached
``robots-denied``  robots.txt disallows the URL for our agent; nothing was requested
``deferred``       not fetched now, ``retry_at`` says when: the host is backing off
                   (429/503, Retry-After), robots.txt is unreachable, or the host
                   cannot be served before the ``duration`` ends (then the record
                   also says ``"stopped": true``: never started, not the host's fault)
``refused``        not an http(s) URL, or its address is refused by the network policy
``error``          DNS failure, connect/TLS failure, timeout before a response

A classified failure (TLS: :mod:`crawlkit.fetch.tls`; DNS: :mod:`crawlkit.fetch.dns`)
also has ``error_code`` (``tls-expired``, ``dns-nxdomain``, ...), also when it
defers a host's URLs because its robots.txt could not be fetched. A response fetched
with ``--insecure`` after a failed TLS check has ``tls_unverified`` (the code), and
its WARC metadata record says ``tlsUnverified``.

Order of work per host (DESIGN.md invariants 2, 3, 7): the name is resolved when the
host's queue is made, and the address is checked by the :class:`NetPolicy`; the
host's durable clock and backoff are loaded from :class:`HostState`; robots.txt for
each origin is fetched (through the same politeness clock, following up to 5
redirects itself) before any other URL of it; then the host's URLs in FIFO order, one
at a time, each after the gap the :class:`Scheduler` computes. A host never seen
before is written to the state, and fsynced, before its first request; after a crash
every known host waits its full gap (see :mod:`crawlkit.fetch.hoststate`).

Records come out in completion order. Input is read completely before fetching
starts (a frontier batch is bounded), so memory grows with the batch: roughly 1 KB
per queued URL, plus per-host state; :meth:`Fetcher.feed` and ``run(refill=...)``
keep a long run fed instead, and :meth:`Fetcher.stop` ends one early with every URL
not yet fetched reported ``deferred``.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import email.utils
import re
import threading
import time
import zlib
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

from crawlkit.errors import InvalidURL
from crawlkit.fetch.client import FetchRequest, FetchResult, HttpClient
from crawlkit.fetch.hoststate import HostRecord, HostState
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolution, Resolver
from crawlkit.fetch.scheduler import HostQueue, Scheduler
from crawlkit.robots import RobotsEntry, RobotsPolicy
from crawlkit.url import Canonicalizer
from crawlkit.warc.write import Capture, WarcWriter, sha1_digest, warc_date

__all__ = ["DEFAULT_AGENT", "FetchConfig", "Fetcher", "iso_time", "parse_retry_after"]

Record = dict[str, Any]

MAX_CRAWL_DELAY = 86_400.0
ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309: parse at least 500 KiB
REFILL_PAUSE = 0.25  # seconds before asking an empty refill again
COMMIT_EVERY = 0.5  # seconds between background commits of the host state
OUTCOMES = ("fetched", "not-modified", "redirect", "robots-denied", "deferred", "refused", "error")


_ERROR_CODE = re.compile(r"\b((?:tls|dns)-[a-z]+(?:-[a-z]+)*):")


def error_code(error: str | None) -> str | None:
    """The code of a classified failure named in ``error`` (``tls-expired: ...``)."""
    match = _ERROR_CODE.search(error) if error else None
    return match.group(1) if match else None


# The User-Agent of fetch and crawl unless --agent says otherwise; robots.txt groups
# are matched by its product token, "crawlkit".
DEFAULT_AGENT = "crawlkit/0.1 (+https://github.com/crawlkit/crawlkit)"


@dataclass
class FetchConfig:
    """Every knob of a fetch run, with DESIGN.md's defaults."""

    agent: str = DEFAULT_AGENT
    concurrency: int = 100
    min_delay: float = 1.0
    delay_factor: float = 10.0
    per_ip: int = 2
    per_ip_delay: float | None = None  # default: min_delay / 4
    duration: float | None = None
    timeout: float = 30.0
    max_body: int = 10_000_000
    max_decoded: int = 10_000_000
    backoff: float = 60.0
    max_backoff: float = 3600.0
    max_hops: int = 5
    archive_robots: bool = True
    # Exact host names whose robots.txt is fetched (and its Crawl-delay kept) but whose
    # rules are not applied: an operator archiving a site they run.
    ignore_robots_for: tuple[str, ...] = ()
    # Headers to add per URL (crawlkit.fetch.request_settings.RequestSettings: --header,
    # --cookies, --netrc); page requests only, robots.txt is asked for without them.
    request: Any = None
    host_min_delay: tuple[tuple[str, float], ...] = ()  # (host name, seconds): overrides
    proxy: str | None = None  # every request through this HTTP proxy (--proxy)
    trust_env: bool = False  # HTTP(S)_PROXY / NO_PROXY from the environment (--trust-env)


def _robots_ignored(origin: str, config: FetchConfig) -> bool:
    """Whether ``origin``'s host is one of ``config.ignore_robots_for`` (exact name)."""
    if not config.ignore_robots_for:
        return False
    host = (urlsplit(origin).hostname or "").lower()
    return host in config.ignore_robots_for


def _unavailable(entry: RobotsEntry) -> bool:
    """robots.txt could not be had (network error, 5xx, 429): everything is disallowed
    until it can be fetched, and the URLs waiting on it are deferred, not denied."""
    return entry.body is None and (
        entry.status is None or entry.status >= 500 or entry.status == 429
    )


def iso_time(t: float) -> str:
    """UTC ISO 8601 with milliseconds: ``2026-11-30T07:31:36.123Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int((t % 1) * 1000):03d}Z"


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        parsed = email.utils.parsedate_tz(value)
    except (TypeError, ValueError):
        return None
    if parsed is None:
        return None
    return max(0.0, calendar.timegm(parsed[:9]) - (parsed[9] or 0) - now)


@dataclass(slots=True)
class _Item:
    record: Record
    url: str
    origin: str


@dataclass(slots=True)
class _RobotsTask:
    origin: str  # whose robots.txt this is (scheme://host:port)
    url: str  # the hop being fetched
    hops: int
    previous: RobotsEntry | None
    owner: str  # the politeness key of the origin's host


@dataclass(eq=False)
class _Host(HostQueue):
    name: str = ""
    durable: bool = False  # the state has a row for it (written before any request)
    state: str = "new"  # new, resolving, ready, failed
    failure: tuple[str, str] | None = None  # (outcome, error) once failed


@dataclass
class _Split:
    scheme: str
    hostname: str
    key: str
    origin: str


def split_url(url: str) -> _Split:
    """Scheme, hostname, politeness key (hostname[:port]) and robots origin of a URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"invalid URL: {exc}") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise InvalidURL(f"scheme {scheme or '(none)'!r} is not fetched (only http and https)")
    hostname = (parts.hostname or "").rstrip(".")
    if not hostname:
        raise InvalidURL("URL has no host")
    default = 80 if scheme == "http" else 443
    shown = f"[{hostname}]" if ":" in hostname else hostname
    key = shown if port in (None, default) else f"{shown}:{port}"
    return _Split(scheme, hostname, key, f"{scheme}://{shown}:{port or default}")


class Fetcher:
    """One fetch run. Build it with its parts, then ``async for rec in f.run(records)``.

    Memory: hosts with nothing queued that have been idle ``idle_evict`` seconds past
    their next-allowed time are dropped from memory (every ``sweep_every`` seconds, once
    more than ``sweep_min_hosts`` are known); their clocks are on disk and are read back
    if they show up again. Without a state directory nothing is dropped.

    ``on_redirect`` receives the URL record of every redirect target within the hop
    limit. ``state`` (optional) makes host clocks, backoffs, robots and digests
    durable; ``warc`` (optional) archives every response.
    """

    def __init__(
        self,
        config: FetchConfig,
        *,
        client: HttpClient,
        resolver: Resolver,
        netpolicy: NetPolicy,
        state: HostState | None = None,
        warc: WarcWriter | None = None,
        robots_policy: RobotsPolicy | None = None,
        canonicalizer: Canonicalizer | None = None,
        on_redirect: Callable[[Record], None] | None = None,
        on_robots_capture: Callable[[Record], None] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.config = config
        self.client = client
        self.resolver = resolver
        self.netpolicy = netpolicy
        self.state = state
        self.warc = warc
        self.robots_policy = robots_policy or RobotsPolicy()
        self.canon = canonicalizer or Canonicalizer()
        self.on_redirect = on_redirect
        # Told {"url", "warc"} of each robots.txt capture: they have no fetch record,
        # and a reader of the WARC by fetch-record ranges (crawl's extract, which takes
        # robots.txt Sitemap lines) would not see them otherwise.
        self.on_robots_capture = on_robots_capture
        self.clock = clock
        per_ip_delay = config.per_ip_delay
        if per_ip_delay is None:
            per_ip_delay = config.min_delay / 4
        self.scheduler = Scheduler(
            min_delay=config.min_delay,
            delay_factor=config.delay_factor,
            per_ip=config.per_ip,
            per_ip_delay=per_ip_delay,
            backoff=config.backoff,
            max_backoff=config.max_backoff,
            host_min_delay=dict(config.host_min_delay),
        )
        self.counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.redirects_out = 0
        self._hosts: dict[str, _Host] = {}
        self._robots: dict[str, RobotsEntry] = {}
        self._robots_inflight: dict[str, list[_Host]] = {}
        self._out: deque[Record] = deque()
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._resolving = 0
        self._accepted: set[str] = set()  # URLs queued or in flight, until answered
        self._failures: list[BaseException] = []
        self._urgent = False  # politeness facts (robots result, backoff) await a commit
        self._last_commit = 0.0
        self._pending_commit: asyncio.Future[None] | None = None
        # Responses waiting for the WARC thread; past the limit no request starts, so a
        # slow disk holds memory to about limit x body size.
        self._archiving = 0
        self._warc_lock = threading.Lock()
        self._warc_queue: list[tuple[asyncio.Future[tuple[str, Any]], tuple[Any, ...]]] = []
        self._warc_draining = False
        self._max_archiving = 4 * config.concurrency
        self.sweep_every = 30.0
        self.sweep_min_hosts = 10_000
        self.idle_evict = 60.0
        self.evicted = 0
        self._last_sweep = 0.0
        self._deadline = float("inf")
        self._stop_reason = "host not due before the run ends (--for)"
        self._warc_pool = ThreadPoolExecutor(1, thread_name_prefix="warc")
        self._state_pool = ThreadPoolExecutor(1, thread_name_prefix="state")
        self._headers = {
            "User-Agent": config.agent,
            "Accept": "*/*",
            "Accept-Encoding": "gzip, deflate",
        }

    # ------------------------------------------------------------------ input
    def _emit(self, record: Record, *, settles: bool = True) -> None:
        """Hand out a fetch record; ``settles`` an accepted URL (see :meth:`_add`)."""
        self.counts[record["outcome"]] += 1
        self._out.append(record)
        if settles:
            self._accepted.discard(record["url"])

    def _result(self, rec: Record, url: str, outcome: str, **fields: Any) -> Record:
        out = dict(rec)
        out.update(
            url=url,
            status=None,
            outcome=outcome,
            fetched_at=None,
            elapsed_ms=None,
            ip=None,
            bytes=None,
            content_type=None,
            etag=rec.get("etag"),
            last_modified=rec.get("last_modified"),
            digest=None,
            location=None,
            warc=None,
            error=None,
        )
        out.pop("error_code", None)  # from an earlier fetch of a passed-through record
        out.pop("tls_unverified", None)
        out.update(fields)
        code = error_code(out["error"])
        if code is not None:
            out["error_code"] = code
        return out

    def _add(self, rec: Record) -> _Host | None:
        url = rec.get("url")
        if not isinstance(url, str) or not url:
            self._emit(self._result(rec, str(url), "refused", error="record has no url"),
                       settles=False)  # fmt: skip
            return None
        if rec.get("outcome") == "refused":
            # Refused upstream (a frontier block, a trap limit): passed through, never
            # fetched, still one record for it.
            why = rec.get("detail") or rec.get("refused") or "refused before the fetch"
            self._emit(self._result(rec, url, "refused", error=str(why)), settles=False)
            return None
        try:
            sp = split_url(url)
        except InvalidURL as exc:
            self._emit(self._result(rec, url, "refused", error=str(exc)), settles=False)
            return None
        if url in self._accepted:
            # The same URL twice in a batch (or handed out again while the first is
            # still queued): the server is asked once; the repeat comes out refused.
            self._emit(self._result(rec, url, "refused", refused="duplicate",
                                    error="the same URL is already queued or in flight"),
                       settles=False)  # fmt: skip
            return None
        self._accepted.add(url)
        host = self._hosts.get(sp.key)
        if host is None:
            host = self._hosts[sp.key] = _Host(sp.key, name=sp.hostname)
        host.items.append(_Item(rec, url, sp.origin))
        return host

    def feed(self, records: Iterable[Record]) -> int:
        """Add URL records to a running fetch (call it on the loop's thread).

        New hosts are resolved and scheduled, known ones rescheduled; the politeness
        rules are the same as for the records given to :meth:`run` (a host is in the
        scheduler at most once). Returns how many records were taken.
        """
        touched: dict[str, _Host] = {}
        taken = 0
        for rec in records:
            taken += 1
            host = self._add(rec)
            if host is not None:
                touched[host.key] = host
        now = self.clock()
        for host in touched.values():
            if host.state == "new":
                self._prepare(host)
            elif host.state == "ready":
                self._schedule(host, now)
            elif host.state == "failed" and host.failure is not None:
                self._fail_host(host, *host.failure)
        self._wake.set()
        return taken

    # ------------------------------------------------------------------ host setup
    def _prepare(self, host: _Host) -> None:
        """Resolve (or start resolving) a new host; schedules it when ready."""
        host.state = "resolving"
        hit = self.resolver.cached(host.name)
        if hit is not None:
            self._resolved(host, hit)
            return
        self._resolving += 1
        task = asyncio.get_running_loop().create_task(self._resolve(host))
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    async def _resolve(self, host: _Host) -> None:
        try:
            res = await self.resolver.resolve(host.name)
            self._resolved(host, res)
        finally:
            self._resolving -= 1

    def _task_done(self, task: asyncio.Task[None]) -> None:
        # Wake the loop only once the task is out of the set it watches.
        self._tasks.discard(task)
        self._wake.set()
        if not task.cancelled() and task.exception() is not None:
            self._failures.append(task.exception())  # type: ignore[arg-type]

    def _resolved(self, host: _Host, res: Resolution) -> None:
        now = self.clock()
        if res.error or not res.addresses:
            host.state = "failed"
            self._fail_host(host, "error", res.error or "no address")
            return
        address = None
        refusal = None
        for candidate in res.addresses:
            why = self.netpolicy.refusal(candidate)
            if why is None:
                address = candidate
                break
            refusal = refusal or why
        if address is None:
            host.state = "failed"
            self._fail_host(host, "refused", refusal or "address refused")
            return
        host.address = address
        host.state = "ready"
        saved = self.state.host(host.key) if self.state else None
        if saved is not None:
            host.durable = True
            host.backoff = saved.backoff
            host.backoff_until = saved.backoff_until
            host.last_elapsed = saved.last_elapsed
            host.crawl_delay = saved.crawl_delay
            host.next_allowed = saved.next_allowed
            if saved.inflight_since is not None or (self.state and self.state.crashed):
                # The last run died, maybe with a request to this host in flight whose
                # record was lost: count it as ending now, so the full gap is kept.
                host.next_allowed = max(host.next_allowed, now + self.scheduler.gap(host))
        self._schedule(host, now)

    def _fail_host(self, host: _Host, outcome: str, error: str) -> None:
        host.failure = (outcome, error)
        while host.items:
            item = host.items.popleft()
            if isinstance(item, _Item):
                self._emit(self._result(item.record, item.url, outcome, error=error))
            else:
                self._robots_done(
                    item.origin, self.robots_policy.on_error(error, self.clock(), item.previous)
                )

    def _schedule(self, host: _Host, now: float) -> None:
        """Back into the heap if it has work and can be served in time; else defer."""
        if not host.items or host.state != "ready":
            return
        if host.backing_off(now):
            self._defer_host(host, host.backoff_until, "host is backing off after HTTP 429/503")
        elif host.next_allowed >= self._deadline:
            self._defer_host(host, host.next_allowed, self._stop_reason, stopped=True)
        else:
            self.scheduler.push(host)

    def _defer_host(self, host: _Host, retry_at: float, why: str, *, stopped: bool = False) -> None:
        """Every queued URL of ``host`` comes out deferred until ``retry_at``; ``stopped``
        (the run ends before the host is due) marks the records ``"stopped": true``."""
        extra = {"stopped": True} if stopped else {}
        stamp = iso_time(retry_at)
        while host.items:
            item = host.items.popleft()
            if isinstance(item, _Item):
                self._emit(
                    self._result(
                        item.record, item.url, "deferred", retry_at=stamp, error=why, **extra
                    )
                )
            else:
                self._robots_done(
                    item.origin, self.robots_policy.on_error(why, self.clock(), item.previous)
                )

    # ------------------------------------------------------------------ robots
    def _robots_entry(self, origin: str) -> RobotsEntry | None:
        entry = self._robots.get(origin)
        if entry is None and self.state is not None:
            saved = self.state.robots(origin)
            if saved is not None:
                with contextlib.suppress(KeyError, TypeError, ValueError):
                    entry = self._robots[origin] = RobotsEntry.from_dict(saved)
        return entry

    def _robots_done(self, origin: str, entry: RobotsEntry) -> None:
        self._robots[origin] = entry
        if self.state is not None:
            self.state.put_robots(origin, entry.to_dict())
            self._urgent = True  # its Crawl-delay is part of the host's clock
        for waiter in self._robots_inflight.pop(origin, []):
            if not waiter.busy and not waiter.queued:
                self._schedule(waiter, self.clock())

    def _next_task(self, host: _Host, now: float) -> _Item | _RobotsTask | None:
        """The next request for ``host``; robots verdicts are settled on the way."""
        agent = self.config.agent
        items = host.items
        while items:
            item = items[0]
            if isinstance(item, _RobotsTask):
                return items.popleft()
            entry = self._robots_entry(item.origin)
            if entry is None or not self.robots_policy.is_fresh(entry, now):
                waiters = self._robots_inflight.get(item.origin)
                if waiters is not None:  # being fetched through another host (a redirect)
                    waiters.append(host)
                    return None
                self._robots_inflight[item.origin] = []
                return _RobotsTask(item.origin, item.origin + "/robots.txt", 0, entry, host.key)
            rules = entry.rules()
            verdict = rules.check(agent, item.url)
            if not verdict.allowed and not _robots_ignored(item.origin, self.config):
                items.popleft()
                if _unavailable(entry):
                    self._emit(self._robots_deferral(item, entry))
                else:
                    rule = verdict.rule or "disallow all"
                    self._emit(
                        self._result(
                            item.record, item.url, "robots-denied", error=f"robots.txt: {rule}"
                        )
                    )
                continue
            delay = rules.crawl_delay(agent)
            host.crawl_delay = min(delay, MAX_CRAWL_DELAY) if delay else 0.0
            return items.popleft()
        return None

    # ------------------------------------------------------------------ the loop
    async def run(
        self,
        records: Iterable[Record],
        *,
        refill: Callable[[], Coroutine[Any, Any, list[Record] | None]] | None = None,
    ) -> AsyncIterator[Record]:
        """Fetch every record; yields fetch records as they complete.

        ``refill`` keeps a long run fed (``crawlkit crawl``): it is awaited whenever
        fewer hosts wait in the scheduler than twice the concurrency, or a request slot
        is free and no waiting host is due (:meth:`_wants_work`), and returns more
        URL records, ``[]`` for "nothing now, ask again soon", or None for "no more".
        The run ends when nothing is in flight or waiting and ``refill`` said None.
        """
        start = self.clock()
        if self.config.duration is not None:
            self._deadline = start + self.config.duration
        if self.state is not None:
            self.state.begin_run()
            self.resolver.load(self.state.dns())
        for rec in records:
            self._add(rec)
        while self._out:
            yield self._out.popleft()
        for host in list(self._hosts.values()):
            if host.state == "new":
                self._prepare(host)
        loop = asyncio.get_running_loop()
        refill_task: asyncio.Task[list[Record] | None] | None = None
        refill_after = 0.0
        refill_done = refill is None
        try:
            while True:
                self._wake.clear()
                if self._failures:
                    raise self._failures[0]
                now = self.clock()
                if refill_task is not None and refill_task.done():
                    more = refill_task.result()
                    refill_task = None
                    if more is None:
                        refill_done = True
                    elif more:
                        self.feed(more)
                    else:
                        refill_after = now + REFILL_PAUSE
                if (
                    refill is not None
                    and not refill_done
                    and refill_task is None
                    and now >= refill_after
                    and now < self._deadline
                    and self._wants_work(now)
                ):
                    refill_task = loop.create_task(refill())
                    refill_task.add_done_callback(lambda _t: self._wake.set())
                self._check_deadline(now)
                launches = self._launches(now)
                if launches:
                    fresh = [h for h, _ in launches if not h.durable]
                    if self.state is not None and fresh:
                        # A host never seen is on disk before it is contacted (invariant 2).
                        await self._commit(loop)
                        for h in fresh:
                            h.durable = True
                    for host, task in launches:
                        t = loop.create_task(self._run_task(host, task))
                        self._tasks.add(t)
                        t.add_done_callback(self._task_done)
                if self.state is not None:
                    self._background_commit(loop, now)
                    self._sweep(now)
                while self._out:
                    yield self._out.popleft()
                if (
                    not self._tasks
                    and not self._resolving
                    and not len(self.scheduler)
                    and (refill_done or now >= self._deadline)
                    and refill_task is None
                ):
                    self._release_waiters()
                    if not self._out:
                        break
                    continue
                timeout = None
                if (
                    self.scheduler.busy < self.config.concurrency
                    and self._archiving < self._max_archiving
                ):
                    nt = self.scheduler.next_time()
                    if nt is not None:
                        timeout = max(0.0, nt - self.clock())
                # Judge the deadline by the same ``now`` as the exit test above: a fresh
                # clock reading could pass the deadline the exit test had not yet seen,
                # and then wait forever for a wake-up nothing in flight will send.
                past_deadline = now >= self._deadline
                if self._deadline != float("inf") and not past_deadline:
                    left = max(0.0, self._deadline - self.clock())
                    timeout = left if timeout is None else min(timeout, left)
                if not refill_done and refill_task is None and not past_deadline:
                    wait = max(0.0, refill_after - self.clock())
                    timeout = wait if timeout is None else min(timeout, wait)
                if past_deadline and timeout == 0:
                    # After the deadline only requests in flight remain: wait for them to
                    # wake us. A zero timeout here would spin without letting them run.
                    timeout = None
                if timeout is None and not self._tasks and refill_task is None:
                    timeout = REFILL_PAUSE  # nothing in flight could wake us: look again
                if timeout is None or timeout > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._wake.wait(), timeout)
                else:
                    await asyncio.sleep(0)  # something is due now: let the loop breathe once
            while self._out:
                yield self._out.popleft()
        finally:
            if refill_task is not None:
                with contextlib.suppress(BaseException):
                    await refill_task
            for t in list(self._tasks):
                t.cancel()
            await self._finish(loop)

    async def rotate_warc(self) -> list[str]:
        """Close the current WARC file (a new one opens on the next write).

        Returns the names of every file closed so far. ``crawlkit crawl`` calls it
        before it extracts what was fetched, so extract only ever reads whole files.
        """
        if self.warc is None:
            return []
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._warc_pool, self.warc.close)
        return [str(p) for p in self.warc.closed_files]

    async def flush_warc(self) -> None:
        """Hand every record written so far to the OS, so that another reader (crawl's
        extract, by the offsets in the fetch records) sees it whole; the file stays
        open and rotates by size."""
        if self.warc is not None:
            loop = asyncio.get_running_loop()
            await loop.run_in_executor(self._warc_pool, self.warc.flush)

    def has_work(self) -> bool:
        """Whether URLs given to this run are still unanswered (queued, resolving, or
        in flight); their answers may lead the caller to more work."""
        return bool(self._tasks or self._resolving or len(self.scheduler))

    def _wants_work(self, now: float) -> bool:
        """Whether to ask ``refill`` for more: few hosts wait, or a request slot is free
        and no waiting host is due now. Hosts sitting out long gaps (a Crawl-delay, a
        slow server's 10 x fetch time) must not keep the run from hosts that could be
        fetched now: counting waiting hosts alone starved thousands-of-host crawls."""
        sched = self.scheduler
        if len(sched) + self._resolving < 2 * self.config.concurrency:
            return True
        due = sched.next_time()
        return sched.busy < self.config.concurrency and (due is None or due > now)

    def _release_waiters(self) -> None:
        # Nothing is running, yet hosts wait on a robots fetch: it was lost (cannot
        # happen by construction, but never hang on it).
        for origin in list(self._robots_inflight):
            self._robots_done(
                origin, self.robots_policy.on_error("robots fetch lost", self.clock())
            )

    def _check_deadline(self, now: float) -> None:
        if self._deadline == float("inf"):
            return
        if now >= self._deadline:
            late = self.scheduler.drain()
        else:
            late = self.scheduler.pop_due_after(self._deadline)
        for host in late:
            assert isinstance(host, _Host)
            self._defer_host(host, max(host.next_allowed, now), self._stop_reason, stopped=True)

    def stop(self) -> None:
        """Start no new request; what is left comes out ``deferred`` (SIGINT, SIGTERM).

        Requests in flight finish (within the timeout) and are reported as usual.
        """
        self._deadline = min(self._deadline, self.clock())
        self._stop_reason = "fetch stopped before the host was due (interrupted)"
        self._wake.set()

    def _launches(self, now: float) -> list[tuple[_Host, _Item | _RobotsTask]]:
        out: list[tuple[_Host, _Item | _RobotsTask]] = []
        sched = self.scheduler
        if now >= self._deadline:
            return out
        while sched.busy < self.config.concurrency and self._archiving < self._max_archiving:
            host = sched.pop_ready(now)
            if host is None:
                break
            assert isinstance(host, _Host)
            task = self._next_task(host, now)
            if task is None:
                sched.release(host)
                continue
            sched.start(host, now)
            if self.state is not None:
                self.state.put_host(
                    host.key,
                    self._host_record(host, inflight=now, next_allowed=now + sched.gap(host)),
                )
            out.append((host, task))
        return out

    def _host_record(
        self, host: _Host, *, inflight: float | None, next_allowed: float
    ) -> HostRecord:
        return HostRecord(
            next_allowed,
            host.backoff,
            host.backoff_until,
            host.last_elapsed,
            host.crawl_delay,
            inflight,
        )

    def _sweep(self, now: float) -> None:
        """Forget long-idle hosts (their state is on disk) so a long run stays small."""
        if now - self._last_sweep < self.sweep_every or len(self._hosts) < self.sweep_min_hosts:
            return
        self._last_sweep = now
        waiting = {id(h) for hosts in self._robots_inflight.values() for h in hosts}
        for key, h in list(self._hosts.items()):
            if (
                h.items
                or h.busy
                or h.queued
                or h.state in ("new", "resolving")
                or id(h) in waiting
                or h.next_allowed > now - self.idle_evict
                or h.backoff_until > now
            ):
                continue
            del self._hosts[key]
            self.evicted += 1
        if len(self._robots) > self.sweep_min_hosts:
            # Entries are on disk too; keep only those being fetched.
            self._robots = {o: e for o, e in self._robots.items() if o in self._robots_inflight}

    async def _commit(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self.state is not None
        self._last_commit = self.clock()
        self._urgent = False
        await loop.run_in_executor(self._state_pool, self.state.commit)

    def _background_commit(self, loop: asyncio.AbstractEventLoop, now: float) -> None:
        """Commit queued state changes without waiting: at once after a robots.txt
        result or a backoff, else every ``COMMIT_EVERY`` seconds."""
        pending = self._pending_commit
        if pending is not None:
            if not pending.done():
                return
            self._pending_commit = None
            if pending.exception() is not None:
                raise pending.exception()  # type: ignore[misc]
        if self._urgent or now - self._last_commit >= COMMIT_EVERY:
            assert self.state is not None
            self._last_commit = now
            self._urgent = False
            self._pending_commit = loop.run_in_executor(self._state_pool, self.state.commit)

    async def _finish(self, loop: asyncio.AbstractEventLoop) -> None:
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self.warc is not None:
            await loop.run_in_executor(self._warc_pool, self.warc.close)
        if self.state is not None:
            if self._pending_commit is not None:
                await asyncio.gather(self._pending_commit, return_exceptions=True)
            dns = self.resolver.export()
            await loop.run_in_executor(self._state_pool, self.state.save_dns, dns)
            await loop.run_in_executor(self._state_pool, self.state.commit)
        self._warc_pool.shutdown()
        self._state_pool.shutdown()

    # ------------------------------------------------------------------ one request
    async def _run_task(self, host: _Host, task: _Item | _RobotsTask) -> None:
        if isinstance(task, _RobotsTask):
            await self._fetch_robots(host, task)
        else:
            await self._fetch_url(host, task)

    def _end(self, host: _Host, res: FetchResult) -> float:
        now = self.clock()
        retry_after = None
        if res.status in (429, 503):
            retry_after = parse_retry_after(res.header("Retry-After"), now)
        self.scheduler.finish(
            host, now, elapsed=res.elapsed, status=res.status, retry_after=retry_after
        )
        if self.state is not None:
            self.state.put_host(
                host.key, self._host_record(host, inflight=None, next_allowed=host.next_allowed)
            )
            if host.backoff_until > now:
                self._urgent = True
        return now

    async def _archive(
        self, res: FetchResult, url: str, depth: Any, extra: dict[str, str]
    ) -> tuple[str, Any]:
        """Write the exchange to the WARC; returns (payload digest, location dict or None).

        Hashing, the revisit lookup and compression run on the WARC thread, in order,
        so the event loop only hands the response over.
        """
        if self.warc is None or res.status is None:
            return sha1_digest(res.body), None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[tuple[str, Any]] = loop.create_future()
        with self._warc_lock:
            self._warc_queue.append((future, (res, url, depth, extra)))
            start, self._warc_draining = not self._warc_draining, True
        if start:
            loop.run_in_executor(self._warc_pool, self._drain_warc, loop)
        self._archiving += 1
        try:
            return await future
        finally:
            self._archiving -= 1

    def _drain_warc(self, loop: asyncio.AbstractEventLoop) -> None:
        """WARC thread: write queued captures in batches, one loop wake-up per batch
        (a hand-over per capture costs the event loop more than the capture)."""
        while True:
            with self._warc_lock:
                batch, self._warc_queue = self._warc_queue, []
                if not batch:
                    self._warc_draining = False
                    return
            results: list[tuple[bool, Any]] = []
            for _, args in batch:
                try:
                    results.append((True, self._archive_sync(*args)))
                except Exception as exc:  # handed to the awaiting task
                    results.append((False, exc))
            loop.call_soon_threadsafe(_deliver, [f for f, _ in batch], results)

    def _archive_sync(
        self, res: FetchResult, url: str, depth: Any, extra: dict[str, str]
    ) -> tuple[str, Any]:
        assert self.warc is not None and res.status is not None
        digest = sha1_digest(res.body)
        date = warc_date(res.started, self.warc.version)
        revisit = None
        if self.state is not None and res.body and not res.truncated and 200 <= res.status < 300:
            revisit = self.state.digest(digest)
            if revisit is None:
                self.state.put_digest(digest, url, date)
        meta = {
            "fetchTimeMs": str(int(res.elapsed * 1000)),
            "ipAddress": res.address or "",
            **extra,
        }
        if res.truncated:
            meta["truncated"] = res.truncated
        encoded = (res.header("Content-Encoding") or "identity").strip().lower() != "identity"
        cap = Capture(
            url=url,
            ip=res.address,
            date=res.started,
            request_head=res.request_head,
            response_head=res.response_head,
            body=res.body,
            payload_digest=digest,
            truncated=res.truncated,
            depth=depth if isinstance(depth, int) else None,
            revisit_of=revisit,
            metadata=meta,
            precompressed=encoded,
        )
        return digest, self.warc.write_capture(cap).to_dict()

    async def _fetch_url(self, host: _Host, item: _Item) -> None:
        rec = item.record
        headers = self._headers
        if rec.get("etag") or rec.get("last_modified"):
            headers = dict(headers)
            if isinstance(rec.get("etag"), str):
                headers["If-None-Match"] = rec["etag"]
            if isinstance(rec.get("last_modified"), str):
                headers["If-Modified-Since"] = rec["last_modified"]
        cfg = self.config
        if cfg.request:
            headers = {**headers, **cfg.request.for_url(item.url)}
        res = await self.client.fetch(
            FetchRequest(
                item.url, host.address or "", headers, cfg.timeout, cfg.max_body, cfg.max_decoded
            )
        )
        if cfg.request:
            cfg.request.note_response(item.url, res.headers)
        now = self._end(host, res)
        # The host's clock is set: it may go back to the heap while the WARC is written.
        self._after(host, now)
        fields: dict[str, Any] = {
            "fetched_at": iso_time(res.started),
            "elapsed_ms": round(res.elapsed * 1000, 1),
            "ip": res.address,
        }
        status = res.status
        if status is None:
            self._emit(self._result(rec, item.url, "error", error=res.error, **fields))
            return
        extra = {"tlsUnverified": res.tls_unverified} if res.tls_unverified else {}
        digest, loc = await self._archive(res, item.url, rec.get("depth"), extra)
        fields.update(
            status=status,
            bytes=len(res.body),
            content_type=res.header("Content-Type"),
            etag=res.header("ETag") or (rec.get("etag") if status == 304 else None),
            last_modified=res.header("Last-Modified")
            or (rec.get("last_modified") if status == 304 else None),
            digest=digest,
            warc=loc,
            error=res.error,
        )
        if res.truncated:
            fields["truncated"] = res.truncated
        if res.tls_unverified:
            fields["tls_unverified"] = res.tls_unverified
        if status == 304:
            outcome = "not-modified"
        elif status in (429, 503):
            outcome = "deferred"
            fields["retry_at"] = iso_time(host.backoff_until)
            fields["error"] = f"HTTP {status}: backing off"
        elif 300 <= status < 400 and res.header("Location"):
            outcome = "redirect"
            self._redirect(rec, item.url, res.header("Location") or "", fields)
        else:
            outcome = "fetched"
        self._emit(self._result(rec, item.url, outcome, **fields))

    def _redirect(self, rec: Record, url: str, location: str, fields: dict[str, Any]) -> None:
        target = urljoin(url, location.strip())
        fields["location"] = target
        hops = rec.get("hops") if rec.get("reason") == "redirect" else 0
        hops = (hops if isinstance(hops, int) else 0) + 1
        if hops > self.config.max_hops:
            fields["error"] = f"redirect limit reached ({self.config.max_hops} hops)"
            return
        try:
            parsed = self.canon.parse(target)
        except InvalidURL as exc:
            fields["error"] = f"redirect target refused: {exc}"
            return
        fields["location"] = parsed.url
        out: Record = {"url": parsed.url, "host": parsed.host, "site": parsed.site, "fp": parsed.fp}
        for key in ("depth", "priority"):
            if key in rec:
                out[key] = rec[key]
        out.update(reason="redirect", hops=hops, via=url)
        self.redirects_out += 1
        if self.on_redirect is not None:
            self.on_redirect(out)

    def _after(self, host: _Host, now: float) -> None:
        """After a request: more work goes back to the heap, backoff defers the rest."""
        self._schedule(host, now)

    async def _fetch_robots(self, host: _Host, task: _RobotsTask) -> None:
        cfg = self.config
        res = await self.client.fetch(
            FetchRequest(
                task.url,
                host.address or "",
                self._headers,
                cfg.timeout,
                ROBOTS_MAX_BYTES,
                cfg.max_decoded,
            )
        )
        now = self.clock()
        entry: RobotsEntry | None = None
        status = res.status
        if status is None or res.truncated in ("time", "disconnect"):
            # A body cut by a reset or by silence is not the file the server meant:
            # parsed, its missing rules would allow what they forbid (RFC 9309 2.3.1.4).
            why = res.error or "fetch failed"
            entry = self.robots_policy.on_error(
                why if status is None else f"robots.txt cut off mid-body ({why})",
                now,
                task.previous,
            )
        elif (
            300 <= status < 400
            and res.header("Location")
            and task.hops < self.robots_policy.max_redirects
        ):
            target = urljoin(task.url, (res.header("Location") or "").strip())
            try:
                sp = split_url(target)
            except InvalidURL as exc:
                entry = self.robots_policy.on_error(
                    f"robots.txt redirect: {exc}", now, task.previous
                )
            else:
                self._robots_hop(
                    host,
                    sp,
                    _RobotsTask(task.origin, target, task.hops + 1, task.previous, task.owner),
                )
        else:
            body = _decode_body(res, ROBOTS_MAX_BYTES) if 200 <= status < 300 else b""
            entry = self.robots_policy.on_response(status, body, now, task.previous)
            if len(body) > 64 * 1024:
                # Parsing and compiling a big file takes ~0.5 s: keep the loop serving.
                await asyncio.get_running_loop().run_in_executor(
                    None, _warm_rules, entry, cfg.agent, task.origin
                )
        if entry is not None:
            self._robots_done(task.origin, entry)
            if task.owner == host.key and _unavailable(entry):
                self._defer_unreachable(host, task.origin, entry)
            if task.owner == host.key:
                delay = entry.rules().crawl_delay(cfg.agent)
                host.crawl_delay = min(delay, MAX_CRAWL_DELAY) if delay else 0.0
        now = self._end(host, res)
        self._after(host, now)
        if cfg.archive_robots and res.status is not None:
            extra = {"robots": "yes"}
            if res.tls_unverified:
                extra["tlsUnverified"] = res.tls_unverified
            _, location = await self._archive(res, task.url, None, extra)
            if location is not None and self.on_robots_capture is not None:
                self.on_robots_capture({"url": task.url, "warc": location})

    def _defer_unreachable(self, host: _Host, origin: str, entry: RobotsEntry) -> None:
        """robots.txt of ``origin`` could not be had (disallow all until it can): the
        host's URLs of that origin are deferred now: left in the queue, they would wait
        for the host's next turn, ten times the failed fetch (5 min after a 30 s
        timeout), only to be deferred then."""
        keep = [i for i in host.items if not (isinstance(i, _Item) and i.origin == origin)]
        for item in host.items:
            if isinstance(item, _Item) and item.origin == origin:
                self._emit(self._robots_deferral(item, entry))
        host.items.clear()
        host.items.extend(keep)

    def _robots_deferral(self, item: _Item, entry: RobotsEntry) -> Record:
        """The record of a URL whose robots.txt could not be had: deferred until the
        entry expires and robots.txt is asked again (RFC 9309: disallow all meanwhile)."""
        return self._result(
            item.record,
            item.url,
            "deferred",
            retry_at=iso_time(entry.expires_at),
            error=f"robots.txt unavailable: {entry.error}",
        )

    def _robots_hop(self, host: _Host, sp: _Split, task: _RobotsTask) -> None:
        target = self._hosts.get(sp.key)
        if target is None:
            target = self._hosts[sp.key] = _Host(sp.key, name=sp.hostname)
        target.items.appendleft(task)
        if target is host:
            return  # rescheduled with its gap after this request
        if target.state == "new":
            self._prepare(target)
        elif target.state == "failed":
            self._fail_host(target, "error", "host failed")
        elif not target.busy and not target.queued:
            self._schedule(target, self.clock())


def _deliver(futures: list[asyncio.Future[Any]], results: list[tuple[bool, Any]]) -> None:
    for future, (ok, value) in zip(futures, results, strict=True):
        if future.cancelled():
            continue
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)


def _warm_rules(entry: RobotsEntry, agent: str, origin: str) -> None:
    entry.rules().check(agent, origin + "/")


def _decode_body(res: FetchResult, cap: int) -> bytes:
    """The body with gzip/deflate Content-Encoding undone, at most ``cap`` bytes."""
    enc = (res.header("Content-Encoding") or "").strip().lower()
    if enc not in ("gzip", "x-gzip", "deflate"):
        return res.body[:cap]
    for wbits in (47, -15):
        try:
            return zlib.decompressobj(wbits).decompress(res.body, cap)
        except zlib.error:
            continue
    return b""
