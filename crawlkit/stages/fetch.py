"""``crawlkit fetch``: a batch of URL records in, WARC files and fetch records out.

:func:`fetch_records` builds the fetch machinery from explicit arguments (state
directory, WARC directory, network policy, hosts file, client) and runs one
:class:`~crawlkit.fetch.engine.Fetcher` over the records on an event loop (uvloop
when installed), calling ``sink`` once per input record and ``on_redirect`` once per
redirect target. The state directory is locked for the whole run (invariant 6);
its ``fetch/`` subdirectory keeps host clocks, backoffs, robots and DNS caches and the
payload digests seen (see :mod:`crawlkit.fetch.hoststate`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from collections import Counter, defaultdict
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast

from crawlkit import early_signals, streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import ProxyError
from crawlkit.fetch import eventloop
from crawlkit.fetch.client import AiohttpClient, HttpClient
from crawlkit.fetch.config import robots_field
from crawlkit.fetch.dns import DnsClient, parse_server
from crawlkit.fetch.engine import FetchConfig, Fetcher
from crawlkit.fetch.hoststate import HostState
from crawlkit.fetch.iptable import IpTable
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver, read_hosts_file
from crawlkit.fetch.tls import verifying_context
from crawlkit.records import FetchRecord, Record, URLRecord
from crawlkit.robots import RobotsPolicy
from crawlkit.shard.routing import ShardRole, record_site, stale_refusal, write_outbox
from crawlkit.state import open_state
from crawlkit.url import Canonicalizer
from crawlkit.warc.places import warc_new_dir
from crawlkit.warc.write import DEFAULT_WARC, WarcOptions, WarcWriter

__all__ = ["fetch_records"]

Refill = Callable[[Fetcher], Coroutine[Any, Any, list[Record] | None]]


def fetch_records(
    records: Iterable[URLRecord],
    sink: Callable[[FetchRecord], None],
    *,
    state_dir: str | os.PathLike[str],
    config: FetchConfig | None = None,
    warc_dir: str | os.PathLike[str] | None = None,
    warc: WarcOptions = DEFAULT_WARC,
    warc_info: dict[str, str] | None = None,
    warc_index: bool = False,
    allow_net: Sequence[str] = (),
    hosts_file: str | os.PathLike[str] | None = None,
    on_redirect: Callable[[URLRecord], None] | None = None,
    client: HttpClient | None = None,
    reporter: Reporter | None = None,
    flush: Callable[[], None] | None = None,
    refill: Refill | None = None,
    role: ShardRole | None = None,
    on_interrupt: Callable[[str], None] | None = None,
    net: NetOptions | None = None,
    on_robots_capture: Callable[[FetchRecord], None] | None = None,
    host_state: HostState | None = None,
    on_request: Callable[[], None] | None = None,
    stop_with_reader: int | None = None,
) -> dict[str, int]:
    """Fetch every record; returns the count of each outcome (plus ``redirects``).

    ``stop_with_reader`` is the file descriptor ``sink`` writes to (``crawlkit fetch``:
    stdout): once the reader of that pipe goes away the run stops as on SIGTERM, not
    only at the next record (:func:`crawlkit.streams.on_reader_gone`).

    ``host_state`` is the opened host state of ``state_dir`` (``crawlkit crawl`` opens
    it once for all its fetch runs, holding the state lock itself): it is committed
    and marked cleanly ended when the run ends, but not closed. Without it, the state
    directory is locked and ``STATE/fetch`` opened for this run alone.

    ``net`` says whom to trust over TLS and which DNS server to ask (see
    :class:`~crawlkit.fetch.netoptions.NetOptions`); ``client`` replaces the HTTP
    client it would build from it.

    With a shard ``role`` (invariant 6), a record of a slot the shard does not own, or
    stamped with an older ``shard_epoch`` than the slot map's, is not fetched: it
    comes out ``refused`` (``"refused": "shard"``) like any other answer.

    ``refill`` keeps the run fed from a frontier (``crawlkit crawl``): it is called
    with the running :class:`Fetcher` and returns more records, ``[]`` (nothing now)
    or None (no more); see :meth:`Fetcher.run`.

    The first SIGINT or SIGTERM stops new requests: requests in flight finish and
    every URL not fetched yet comes out ``deferred``, so the output stays complete;
    ``on_interrupt`` is told the signal's name (``crawlkit crawl`` then stops too).

    ``warc`` says how big files get, their name prefix and WARC version.
    ``warc_info`` adds fields to each file's warcinfo record (``operator``,
    ``isPartOf``, ``description``). ``warc_dir`` defaults to ``STATE/warc``; files are
    written into ``warc_dir/new`` as ``*.warc.gz.open`` and renamed when complete;
    with ``warc_index`` each also gets its sorted CDXJ index beside it (``NAME.cdxj``,
    see :class:`~crawlkit.warc.write.WarcWriter`).
    ``flush`` is called after each record (so a pipe, or a log read after a crash, sees
    every finished fetch).
    """
    config = config or FetchConfig()
    net = net or NetOptions()
    if net.ca_file is not None:
        verifying_context(net.ca_file)  # a bad --ca-file is a usage error before any work
    if config.ip_table:
        IpTable.open(config.ip_table)  # so is a bad --ip-table (the scheduler reuses it)
    dns = DnsClient(parse_server(net.dns_server)) if net.dns_server else None
    reporter = reporter or NullReporter()
    policy = NetPolicy(allow_net)
    hosts = read_hosts_file(hosts_file) if hosts_file else {}
    with contextlib.ExitStack() as stack:
        if host_state is None:
            state = stack.enter_context(open_state(state_dir))
            host_state = HostState(state.sub("fetch"))
            stack.callback(host_state.close)
        else:
            stack.callback(host_state.end_run)
        state_path = Path(state_dir)
        target = warc_new_dir(warc_dir if warc_dir is not None else state_path / "warc")
        # made now, not at the first record: after a run that wrote no WARC file,
        # ``crawlkit extract WARC_DIR/new`` finds it empty (no input), not missing
        target.mkdir(parents=True, exist_ok=True)
        writer = WarcWriter.from_options(
            target,
            warc,
            index=warc_index,
            info={
                "http-header-user-agent": config.agent,
                "robots": robots_field(config.ignore_robots_for),
                "hostname": socket.gethostname(),
                **(warc_info or {}),
            },
        )
        stale: Counter[str] = Counter()
        if role is not None:
            records = _owned_by(role, records, sink, stale, state_path)
        counts = _run(
            records,
            sink,
            config,
            policy,
            Resolver(hosts=hosts, dns=dns),
            host_state,
            writer,
            on_redirect,
            client,
            flush,
            refill,
            on_interrupt,
            net,
            on_robots_capture,
            on_request,
            stop_with_reader,
        )
    if stale:
        counts["refused"] = counts.get("refused", 0) + stale["refused"]
    return counts


def _owned_by(
    role: ShardRole,
    records: Iterable[URLRecord],
    sink: Callable[[FetchRecord], None],
    stale: Counter[str],
    state: Path,
) -> Iterator[URLRecord]:
    """The records ``role`` may fetch; the others go to ``sink`` as refused records.

    A refused URL is not lost: it is also written to the outbox of the shard that
    owns its slot now (``crawlkit shard --deliver`` takes it there), once the input
    has been read. So a reader of ``sink`` gone (``fetch --shard 0 B | head -1``:
    BrokenPipeError) stops the refusals, not the routing: the outbox is written, then
    the error raised (before, it skipped the outbox, and the URLs of other shards in
    the batch were lost to the fleet).
    """
    canon = Canonicalizer()
    moved: dict[int, list[Record]] = defaultdict(list)
    gone: BrokenPipeError | None = None
    for rec in records:
        site = record_site(rec, canon)
        if site is None:
            yield rec  # the fetcher answers it with its own error record
            continue
        why = role.check({**rec, "site": site})
        if why is None:
            yield rec
            continue
        owner = role.owner(site)
        moved[owner].append({k: v for k, v in rec.items() if k != "shard_epoch"})
        stale["refused"] += 1
        if gone is None:
            try:
                sink(stale_refusal(rec, f"{why}; sent to shard {owner}'s outbox"))
            except BrokenPipeError as exc:
                gone = exc
    write_outbox(state, moved, "stale")
    if gone is not None:
        raise gone


def _run(
    records: Iterable[URLRecord],
    sink: Callable[[FetchRecord], None],
    config: FetchConfig,
    policy: NetPolicy,
    resolver: Resolver,
    host_state: HostState,
    writer: WarcWriter,
    on_redirect: Callable[[URLRecord], None] | None,
    client: HttpClient | None,
    flush: Callable[[], None] | None,
    refill: Refill | None = None,
    on_interrupt: Callable[[str], None] | None = None,
    net: NetOptions | None = None,
    on_robots_capture: Callable[[FetchRecord], None] | None = None,
    on_request: Callable[[], None] | None = None,
    stop_with_reader: int | None = None,
) -> dict[str, int]:
    async def main() -> dict[str, int]:
        opts = net or NetOptions()
        http = client or AiohttpClient(
            ca_file=opts.ca_file,
            insecure=opts.insecure,
            proxy=config.proxy,
            trust_env=config.trust_env,
        )
        fetcher = Fetcher(
            config,
            client=http,
            resolver=resolver,
            netpolicy=policy,
            state=host_state,
            warc=writer,
            robots_policy=RobotsPolicy(),
            # the fetcher's callbacks take its records as plain dicts
            on_redirect=cast("Callable[[Record], None] | None", on_redirect),
            on_robots_capture=cast("Callable[[Record], None] | None", on_robots_capture),
            on_request=on_request,
        )
        loop = asyncio.get_running_loop()
        stop_on_signal.attach(loop, fetcher.stop)
        reader = (
            streams.on_reader_gone(
                stop_with_reader, lambda: loop.call_soon_threadsafe(fetcher.stop)
            )
            if stop_with_reader is not None
            else contextlib.nullcontext()
        )
        try:
            more = None if refill is None else (lambda: refill(fetcher))
            run = fetcher.run(cast("Iterable[Record]", records), refill=more)
            with reader:
                async with contextlib.aclosing(run):
                    await _deliver(run, sink, flush, fetcher)
        except BrokenPipeError as gone:
            # The reader of the records went away (| head): a quiet end, exit 0, but
            # not of a run the proxy failed: that failure (exit 1, the proxy named)
            # stands, as a closed pipe leaves audit's and crawl's failures standing.
            _raise_proxy_failure(fetcher, gone)
            raise
        finally:
            if client is None:
                await http.close()
        # every record is out (the rest deferred, "stopped"): the run failed as a whole
        _raise_proxy_failure(fetcher)
        return {**fetcher.counts, "redirects": fetcher.redirects_out}

    stop_on_signal = _FirstSignal(on_interrupt)
    with stop_on_signal:
        return eventloop.run(main())


def _raise_proxy_failure(fetcher: Fetcher, cause: BaseException | None = None) -> None:
    """Raise ProxyError when a proxy failure stopped ``fetcher``'s run; else nothing."""
    if fetcher.proxy_failure is not None:
        why = f"{fetcher.proxy_failure}; stopped, the URLs not fetched are deferred"
        raise ProxyError(why) from cause


async def _deliver(
    run: AsyncGenerator[Record, None],
    sink: Callable[[FetchRecord], None],
    flush: Callable[[], None] | None,
    fetcher: Fetcher,
) -> None:
    """Hand each fetch record of ``run`` to ``sink``; ``run`` is closed by the caller.

    A reader of the records gone (``crawlkit fetch B | head -1``: ``sink`` raises
    BrokenPipeError) ends the run as a stop does, then raises that error: no new
    request starts, the requests in flight finish (within the stop's grace) and are
    archived, and the run's end closes and renames the WARC file and commits the
    host state. Left to the event loop's shutdown instead, the run's end never ran:
    the WARC file stayed ``*.warc.gz.open`` and the pages in it were in no finished
    file. The fetch records made meanwhile are dropped: nobody can read them, and
    what they describe is in the WARC file.
    """
    async for record in run:
        try:
            sink(cast(FetchRecord, record))
            if flush is not None:
                flush()
        except BrokenPipeError:
            fetcher.stop()
            async for _ in run:
                pass
            raise


class _FirstSignal:
    """The fetch run's SIGINT and SIGTERM, for as long as the run lasts: the first
    stops new requests (the fetcher's ``stop``, on its loop; every URL not fetched yet
    comes out ``deferred``) and tells ``on_interrupt`` at once; a second acts as it
    would have before any handler (stops at once).

    A plain handler (``signal.signal``), not the loop's ``add_signal_handler``: that
    only queued a callback, which a loop ending at that moment never ran, and the loop
    left its own handler installed once closed, which took the signals that came
    before the crawl put its handlers back. A worker of ``crawl --workers 2`` lost the
    parent's stop there and waited for work for good (``bench/crash_hunt.py``). Here
    the handlers in place before the run come back when it ends (unless a signal came:
    then the defaults stay, so the next one stops at once).
    """

    def __init__(self, on_interrupt: Callable[[str], None] | None):
        self.on_interrupt = on_interrupt
        self.came = False
        self.before: dict[signal.Signals, Any] = {}
        self.stop: Callable[[], None] | None = None

    def __enter__(self) -> _FirstSignal:
        if threading.current_thread() is threading.main_thread():
            self.before = {sig: signal.signal(sig, self._handle) for sig in early_signals.KINDS}
        return self

    def __exit__(self, *exc: object) -> None:
        if not self.came:
            for sig, handler in self.before.items():
                signal.signal(sig, handler)

    def attach(self, loop: asyncio.AbstractEventLoop, stop: Callable[[], None]) -> None:
        """The fetcher to stop, on ``loop``; stopped now if a signal came already."""

        def stop_on_loop() -> None:
            loop.call_soon_threadsafe(stop)

        self.stop = stop_on_loop
        if self.came:
            stop()

    def _handle(self, signum: int, _frame: object) -> None:
        for sig, handler in early_signals.defaults().items():
            if handler == self._handle:  # nothing held them: Python's own defaults
                handler = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, handler)
        self.came = True
        if self.stop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                self.stop()
        if self.on_interrupt is not None:
            self.on_interrupt(signal.Signals(signum).name)
