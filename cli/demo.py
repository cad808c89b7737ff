"""crawlkit demo and crawlkit report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.crawl import summary_text
from crawlkit_cli.options import ExistingStateDir
from crawlkit_cli.progress import progress_printer

from crawlkit import io
from crawlkit.demo import run_demo
from crawlkit.report import render_html
from crawlkit.stages.audit import format_report
from crawlkit.stages.report import crawl_report
from crawlkit.state import require_existing_state
from crawlkit.times import parse_duration


@app.command("demo")
def demo(
    directory: Annotated[
        Path, typer.Option("--dir", help="Where the web, the crawl state and the report go.")
    ] = Path("demo-out"),
    duration: Annotated[str, typer.Option("--for", help="How long the crawl may run.")] = "45s",
    hosts: Annotated[int, typer.Option("--hosts", help="Ordinary hosts in the test web.")] = 12,
    pages: Annotated[int, typer.Option("--pages", help="Mean pages per ordinary host.")] = 30,
    min_delay: Annotated[
        str, typer.Option("--min-delay", help="Gap between requests to one host (demo only).")
    ] = "0.1s",
    tls: Annotated[
        bool,
        typer.Option(
            "--tls",
            help="Serve and crawl the web over HTTPS (a CA made for the run, trusted with "
            "--ca-file), with the TLS special hosts (expired, self-signed, ...).",
        ),
    ] = False,
) -> None:
    """Crawl a synthetic web on loopback, audit the crawl, write a report (about a minute).

    Starts 'crawlkit testweb' in this process (ordinary hosts plus every special host:
    robots.txt variants, 429/503 with Retry-After, traps, duplicates, gzip bomb, slow
    and hostile hosts, a private-network host behind a redirect), crawls it with
    'crawlkit crawl' and the polite defaults except for a shorter gap between
    requests to one host (--min-delay, 0.1 s instead of 1 s, so the demo ends in
    about a minute), then audits the server's own request log with 'crawlkit audit'
    and writes DIR/report.html. Exit status 1 if the audit finds a violation.

    State: DIR/web (the web's files and request log), DIR/state (the crawl's state
    directory, resumable with 'crawlkit crawl --state DIR/state'), DIR/report.html.

    Example:

        crawlkit demo --dir /tmp/demo && xdg-open /tmp/demo/report.html
    """
    rep = reporter()
    delay = parse_duration(min_delay)
    rep.info(
        f"demo: test web of {hosts} hosts (+ special hosts) on loopback; gap between "
        f"requests to one host shortened to {delay:g} s for the demo (default 1 s)"
    )
    result = run_demo(directory, hosts=hosts, pages=pages, duration=parse_duration(duration),
                      min_delay=delay, reporter=rep, progress=progress_printer(),
                      tls=tls)  # fmt: skip
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    print(summary_text(result.summary.to_json()))
    print(f"test web: {result.web.get('reachable_pages')} reachable pages on "
          f"{result.web.get('hosts')} hosts; {result.reachable_fetched} of them fetched or "
          "refused with a reason")  # fmt: skip
    print(format_report(result.audit).rstrip().splitlines()[-1])
    print(f"report: {result.html}")
    if not result.audit.get("ok", False):
        raise typer.Exit(1)


@app.command("report")
def report(
    state: ExistingStateDir = ...,  # type: ignore[assignment]
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML page here.")
    ] = None,
) -> None:
    """Summarize a crawl: JSON on stdout, optionally an HTML page with plots.

    Reads what 'crawlkit crawl' leaves in STATE (fetch logs, dedup records, refusals
    of every cycle, the seen set's and frontier's counters) and prints one JSON
    object: fetches, outcomes, status mix, hosts, fetch rate, smallest gap between
    fetches of one host, dedup savings, refusals by reason, the Bloom filter's measured
    false-positive rate, and the data of each plot. --html writes a single file (inline
    CSS and SVG, no scripts) with the plots: fetch rate over time, status mix, gap
    distribution per host, top hosts, trap and budget refusals, dedup.

    For archivists the "collection" section (and its HTML tables) says what the
    collection holds and how it was made: the seeds and the effective settings of the
    last run, responses by content type, status codes and errors and refusals with
    example URLs, page requisites fetched and missing (and why), the WARC files with
    their sizes and SHA-256 (cached in the WARC directory's indexes/), the CDXJ index,
    and the politeness audit ('crawlkit audit') of the crawl's own fetch log.

    Streams the logs; memory grows with the number of hosts. Reads STATE without
    locking it, so it can run beside a crawl in progress.

    Example:

        crawlkit report --state S --html report.html | jq .outcomes
    """
    rep = reporter()
    require_existing_state(state)
    io.check_output(html, "--html")
    data = crawl_report(state, reporter=rep)
    if html is not None:
        io.atomic_write_bytes(html, render_html(data).encode("utf-8"))
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
