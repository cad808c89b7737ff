"""crawlkit dedup."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, cast

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import InputFiles, OutFile, Quiet, StateDir

from crawlkit import streams
from crawlkit.dedup.sitecounts import MAX_WINDOW
from crawlkit.errors import UsageError
from crawlkit.records import PageRecord
from crawlkit.stages.dedup import DedupStats, dedup_records, open_dedup_store, site_records


@app.command("dedup")
def dedup(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    out: OutFile = "-",
    sites: Annotated[
        str | None,
        typer.Option(
            "--sites",
            help="Also write one site record per site seen in this run, sorted by site.",
            show_default=False,
        ),
    ] = None,
    max_distance: Annotated[
        int,
        typer.Option("--max-distance", help="Near copy: simhashes at most this many bits apart."),
    ] = 3,
    window: Annotated[
        int,
        typer.Option(
            "--window",
            help="Site counts describe a site's recent pages: they halve when a site "
            "reaches twice this many.",
        ),
    ] = 1000,
    quiet: Quiet = False,
) -> None:
    """Find exact and near duplicate pages: one dedup record per page record.

    Reads page records (from 'crawlkit extract') and writes, in input order, one
    {"url","kind","dup_of","distance","site","fp","digest","simhash"} record per
    page. kind is "exact" when another URL was seen earlier with the same digest
    (dup_of is that first URL), "near" when another URL's page has a simhash at most
    --max-distance bits away (dup_of is the closest, distance the bits), else
    "unique". A URL is never a copy of itself: a recrawl with unchanged content is
    unique. Pages without visible text, or whose text has no word that
    counts (only digits and dates: simhash 0), are only checked for exact copies. With
    --sites, site records {"site","pages","exact","near","yield"} give the share of
    copies among each site's recent pages (yield = (exact + near) / pages), for the
    frontier's budgets.

    The index (5 blocks of 13,13,13,13,12 bits, 10 tables of 2 blocks each, page ids
    only) makes a lookup one bucket per table plus a few candidates, never a scan.
    Locks DIR/dedup, and DIR shared: refused (exit 1) before reading while a crawl or
    another stage owns DIR.
    State under --state DIR/dedup: an append-only page log (40 bytes a page plus its
    URL) and a snapshot of the sorted tables (40 bytes a page, memory-mapped on start),
    committed atomically every 200,000 pages and at the end. Memory: at most about 100
    bytes a stored page (the mapped snapshot is read only where lookups land). Streams
    its input in chunks of 16,384 records. Rerunning the same input gives the same
    records.

    Example:

        crawlkit extract a.warc | crawlkit dedup --state S --sites sites.ndjson
    """
    if max_distance < 0 or max_distance > 3:
        raise UsageError("--max-distance must be between 0 and 3 (the index finds 3)")
    if not 1 <= window <= MAX_WINDOW:
        raise UsageError(f"--window must be between 1 and {MAX_WINDOW}")
    if sites is not None and streams.is_stdio(sites) and streams.is_stdio(out):
        raise UsageError("--out and --sites cannot both be stdout")
    streams.check_output(out, "--out")
    streams.check_output(sites, "--sites")
    rep = reporter()
    stats = DedupStats()
    with open_dedup_store(state, window=window) as store:
        # page records, as far as dedup relies on them (a record without "url" is
        # reported and skipped)
        records = cast(
            "Iterator[tuple[str, int, PageRecord]]", streams.read_records_with_lines(files, rep)
        )
        with streams.still_to_write(sites), streams.open_output(out) as sink:
            for record in dedup_records(records, store, k=max_distance, reporter=rep, stats=stats):
                sink.write_record(record)
        if sites is not None:
            with streams.open_output(sites) as site_sink:
                site_sink.write_records(site_records(store, stats.sites))
    if not quiet:
        rep.info(stats.summary())
    if rep.input_damaged:
        raise typer.Exit(1)
