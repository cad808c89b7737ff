"""Rebalancing handoff: the state of the sites a new slot map moves, carried over.

After :func:`crawlkit.shard.routing.grow` has moved slots to a new shard, :func:`handoff`
moves the host clocks, site knowledge, queued and waiting URLs of the moved sites
from the old owner's state directory to the new owner's. It edits a frontier and a
fetch host-state store, so it sits above them and above :mod:`crawlkit.shard.routing`
(the shard identity and file exchange that those stores' stages use).
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.fetch.hoststate import HostState
from crawlkit.frontier.store import Frontier
from crawlkit.frontier.waiting import WAITING, journal_of, read_waiting, write_waiting
from crawlkit.shard.routing import SHARD_FILE, file_stamp, inbox_dir, read_role, write_outbox
from crawlkit.shard.slots import SlotMap
from crawlkit.state import open_state
from crawlkit.streams import Record
from crawlkit.url import site_of_host

__all__ = ["handoff"]


def handoff(
    map_path: str | os.PathLike[str],
    from_state: str | os.PathLike[str],
    to_state: str | os.PathLike[str],
) -> dict[str, int]:
    """Hand the sites the map no longer gives ``from_state`` to ``to_state``.

    Both state directories are locked for the whole handoff, so neither owner may be
    running. In order: the host clocks of the moved hosts are installed in the new
    owner (the later of the two clocks wins), then what the old owner knew of each
    moved site (linkers, budget used this period, dedup yield) and its operator
    blocks (``frontier block``, the new owner's too from then on), then the queued and
    waiting URLs are written to the new owner's inbox (or the outbox of whichever
    shard now owns them), then they leave the old frontier. A crash repeats URLs,
    never loses them.
    """
    new_map = SlotMap.load(map_path)
    old_role, new_role = read_role(from_state), read_role(to_state)
    if old_role is None or new_role is None:
        raise UsageError("both directories must be shard state directories (shard.json)")
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
        # 4. both follow the new map from now on
        for state, role in ((src.path, old_role), (dst.path, new_role)):
            role.slot_map, role.map_path = new_map, Path(map_path)
            streams.atomic_write_json(state / SHARD_FILE, role.to_json())
    return counts
