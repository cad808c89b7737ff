"""crawlkit report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import orjson
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import ExistingStateDir

from crawlkit import streams
from crawlkit.report import render_html
from crawlkit.stages.report import crawl_report
from crawlkit.state import require_existing_state


@app.command("report")
def report(
    state: ExistingStateDir = ...,  # type: ignore[assignment]
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write a self-contained HTML page here.")
    ] = None,
) -> None:
    """Summarize a crawl: JSON on stdout, optionally an HTML page with plots.

    Reads what 'crawlkit crawl' leaves in STATE (fetch logs, dedup records, refusals
    of every cycle, the seen set's and frontier's counters; of a crawl with --workers N,
    every worker's, summed: one report of the crawl) and prints one JSON
    object: fetches (fetch records), requests (those of a request made: a robots
    denial or a deferral makes none), outcomes, status mix, hosts (and a row per
    host: URLs, fetched, errors, bytes, smallest gap), fetch rate, smallest gap
    between fetches of one host, dedup savings, refusals by reason, the Bloom
    filter's measured false-positive rate, and the data of each plot. --html writes a single file
    (inline CSS and SVG, no scripts): at a glance first (pages, requisites, errors,
    time, the politeness verdict), then the plots (fetch rate over time, status mix,
    gap distribution per host, top hosts, refusals, dedup), then the tables (seeds,
    hosts, content types, status codes, errors, requisites missing, WARC files, the
    audit), and last, collapsed, the settings as text and the internal counters.

    For archivists the "collection" section (and its HTML tables) says what the
    collection holds and how it was made: the seeds and the effective settings of the
    last run, each seed's answer and the pages fetched on its host, responses by
    content type, status codes, errors, responses kept cut (a size cap, a broken
    body) and refusals with example URLs, page
    requisites fetched and every one missing with why (an error, a refusal, parked
    over a site's budget, queued or deferred when the crawl stopped, not followed),
    the WARC files with
    their sizes and SHA-256 (cached in the WARC directory's indexes/), those not yet
    moved in from new/ (being written, or left open by a stop until the next run
    closes them), the CDXJ index, and the politeness audit ('crawlkit audit') of the
    crawl's own fetch log.

    Streams the logs; memory grows with the number of hosts and of URLs fetched (to
    find the requisites never fetched). Reads STATE without locking it, so it can run
    beside a crawl in progress.

    Example:

        crawlkit report --state S --html report.html | jq .outcomes
    """
    rep = reporter()
    require_existing_state(state)
    streams.check_output(html, "--html")
    data = crawl_report(state, reporter=rep)
    if html is not None:
        streams.atomic_write_bytes(html, render_html(data).encode("utf-8"))
    sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n")
