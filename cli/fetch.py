"""crawlkit fetch."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, cast

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.config_option import ConfigOption
from crawlkit_cli.fetch_options import (
    AGENT_DEFAULT,
    BACKOFF_DEFAULT,
    CONCURRENCY_DEFAULT,
    DELAY_FACTOR_DEFAULT,
    MAX_BACKOFF_DEFAULT,
    MAX_BODY_DEFAULT,
    MAX_DECODED_DEFAULT,
    MIN_DELAY_DEFAULT,
    PER_IP_DEFAULT,
    TIMEOUT_DEFAULT,
    WARC_PREFIX_DEFAULT,
    WARC_SIZE_DEFAULT,
    WARC_VERSION_DEFAULT,
    MinDelay,
    fetch_config,
    save_site_cookies,
    warc_options,
)
from crawlkit_cli.options import (
    Agent,
    AllowNet,
    Backoff,
    CaFile,
    Collection,
    Concurrency,
    Cookies,
    DelayFactor,
    Description,
    DnsServer,
    Header,
    HostsFile,
    IgnoreRobotsFor,
    InputFiles,
    Insecure,
    IpTableFile,
    MaxBackoff,
    MaxBody,
    MaxDecoded,
    Netrc,
    Operator,
    PerIp,
    PerIpDelay,
    Proxy,
    Quiet,
    Shards,
    SlotMapFile,
    StateDir,
    Timeout,
    TrustEnv,
    WarcPrefix,
    WarcSize,
    WarcVersion,
    warc_info,
)

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import UsageError
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.frontier.scope import adopt_state_rules
from crawlkit.records import URLRecord
from crawlkit.shard.routing import role_from_options
from crawlkit.stages.fetch import fetch_records
from crawlkit.state import refuse_workers_state


def _url_records(files: list[str] | None, rep: Reporter) -> Iterator[URLRecord]:
    """NDJSON URL records; a line that is a bare URL counts as ``{"url": LINE}``. (Taken
    as URL records: the fetcher answers one without a usable ``url`` with a refusal.)"""
    for source, lineno, text in streams.read_text_lines(files, rep):
        if text is None:
            continue
        line = text.strip()
        if not line:
            continue
        if not line.startswith("{"):
            yield {"url": line}
            continue
        try:
            yield cast(URLRecord, streams.parse_record(line.encode("utf-8")))
        except ValueError as exc:
            rep.bad_record(source, lineno, str(exc))


@app.command("fetch")
def fetch(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    config: ConfigOption = None,
    warc_dir: Annotated[
        Path | None,
        typer.Option(
            "--warc-dir",
            help="WARC directory (default STATE/warc). Finished files go into WARC_DIR/new/ "
            "(made at the start; 'crawlkit extract WARC_DIR/new' reads them); open ones "
            "end in .open.",
            show_default=False,
        ),
    ] = None,
    log: Annotated[
        str,
        typer.Option(
            "--log",
            help="Write fetch records here instead of stdout (.zst or .gz compresses; "
            "temporary name, renamed when complete).",
        ),
    ] = "-",
    redirects: Annotated[
        str | None,
        typer.Option(
            "--redirects",
            help='Write redirect targets here as URL records (reason "redirect", hops, via) '
            "for 'crawlkit frontier add'. Without it they are only in the fetch records' "
            "location field.",
            show_default=False,
        ),
    ] = None,
    agent: Agent = AGENT_DEFAULT,
    concurrency: Concurrency = CONCURRENCY_DEFAULT,
    min_delay: MinDelay = MIN_DELAY_DEFAULT,
    delay_factor: DelayFactor = DELAY_FACTOR_DEFAULT,
    per_ip: PerIp = PER_IP_DEFAULT,
    per_ip_delay: PerIpDelay = None,
    ip_table: IpTableFile = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--for",
            help="Start no request after this long; URLs not served by then come out "
            "'deferred' with retry_at (in-flight requests get 3 s more; one cut then "
            "comes out deferred, a robots.txt with no verdict).",
            show_default=False,
        ),
    ] = None,
    allow_net: AllowNet = None,
    hosts_file: HostsFile = None,
    ca_file: CaFile = None,
    insecure: Insecure = False,
    dns_server: DnsServer = None,
    timeout: Timeout = TIMEOUT_DEFAULT,
    max_body: MaxBody = MAX_BODY_DEFAULT,
    max_decoded: MaxDecoded = MAX_DECODED_DEFAULT,
    backoff: Backoff = BACKOFF_DEFAULT,
    max_backoff: MaxBackoff = MAX_BACKOFF_DEFAULT,
    ignore_robots_for: IgnoreRobotsFor = None,
    header: Header = None,
    cookies: Cookies = None,
    netrc: Netrc = None,
    proxy: Proxy = None,
    trust_env: TrustEnv = False,
    warc_version: WarcVersion = WARC_VERSION_DEFAULT,
    warc_size: WarcSize = WARC_SIZE_DEFAULT,
    warc_prefix: WarcPrefix = WARC_PREFIX_DEFAULT,
    operator: Operator = None,
    collection: Collection = None,
    description: Description = None,
    shard: Annotated[
        int | None,
        typer.Option(
            "--shard",
            help="Fetch as this shard (0-based) of a fleet: URLs of slots it does not own, "
            "or stamped with an older shard_epoch than the slot map's, come out refused.",
        ),
    ] = None,
    shards: Shards = None,
    slot_map: SlotMapFile = None,
    quiet: Quiet = False,
) -> None:
    """Fetch URL records politely into WARC files; one fetch record per input URL.

    Reads URL records (NDJSON: url, plus host, site, fp, depth, priority, reason, via,
    etag, last_modified ... which are passed through; a line that is a bare URL is taken
    as {"url": ...}). Writes WARC/1.1 files (request,
    response or revisit, metadata records; gzip per record) and, to stdout or --log,
    exactly one fetch record per input URL, in completion order: url, status,
    outcome (fetched, not-modified, redirect, robots-denied, deferred, refused, error),
    fetched_at, elapsed_ms, ip, bytes, content_type, etag, last_modified, digest,
    location, warc {file, offset, length, and refers_to: where a revisit's payload was
    first captured, at another URL}, error, retry_at (deferred), truncated,
    error_code (tls-* and dns-* failures), tls_unverified (--insecure).

    Politeness: one request at a time per host, the gap above between them, robots.txt
    first (cached 24 h), 429/503 back off (60 s doubling to 1 h, at least Retry-After,
    which is capped at 24 h) and defer the host's remaining URLs, --per-ip requests at
    once per address. Safety: only http and https; loopback, private, link-local,
    multicast, reserved and IPv4-mapped addresses are refused unless --allow-net covers
    them, and the checked address is the one connected to. HTTPS certificates are
    verified (system store plus --ca-file) for the URL's name, on that address; a TLS
    failure is an error record with error_code tls-expired, tls-hostname, tls-untrusted,
    tls-handshake-timeout or tls-protocol (also on URLs deferred because robots.txt
    failed that way), and the host's clock moves on as after any error. A name that does
    not resolve (system resolver, or --dns-server) is an error record with error_code
    dns-nxdomain, dns-no-address, dns-timeout, dns-temporary (the system resolver's
    EAI_AGAIN), dns-servfail, dns-refused or dns-error. A --proxy that fails a request
    (error_code proxy-unreachable, or proxy-refused: it answered 407, to a CONNECT or
    an http request; an https page's 407 is the site's) stops the run,
    the URLs not fetched deferred with "stopped": true, their sites not blamed, and
    exit status 1; a CONNECT it answers with another status (a 502: it could not reach
    the site) is that site's error, error_code proxy-connect.
    Redirects are not followed: each target comes out as a URL record (--redirects), at
    most 5 hops; a target that is the URL itself once canonicalized (a session id
    the rules strip) is none: the redirect's error says so. Request settings
    (--header, --cookies, --netrc, --proxy, --trust-env, --ignore-robots-for, and a
    --config file's [hosts."NAME"] tables) mean what they mean for 'crawlkit crawl';
    they go with page requests only
    (robots.txt is asked for without them), but --proxy and --trust-env's proxies
    carry robots.txt requests too. With --cookies, the cookies sites set
    are kept in STATE/crawl/cookies.txt and sent again by the next run, of fetch or
    crawl, on STATE. A URL given twice is asked once; the repeat comes out refused
    ("refused": "duplicate").

    Buffers the whole batch (about 1 KB per URL); responses are streamed into the WARC.
    State: STATE/fetch/hosts.sqlite keeps host clocks, backoffs, robots.txt and DNS
    caches and payload digests (for revisit records). A new host is on disk before it is
    first contacted; after a crash (kill -9) every known host waits its full gap from
    the restart, so a restart never bursts. STATE is locked while running. The first
    SIGINT/SIGTERM stops new requests and reports the rest as deferred. So does the
    reader of the fetch records going away (| head), at once, whether a record was due
    or not; the WARC file is finished and renamed, STATE committed, and the exit
    status 0 (1 when a --proxy failure stopped the run, said on stderr).

    Sharded (--shard K with --shards N or --slot-map FILE, or a STATE that a sharded
    crawl made its shard's): a URL whose slot K does not own, or stamped with an older
    shard_epoch than the map's (a batch from before a rebalance), is not fetched: it
    comes out "outcome": "refused", "refused": "shard" (invariant 6), and goes to the
    outbox of the shard that owns it now, STATE/outbox/shard-J/.

    Example:

        crawlkit frontier next --state S --max 20000 -o batch.ndjson.zst
        crawlkit fetch --state S batch.ndjson.zst --log fetched.ndjson.zst --redirects r.ndjson
    """
    rep = reporter()
    # (its hosts' clocks are its workers': a fetch on it would not wait for them)
    refuse_workers_state(
        state,
        "host clocks, robots.txt caches and cookies",
        "fetch with the state of the worker that owns the hosts, or crawl it",
    )
    adopt_state_rules(state)  # redirect targets named as the crawl names URLs
    warc = warc_options(warc_size, warc_prefix, warc_version)
    streams.check_output_dir(warc_dir, "--warc-dir")
    fetch = fetch_config(
        state=state,
        agent=agent,
        concurrency=concurrency,
        min_delay=min_delay,
        delay_factor=delay_factor,
        per_ip=per_ip,
        per_ip_delay=per_ip_delay,
        ip_table=ip_table,
        timeout=timeout,
        max_body=max_body,
        max_decoded=max_decoded,
        backoff=backoff,
        max_backoff=max_backoff,
        ignore_robots_for=ignore_robots_for,
        header=header,
        cookies=cookies,
        netrc=netrc,
        proxy=proxy,
        trust_env=trust_env,
        run_for=duration,
    )
    role = role_from_options(state, shard, shards, slot_map)
    records = _url_records(files, rep)
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(streams.open_output(log))
        redirect_out = stack.enter_context(streams.open_output(redirects)) if redirects else None
        if redirects is not None and streams.is_stdio(redirects) and streams.is_stdio(log):
            raise UsageError("--redirects and the fetch log cannot both be stdout")
        to_stdout = streams.is_stdio(log)
        flush = sys.stdout.buffer.flush if to_stdout else None
        counts = fetch_records(
            records,
            sink.write_record,
            state_dir=state,
            config=fetch,
            warc_dir=warc_dir,
            warc=warc,
            warc_info=warc_info(operator, collection, description),
            allow_net=allow_net or [],
            hosts_file=hosts_file,
            on_redirect=redirect_out.write_record if redirect_out is not None else None,
            reporter=rep,
            flush=flush,
            role=role,
            net=NetOptions(ca_file=ca_file, insecure=insecure, dns_server=dns_server),
            stop_with_reader=sys.stdout.fileno() if to_stdout else None,
        )
    save_site_cookies(fetch, state)
    if not quiet:
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v and k != "redirects")
        rep.info(
            f"{sum(v for k, v in counts.items() if k != 'redirects')} records: {summary or 'none'}"
        )
        if counts.get("redirects") and redirects is None:
            rep.info(f"{counts['redirects']} redirect targets not written (use --redirects FILE)")
        if rep.bad_records:
            rep.info(f"{rep.bad_records} bad input records skipped")
    if rep.input_damaged:
        raise typer.Exit(1)
