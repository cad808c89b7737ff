"""crawlkit fetch."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import (
    Agent,
    AllowNet,
    Backoff,
    CaFile,
    Concurrency,
    DelayFactor,
    DnsServer,
    HostsFile,
    InputFiles,
    Insecure,
    MaxBackoff,
    MaxBody,
    MinDelay,
    PerIp,
    Quiet,
    Shards,
    SlotMapFile,
    StateDir,
    Timeout,
    WarcPrefix,
    WarcSize,
)

from crawlkit import io
from crawlkit.diag import Reporter
from crawlkit.errors import UsageError
from crawlkit.fetch.engine import DEFAULT_AGENT, FetchConfig
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.shard.routing import role_from_options
from crawlkit.stages.fetch import fetch_records
from crawlkit.times import parse_duration, parse_size
from crawlkit.warc.write import check_warc_prefix


def _duration(text: str, flag: str) -> float:
    value = parse_duration(text)
    if value < 0:
        raise UsageError(f"{flag} must not be negative")
    return value


def _url_records(files: list[str] | None, rep: Reporter) -> Iterator[dict[str, Any]]:
    """NDJSON URL records; a line that is a bare URL counts as ``{"url": LINE}``."""
    for source, lineno, text in io.read_text_lines(files, rep):
        if text is None:
            continue
        line = text.strip()
        if not line:
            continue
        if not line.startswith("{"):
            yield {"url": line}
            continue
        try:
            yield io.parse_record(line.encode("utf-8"))
        except ValueError as exc:
            rep.bad_record(source, lineno, str(exc))


@app.command("fetch")
def fetch(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    warc_dir: Annotated[
        Path | None,
        typer.Option(
            "--warc-dir",
            help="WARC directory (default STATE/warc). Finished files go into WARC_DIR/new/ "
            "(where 'crawlkit extract' reads them); open ones end in .open.",
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
    agent: Agent = DEFAULT_AGENT,
    concurrency: Concurrency = 100,
    min_delay: MinDelay = "1s",
    delay_factor: DelayFactor = 10.0,
    per_ip: PerIp = 2,
    per_ip_delay: Annotated[
        str | None,
        typer.Option(
            "--per-ip-delay",
            help="Smallest gap between request starts to one IP address [default: --min-delay/4].",
            show_default=False,
        ),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option(
            "--for",
            help="Start no request after this long; URLs not served by then come out "
            "'deferred' with retry_at (in-flight requests finish, within --timeout).",
            show_default=False,
        ),
    ] = None,
    allow_net: AllowNet = None,
    hosts_file: HostsFile = None,
    ca_file: CaFile = None,
    insecure: Insecure = False,
    dns_server: DnsServer = None,
    timeout: Timeout = "30s",
    max_body: MaxBody = "10MB",
    max_decoded: Annotated[
        str,
        typer.Option("--max-decoded", help="Decoded (gunzipped) bytes per response (gzip bombs)."),
    ] = "10MB",
    backoff: Backoff = "60s",
    max_backoff: MaxBackoff = "1h",
    warc_version: Annotated[
        str, typer.Option("--warc-version", help="WARC format version: 1.1 or 1.0.")
    ] = "1.1",
    warc_size: WarcSize = "1GB",
    warc_prefix: WarcPrefix = "crawlkit",
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
    location, warc {file, offset, length}, error, retry_at (deferred), truncated,
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
    EAI_AGAIN), dns-servfail, dns-refused or dns-error.
    Redirects are not followed: each target comes out as a URL record (--redirects), at
    most 5 hops. A URL given twice is asked once; the repeat comes out refused
    ("refused": "duplicate").

    Buffers the whole batch (about 1 KB per URL); responses are streamed into the WARC.
    State: STATE/fetch/hosts.sqlite keeps host clocks, backoffs, robots.txt and DNS
    caches and payload digests (for revisit records). A new host is on disk before it is
    first contacted; after a crash (kill -9) every known host waits its full gap from
    the restart, so a restart never bursts. STATE is locked while running. The first
    SIGINT/SIGTERM stops new requests and reports the rest as deferred.

    Sharded (--shard K with --shards N or --slot-map FILE, or a STATE that a sharded
    crawl made its shard's): a URL whose slot K does not own, or stamped with an older
    shard_epoch than the map's (a batch from before a rebalance), is not fetched: it
    comes out "outcome": "refused", "refused": "shard" (invariant 6), and goes to the
    outbox of the shard that owns it now, STATE/outbox/shard-J/.

    Example:

        crawlkit frontier next --state S --max 20000 > batch.ndjson.zst
        crawlkit fetch --state S batch.ndjson.zst --log fetched.ndjson.zst --redirects r.ndjson
    """
    rep = reporter()
    check_warc_prefix(warc_prefix)
    io.check_output_dir(warc_dir, "--warc-dir")
    if warc_version not in ("1.0", "1.1"):
        raise UsageError("--warc-version must be 1.1 or 1.0")
    config = FetchConfig(
        agent=agent,
        concurrency=concurrency,
        min_delay=_duration(min_delay, "--min-delay"),
        delay_factor=delay_factor,
        per_ip=per_ip,
        per_ip_delay=None if per_ip_delay is None else _duration(per_ip_delay, "--per-ip-delay"),
        duration=None if duration is None else _duration(duration, "--for"),
        timeout=_duration(timeout, "--timeout"),
        max_body=parse_size(max_body),
        max_decoded=parse_size(max_decoded),
        backoff=_duration(backoff, "--backoff"),
        max_backoff=_duration(max_backoff, "--max-backoff"),
    )
    role = role_from_options(state, shard, shards, slot_map)
    records = _url_records(files, rep)
    with contextlib.ExitStack() as stack:
        sink = stack.enter_context(io.open_output(log))
        redirect_out = stack.enter_context(io.open_output(redirects)) if redirects else None
        if redirects is not None and io.is_stdio(redirects) and io.is_stdio(log):
            raise UsageError("--redirects and the fetch log cannot both be stdout")
        flush = sys.stdout.buffer.flush if io.is_stdio(log) else None
        counts = fetch_records(
            records,
            sink.write_record,
            state_dir=state,
            config=config,
            warc_dir=warc_dir,
            warc_version=warc_version,
            warc_size=parse_size(warc_size),
            warc_prefix=warc_prefix,
            allow_net=allow_net or [],
            hosts_file=hosts_file,
            on_redirect=redirect_out.write_record if redirect_out is not None else None,
            reporter=rep,
            flush=flush,
            role=role,
            net=NetOptions(ca_file=ca_file, insecure=insecure, dns_server=dns_server),
        )
    if not quiet:
        summary = ", ".join(f"{v} {k}" for k, v in counts.items() if v and k != "redirects")
        rep.info(
            f"{sum(v for k, v in counts.items() if k != 'redirects')} records: {summary or 'none'}"
        )
        if counts.get("redirects") and redirects is None:
            rep.info(f"{counts['redirects']} redirect targets not written (use --redirects FILE)")
        if rep.bad_records:
            rep.info(f"{rep.bad_records} bad input records skipped")
