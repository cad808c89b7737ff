"""``crawlkit frontier``: add URL records, hand out batches, stats, operator blocks.

The stage works on an opened :class:`~crawlkit.frontier.store.Frontier`:
:func:`add_to`, :func:`links_to` and :func:`take_batch` do one job each and commit;
``crawlkit crawl`` opens the frontier once per run and calls them. The ``frontier_*``
functions are what the CLI's commands call: each opens the frontier of one state
directory (``DIR/frontier``) under the state directory's lock, calls the stage on it
and lets go. ``add`` reads all of its input
before it waits for a lock someone else holds, so a pipe from another stage on the
same state directory (``seen-merge --state S | frontier add --state S``) cannot
deadlock: the writer finishes and lets go of the lock, then ``add`` takes it.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, cast

import orjson

from crawlkit.diag import Reporter
from crawlkit.durable import MANIFEST
from crawlkit.errors import LockedError, StateError, UsageError
from crawlkit.frontier.budgets import BudgetPolicy
from crawlkit.frontier.commands import normalize_target, read_commands
from crawlkit.frontier.scope import Scope
from crawlkit.frontier.store import AddResult, Batch, Frontier, NextOptions
from crawlkit.frontier.traps import TrapLimits
from crawlkit.frontier.waiting import WAITING, WaitingRoom
from crawlkit.patterns import Excludes
from crawlkit.records import Record, Refusal, URLRecord
from crawlkit.seen.store import SUBDIR as SEEN_SUBDIR
from crawlkit.shard.routing import ShardRole, inbox_files, record_site, split_by_owner, write_outbox
from crawlkit.stages.seen_merge import fresh_records
from crawlkit.state import (
    StateDir,
    crawl_roots,
    lock_state,
    open_state,
    refuse_workers_state,
)
from crawlkit.streams import read_records
from crawlkit.times import parse_time
from crawlkit.url import Canonicalizer

__all__ = [
    "add_to",
    "crawl_frontier_stats",
    "frontier_add",
    "frontier_block",
    "frontier_defer",
    "frontier_links",
    "frontier_next",
    "frontier_seed_sites",
    "frontier_stats",
    "links_to",
    "lock_state",
    "take_batch",
    "take_due",
]


def _spool(records: Iterable[Record]) -> IO[bytes]:
    spool = tempfile.TemporaryFile()  # noqa: SIM115 - closed by the caller
    for rec in records:
        spool.write(orjson.dumps(rec, option=orjson.OPT_APPEND_NEWLINE))
    spool.seek(0)
    return spool


def _unspool(spool: IO[bytes]) -> Iterator[Record]:
    for line in spool:
        yield orjson.loads(line)


@contextlib.contextmanager
def _locked_with_input(
    state_path: str | os.PathLike[str],
    records: Iterable[Record],
    lock_wait: float,
    read_first: bool,
    reporter: Reporter | None,
) -> Iterator[tuple[StateDir, Iterable[Record]]]:
    """The locked state directory and the records to read under the lock.

    With ``read_first``, or when someone else holds the lock, the input is read to
    its end into a temporary file before waiting for the lock (see module doc).
    """
    _refuse_a_crawl_of_workers(state_path)
    spool = None
    if read_first:
        spool = _spool(records)
        records = _unspool(spool)
        state = lock_state(state_path, wait=lock_wait, reporter=reporter)
    else:
        try:
            state = open_state(state_path)
        except LockedError:
            spool = _spool(records)
            records = _unspool(spool)
            state = lock_state(state_path, wait=lock_wait, reporter=reporter)
    with state, contextlib.closing(spool) if spool else contextlib.nullcontext():
        yield state, records


def _refuse_a_crawl_of_workers(state_path: str | os.PathLike[str]) -> None:
    """A state of ``crawl --workers N`` queues its URLs in its workers' frontiers
    (``STATE/workers/K``); one added to or taken from its own would never be seen."""
    refuse_workers_state(
        state_path,
        "frontiers",
        f"give new seeds to 'crawlkit crawl SEEDS --state {state_path}' (stats and block "
        "take it as it is)",
    )


def add_to(
    frontier: Frontier,
    records: Iterable[Record],
    *,
    on_refused: Callable[[Refusal], None],
    scope: Scope | None = None,
    canonicalizer: Canonicalizer | None = None,
    now: float | None = None,
    excludes: Excludes | None = None,
    waiting: WaitingRoom | None = None,
) -> AddResult:
    """``frontier add`` on an opened frontier: queue ``records`` and commit.

    With ``excludes``, URLs over the length limit (``url-length``) and URLs a pattern
    matches (``excluded``) go to ``on_refused`` first. With a ``scope``, URLs outside
    it go to ``on_refused`` (``"refused": "out-of-scope"``, and a ``detail`` naming the
    scope); seed records widen it, and a widened scope is saved (:meth:`Scope.save`)
    before the commit, so no queued seed is missing from it. With ``waiting``, URL
    records whose ``due`` is after ``now`` go there instead of the queues (saved before
    the commit: a crash holds them again, never loses them), for :func:`take_due` to
    queue when their time comes. All or nothing: the records are committed together
    at the end.
    """
    out_of_scope: list[Refusal] = []
    held: list[URLRecord] = []
    if excludes:
        records = excludes.sort(records, out_of_scope)
    if scope is not None:
        records = scope.sort(records, out_of_scope, canonicalizer or Canonicalizer())
    if waiting is not None:
        records = _not_due_yet(records, held, time.time() if now is None else now)
    result = frontier.add_records(records, now=now, on_refused=on_refused)
    for rec in out_of_scope:
        on_refused(rec)
    result.refused += len(out_of_scope)
    if scope is not None and scope.changed:
        scope.save()
    if waiting is not None and held:
        result.held = waiting.hold(held)
        waiting.save()
    frontier.commit()
    return result


def _not_due_yet(records: Iterable[Record], held: list[URLRecord], now: float) -> Iterator[Record]:
    """``records`` but the URL records whose ``due`` is after ``now``: those go to ``held``."""
    for rec in records:
        due = parse_time(rec.get("due")) if rec.get("url") and rec.get("due") else None
        if due is not None and due > now:
            held.append(cast(URLRecord, rec))
        else:
            yield rec


def take_due(
    frontier: Frontier,
    waiting: WaitingRoom,
    *,
    on_refused: Callable[[Refusal], None],
    now: float | None = None,
) -> AddResult:
    """Queue the waiting room's URLs whose time has come (not committed: the caller
    commits the frontier, then saves ``waiting``, so a crash between the two queues
    them twice at worst, never loses them)."""
    due = waiting.due(time.time() if now is None else now)
    if not due:
        return AddResult()
    return frontier.add_records(due, now=now, on_refused=on_refused)


def frontier_defer(
    state_path: str | os.PathLike[str],
    records: Iterable[Record],
    *,
    lock_wait: float = 3600.0,
    read_first: bool = False,
    reporter: Reporter | None = None,
) -> tuple[int, int]:
    """Put the deferred fetch records among ``records`` (``outcome: "deferred"``) in the
    state directory's waiting room until their ``retry_at`` (what ``crawl`` does after
    each cycle); returns (deferred records read, taken in: a URL already waiting keeps
    the later time). Other records are passed over."""
    with _locked_with_input(state_path, records, lock_wait, read_first, reporter) as (
        state,
        records,
    ):
        deferred = [rec for rec in records if rec.get("outcome") == "deferred"]
        room = WaitingRoom(state.path / WAITING)
        taken = room.add(deferred)
        room.save()
    return len(deferred), taken


def links_to(frontier: Frontier, records: Iterable[Record]) -> tuple[int, int]:
    """``frontier links`` on an opened frontier: feed the site graph and commit."""
    counts = frontier.note_links(records)
    frontier.commit()
    return counts


def take_batch(frontier: Frontier, opts: NextOptions, *, write: Callable[[Batch], None]) -> Batch:
    """``frontier next`` on an opened frontier: apply operator commands posted since it
    was opened, take a batch, ``write(batch)`` (which must make it safe), then commit
    the removal. At least once: if ``write`` raises or the process dies before the
    commit, the same URLs are still queued."""
    frontier.apply_commands()
    batch = frontier.next(opts)
    write(batch)
    frontier.commit()
    return batch


def frontier_add(
    state_path: str | os.PathLike[str],
    records: Iterable[Record],
    *,
    on_refused: Callable[[Refusal], None],
    limits: TrapLimits | None = None,
    policy: BudgetPolicy | None = None,
    now: float | None = None,
    lock_wait: float = 3600.0,
    read_first: bool = False,
    reporter: Reporter | None = None,
    role: ShardRole | None = None,
    scope: str | None = None,
    excludes: Excludes | None = None,
) -> AddResult:
    """Queue ``records`` in the frontier under ``state_path``; refusals go to ``on_refused``.

    ``scope`` (``host``, ``site``, ``any`` or a regex; see
    :mod:`crawlkit.frontier.scope`) refuses URLs outside it, relative to the seeds
    kept in the state directory and those among ``records``; ``excludes``
    (:mod:`crawlkit.patterns`) refuses URLs its patterns match, and over-long ones.

    ``read_first`` reads all of ``records`` (into a temporary file) before taking the
    lock; use it when they come from a pipe, whose writer may be another stage
    holding the same lock until it has written everything. Otherwise the lock is
    tried first, and the input is read first only if someone else holds it.

    All or nothing: the records are committed together at the end, so a crash
    queues none of them and a rerun on the same input is what it should be.

    With a shard ``role``: URL records of other shards' sites go to their outboxes
    (``STATE/outbox/shard-J/``, written before the commit) instead of the queues, and
    the files ``crawlkit shard --deliver`` put in ``STATE/inbox/`` are queued too:
    checked against this shard's seen set when it has one (marked seen only after
    the queues commit, invariant 4), and deleted last, so a crash repeats them at
    worst.
    """
    with _locked_with_input(state_path, records, lock_wait, read_first, reporter) as (
        state,
        records,
    ):
        frontier = Frontier.open(state.sub("frontier"), policy=policy, limits=limits)
        canon = Canonicalizer()
        scoped = Scope.load(state.path, scope) if scope is not None else None
        room = WaitingRoom(state.path / WAITING)
        with frontier.discard_on_error():
            if role is None:
                return add_to(
                    frontier,
                    records,
                    on_refused=on_refused,
                    scope=scoped,
                    canonicalizer=canon,
                    now=now,
                    excludes=excludes,
                    waiting=room,
                )
            others: dict[int, list[Record]] = defaultdict(list)
            inbox = inbox_files(state.path, reporter)
            delivered_records = [rec for path in inbox for rec in read_records([path], reporter)]
            # Delivered links, and the site pairs other shards' crawls send, feed this
            # shard's site graph (site budgets); only URL records are queued.
            frontier.note_links(delivered_records)
            urls = [rec for rec in delivered_records if rec.get("url")]
            with contextlib.ExitStack() as stack:
                # Delivered URLs this shard's seen set has seen are left out; without a seen
                # set (a pipeline that keeps none) all of them are queued.
                fresh, mark_seen = urls, lambda: None
                out_of_scope: list[Refusal] = []
                if urls and (state.path / SEEN_SUBDIR).exists():
                    # Out of scope or too deep: refused before the seen set, so a
                    # later seed or a shorter path still brings them (invariant 4).
                    new = stack.enter_context(
                        fresh_records(
                            state.path,
                            urls,
                            canonicalizer=canon,
                            reporter=reporter,
                            on_refused=out_of_scope.append,
                            scope=scoped,
                            max_depth=(limits or TrapLimits()).max_depth,
                        )
                    )
                    fresh, mark_seen = new.records, new.commit
                candidates: Iterable[Record] = itertools.chain(records, fresh)
                if excludes:
                    candidates = excludes.sort(candidates, out_of_scope)
                if scoped is not None:
                    candidates = scoped.sort(candidates, out_of_scope, canon)
                held: list[URLRecord] = []
                mine = _keep_own(role, canon, candidates, others)
                mine = _not_due_yet(mine, held, time.time() if now is None else now)
                result = frontier.add_records(mine, now=now, on_refused=on_refused)
                for rec in out_of_scope:
                    on_refused(rec)
                result.refused += len(out_of_scope)
                result.routed = write_outbox(state.path, others, "add")
                if scoped is not None and scoped.changed:
                    scoped.save()
                if held:
                    result.held = room.hold(held)
                    room.save()
                frontier.commit()
                mark_seen()  # only now that they are queued (invariant 4)
            result.delivered = len(fresh)
            for path in inbox:
                path.unlink(missing_ok=True)
    return result


def _keep_own(
    role: ShardRole,
    canon: Canonicalizer,
    records: Iterable[Record],
    others: dict[int, list[Record]],
) -> Iterator[Record]:
    """The records of ``role``'s sites; URL records of other shards go into ``others``.

    Records without a URL (dedup's site records) stay: they only tune this shard's
    budgets. A URL that does not parse stays too, for the frontier to refuse it.
    """
    for rec in records:
        site = record_site(rec, canon) if rec.get("url") else None
        owner = role.shard if site is None else role.owner(site)
        if owner == role.shard:
            yield rec
        else:
            others[owner].append(rec)


def frontier_links(
    state_path: str | os.PathLike[str],
    records: Iterable[Record],
    *,
    lock_wait: float = 3600.0,
    read_first: bool = False,
    reporter: Reporter | None = None,
) -> tuple[int, int]:
    """Feed link records to the site graph (see :meth:`Frontier.note_links`)."""
    with _locked_with_input(state_path, records, lock_wait, read_first, reporter) as (
        state,
        records,
    ):
        frontier = Frontier.open(state.sub("frontier"))
        with frontier.discard_on_error():
            return links_to(frontier, records)


def frontier_seed_sites(state_path: str | os.PathLike[str], sites: Iterable[str]) -> None:
    """Mark sites as seeds in the site graph, queueing nothing (see :meth:`Frontier.note_seeds`)."""
    with open_state(state_path) as state:
        frontier = Frontier.open(state.sub("frontier"))
        frontier.note_seeds(sites)
        frontier.commit()


def frontier_next(
    state_path: str | os.PathLike[str],
    opts: NextOptions,
    *,
    write: Callable[[Batch], None],
    policy: BudgetPolicy | None = None,
    lock_wait: float = 3600.0,
    reporter: Reporter | None = None,
    role: ShardRole | None = None,
    excludes: Excludes | None = None,
) -> Batch:
    """Hand out one batch: ``write(batch)`` must make it safe, then the removal commits.

    At least once: if ``write`` raises or the process dies before the commit, the
    same URLs are still queued and come out again.

    With ``excludes``, queued URLs its patterns match now (the ignore file may have
    changed since they were queued) are not in the batch: they are among its
    ``refused`` records (``excluded``, or ``url-length``), and leave the queues with it.

    With a shard ``role``, each URL record carries ``shard_epoch`` (its slot's epoch
    in the map), which fetchers check (invariant 6); a queued URL of a slot the map
    has since moved to another shard goes to that shard's outbox, not into the batch.

    First the waiting room's URLs whose time has come (``opts.now``) are queued
    (:func:`take_due`; refused ones join the batch's refused records); the room is
    saved after the commit.
    """
    _refuse_a_crawl_of_workers(state_path)
    with lock_state(state_path, wait=lock_wait, reporter=reporter) as state:
        frontier = Frontier.open(state.sub("frontier"), policy=policy)
        room = WaitingRoom(state.path / WAITING)
        with frontier.discard_on_error():
            released: list[Refusal] = []
            take_due(frontier, room, on_refused=released.append, now=opts.now)
            batch = frontier.next(opts)
            batch.refused[:0] = released
            if opts.budgets and len(batch.lines) < opts.max_urls:  # short: say what waits
                batch.over_budget = frontier.over_budget(limit=3)
            if excludes:
                batch = _without_excluded(batch, excludes)
            if role is not None:
                batch = _stamped(state.path, role, batch)
            write(batch)
            frontier.commit()
        room.save()
    return batch


def _without_excluded(batch: Batch, excludes: Excludes) -> Batch:
    """``batch`` with the URLs ``excludes`` refuses moved to its refused records."""
    refused = list(batch.refused)
    lines = []
    excludes.refresh()
    for line in batch.lines:
        out = excludes.refusal(orjson.loads(line))
        if out is None:
            lines.append(line)
        else:
            refused.append(out)
    return Batch(
        lines=lines,
        refused=refused,
        held_per_host=batch.held_per_host,
        over_budget=batch.over_budget,
    )


def _stamped(state: Path, role: ShardRole, batch: Batch) -> Batch:
    mine, others = split_by_owner(role, (orjson.loads(line) for line in batch.lines))
    write_outbox(state, others, "moved")  # before the batch's removal commits
    lines = [
        orjson.dumps(
            {**rec, "shard_epoch": role.epoch(str(rec.get("site") or ""))},
            option=orjson.OPT_APPEND_NEWLINE,
        )
        for rec in mine
    ]
    return Batch(
        lines=lines,
        refused=batch.refused,
        held_per_host=batch.held_per_host,
        over_budget=batch.over_budget,
    )


def frontier_stats(state_path: str | os.PathLike[str]) -> dict[str, object]:
    """The frontier's counters, read without taking the lock (a running crawl keeps it)."""
    directory = Path(state_path) / "frontier"
    if not (directory / MANIFEST).exists():
        return Frontier(directory).stats()
    for attempt in range(5):
        try:
            return Frontier.open(directory, read_only=True).stats()
        except StateError:
            # A writer may have committed between our reading its manifest and its
            # side files (and removed the old ones): read again.
            if attempt == 4:
                raise
            time.sleep(0.05)
    raise AssertionError("unreachable")


def crawl_frontier_stats(state_path: str | os.PathLike[str]) -> dict[str, object]:
    """:func:`frontier_stats` of a crawl's state; of a ``crawl --workers N`` state, the
    workers' frontiers as one (each URL is queued in its owner's alone): counts summed
    (the sites known the most one knows: each knows them all), the per-level lists
    level by level, the budget period the latest and its start the
    earliest, the 10 sites with the most parked URLs of all, the blocks joined."""
    workers = crawl_roots(Path(state_path))[1:]
    if not workers:
        return frontier_stats(state_path)
    parts: list[dict[str, Any]] = [frontier_stats(root) for root in workers]
    merged: dict[str, Any] = _summed(parts)
    budgets = [part["budgets"] for part in parts]
    starts = [b["cycle_start"] for b in budgets if b["cycle_start"]]
    top = sorted(
        (site for b in budgets for site in b["parked_sites"]),
        key=lambda site: (-site["parked"], site["site"]),
    )
    merged["budgets"].update(
        cycle=max(b["cycle"] for b in budgets),
        cycle_start=min(starts) if starts else None,
        parked_sites=top[:10],
    )
    merged["blocked"] = sorted({target for part in parts for target in part["blocked"]})
    # every worker's site table learns every site (the site links are shared): the
    # most any knows, not the sum (two workers on a web of 32 sites said 64)
    merged["sites_known"] = max(int(part.get("sites_known", 0)) for part in parts)
    return merged


def _summed(parts: list[Any]) -> Any:
    """Numbers summed, dicts key by key, lists of numbers item by item, across
    ``parts`` of one shape; anything else is the first part's."""
    first = parts[0]
    if isinstance(first, bool) or first is None:
        return first
    if isinstance(first, int | float):
        return sum(parts)
    if isinstance(first, dict):
        keys = dict.fromkeys(k for part in parts for k in part)
        return {k: _summed([part[k] for part in parts if k in part]) for k in keys}
    if isinstance(first, list) and all(isinstance(x, int) for part in parts for x in part):
        width = max(len(part) for part in parts)
        return [sum(part[i] for part in parts if i < len(part)) for i in range(width)]
    return first


def frontier_block(
    state_path: str | os.PathLike[str], target: str, *, unblock: bool = False
) -> list[Path]:
    """Post a block (or unblock) of a site or host; applied by the next ``next``/``add``.

    A state of ``crawl --workers N`` gets it in every worker's frontier instead (each
    worker's crawl applies its own): which worker owns the target's site is the slot
    map's business, and a block must hold wherever the site goes. (Posted before the
    first crawl of workers, it is copied to them then: crawlkit.crawl.blocks.)"""
    name = normalize_target(target)
    if not name:  # posted, it would be read past: no block at all
        raise UsageError(f"{target!r} names no site or host")
    open_state(state_path, lock=False)  # creates the directory, takes no lock
    op = "unblock" if unblock else "block"
    roots = crawl_roots(Path(state_path))[1:] or [Path(state_path)]
    if unblock:
        # a target that is no block (in force or posted) would lift nothing, silently:
        # "h1.test" where "h1.test:8080" is blocked left the block in force
        blocked = set[str]()
        for root in roots:
            in_force = set(cast("list[str]", frontier_stats(root).get("blocked") or []))
            blocked |= read_commands(root / "frontier" / "inbox", in_force).blocks
        if name not in blocked:
            listed = ", ".join(sorted(blocked)) or "none"
            raise StateError(f"{name} is not blocked (blocks: {listed}); nothing lifted")
    return [Frontier.post_command(root / "frontier", op, target) for root in roots]
