"""crawlkit recrawl."""

from __future__ import annotations

from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import InputFiles, OutFile, Quiet, StateDir

from crawlkit import io
from crawlkit.errors import UsageError
from crawlkit.io import Record
from crawlkit.recrawl import RecrawlPolicy
from crawlkit.stages.recrawl import recrawl
from crawlkit.times import parse_duration, parse_time


@app.command("recrawl")
def recrawl_command(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    initial: Annotated[
        str, typer.Option("--initial", help="Revisit interval after a first fetch.")
    ] = "1d",
    min_interval: Annotated[str, typer.Option("--min", help="Shortest revisit interval.")] = "1h",
    max_interval: Annotated[str, typer.Option("--max", help="Longest revisit interval.")] = "90d",
    max_urls: Annotated[
        int | None,
        typer.Option(
            "--max-urls",
            help="Emit at most this many due URLs (soonest first).",
            show_default=False,
        ),
    ] = None,
    now: Annotated[
        str | None,
        typer.Option(
            "--now",
            help="Take this as the current time (ISO 8601 or unix seconds), for tests and replays.",
            show_default=False,
        ),
    ] = None,
    lock_wait: Annotated[
        str,
        typer.Option(
            "--lock-wait",
            help="Wait this long for another process to release the state directory (not "
            "for a running crawl: refused at once).",
        ),
    ] = "1h",
    out: OutFile = "-",
    quiet: Quiet = False,
) -> None:
    """Keep each URL's change history and print URL records for URLs now due.

    Reads fetch records (outcome fetched, not-modified, redirect, deferred, error,
    ...; fetched_at, etag, last_modified, digest), page or dedup records (digest,
    simhash) and sitemap URL records (lastmod), in any order and mix of files. For
    each URL it keeps the last fetch, ETag, Last-Modified, digest, simhash, checks,
    changes and a revisit interval: a change halves the interval, no change (304,
    the same digest, or a simhash within 3 bits) grows it by half, between --min
    and --max; a first fetch starts at --initial. The next visit is due interval x
    0.5, 0.75, 1 or 1.5 after the fetch for importance 0..3 (0 most important: a
    fetch record's importance, else the frontier level it was queued at). A sitemap
    lastmod newer than the last fetch counts as a change and makes the URL due now.
    deferred fetches are due at their retry_at; errors back off from 1 h.

    Writes one URL record per due URL, soonest first: url, host, site, fp,
    "reason": "recrawl", depth, importance (0..3, 0 most important), priority (the
    same as a 0.0-1.0 hint, higher sooner: 1.0, 0.75, 0.5, 0.25), due,
    interval, etag and last_modified (for a conditional GET), last_fetch, changes,
    checks. A URL emitted and not fetched since is not emitted again for
    max(interval, 1 day). With no input (< /dev/null) it only emits what is due.

    Buffers one small event per input record until the input ends, then takes the
    state lock (so it can read a pipe from another stage on the same state). The
    history is on disk (DIR/recrawl/history.sqlite), updated in one transaction
    committed after the output is written: a crash re-emits, never loses.

    Example:

        crawlkit recrawl --state S fetched.zst pages.zst > due.ndjson

        crawlkit recrawl --state S fetched.zst | crawlkit frontier add --state S
    """
    rep = reporter()
    io.check_output(out, "--out")  # written only after the state is updated
    moment = None
    if now is not None:
        moment = parse_time(now)
        if moment is None:
            raise UsageError(f"--now: not a time: {now!r} (ISO 8601 or unix seconds)")
    policy = RecrawlPolicy(
        initial=parse_duration(initial),
        min=parse_duration(min_interval),
        max=parse_duration(max_interval),
    )
    if not policy.min <= policy.initial <= policy.max:
        raise UsageError("need --min <= --initial <= --max")

    def write(records: list[Record]) -> None:
        with io.open_output(out) as sink:
            sink.write_records(records)

    summary = recrawl(
        state,
        io.read_records_with_lines(files, rep),
        write=write,
        policy=policy,
        now=moment,
        max_urls=max_urls,
        lock_wait=parse_duration(lock_wait),
        reporter=rep,
    )
    if not quiet:
        rep.info(
            f"{summary.fetches} fetch, {summary.pages} page, {summary.lastmods} lastmod records "
            f"({summary.ignored} of other kinds ignored, {rep.bad_records} bad); "
            f"{summary.updated} URLs updated, {summary.tracked} tracked, {summary.emitted} due"
        )
    if rep.counts["truncated input"] or rep.counts["corrupt input"]:
        raise typer.Exit(1)
