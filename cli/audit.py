"""crawlkit audit."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import orjson
import typer
from crawlkit_cli.app import app, reporter

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.stages.audit import AuditConfig, format_report, run_audit
from crawlkit.times import parse_duration


@app.command("audit")
def audit(
    server_log: Annotated[
        list[str] | None,
        typer.Option(
            "--server-log",
            help="A server's request log (NDJSON as written by 'crawlkit testweb'; repeatable).",
            show_default=False,
        ),
    ] = None,
    fetch_log: Annotated[
        list[str] | None,
        typer.Option(
            "--fetch-log",
            help="crawlkit fetch records, when no server log exists (repeatable).",
            show_default=False,
        ),
    ] = None,
    manifest: Annotated[
        Path | None,
        typer.Option(
            "--manifest",
            help="Test web manifest with the robots rules (default: "
            "manifest.json beside the server log).",
            show_default=False,
        ),
    ] = None,
    min_gap: Annotated[
        str,
        typer.Option(
            "--min-gap",
            help="Smallest allowed gap between the end of one "
            "response and the next request to the host.",
        ),
    ] = "1s",
    per_host: Annotated[
        int, typer.Option("--per-host", help="Connections allowed at once per host.")
    ] = 1,
    per_ip: Annotated[
        int, typer.Option("--per-ip", help="Connections allowed at once per address.")
    ] = 2,
    per_ip_gap: Annotated[
        str | None,
        typer.Option(
            "--per-ip-gap",
            help="Smallest allowed time between the starts of two requests to one "
            "address (crawl's --per-ip-delay; not checked unless given).",
            show_default=False,
        ),
    ] = None,
    min_backoff: Annotated[
        str,
        typer.Option(
            "--min-backoff",
            help="First backoff after a 429/503 (doubles per "
            "consecutive 429/503, up to 1h; Retry-After is always honoured).",
        ),
    ] = "60s",
    max_trap_depth: Annotated[
        int | None,
        typer.Option(
            "--max-trap-depth",
            help="Fail when a trap host was followed deeper.",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="Match robots.txt for this agent instead of each request's User-Agent.",
            show_default=False,
        ),
    ] = None,
    tolerance: Annotated[
        str, typer.Option("--tolerance", help="Clock jitter allowed in every gap comparison.")
    ] = "10ms",
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
) -> None:
    """Audit a crawl's politeness from a server's request log (or crawlkit's fetch log).

    Reads the request log of 'crawlkit testweb' (or any NDJSON log with host, addr,
    path, t_start, t_end, status, conn, user_agent) and, when given or found beside it,
    the test web's manifest.json for the robots rules. Per host it reports the most
    connections at once, the smallest gap between the end of a response and the next
    request, requests inside --min-gap, inside the robots Crawl-delay, inside a backoff
    after 429/503 or before Retry-After, whether robots.txt came first, requests while
    robots.txt answered 5xx, robots-disallowed paths, trap depth, duplicate fetches and
    bytes taken from hostile hosts; per address, connections at once against --per-ip
    and, with --per-ip-gap, starts closer than that.
    Gaps shorter than 10 x the previous response time (docs/design.md's adaptive delay, only
    approximately visible to a server), duplicates and hostile bytes are warnings;
    everything else is a violation. Exit status 1 when any violation exists or a log is
    truncated or corrupt (the records before the damage are audited).

    Buffers the whole log (memory grows with the number of requests). Touches no state.

    Example:

        crawlkit audit --server-log web/requests.ndjson --json | jq .violations
    """
    rep = reporter()
    if not server_log and not fetch_log:
        raise UsageError("give --server-log FILE or --fetch-log FILE")
    config = AuditConfig(
        min_gap=parse_duration(min_gap),
        per_host=per_host,
        per_ip=per_ip,
        per_ip_gap=parse_duration(per_ip_gap) if per_ip_gap is not None else None,
        min_backoff=parse_duration(min_backoff),
        max_trap_depth=max_trap_depth,
        agent=agent,
        tolerance=parse_duration(tolerance),
    )
    report = run_audit(
        server_logs=server_log, fetch_logs=fetch_log, manifest=manifest, config=config, reporter=rep
    )
    if as_json:
        streams.write_verdict(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        streams.write_verdict(format_report(report).encode("utf-8"))
    if not report["ok"] or rep.input_damaged:
        raise typer.Exit(1)
