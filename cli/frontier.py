"""crawlkit frontier (add, next, stats, block, unblock)."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import orjson
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import (
    MAX_DEPTH_DEFAULT,
    URL_LENGTH_DEFAULT,
    Exclude,
    ExistingStateDir,
    IgnoreFile,
    InputFiles,
    MaxDepth,
    MaxUrlLength,
    OutFile,
    Quiet,
    ScopeOption,
    Shards,
    SlotMapFile,
    StateDir,
    excludes,
    renamed,
)

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import UsageError
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.scope import Scope, adopt_state_rules
from crawlkit.frontier.store import REASONS, Batch, NextOptions
from crawlkit.frontier.traps import TrapLimits
from crawlkit.shard.routing import role_from_options
from crawlkit.stages.frontier import (
    crawl_frontier_stats,
    frontier_add,
    frontier_block,
    frontier_defer,
    frontier_links,
    frontier_next,
)
from crawlkit.state import require_existing_state
from crawlkit.streams import Record
from crawlkit.times import iso, parse_duration, parse_time, time_problem
from crawlkit.url import trim_url

frontier_app = typer.Typer(
    help="Priority queues of URLs to fetch: trap limits, site budgets, durable batches.\n\n"
    "State lives in DIR/frontier under --state: queues as zstd NDJSON segment files, "
    "per-site and per-host counters, and a manifest replaced atomically at each commit. "
    "Memory holds counters per site and host, never the queued URLs.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(frontier_app, name="frontier")

Now = Annotated[
    str | None,
    typer.Option(
        "--now",
        help="Take this as the current time (ISO 8601 or unix seconds), for tests and replays.",
        show_default=False,
    ),
]
LockWait = Annotated[
    str,
    typer.Option(
        "--lock-wait",
        help="Wait this long for another process to release the state directory (not "
        "for a running crawl: refused at once).",
    ),
]
RefusedFile = Annotated[
    str | None,
    typer.Option(
        "--refused",
        help="Write refused records here instead of standard output.",
        show_default=False,
    ),
]


def _now(value: str | None) -> float | None:
    if value is None:
        return None
    moment = parse_time(value)
    if moment is None:
        raise UsageError(f"--now: not a time: {value!r} (ISO 8601 or unix seconds)")
    return moment


def _url_or_site_records(
    lines: Iterator[tuple[str, int, Record]], rep: Reporter
) -> Iterator[Record]:
    """Records with a url (or dedup site records); others, and records whose ``due`` or
    ``lastmod`` is not a usable time, are bad records (stderr)."""
    for source, lineno, rec in lines:
        if "url" in rec or ("yield" in rec and "site" in rec):
            problem = time_problem(rec, "due") or time_problem(rec, "lastmod")
            if problem is not None:
                rep.bad_record(source, lineno, problem)
                continue
            yield rec
        else:
            rep.bad_record(source, lineno, "neither a URL record (url) nor a site record (yield)")


def _with_reason(records: Iterator[Record], reason: str) -> Iterator[Record]:
    for rec in records:
        if "url" in rec and not isinstance(rec.get("reason"), str):
            rec["reason"] = reason
        yield rec


def _plain_urls(lines: Iterator[tuple[str, int, str | None]], reason: str) -> Iterator[Record]:
    """One URL record per non-empty line (a line that is not UTF-8 is a bad record)."""
    for _, _, text in lines:
        if text is not None and text.strip() and not text.lstrip().startswith("#"):
            yield {"url": trim_url(text), "reason": reason, "depth": 0}


@frontier_app.command("add")
def add(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    refused: RefusedFile = None,
    max_depth: MaxDepth = MAX_DEPTH_DEFAULT,
    max_url_length: MaxUrlLength = URL_LENGTH_DEFAULT,
    max_path_depth: Annotated[
        int, typer.Option("--max-path-depth", help="Refuse paths with more segments.")
    ] = 15,
    max_repeats: Annotated[
        int,
        typer.Option("--max-repeats", help="Refuse a path where one segment occurs this often."),
    ] = 3,
    max_params: Annotated[
        int, typer.Option("--max-params", help="Refuse URLs with more query parameters.")
    ] = 10,
    param_denylist: Annotated[
        list[Path] | None,
        typer.Option(
            "--param-denylist",
            help="More parameter names that refuse a URL (session ids), one a line; a "
            "trailing * matches a prefix (repeatable).",
            show_default=False,
        ),
    ] = None,
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            help="The reason of records that have none (seed, link, sitemap, redirect, recrawl).",
        ),
    ] = "link",
    plain_urls: Annotated[
        bool,
        typer.Option("--urls", help="Inputs are plain URLs, one a line (a seeds file)."),
    ] = False,
    deferred: Annotated[
        bool,
        typer.Option(
            "--deferred",
            help="Inputs are fetch logs: their deferred records wait in the waiting room "
            "until their retry_at, then 'frontier next' queues them (what crawl does); "
            "other records are passed over, nothing is queued now.",
        ),
    ] = False,
    scope: ScopeOption = None,
    exclude: Exclude = None,
    ignore_file: IgnoreFile = None,
    now: Now = None,
    lock_wait: LockWait = "1h",
    shard: Annotated[
        int | None,
        typer.Option(
            "--shard",
            help="Queue as this shard (0-based) of a fleet: other shards' URLs go to their "
            "outboxes, and the inbox is queued too.",
        ),
    ] = None,
    shards: Shards = None,
    slot_map: SlotMapFile = None,
    quiet: Quiet = False,
) -> None:
    """Queue URL records; print a refused record for each URL the trap limits stop.

    Reads URL records (reason seed, link, sitemap, redirect or recrawl; --reason for
    records without one), or with --urls plain URLs one a line ('#' comments skipped).
    Records without fp, site or host are canonicalized first. Each URL is either queued
    or written out as a refused record: the input record plus "outcome": "refused",
    "refused" (url-length, path-depth, repeated-segment, query-params, param-denylist,
    session-id, calendar, max-depth, blocked, invalid-url, out-of-scope) and "detail".
    Nothing else is written. Dedup site records ({"site","pages","exact","near","yield"},
    no "url") cut that site's budget. Link records' "from" (or "via") feed the count of
    distinct sites linking to each site, which makes its queue level more urgent and
    raises its budget (feed all of extract's link records to 'frontier links' for the
    full count). The frontier does not check history (that is seen-merge's job), but a
    recrawl of a URL whose recrawl is already queued is not queued twice.

    The waiting room (DIR/crawl/waiting.ndjson.zst, crawl's too): a URL record whose
    "due" time is still ahead waits there instead of being queued, and so do, with
    --deferred, the deferred records of a fetch log ("outcome": "deferred") until
    their "retry_at"; 'frontier next' queues each once its time has come.

    Scope (--scope, what crawl --scope does): seed records (reason seed) widen it,
    as do a seed's redirect targets (seed_redirect: true) under host and site, and
    are kept in DIR/scope.json, so later adds judge by every seed so far; a URL
    off the seeds' hosts (host) or sites (site), or not matching the regular
    expression, is refused "out-of-scope" with a detail naming the scope. Page
    requisites (reason requisite) and site records pass whatever the scope.
    --exclude and --ignore-file refuse the URLs their patterns find ("excluded",
    the pattern as detail; what crawl --exclude does), after a length check.

    Streams: memory holds per-site and per-host counters and up to 65,536 records
    per queue before they go to a segment file. The whole input is committed at
    once at the end: a crash queues none of it. If another process holds the state
    directory, the input is read to its end first (into a temporary file), then the
    lock is awaited, so pipes between stages on one state directory work.

    Sharded (--shard K with --shards N or --slot-map FILE, or a DIR a sharded crawl
    made its shard's): URL records of sites whose slot another shard J owns are
    written to DIR/outbox/shard-J/ (for 'crawlkit shard --deliver') instead of being
    queued; the files delivered to DIR/inbox/ are queued with the input, those
    DIR/seen has seen left out, then removed.

    State: DIR/frontier (queues, counters, manifest), DIR/crawl/waiting.ndjson.zst.

    Example:

        crawlkit seen-merge --state S --reason seed seeds.txt | crawlkit frontier add --state S

        crawlkit seen-merge --state S links | crawlkit frontier add --state S

        crawlkit frontier add --state S --deferred fetched.ndjson
    """
    rep = reporter()
    if deferred:
        if plain_urls:
            raise UsageError("--deferred reads fetch logs: not with --urls")
        read, taken = frontier_defer(
            state,
            (rec for _, _, rec in streams.read_records_with_lines(files, rep)),
            lock_wait=parse_duration(lock_wait),
            read_first=_reading_a_pipe(files),
            reporter=rep,
        )
        if not quiet:
            rep.info(f"{read} deferred records, {taken} now in the waiting room")
        if rep.input_damaged:
            raise typer.Exit(1)
        return
    limits = TrapLimits(
        max_url_length=max_url_length,
        max_path_depth=max_path_depth,
        max_segment_repeats=max_repeats,
        max_query_params=max_params,
        max_depth=max_depth if max_depth > 0 else None,
    )
    if param_denylist:
        limits = limits.with_denylist_files(param_denylist)
    if reason not in REASONS:
        raise UsageError(f"--reason must be one of {', '.join(REASONS)}")
    if scope is not None:
        if not scope:
            raise UsageError("--scope must not be empty")
        Scope(scope)  # a bad regex is a usage error before any input is read
    patterns = excludes(exclude, ignore_file, max_url_length)
    if plain_urls:
        records = _plain_urls(streams.read_text_lines(files, rep), reason)
    else:
        records = _with_reason(
            _url_or_site_records(streams.read_records_with_lines(files, rep), rep), reason
        )
    role = role_from_options(state, shard, shards, slot_map)
    adopt_state_rules(state)  # URLs named as the crawl of the state names them
    # Another stage on the same state directory may be writing into our pipe while it
    # holds the lock: read the pipe to its end before taking the lock.
    from_pipe = _reading_a_pipe(files)
    with streams.open_output(refused or "-") as sink:
        refusals = streams.ByProduct(sink.write_record)  # a closed pipe stops no queuing
        result = frontier_add(
            state,
            records,
            on_refused=refusals,
            limits=limits,
            now=_now(now),
            lock_wait=parse_duration(lock_wait),
            read_first=from_pipe,
            reporter=rep,
            role=role,
            scope=scope,
            excludes=patterns,
        )
        refusals.end()
    if not quiet:
        sharded = (
            f"; {result.routed} for other shards' outboxes, {result.delivered} new from the inbox"
            if role is not None
            else ""
        )
        rep.info(
            f"{result.queued} queued, {result.refused} refused, {result.duplicates} "
            f"duplicate recrawls, {result.site_records} site records"
            f"{f', {result.held} waiting until due' if result.held else ''}; "
            f"{rep.bad_records} bad records skipped{sharded}"
        )
    if rep.input_damaged:
        raise typer.Exit(1)


def _reading_a_pipe(files: list[str] | None) -> bool:
    """True when an input is standard input and that is not a regular file."""
    if files and not any(streams.is_stdio(f) for f in files):
        return False
    try:
        return not stat.S_ISREG(os.fstat(sys.stdin.fileno()).st_mode)
    except (OSError, ValueError):
        return True


@frontier_app.command("links")
def links(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    lock_wait: LockWait = "1h",
    quiet: Quiet = False,
) -> None:
    """Learn which sites link to which from link records; queue nothing.

    Reads link records (extract's --links output: url or site, and from). For each link
    between two different sites (nofollow links excepted) the linking site is remembered
    for the linked site (at most 256 per site). These distinct linking sites make a
    site's queue level more urgent and raise its budget (see 'frontier next').
    seen-merge passes on only links to URLs never seen before, so 'frontier add' alone
    learns one linker per URL; feed the full link records here to count every site that
    links. Writes nothing on standard output.

    Streams: memory holds the per-site linker sets. State: DIR/frontier (site
    signals), committed at the end; input from a pipe is read to its end before
    the lock is taken.

    Example:

        crawlkit frontier links --state S links.ndjson.zst
    """
    rep = reporter()
    read, noted = frontier_links(
        state,
        streams.read_records(files, rep),
        lock_wait=parse_duration(lock_wait),
        read_first=_reading_a_pipe(files),
        reporter=rep,
    )
    if not quiet:
        rep.info(f"{read} link records, {noted} between sites; {rep.bad_records} bad skipped")
    if rep.input_damaged:
        raise typer.Exit(1)


@frontier_app.command("next")
def next_batch(
    state: StateDir = ...,  # type: ignore[assignment]
    max_urls: Annotated[int, typer.Option("--max", help="Most URLs in the batch.")] = 1000,
    per_host: Annotated[
        int, typer.Option("--per-host", help="Most URLs of one host in the batch (0: no limit).")
    ] = 10,
    recrawl_share: Annotated[
        float,
        typer.Option(
            "--recrawl-share", help="Share of the batch for recrawls when new URLs wait too."
        ),
    ] = 0.6,
    discovery_share: Annotated[
        float,
        typer.Option(
            "--discovery-share",
            help="Share of the new URLs kept for sites never fetched yet.",
        ),
    ] = 0.1,
    no_budgets: Annotated[
        bool,
        typer.Option("--no-budgets", help="Ignore site budgets (a fixed list of sites)."),
    ] = False,
    budget_base: Annotated[
        int,
        typer.Option("--budget-base", help="Pages per budget period of a site nobody vouches for."),
    ] = 10,
    budget_per_linker: Annotated[
        int,
        typer.Option(
            "--budget-per-linker",
            help="Pages per budget period added per trusted linking site.",
        ),
    ] = 100,
    budget_seed: Annotated[
        int,
        typer.Option(
            "--budget-seed",
            help="Pages per budget period added for a seed's site (the operator vouching "
            "for it once).",
        ),
    ] = 100,
    budget_period: Annotated[
        str, typer.Option("--budget-period", help="Site budgets refill after this long.")
    ] = "1d",
    old_budget_period: Annotated[str | None, typer.Option("--cycle", hidden=True)] = None,
    refused: RefusedFile = None,
    exclude: Exclude = None,
    ignore_file: IgnoreFile = None,
    now: Now = None,
    lock_wait: LockWait = "1h",
    out: OutFile = "-",
    shard: Annotated[
        int | None,
        typer.Option(
            "--shard",
            help="Hand out as this shard (0-based) of a fleet: records carry shard_epoch.",
        ),
    ] = None,
    shards: Shards = None,
    slot_map: SlotMapFile = None,
    quiet: Quiet = False,
) -> None:
    """Hand out a batch of URL records to fetch, and remove it from the queues.

    Writes up to --max URL records. About --recrawl-share of them are recrawls when both
    kinds wait (all of one kind when the other is empty); --discovery-share of the new
    ones go to sites never fetched yet, so discovery never stops; the rest is split
    across queue levels 0..3 (0 most urgent; each record's "level" says its level) by
    8:4:2:1, so low levels still trickle. Hosts take turns, at most --per-host URLs
    each, so the batch spreads over as many hosts as possible. A site (registered
    domain) gets at most its budget per --budget-period: --budget-base, plus
    --budget-per-linker for each distinct trusted site linking to it that it does not
    link back to (trusted: a seed's site, or a site with two such linkers; so a link
    farm whose sites only link to each other earns nothing), plus --budget-seed for a
    seed's site, cut by the share of copies dedup reported. URLs over budget wait for
    the next budget period (stderr names the sites; seed a site with 'frontier add
    --reason seed'). Budgets count per registered domain: all subdomains of a site share
    one. For a fixed list of sites (an archivist's collection) use --no-budgets. URLs of
    blocked sites or hosts come out as refused records ("outcome": "refused", "refused":
    "blocked") on standard output among the batch, or in --refused FILE; give --refused
    when the batch goes straight to a fetcher that does not skip them. So do
    queued URLs that an --exclude or --ignore-file pattern finds now ("excluded"):
    URLs queued before the ignore file changed are refused too, with a reason, and
    leave the queue (what crawl does with its live ignore file).

    At least once: the batch is written (and a --out file renamed into place)
    before the removal is committed; a crash in between hands the same URLs out
    again, never loses them. Memory: the windows of records read from the queue
    heads (about twice --max) and the per-site counters.

    The waiting room's URLs whose time has come ('frontier add' of a later "due",
    or --deferred) are queued first, so they can be in the batch.

    Sharded (--shard K with --shards N or --slot-map FILE, or a DIR a sharded crawl
    made its shard's): each record carries "shard_epoch", its slot's epoch in the
    map, which 'crawlkit fetch' checks; queued URLs of slots the map has moved to
    another shard J go to DIR/outbox/shard-J/ instead of the batch.

    State: DIR/frontier, DIR/crawl/waiting.ndjson.zst.

    Example:

        crawlkit frontier next --state S --max 20000 -o batch.ndjson.zst

        crawlkit fetch --state S batch.ndjson.zst --log fetched.ndjson.zst
    """
    rep = reporter()
    streams.check_output(out, "--out")
    streams.check_output(refused, "--refused")
    if max_urls < 0 or per_host < 0:
        raise UsageError("--max and --per-host must not be negative")
    for name, share in (("--recrawl-share", recrawl_share), ("--discovery-share", discovery_share)):
        if not 0.0 <= share <= 1.0:
            raise UsageError(f"{name} must be between 0 and 1")
    opts = NextOptions(
        max_urls=max_urls,
        per_host=per_host,
        recrawl_share=recrawl_share,
        discovery_share=discovery_share,
        budgets=not no_budgets,
        cycle=parse_duration(
            renamed(budget_period, old_budget_period, "--budget-period", "--cycle", "1d")
        ),
        now=_now(now),
    )
    policy = BudgetPolicy(base=budget_base, per_linker=budget_per_linker, seed_bonus=budget_seed)
    patterns = excludes(exclude, ignore_file)

    def write(batch: Batch) -> None:
        with streams.still_to_write(refused), streams.open_output(out) as sink:
            for line in batch.lines:
                sink.write(line)
            if refused is None:
                sink.write_records(batch.refused)
        if refused is not None:
            with streams.open_output(refused) as side:
                side.write_records(batch.refused)

    role = role_from_options(state, shard, shards, slot_map)
    batch = frontier_next(
        state,
        opts,
        write=write,
        policy=policy,
        lock_wait=parse_duration(lock_wait),
        reporter=rep,
        role=role,
        excludes=patterns,
    )
    if not quiet:
        hosts = len({orjson.loads(line)["host"] for line in batch.lines}) if batch.lines else 0
        rep.info(f"{len(batch.lines)} URLs from {hosts} hosts; {len(batch.refused)} refused")
        for note in _waiting_notes(batch, opts, policy):
            rep.info(note)


def _waiting_notes(batch: Batch, opts: NextOptions, policy: BudgetPolicy) -> list[str]:
    """Why URLs still queued did not come out: held back by --per-host for the next
    batch, or over their site's budget until the next budget period (with the sites and how to
    raise a budget)."""
    notes = []
    if batch.held_per_host:
        notes.append(
            f"{batch.held_per_host} more URLs of hosts at --per-host {opts.per_host} wait "
            "for the next batch"
        )
    over = batch.over_budget
    if over and over["urls"]:
        start = over["cycle_start"]
        refill = f" at {iso(start + opts.cycle)}" if start is not None else ""
        sites = []
        for s in over["top"]:
            why = "" if s["seed"] or s["trusted_linkers"] else ", not a seed and no trusted linkers"
            sites.append(f"{s['site']} used {s['used']} of {s['budget']}{why}")
        more = f" and {over['sites'] - len(sites)} more" if over["sites"] > len(sites) else ""
        notes.append(
            f"{over['urls']} URLs of {over['sites']} sites are over their budget and wait "
            f"for the next --budget-period{refill} ({'; '.join(sites)}{more}); "
            f"'frontier add --reason seed' makes a site a seed's (+{policy.seed_bonus} "
            "pages a period), --no-budgets ignores budgets"
        )
    return notes


@frontier_app.command("stats")
def stats(state: ExistingStateDir = ...) -> None:  # type: ignore[assignment]
    """Print the frontier's counters as one JSON object.

    Fields: queued (total), levels (new and recrawl per level 0..3, discovery), parked
    (over budget, waiting for the next budget period), reasons (queued per reason),
    sites and hosts with URLs waiting, refused (per reason, since the start), added and
    handed_out (since the start), budgets (the budget period's number and start under
    "cycle", URLs handed out in it, sites over budget, and parked_sites: the 10 sites
    with the most parked URLs, each with its budget under the default --budget-* values,
    used, seed and trusted_linkers), blocked (including blocks not yet applied).

    Reads the committed state without taking the lock, so it works while a crawl
    runs; touches nothing. Of the state of a 'crawl --workers N', the workers'
    frontiers as one: counts summed, the latest budget period, the 10 sites with the
    most parked URLs of all.

    Example:

        crawlkit frontier stats --state S | jq .levels
    """
    require_existing_state(state)
    with streams.open_output("-") as sink:
        sink.write_record(crawl_frontier_stats(state))


Target = Annotated[str, typer.Argument(help="A site (registered domain) or a host.")]


@frontier_app.command("block")
def block(target: Target, state: StateDir = ...) -> None:  # type: ignore[assignment]
    """Block a site or host: its URLs come out of the next batch as refused records.

    A site (registered domain, e.g. example.com) blocks all of its hosts; a host
    (www.example.com, or host:port) blocks only that host. The block is written to
    DIR/frontier/inbox without taking the lock, so it works while a crawl runs; the
    next 'frontier next' (or 'add') applies it: every queued URL of the target is
    written out as a refused record with "refused": "blocked", and new ones are
    refused when added. A running 'crawl' applies it at its next batch (a fetcher
    waiting for answers looks for posted commands every quarter second) and refuses
    the target's URLs its fetcher holds as well: only requests already in flight are
    still made. On the state of a 'crawl --workers N' it is posted to every
    worker's frontier (and to those a later --workers adds).

    Example:

        crawlkit frontier block --state S spam.example
    """
    frontier_block(state, target)


@frontier_app.command("unblock")
def unblock(target: Target, state: StateDir = ...) -> None:  # type: ignore[assignment]
    """Lift a block. URLs already refused stay refused; add them again to queue them.
    A target that is not blocked (in force or posted) is an error, exit 1, naming the
    blocks there are: a block is lifted by the name it was given (a host:port by it).

    Example:

        crawlkit frontier unblock --state S spam.example
    """
    frontier_block(state, target, unblock=True)
