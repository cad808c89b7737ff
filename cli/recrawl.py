"""crawlkit recrawl."""

from __future__ import annotations

from typing import Annotated

import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import InputFiles, OutFile, Quiet, StateDir

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.recrawl import RecrawlPolicy
from crawlkit.stages.recrawl import recrawl, recrawl_stats
from crawlkit.streams import Record
from crawlkit.times import parse_duration, parse_time

DAY = 86400.0


@app.command("recrawl")
def recrawl_command(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    initial: Annotated[
        str,
        typer.Option(
            "--initial",
            help="Mean time between changes assumed for a URL until its site or the "
            "crawl has an estimate (the estimator's prior).",
        ),
    ] = "1d",
    min_interval: Annotated[str, typer.Option("--min", help="Shortest revisit interval.")] = "1h",
    max_interval: Annotated[str, typer.Option("--max", help="Longest revisit interval.")] = "90d",
    budget: Annotated[
        float | None,
        typer.Option(
            "--budget",
            help="Recrawl visits a day over all URLs; the default is one a day per URL tracked.",
            show_default=False,
            min=0.001,
        ),
    ] = None,
    host_budget: Annotated[
        float | None,
        typer.Option(
            "--host-budget",
            help="Recrawl visits a day one host allows (politeness); no cap by default.",
            show_default=False,
            min=0.001,
        ),
    ] = None,
    max_urls: Annotated[
        int | None,
        typer.Option(
            "--max-urls",
            help="Emit at most this many URLs. Without --budget: the N URLs a fetch now "
            "buys the most freshness for, due or not (for cron pipelines and replays).",
            show_default=False,
            min=0,
        ),
    ] = None,
    host_max_urls: Annotated[
        int | None,
        typer.Option(
            "--host-max-urls",
            help="Emit at most this many URLs of one host per run.",
            show_default=False,
            min=1,
        ),
    ] = None,
    stats: Annotated[
        bool,
        typer.Option(
            "--stats",
            help="Print the history's estimated change rates (a histogram), expected "
            "freshness and URLs due per day ahead instead of URL records; reads no input.",
        ),
    ] = False,
    hold_mu: Annotated[
        str,
        typer.Option(
            "--hold-mu",
            help="Keep the budget's multiplier solved by an earlier run up to this long "
            "while the URLs tracked and updated since stay within 10% of those it was "
            "solved for (0: solve every run; crawl holds it 60s, as it plans every cycle).",
        ),
    ] = "0s",
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
    """Keep each URL's change history and print URL records for URLs worth a visit.

    Reads fetch records (outcome fetched, not-modified, redirect, deferred, error,
    ...; fetched_at, etag, last_modified, digest), page or dedup records (digest,
    simhash) and sitemap URL records (lastmod), in any order and mix of files. For
    each URL it keeps the last fetch, ETag, Last-Modified, digest, simhash, checks,
    changes and its last 64 visits: no change (304, the same digest, or a simhash
    within 3 bits) or a change, dated by Last-Modified or a sitemap lastmod when
    one falls between two visits. From them it estimates the URL's change rate
    (Cho & Garcia-Molina's estimators, bias-corrected; a URL with few visits leans
    on its site's rate, else the crawl's, else --initial).

    The revisit intervals are the freshness-optimal ones for --budget visits a day
    (at most --host-budget per host): each URL is visited when a visit buys as much
    freshness per fetch as the budget allows, weighted by importance 0..3 (0 most
    important, weight 2, 4/3, 1, 2/3); a URL changing faster than the budget can
    follow is not chased and one that never changes drifts to --max. A sitemap
    URL record counts as a read of the page's lastmod (feed a sitemap when it was
    fetched): a lastmod newer than the last fetch makes the URL due now. deferred fetches are
    due at their retry_at; errors back off from 1 h.

    Writes one URL record per URL picked, the one a fetch buys the most freshness
    for first: url, host, site, fp, "reason": "recrawl", depth, importance,
    priority (the same as a 0.0-1.0 hint, higher sooner: 1.0, 0.75, 0.5, 0.25),
    due, interval, etag and last_modified (for a conditional GET), last_fetch,
    changes, checks. Picked are the URLs due (at most --max-urls), or, with
    --max-urls and no --budget, the N URLs a fetch buys the most freshness for now
    (visited at least --min ago). A URL emitted and not fetched since is not
    emitted again for max(interval, 1 day). With no input (< /dev/null) it only
    emits. --stats prints the history's rates, expected freshness and URLs due per
    day ahead instead; of a crawl of --workers N (a history a worker, STATE/workers/K)
    their figures summed, while updating STATE itself is a usage error.

    Buffers one small event per input record until the input ends, then takes the
    state lock (so it can read a pipe from another stage on the same state); each
    run reads the planning columns of every URL tracked (about 80 bytes a URL),
    from DIR/recrawl/columns.npz when the last run saved them and nothing wrote the
    history since (5 s a million URLs from the table, 0.07 s from the file). The
    history is on disk (DIR/recrawl/history.sqlite; a history of crawlkit before
    rate estimates is migrated when opened), updated in one transaction committed
    after the output is written: a crash re-emits, never loses.

    Example:

        crawlkit recrawl --state S fetched.zst pages.zst > due.ndjson

        crawlkit recrawl --state S fetched.zst | crawlkit frontier add --state S

        crawlkit recrawl --state S --stats < /dev/null
    """
    rep = reporter()
    streams.check_output(out, "--out")  # written only after the state is updated
    moment = None
    if now is not None:
        moment = parse_time(now)
        if moment is None:
            raise UsageError(f"--now: not a time: {now!r} (ISO 8601 or unix seconds)")
    policy = RecrawlPolicy(
        initial=parse_duration(initial),
        min=parse_duration(min_interval),
        max=parse_duration(max_interval),
        budget=None if budget is None else budget / DAY,
        host_budget=None if host_budget is None else host_budget / DAY,
    )
    if not 0 < policy.min <= policy.max or policy.initial <= 0:
        raise UsageError("need 0 < --min <= --max and --initial > 0")
    if stats:
        lines = recrawl_stats(state, policy, now=moment, lock_wait=parse_duration(lock_wait))
        with streams.open_output(out) as sink:
            sink.write("".join(line + "\n" for line in lines).encode())
        return

    def write(records: list[Record]) -> None:
        with streams.open_output(out) as sink:
            sink.write_records(records)

    summary = recrawl(
        state,
        streams.read_records_with_lines(files, rep),
        write=write,
        policy=policy,
        now=moment,
        max_urls=max_urls,
        host_max=host_max_urls,
        lock_wait=parse_duration(lock_wait),
        reporter=rep,
        hold_mu=parse_duration(hold_mu),
    )
    if not quiet:
        rep.info(
            f"{summary.fetches} fetch, {summary.pages} page, {summary.lastmods} lastmod records "
            f"({summary.ignored} of other kinds ignored, {rep.bad_records} bad); "
            f"{summary.updated} URLs updated, {summary.tracked} tracked, {summary.emitted} due"
        )
    if rep.input_damaged:
        raise typer.Exit(1)
