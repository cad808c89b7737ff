"""Rebalancing handoff: the state of the sites a new slot map moves, carried over.

After :func:`crawlkit.shard.routing.grow` has moved slots to a new shard, :func:`handoff`
moves the host clocks, site knowledge, queued and waiting URLs of the moved sites
from the old owner's state directory to the new owner's. It edits a frontier and a
fetch host-state store, so it sits above them and above :mod:`crawlkit.shard.routing`
(the shard identity and file exchange that those stores' stages use).
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.fetch.cookies import cookie_jar, read_cookies, write_cookies
from crawlkit.fetch.hoststate import HostState
from crawlkit.frontier.store import Frontier
from crawlkit.frontier.waiting import WAITING, journal_of, read_waiting, write_waiting
from crawlkit.recrawl.history import History
from crawlkit.shard.routing import (
    SHARD_FILE,
    ShardRole,
    adopt_role,
    file_stamp,
    inbox_dir,
    read_role,
    write_outbox,
)
from crawlkit.shard.slots import SlotMap
from crawlkit.state import open_state
from crawlkit.streams import Record
from crawlkit.url import site_of_host

__all__ = ["copy_cookies", "copy_history", "handoff"]


def handoff(
    map_path: str | os.PathLike[str],
    from_state: str | os.PathLike[str],
    to_state: str | os.PathLike[str],
    to_shard: int | None = None,
) -> dict[str, int]:
    """Hand the sites the map no longer gives ``from_state`` to ``to_state``.

    Both state directories are locked for the whole handoff, so neither owner may be
    running. In order: the host clocks of the moved hosts are installed in the new
    owner (the later of the two clocks wins), then what the old owner knew of each
    moved site (linkers, budget used this period, dedup yield) and its operator
    blocks (``frontier block``, the new owner's too from then on), then the queued and
    waiting URLs are written to the new owner's inbox (or the outbox of whichever
    shard now owns them), then they leave the old frontier; then the recrawl history
    of the moved sites and the cookies they set are copied (else no owner revisits a
    moved page: the old one's due recrawls are not its own any more, and the new one
    had no history of them). A crash repeats URLs, never loses them.

    ``to_state`` may be a new directory: with ``to_shard`` it becomes that shard of the
    map (a new node's first state).
    """
    new_map = SlotMap.load(map_path)
    old_role, new_role = read_role(from_state), read_role(to_state)
    if new_role is None and to_shard is not None:
        Path(to_state).mkdir(parents=True, exist_ok=True)
        new_role = adopt_role(to_state, ShardRole(to_shard, new_map, Path(map_path)))
    if old_role is None:
        raise UsageError(f"{from_state} is no shard state directory (no {SHARD_FILE})")
    if new_role is None:
        raise UsageError(
            f"{to_state} is no shard state directory yet: give --shard K, its number in "
            "the grown map, to make it one"
        )
    with open_state(from_state) as src, open_state(to_state) as dst:

        def moved(site: str) -> bool:
            return new_map.shard_of_site(site) != old_role.shard

        counts = {"urls": 0, "waiting": 0, "hosts": 0, "sites": 0}
        # 1. host clocks, so the new owner waits each host's full gap
        src_hosts = HostState(src.sub("fetch"))
        dst_hosts = HostState(dst.sub("fetch"))
        try:
            for key, rec in src_hosts.hosts():
                site = site_of_host(key.rsplit(":", 1)[0] if not key.endswith("]") else key)
                if not moved(site) or new_map.shard_of_site(site) != new_role.shard:
                    continue
                mine = dst_hosts.host(key)
                if mine is None or mine.next_allowed < rec.next_allowed:
                    dst_hosts.put_host(key, rec)
                counts["hosts"] += 1
            dst_hosts.commit()
        finally:
            src_hosts.close()
            dst_hosts.close()
        # 2. what the old owner knew of each moved site (linkers, budget used this
        # period, dedup yield), so its budget stays what it was; and its operator
        # blocks (posted ones applied by the open), so a moved site stays blocked
        frontier = Frontier.open(src.sub("frontier"))
        for target in sorted(frontier.blocks):
            Frontier.post_command(dst.sub("frontier"), "block", target)
        receiver = Frontier.open(dst.sub("frontier"))
        if receiver.cycle_start is None and frontier.cycle_start is not None:
            # ... and the budget period it was used in: a new owner's first batch would
            # start a period of its own, which forgets every site's pages used
            receiver.cycle_start = frontier.cycle_start
            receiver.cycle_number = frontier.cycle_number
        for site, info in frontier.sites.sites.items():
            if moved(site) and new_map.shard_of_site(site) == new_role.shard:
                receiver.sites.adopt(site, info)
                counts["sites"] += 1
        receiver.commit()
        # 3. queued and waiting URLs to their new owners
        taken = frontier.take_where(lambda r: moved(str(r.get("site") or "")))
        waiting_path = src.path / WAITING
        waiting = read_waiting(waiting_path)
        keep = [r for r in waiting if not moved(str(r.get("site") or ""))]
        leaving = [  # the new owner stamps its own epoch when it hands them out
            {k: v for k, v in r.items() if k not in ("retry_at", "shard_epoch")}
            for r in waiting
            if moved(str(r.get("site") or ""))
        ]
        by_owner: dict[int, list[Record]] = defaultdict(list)
        for queued in [*taken, *leaving]:
            by_owner[new_map.shard_of_site(str(queued["site"]))].append(queued)
        for shard, records in by_owner.items():
            if shard == new_role.shard:
                name = f"{file_stamp()}-handoff.ndjson.zst"
                with streams.open_output(inbox_dir(dst.path) / name) as out:
                    out.write_records(records)
            else:
                write_outbox(src.path, {shard: records}, "handoff")
        frontier.commit()
        if waiting_path.exists() or journal_of(waiting_path).exists():
            write_waiting(waiting_path, keep)
        counts["urls"] = len(taken)
        counts["waiting"] = len(leaving)
        # 4. what the new owner needs to revisit the moved sites' pages, and their
        # sessions (a copy: the old owner's is no longer used for them)
        counts["history"] = copy_history([src.path], dst.path, new_map, new_role.shard)
        counts["cookies"] = copy_cookies([src.path], dst.path, new_map, new_role.shard)
        # 5. both follow the new map from now on
        for state, role in ((src.path, old_role), (dst.path, new_role)):
            role.slot_map, role.map_path = new_map, Path(map_path)
            streams.atomic_write_json(state / SHARD_FILE, role.to_json())
    return counts


def copy_history(sources: list[Path], dest: Path, slot_map: SlotMap, shard: int) -> int:
    """Copy the recrawl history entries of shard ``shard``'s sites from the ``sources``
    into ``dest``'s (the newest fetch wins); returns how many."""
    copied = 0
    for src in sources:
        if not (src / "recrawl").exists():
            continue
        history = History(src / "recrawl")
        try:
            table = history.table()
            ours = np.array(
                [bool(s) and slot_map.shard_of_site(s) == shard for s in table.sites], bool
            )
            fps = [int(fp) for fp in table.fp[ours[table.site_ix]]]
            entries = list(history.entries(fps))
        finally:
            history.close()
        if not entries:
            continue
        out = History(dest / "recrawl")
        try:
            have = {e.fp: e for e in out.entries([e.fp for e in entries])}
            newer = [
                e
                for e in entries
                if e.fp not in have or (have[e.fp].last_event or 0) < (e.last_event or 0)
            ]
            out.put(newer)
            out.commit()
        finally:
            out.close()
        copied += len(newer)
    return copied


def copy_cookies(sources: list[Path], dest: Path, slot_map: SlotMap, shard: int) -> int:
    """Copy the cookies the sites of shard ``shard`` set from the ``sources``' jars
    into ``dest``'s (one already there wins: a rerun after a crash); returns how many."""
    jar = cookie_jar(dest)
    kept = {c.key: c for c in read_cookies(jar, on_bad=_skip)} if jar.exists() else {}
    copied = 0
    for src in sources:
        path = cookie_jar(src)
        if not path.exists():
            continue
        for cookie in read_cookies(path, on_bad=_skip):
            site = site_of_host(cookie.domain)
            if site and slot_map.shard_of_site(site) == shard and cookie.key not in kept:
                kept[cookie.key] = cookie
                copied += 1
    if copied:
        jar.parent.mkdir(parents=True, exist_ok=True)
        write_cookies(jar, kept.values(), time.time())
    return copied


def _skip(reason: str) -> None:
    """A bad line of a crawl's own jar: the fetcher, which reads it next, says so."""
