"""``crawl --workers N`` on a state of fewer workers: grow the map, hand over, go on.

:func:`grow_workers` turns ``STATE/workers`` of ``had`` workers into one of ``n``
before any worker runs (the parent holds STATE's lock), in steps that a crash
repeats without loss; ``fleet.json`` is written last, so until then the state is
still one of ``had`` workers with a rebalance under way (only ``--workers n`` goes
on with it, :func:`crawlkit.crawl.workers.prepare`):

1. the slot map grows (:func:`crawlkit.shard.routing.grow`: the fewest slots move,
   their epochs go up) and is saved over ``STATE/workers/map.json``, which every
   worker's ``shard.json`` names;
2. each new worker's directory becomes shard K of that map;
3. each old worker hands the moved sites to the new ones
   (:func:`crawlkit.fleet.handoff.handoff`): host clocks, site knowledge, queued and
   waiting URLs, and copies of the moved sites' recrawl history (what was fetched,
   and when it is due again: else a seed of a moved site, seen but with no fetch in
   the history, would be fetched again as "never fetched") and of the cookies they
   set (``--cookies``);
4. the handed URLs are queued in the new owner's frontier at once (not admitted
   from its inbox, where the seen set of step 5 would take them for seen), under the
   operator blocks of the old workers (the handoff carries them; ``frontier block``
   posts to every worker from then on);
5. the new worker's seen set gets every key of the old workers' seen sets, so a
   link to a page of a moved site that was fetched already is not new to its new
   owner (the keys of other sites do no harm: their URLs never reach it).

Not carried: the dedup index of the moved sites (near-duplicates are found per
worker), and the robots.txt cache (the new owner asks a moved host's robots.txt once
more). The old owner keeps its copy of the moved history: a revisit it finds due is
routed to the new owner, which takes it for seen (the new owner's own copy schedules
it).
Shrinking (``n < had``) is refused.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from crawlkit import streams
from crawlkit.crawl.blocks import hand_posted
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import UsageError
from crawlkit.fleet.handoff import handoff
from crawlkit.frontier.store import Frontier
from crawlkit.seen import SeenStore
from crawlkit.shard.routing import SHARD_FILE, ShardRole, adopt_role, grow, inbox_dir
from crawlkit.shard.slots import SlotMap
from crawlkit.stages.frontier import add_to
from crawlkit.state import open_state

__all__ = ["grow_workers"]


def grow_workers(root: Path, had: int, n: int, reporter: Reporter | None = None) -> dict[str, int]:
    """Make ``root`` (``STATE/workers``) of ``had`` workers one of ``n`` (see the
    module doc); returns what moved. Every worker's state must be unlocked."""
    rep = reporter or NullReporter()
    if n < had:
        raise UsageError(
            f"{root.parent} is a crawl of --workers {had}; fewer workers (--workers {n}) "
            "is not supported"
        )
    map_path = (root / "map.json").resolve()
    current = SlotMap.load(map_path)
    if current.shards == had:
        current = grow(current, n)
        current.save(map_path)  # 1. (a crash after this redoes the rest)
    elif current.shards != n:
        raise UsageError(f"{map_path} has {current.shards} shards, neither {had} nor {n}")
    dirs = [root / str(k) for k in range(n)]
    for k in range(had, n):  # 2.
        dirs[k].mkdir(parents=True, exist_ok=True)
        adopt_role(dirs[k], ShardRole(k, current, map_path))
    moved = dict.fromkeys(["urls", "waiting", "hosts", "sites", "seen_keys", "history"], 0)
    moved["cookies"] = 0
    for src in range(had):  # 3.
        if not (dirs[src] / SHARD_FILE).exists():
            # a worker that never ran (its role is written first): nothing to hand but
            # the operator commands posted to it, never applied
            hand_posted(dirs[src], dirs[had:])
            continue
        for dst in range(had, n):
            for key, count in handoff(map_path, dirs[src], dirs[dst]).items():
                moved[key] += count
    for dst in range(had, n):
        _queue_handed(dirs[dst])  # 4.
        moved["seen_keys"] += _copy_seen(dirs[:had], dirs[dst])  # 5.
    streams.atomic_write_json(root / "fleet.json", {"workers": n})
    rep.info(
        f"workers {had} -> {n}: {moved['sites']} sites, {moved['hosts']} hosts, "
        f"{moved['urls']} queued and {moved['waiting']} waiting URLs handed over"
    )
    return moved


def _queue_handed(state: Path) -> None:
    """Queue the handoff's files of ``state``'s inbox in its frontier, then drop them."""
    files = sorted(inbox_dir(state).glob("*-handoff.ndjson.zst"))
    if not files:
        return
    refused: list[Any] = []
    with open_state(state):
        frontier = Frontier.open(state / "frontier")
        for path in files:
            add_to(frontier, streams.read_records([path]), on_refused=refused.append)
            frontier.commit()
            path.unlink()  # a crash before this queues them twice, never loses them


def _copy_seen(sources: list[Path], dest: Path) -> int:
    """Add every key of the ``sources``' seen sets that ``dest``'s lacks; returns how many."""
    added = 0
    with SeenStore.open(dest) as out:
        for src in sources:
            if not (src / "seen").exists():
                continue
            with SeenStore.open(src, writable=False) as seen:
                for chunk in seen.iter_keys():
                    keys = np.unique(chunk)
                    keys = keys[~out.contains(keys)]
                    if len(keys):
                        out.commit(keys)
                        added += len(keys)
    return added
