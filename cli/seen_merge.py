"""crawlkit seen-merge."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import orjson
import typer
from crawlkit_cli.app import app, reporter
from crawlkit_cli.options import (
    MAX_DEPTH_DEFAULT,
    URL_LENGTH_DEFAULT,
    Exclude,
    IgnoreFile,
    InputFiles,
    MaxDepth,
    MaxUrlLength,
    OutFile,
    Requisites,
    ScopeOption,
    StateDir,
    excludes,
    renamed,
)

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import InvalidURL, UsageError
from crawlkit.frontier.scope import Scope, adopt_state_rules
from crawlkit.records import Record, Refusal
from crawlkit.seen import SeenStore
from crawlkit.stages.seen_merge import DEFAULT_CHUNK, Line, SeenMerge, read_lines, store_stats
from crawlkit.state import crawl_roots, refuse_workers_state, require_existing_state, workers_of
from crawlkit.url import Canonicalizer, fingerprint_int


@app.command("seen-merge")
def seen_merge(
    files: InputFiles = None,
    state: StateDir = ...,  # type: ignore[assignment]
    out: OutFile = "-",
    capacity: Annotated[
        int | None,
        typer.Option(
            "--capacity",
            help="Design count of the Bloom filter when the seen set is created (or with "
            "--rebuild); recorded in the state. [default: 10000000]",
            show_default=False,
        ),
    ] = None,
    fp_rate: Annotated[
        float | None,
        typer.Option(
            "--fp-rate",
            help="Design false-positive rate of the filter, set like --capacity. [default: 0.001]",
            show_default=False,
        ),
    ] = None,
    chunk_size: Annotated[
        int,
        typer.Option("--chunk-size", help="Records per chunk (checked and committed together)."),
    ] = DEFAULT_CHUNK,
    old_chunk_size: Annotated[int | None, typer.Option("--batch-size", hidden=True)] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Check and write as usual, but change no state."),
    ] = False,
    stats: Annotated[
        bool,
        typer.Option(
            "--stats",
            help="Print the run's figures as one JSON object on stderr (see Stats below).",
        ),
    ] = False,
    stats_file: Annotated[
        Path | None,
        typer.Option(
            "--stats-file",
            help="Write the --stats JSON object to this file instead (atomically).",
            show_default=False,
        ),
    ] = None,
    contains: Annotated[
        list[str] | None,
        typer.Option(
            "--contains",
            help="Only report whether this URL is seen (repeatable; with --contains the "
            "arguments are URLs too, not files). Changes nothing.",
            show_default=False,
        ),
    ] = None,
    scope: ScopeOption = None,
    exclude: Exclude = None,
    ignore_file: IgnoreFile = None,
    max_url_length: MaxUrlLength = URL_LENGTH_DEFAULT,
    max_depth: MaxDepth = MAX_DEPTH_DEFAULT,
    fetched: Annotated[
        Path | None,
        typer.Option(
            "--fetched",
            help="The fetch records of the pages the links were found on (a cycle's fetch "
            "log): apply crawl's link step first (nofollow links passed over, requisites "
            "by --requisites and their hop limit, links of a requisite refused).",
            show_default=False,
        ),
    ] = None,
    requisites: Requisites = True,
    reason: Annotated[
        str | None,
        typer.Option(
            "--reason",
            help="The reason of lines that are bare URLs (seed: a seeds file, which "
            "widens --scope).",
            show_default=False,
        ),
    ] = None,
    refused: Annotated[
        str | None,
        typer.Option(
            "--refused",
            help="Write the records refused by --scope, --exclude, --ignore-file, "
            "--max-url-length and --max-depth here (NDJSON; default: none written, only "
            "counted).",
            show_default=False,
        ),
    ] = None,
    rebuild: Annotated[
        bool,
        typer.Option(
            "--rebuild",
            help="Rebuild the filter from the exact fingerprints (at --capacity/--fp-rate "
            "if given) and exit; reads no input.",
        ),
    ] = False,
) -> None:
    """Pass on only URLs never seen before, and remember them (Bloom filter + exact set).

    Reads link or URL records (NDJSON, optionally zstd or gzip; a line that is not a
    JSON object is taken as a bare URL). Records without "fp" are canonicalized (url,
    host, site and fp are set); records with "fp" are trusted as they are. Writes each
    URL the seen set does not hold, once, in input order, with all its fields (records
    that had "fp" byte for byte); repeats within the input keep the first. A URL that
    cannot be used is reported with its line number and skipped.

    Buffers one chunk (--chunk-size records: their bytes plus about 70 bytes each
    while a chunk is checked) and streams chunk after chunk. Each chunk's new URLs
    are committed to the seen set only after they were written: on stdout, after the
    chunk is flushed; with --out FILE, all at the end, after FILE was renamed into
    place (until then their fingerprints are held pending, 8 bytes each). A URL is
    never marked seen without being written out; a crash or a closed pipe can make a
    rerun repeat URLs, never drop them. Running the same input twice emits nothing
    the second time.

    Scope (--scope host|site|any|REGEX, what crawl --scope does): seed records
    (reason seed) widen it, as do a seed's redirect targets (seed_redirect: true)
    under host and site, and are kept in DIR/scope.json; a URL off the seeds' hosts
    (host) or sites (site), or not matching the regular expression, is not checked nor
    marked seen (so a seed added later that widens the scope finds it new): it is
    written to --refused FILE as the record plus "outcome": "refused", "refused":
    "out-of-scope" and a "detail" naming the scope. Page requisites (reason
    requisite) pass whatever the scope. Likewise, and before the scope, a URL longer
    than --max-url-length is refused "url-length" (no pattern runs on it), and one
    an --exclude or --ignore-file pattern finds is refused "excluded" with the
    pattern as its detail (what crawl --exclude does). After the scope, a link whose
    "depth" is more than --max-depth hops from a seed is refused "max-depth" (page
    requisites are exempt): the depth is that of the path the link was found by, so
    it is not marked seen either, and a shorter path found later passes it (frontier
    add --max-depth would refuse it only after it was marked seen). With --fetched FILE (the
    cycle's fetch records) crawl's link step comes first: nofollow links are passed
    over (they stay in the link file), a page requisite (reason requisite) is
    followed one hop from a page and one more per stylesheet import, at most 5
    ("requisite-depth" past that; none with --no-requisites), and the links of
    something fetched as a requisite are refused ("from-requisite"). --no-requisites
    alone applies the same step without the fetch records. Either reads the input
    whole (one cycle's links).

    State: DIR/seen/ holds sorted runs of 64-bit fingerprints (little-endian uint64;
    runs of a million or more packed to 6 bytes a key), merged LSM-style; a Bloom
    filter file (memory-mapped; 1.8 bytes per URL of capacity at 0.1%); and
    manifest.json, which is replaced atomically as the commit point. When the stored
    count passes the capacity the filter is rebuilt at twice the count, with a
    warning. Every "maybe" of the filter is confirmed against the exact fingerprints.
    --dry-run and --contains take no lock and change nothing. A crawl of --workers N
    keeps a seen set a worker (STATE/workers/K): --contains asks them all, and
    anything else on STATE itself is a usage error.

    Stats (--stats, one JSON object): records, bad_records, duplicates (repeats within
    the input), checked (distinct keys asked of the seen set), bloom_maybes,
    confirmed_seen, false_positives (maybes that were not stored, emitted as new),
    measured_fp_rate (false_positives / (checked - confirmed_seen)), new, committed,
    stored, filter_fill, expected_fp_rate, bytes_per_url_disk (all files),
    bytes_per_url_ram (the filter, which probing keeps resident; the runs are read
    through the page cache, and chunk buffers come on top).

    Example:

        crawlkit seen-merge --state S links.ndjson.zst | crawlkit frontier add --state S
        crawlkit seen-merge --state S --contains https://example.com/
    """
    rep = reporter()
    want_stats = stats or stats_file is not None
    streams.check_output(out, "--out")
    streams.check_output(stats_file, "--stats-file")
    if contains:
        _contains(state, [*contains, *(files or [])])
        return
    refuse_workers_state(
        state,
        "seen sets",
        f"give links to the crawl ('crawlkit crawl SEEDS --state {state}'); --contains "
        "takes it as it is",
    )
    if rebuild:
        if dry_run:
            raise UsageError("--rebuild changes the state; it cannot be a --dry-run")
        if files:
            raise UsageError("--rebuild reads no input; run it on its own")
        with SeenStore.open(state, reporter=rep) as store:
            store.rebuild(capacity, fp_rate)
            if want_stats:
                _emit_stats(stats_file, store_stats(store))
        return
    if refused is not None:
        streams.check_output(refused, "--refused")
    _check_scope(scope)
    patterns = excludes(exclude, ignore_file, max_url_length)
    scoped = Scope.load(state, scope) if scope is not None else None
    adopt_state_rules(state)  # URLs named as the crawl of the state names them
    canon = Canonicalizer()
    lines: Iterable[Line] = read_lines(files, rep)
    link_refused: list[Refusal] = []
    if fetched is not None or not requisites:
        lines, link_refused = _link_step(lines, fetched, requisites, rep)
    to_stdout = streams.is_stdio(out)
    with (
        SeenStore.open(
            state, writable=not dry_run, capacity=capacity, fp_rate=fp_rate, reporter=rep
        ) as store,
        streams.open_output(refused) if refused is not None else contextlib.nullcontext() as side,
    ):
        size = renamed(chunk_size, old_chunk_size, "--chunk-size", "--batch-size", DEFAULT_CHUNK)
        if side is not None:
            for rec in link_refused:
                side.write_record(rec)
        merger = SeenMerge(
            store,
            canonicalizer=canon,
            chunk_size=size,
            reporter=rep,
            dry_run=dry_run,
            scope=scoped,
            on_refused=side.write_record if side is not None else None,
            excludes=patterns,
            max_url_length=max_url_length,
            reason=reason,
            max_depth=max_depth if max_depth > 0 else None,
        )
        with streams.open_output(out) as sink:
            # For stdout, Output.commit is a flush: a chunk counts as written once the
            # pipe has it. A file counts as written only once it is renamed (below).
            merger.run(
                lines,
                sink.write,
                sink.commit if to_stdout else lambda: None,
                commit_each_chunk=to_stdout,
            )
        if scoped is not None and scoped.changed and not dry_run:
            scoped.save()  # the seeds that passed, for every later --scope
        merger.commit_pending()
        if want_stats:
            _emit_stats(stats_file, {**merger.stats.to_json(), **store_stats(store)})
    if merger.stats.bad_records:
        rep.info(f"{merger.stats.bad_records} bad records skipped")
    if merger.stats.out_of_scope:
        rep.info(f"{merger.stats.out_of_scope} URLs outside --scope {scope} refused")
    if merger.stats.excluded:
        rep.info(f"{merger.stats.excluded} URLs refused by --exclude/--ignore-file")
    if merger.stats.too_long:
        rep.info(f"{merger.stats.too_long} URLs longer than {max_url_length} characters refused")
    if merger.stats.too_deep:
        deep = merger.stats.too_deep
        rep.info(f"{deep} URLs more than {max_depth} link hops from a seed refused")
    if rep.input_damaged:
        raise typer.Exit(1)


def _link_step(
    lines: Iterable[Line], fetched: Path | None, requisites: bool, rep: Reporter
) -> tuple[list[Line], list[Refusal]]:
    """The link step of ``crawl`` (:class:`~crawlkit.crawl.archive.LinkPolicy`) over the
    input, which it reads whole (one cycle's links): ``(lines that go on, refused)``."""
    from crawlkit.crawl.archive import ArchiveOptions, LinkPolicy

    found = streams.read_records([fetched], rep) if fetched is not None else ()
    sources = {str(r.get("url")): r for r in found}
    records: list[Record] = []
    for source, lineno, item in lines:
        if isinstance(item, bytes) and item.lstrip()[:1] == b"{":
            try:
                records.append(streams.parse_record(item))
            except ValueError as exc:
                rep.bad_record(source, lineno, str(exc))
        elif isinstance(item, bytes):
            records.append({"url": item.decode("utf-8", "replace").strip()})
        else:
            records.append(item)
    policy = LinkPolicy(ArchiveOptions(requisites=requisites), rep)
    candidates, refused = policy.sort(records, lambda _rec: True, sources)
    return [("links", n, rec) for n, rec in enumerate(candidates, 1)], refused


def _check_scope(spec: str | None) -> None:
    """A bad --scope (empty, a regex that does not compile) is a usage error before any
    input is read."""
    if spec is not None:
        if not spec:
            raise UsageError("--scope must not be empty")
        Scope(spec)


def _contains(state: Path, urls: list[str]) -> None:
    """Whether each URL is seen; in a crawl of --workers, by any worker's seen set (a
    URL is in its owner's alone)."""
    rep = reporter()
    canon = Canonicalizer()
    require_existing_state(state)  # "seen": false of a mistyped --state would mislead
    roots = crawl_roots(state)[1:] if workers_of(state) else [state]
    with contextlib.ExitStack() as stack:
        stores = [
            stack.enter_context(SeenStore.open(root, writable=False, reporter=rep))
            for root in roots
        ]
        sink = stack.enter_context(streams.open_output("-"))
        for text in urls:
            try:
                url = canon.canonicalize(text)
            except InvalidURL as exc:
                rep.warn(str(exc), "bad URL")
                sink.write_record({"input": text, "url": None, "seen": None, "error": str(exc)})
                continue
            fp = fingerprint_int(url)
            key = np.array([fp], dtype=np.uint64)
            seen = any(bool(store.contains(key)[0]) for store in stores)
            sink.write_record({"input": text, "url": url, "fp": f"{fp:016x}", "seen": seen})


def _emit_stats(path: Path | None, figures: dict[str, Any]) -> None:
    """The figures as one JSON line: to ``path`` (atomically) or, if None, on stderr."""
    data = orjson.dumps(figures) + b"\n"
    if path is not None:
        streams.atomic_write_bytes(path, data)
    else:
        sys.stderr.buffer.write(data)
        sys.stderr.flush()
