"""crawlkit demo."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.progress import progress_printer

from crawlkit.crawl.summary import summary_text
from crawlkit.demo import run_demo
from crawlkit.errors import UsageError
from crawlkit.stages.audit import format_report
from crawlkit.testweb import parse_specials
from crawlkit.testweb.tls import TLS_KINDS
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
    special: Annotated[
        str,
        typer.Option(
            "--special",
            help="Special hosts in the web, as 'crawlkit testweb --special' takes them: 'all' "
            "(the default), 'none', or a comma list of KIND, KIND:N and -KIND, e.g. "
            "'none,redirects,gzip-bomb'. 'all' includes endless traps and hosts that say "
            "retry later, so the crawl runs until --for; without them a small web is "
            "crawled to the end.",
        ),
    ] = "all",
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

    Starts 'crawlkit testweb' in this process (ordinary hosts plus every special host
    unless --special says otherwise: robots.txt variants, 429/503 with Retry-After,
    traps, duplicates, gzip bomb, slow and hostile hosts, a private-network host behind
    a redirect), crawls it with
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
    specials = parse_specials(special)
    if not tls and (named := [k for k in specials if k in TLS_KINDS]):
        raise UsageError(f"special kind {named[0]!r} needs --tls")
    rep.info(
        f"demo: test web of {hosts} hosts (+ special hosts) on loopback; gap between "
        f"requests to one host shortened to {delay:g} s for the demo (default 1 s)"
    )
    result = run_demo(
        directory,
        hosts=hosts,
        pages=pages,
        duration=parse_duration(duration),
        min_delay=delay,
        specials=special,
        reporter=rep,
        progress=progress_printer(),
        tls=tls,
    )
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    print(summary_text(result.summary.to_json()))
    print(
        f"test web: {result.web.get('reachable_pages')} reachable pages on "
        f"{result.web.get('hosts')} hosts; {result.reachable_fetched} of them fetched or "
        "refused with a reason"
    )
    print(format_report(result.audit).rstrip().splitlines()[-1])
    print(f"report: {result.html}")
    if not result.audit.get("ok", False):
        raise typer.Exit(1)
