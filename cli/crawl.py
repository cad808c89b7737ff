"""crawlkit crawl."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import Annotated

import click
import orjson
import typer
from crawlkit_cli.app import app, invocation, reporter
from crawlkit_cli.archive_options import archive_options
from crawlkit_cli.config_option import ConfigOption
from crawlkit_cli.explain import stage_flags
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
    warc_options,
)
from crawlkit_cli.fetch_options import duration as seconds_of
from crawlkit_cli.options import (
    MAX_DEPTH_DEFAULT,
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
    Exclude,
    Header,
    HostsFile,
    IgnoreFile,
    IgnoreRobotsFor,
    Insecure,
    IpTableFile,
    MaxBackoff,
    MaxBody,
    MaxDecoded,
    MaxDepth,
    Netrc,
    Operator,
    PerIp,
    PerIpDelay,
    Proxy,
    Requisites,
    ScopeOption,
    Shards,
    Sitemap,
    SlotMapFile,
    StateDir,
    TimelineFile,
    Timeout,
    TrustEnv,
    WarcPrefix,
    WarcSize,
    WarcVersion,
    warc_info,
)
from crawlkit_cli.progress import progress_printer

from crawlkit import streams
from crawlkit.collector import collect_by_clock
from crawlkit.crawl import CrawlOptions, crawl, explain
from crawlkit.crawl.arenas import cap_arenas
from crawlkit.crawl.retry import fetched_nothing
from crawlkit.crawl.summary import summary_text
from crawlkit.crawl.workers import (
    WorkerFleet,
    check_single,
    explain_workers,
    workers_fetched_nothing,
)
from crawlkit.diag import Reporter
from crawlkit.errors import CrawlkitError, UsageError
from crawlkit.fetch.netoptions import NetOptions
from crawlkit.frontier.scope import Scope
from crawlkit.frontier.traps import TrapLimits
from crawlkit.masking import mask_argv
from crawlkit.url import Rules


def read_seeds(items: list[str], reporter: Reporter) -> list[str]:
    """Seeds from arguments: a URL, or a file of URLs (one a line, # comments; ``-``
    is standard input, as for every stage). A line that is not UTF-8 and a damaged
    (cut, corrupt) compressed file are reported to ``reporter``: the crawl goes on
    from the seeds before the damage and exits 1 at the end."""
    streams.check_single_stdin(items)
    seeds: list[str] = []
    for item in items:
        if "://" in item:
            seeds.append(item)
            continue
        if not streams.is_stdio(item) and not Path(item).exists():
            raise UsageError(f"{item}: neither a URL nor a file")
        for _, _, text in streams.read_text_lines([item], reporter):
            line = (text or "").split("#", 1)[0].strip()
            if line:
                seeds.append(line)
    return seeds


@app.command("crawl")
def crawl_command(
    seeds: Annotated[
        list[str] | None,
        typer.Argument(
            help="Seed URLs, or files of seed URLs (one a line; - reads standard input).",
            show_default=False,
        ),
    ] = None,
    state: StateDir = ...,  # type: ignore[assignment]
    config: ConfigOption = None,
    scope: ScopeOption = "site",
    rules: Annotated[
        Rules,
        typer.Option(
            "--rules",
            help="URL canonicalization rules (see 'crawlkit canon'): default for a search "
            "crawl; safe (archive's) fetches and stores each URL as the page links it, "
            "query order, session ids and tracking parameters kept. Kept with the "
            "crawl's seeds: a later run uses the first run's.",
            case_sensitive=False,
        ),
    ] = Rules.DEFAULT,
    max_pages: Annotated[
        int | None,
        typer.Option("--max-pages", min=0, help="Stop after this many fetched pages."),
    ] = None,
    duration: Annotated[
        str | None,
        typer.Option("--for", help="Stop cleanly after this long (e.g. 50m), for cron."),
    ] = None,
    max_wait: Annotated[
        str | None,
        typer.Option(
            "--max-wait",
            help="When only deferred URLs are left (a host's 429/503 backoff, a "
            "robots.txt that could not be had, a failed host), end the run instead of "
            "waiting longer than this for the first of them (e.g. 10m); the summary says "
            "when it is due, and the next run fetches it. Default: wait, as long as --for "
            "allows ('crawlkit archive': 10m).",
            show_default=False,
        ),
    ] = None,
    warc_dir: Annotated[
        Path | None,
        typer.Option("--warc-dir", help="Where WARC files go (default STATE/warc)."),
    ] = None,
    concurrency: Concurrency = CONCURRENCY_DEFAULT,
    min_delay: MinDelay = MIN_DELAY_DEFAULT,
    delay_factor: DelayFactor = DELAY_FACTOR_DEFAULT,
    per_ip: PerIp = PER_IP_DEFAULT,
    per_ip_delay: PerIpDelay = None,
    ip_table: IpTableFile = None,
    timeout: Timeout = TIMEOUT_DEFAULT,
    max_body: MaxBody = MAX_BODY_DEFAULT,
    max_decoded: MaxDecoded = MAX_DECODED_DEFAULT,
    backoff: Backoff = BACKOFF_DEFAULT,
    max_backoff: MaxBackoff = MAX_BACKOFF_DEFAULT,
    warc_size: WarcSize = WARC_SIZE_DEFAULT,
    warc_prefix: WarcPrefix = WARC_PREFIX_DEFAULT,
    warc_version: WarcVersion = WARC_VERSION_DEFAULT,
    operator: Operator = None,
    collection: Collection = None,
    description: Description = None,
    agent: Agent = AGENT_DEFAULT,
    allow_net: AllowNet = None,
    hosts_file: HostsFile = None,
    ca_file: CaFile = None,
    insecure: Insecure = False,
    dns_server: DnsServer = None,
    jobs: Annotated[
        int,
        typer.Option(
            "-j",
            "--jobs",
            help="Extract processes kept for the run (1 at least), each parsing a cut cycle "
            "while the fetcher goes on. Beside them one step process runs the dedup and "
            "recrawl steps (it owns the dedup index and the recrawl history).",
        ),
    ] = 1,
    batch: Annotated[
        int,
        typer.Option(
            "--batch",
            help="Most URLs taken from the frontier at once (the fetcher holds at most 64 × "
            "--concurrency URLs it has not answered).",
        ),
    ] = 1000,
    per_host: Annotated[
        int | None,
        typer.Option(
            "--per-host",
            help="Most URLs of one host the fetcher holds at once: few, so it holds work for "
            "many hosts and a slow host (a Crawl-delay) keeps no backlog. Not given: 4, "
            "and with few hosts queued up to a second of --min-delay gaps, at most 64, "
            "so one site is not fed a page at a time.  [default: 4]",
            show_default=False,
        ),
    ] = None,
    no_budgets: Annotated[
        bool, typer.Option("--no-budgets", help="No per-site page budgets (a fixed site list).")
    ] = False,
    max_depth: MaxDepth = MAX_DEPTH_DEFAULT,
    shard: Annotated[
        int | None,
        typer.Option(
            "--shard",
            help="Crawl only the sites of this shard (0-based); links of other shards go "
            "to STATE/outbox/shard-J/ for 'crawlkit shard --deliver'.",
        ),
    ] = None,
    shards: Shards = None,
    workers: Annotated[
        int,
        typer.Option(
            "--workers",
            min=1,
            help="Crawl processes: N >= 2 runs N workers, each a shard owning its sites by "
            "registered-domain hash (STATE/workers/K/), the links between them handed on "
            "every 0.5 s, one summary and one WARC directory; --concurrency is the whole "
            "crawl's, -j per worker. A state takes more workers (its sites are handed "
            'over first), never fewer. See README "Scaling with --workers".',
        ),
    ] = 1,
    slot_map: SlotMapFile = None,
    requisites: Requisites = True,
    sitemap: Sitemap = None,
    ignore_robots_for: IgnoreRobotsFor = None,
    header: Header = None,
    cookies: Cookies = None,
    netrc: Netrc = None,
    proxy: Proxy = None,
    trust_env: TrustEnv = False,
    exclude: Exclude = None,
    ignore_file: IgnoreFile = None,
    timeline: TimelineFile = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    do_explain: Annotated[
        bool,
        typer.Option("--explain", help="Print the equivalent stage commands of one cycle; exit."),
    ] = False,
) -> None:
    """Crawl from seeds until the frontier is empty or a limit is reached; resumable.

    To archive a site (every page, every requisite, a report and a WACZ), use
    'crawlkit archive URL OUT' instead: this command keeps per-site page budgets
    (--no-budgets turns them off), and the summary says on a line of its own how
    many URLs (pages and requisites) they left parked.

    The whole loop in one command, composed of the stages' own library functions on
    one state directory: frontier next, fetch (async, polite, into WARC), extract,
    dedup, seen-merge, frontier add, recrawl. Each cycle's records stay in
    STATE/crawl/cycles/NNNNNN/ (batch, fetch log, pages, links, dedup, refusals);
    WARC files go to --warc-dir. Run the same command again to continue: after a
    clean stop, after --for, or after kill -9 (only the fetches in flight are
    repeated, and counted); a URL fetched before a stop is not fetched again. A
    second run on the same state directory is refused (exit 1). Deferred URLs (429,
    503, robots.txt unavailable, not started before the stop) wait in one place,
    STATE/crawl/waiting.ndjson.zst, until their retry time, and are queued once;
    out-of-scope, excluded and trap URLs are refused with a reason. A seed named
    again that was never fetched (it failed, was refused or deferred, or was never
    reached) is due at once in every run that names it: a robots.txt that could not
    be had and a failed name lookup are asked again first; other failed URLs come
    back once their backoff (1 h, doubling) has run out. The summary names each
    error reason (robots.txt unavailable too) with an example URL, and a crawl that
    could fetch nothing at all exits 1, without waiting for its retries. A host that
    answers 429 or 503 waits 60 s doubling to 1 h, at least its Retry-After, which is
    capped at 24 h (a server asking for a week is asked again the next day). The first
    SIGINT or SIGTERM (Ctrl-C, a job runner's stop), also while the crawl starts,
    stops the crawl gracefully: requests in flight finish, name lookups under way
    are abandoned, the rest waits for the next run, the summary says "interrupted",
    exit 0; a second signal stops it at once (a restart recovers).

    Bounded: the fetcher holds at most --per-host URLs of one host at once (not
    given: up to 64 with few hosts queued and a short --min-delay); from 2
    cut cycles waiting for post-processing each refill of the fetcher is halved per
    cycle more, and at 6 it gets no more. --for stops fetching at
    the deadline and post-processing 5 s later; what is left is finished by the next
    run. --max-pages counts every request for a page (robots.txt aside) over all runs.

    For archives: each page's requisites are fetched even outside --scope (one hop;
    a stylesheet's url() and @import count as one more, at most 5; the links of a
    requisite are not followed), recorded with reason "requisite"; --exclude and
    --ignore-file refuse URLs by pattern, also URLs queued before the file changed;
    robots.txt Sitemap lines and --sitemap URLs are fetched like pages and their
    URLs queued (lastmod raises priority); the WARC directory keeps index.cdxj
    (pywb's CDXJ, SURT-sorted) up to date at the end of every run. See README
    "Archiving a site".

    Sharded (--shard K with --shards N or --slot-map FILE): the state directory
    becomes shard K's for good (STATE/shard.json); only seeds and links of sites whose
    slot K owns are crawled; the rest go to STATE/outbox/shard-J/, and files that
    'crawlkit shard --deliver' put in STATE/inbox/ are queued. See README "Scaling out".

    Memory grows with the URLs the fetcher holds (at most --per-host per host, 64
    with few hosts queued) and
    the frontier's per-site counters; queues, seen set and history are on disk. A
    one-line progress report per cycle goes to stderr when it is a terminal; a summary
    at the end.

    Example:

        crawlkit crawl https://example.org/ --state S --scope site --for 50m
        crawlkit crawl seeds.txt --state S --explain
    """
    rep = reporter()
    streams.check_output_dir(warc_dir, "--warc-dir")
    streams.check_output(timeline, "--timeline")
    if timeline is not None and timeline.suffix in (".zst", ".gz"):
        # (appended to once a second, so never compressed: the name would say otherwise)
        raise UsageError(f"--timeline {timeline}: plain NDJSON is appended to it; no .zst/.gz")
    if not scope:
        raise UsageError("--scope must not be empty")
    Scope(scope)  # a bad regex is a usage error here, --explain too (as a run says)
    run_for = seconds_of(duration, "--for") if duration else None
    wait_at_most = seconds_of(max_wait, "--max-wait") if max_wait is not None else None
    if run_for is not None and run_for <= 0:  # 0 read as "no limit" ran a crawl forever
        raise UsageError(f"--for {duration}: must be more than 0 (leave it out for no limit)")
    options = CrawlOptions(
        scope=scope,
        rules=rules.value,
        max_pages=max_pages,
        duration=run_for,
        max_wait=wait_at_most,
        batch_size=batch,
        per_host=4 if per_host is None else per_host,
        per_host_given=per_host is not None,
        jobs=jobs,
        budgets=not no_budgets,
        warc_dir=warc_dir,
        fetch=fetch_config(
            state=None,  # the crawl reads the cookies jar of its state, each worker its own
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
        ),
        warc=warc_options(warc_size, warc_prefix, warc_version),
        warc_info={**warc_info(operator, collection, description), "command-line": command_line()},
        allow_net=tuple(allow_net or ()),
        hosts_file=hosts_file,
        net=NetOptions(ca_file=ca_file, insecure=insecure, dns_server=dns_server),
        limits=TrapLimits(max_depth=max_depth if max_depth > 0 else None),
        shard=shard,
        shards=shards,
        slot_map=slot_map,
        archive=archive_options(requisites, exclude, ignore_file),
        timeline=timeline,
    )
    if do_explain:
        flags = stage_flags(click.get_current_context())
        given = [*(seeds or []), *(sitemap or [])]
        if workers > 1:
            print(explain_workers(str(state), options, workers, flags, given))
        else:
            print(explain(str(state), options, flags, given))
        return
    cap_arenas()  # before the crawl's threads start (crawl/arenas.py)
    collect_by_clock()  # crawlkit/collector.py
    all_seeds = read_seeds(seeds or [], rep) + list(sitemap or [])
    seeds_damaged = rep.input_damaged
    if workers > 1:
        summary = WorkerFleet(
            state, all_seeds, options, workers, reporter=rep, progress=progress_printer()
        ).run()
    else:
        check_single(state)
        summary = crawl(
            state, all_seeds, options, reporter=rep, progress=progress_printer()
        ).to_json()
    if sys.stderr.isatty():
        sys.stderr.write("\n")
    if as_json:
        streams.write_verdict(orjson.dumps(summary) + b"\n")  # a failure below stands
    else:
        print(summary_text(summary), file=sys.stderr)
    if summary.get("failure"):  # a worker's --proxy failed: the line one process ends on
        raise CrawlkitError(summary["failure"])
    if summary.get("failed"):
        raise CrawlkitError(f"{summary['stopped']}; run the crawl again to finish what was cut")
    if seeds_damaged:
        raise CrawlkitError("the seeds were read up to damage (see above); fix them and run again")
    failed = workers_fetched_nothing if workers > 1 else fetched_nothing
    if failed(state, summary):
        why = "; ".join(
            f"{r} {e['count']}, e.g. {e['example']}" for r, e in summary["errors"].items()
        )
        raise CrawlkitError(f"nothing was fetched ({why or 'see the outcomes above'})")


def command_line() -> str:
    """This process's command line, secrets masked, for the WARC's warcinfo record."""
    return shlex.join(["crawlkit", *mask_argv(list(invocation.argv))])
