"""Shard identity and the mail between shards: outboxes, inboxes, delivery, growing a map.

A crawl of N shards is N state directories. Each one is owned by one process at a
time (the state lock, invariant 6) and crawls only the sites whose slot the slot map
gives to its shard, so politeness stays local: every host is fetched by one process.
Shards exchange only files:

``STATE/shard.json``
    which shard this directory is (``{"shard": K, "map": PATH}``), written by the
    first ``crawlkit crawl --shard K``; a directory never changes shard.
``STATE/outbox/shard-J/*.ndjson.zst``
    URL records this shard discovered for shard J's sites (written atomically).
``STATE/inbox/*.ndjson.zst``
    URL records delivered to this shard; ``crawlkit crawl`` checks them against its
    seen set and queues them, then deletes the file (at least once). Only regular
    files are read: anything else there (a symlink, a directory, a FIFO) is reported
    and moved to ``STATE/inbox-rejected/``, so it is neither followed nor in the way.

Between time slices a runner (GNU parallel, Slurm, a Kubernetes job) runs
``crawlkit shard --deliver DIR ...``, which moves every outbox file into the inbox of
the directory that owns the target shard.

Rebalancing (adding a node) changes the slot map: :func:`grow` moves the fewest
slots to the new shard and raises the epoch of each moved slot.
:func:`crawlkit.fleet.handoff.handoff` then moves the queued URLs, waiting URLs and host
clocks of the moved sites from the old owner to the new one while holding both locks,
so the new owner starts only after the clocks are installed and no host is asked
inside its gap. A process that still has an older map refuses URLs of slots it no
longer owns (:meth:`ShardRole.check`).
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import InvalidURL, StateError, UsageError
from crawlkit.records import FetchRecord, fetch_refusal
from crawlkit.shard.slots import SlotMap, slot_of
from crawlkit.streams import Record
from crawlkit.url import Canonicalizer, site_of_record

__all__ = [
    "ShardRole",
    "deliver",
    "file_stamp",
    "grow",
    "inbox_files",
    "read_role",
    "record_site",
    "role_from_options",
    "stale_refusal",
    "write_outbox",
]

SHARD_FILE = "shard.json"


@dataclass
class ShardRole:
    """This state directory's shard and the slot map it follows."""

    shard: int
    slot_map: SlotMap
    map_path: Path | None = None

    def owner(self, site: str) -> int:
        return self.slot_map.shard_of_site(site)

    def owns(self, site: str) -> bool:
        return self.owner(site) == self.shard

    def epoch(self, site: str) -> int:
        return self.slot_map.epoch[slot_of(site, self.slot_map.slots)]

    def check(self, record: Record) -> str | None:
        """Why this shard must not fetch ``record`` now, or None if it may.

        A record is stale when its site's slot belongs to another shard, or when it
        was stamped (``shard_epoch``) under an older epoch of the slot than the map's.
        """
        site = str(record.get("site") or "")
        slot = slot_of(site, self.slot_map.slots)
        owner = self.slot_map.owner[slot]
        if owner != self.shard:
            return f"slot {slot} belongs to shard {owner}, not {self.shard}"
        stamped = record.get("shard_epoch")
        current = self.slot_map.epoch[slot]
        if isinstance(stamped, int) and stamped < current:
            return f"stamped with epoch {stamped}, older than slot {slot}'s {current}"
        return None

    def to_json(self) -> dict[str, Any]:
        return {
            "shard": self.shard,
            "shards": self.slot_map.shards,
            "map": str(self.map_path.resolve()) if self.map_path else None,
            "slots": self.slot_map.slots,
        }


def read_role(state: str | os.PathLike[str]) -> ShardRole | None:
    """The shard identity saved in a state directory, or None for an unsharded one."""
    path = Path(state) / SHARD_FILE
    if not path.exists():
        return None
    data = streams.read_json(path)
    map_path = Path(data["map"]) if data.get("map") else None
    if map_path is not None:
        slot_map = SlotMap.load(map_path)
    else:
        slot_map = SlotMap.even(int(data["shards"]), int(data.get("slots", 4096)))
    return ShardRole(int(data["shard"]), slot_map, map_path)


def saved_shard(state: str | os.PathLike[str]) -> int | None:
    """The shard number saved in a state directory (its map is not read), or None."""
    path = Path(state) / SHARD_FILE
    return int(streams.read_json(path)["shard"]) if path.exists() else None


def adopt_role(state: str | os.PathLike[str], role: ShardRole) -> ShardRole:
    """Record ``role`` in a new state directory, or check it against the saved one.

    A role given with its map file wins over the saved one's map, which is not read:
    a state moved or copied elsewhere (a crawl of ``--workers N`` keeps its map in the
    state) saved the path the map had then. The saved file then names the given map.
    """
    path = Path(state) / SHARD_FILE
    if not path.exists():
        if not 0 <= role.shard < role.slot_map.shards:
            raise UsageError(f"--shard {role.shard} is outside 0..{role.slot_map.shards - 1}")
        streams.atomic_write_json(path, role.to_json())
        return role
    saved = streams.read_json(path)
    if int(saved["shard"]) != role.shard:
        raise StateError(f"{state} is the state of shard {saved['shard']}, not shard {role.shard}")
    if role.map_path is None:
        return read_role(state) or role
    if saved != role.to_json():
        streams.atomic_write_json(path, role.to_json())  # the map where it is now
    return role


def role_from_options(
    state: str | os.PathLike[str],
    shard: int | None,
    shards: int | None = None,
    slot_map: str | os.PathLike[str] | None = None,
) -> ShardRole | None:
    """The shard role a stage runs under in ``state``.

    ``--shard K`` with ``--shards N`` (an even map) or ``--slot-map FILE`` is adopted:
    recorded in a new state directory, checked against the one a used directory
    saved. Without ``--shard`` the saved role applies (None for an unsharded state), so
    a shard's directory keeps refusing other shards' URLs whichever stage opens it.
    """
    if shard is None:
        if shards is not None or slot_map is not None:
            raise UsageError("--shards and --slot-map go with --shard K")
        return read_role(state)
    if slot_map is not None:
        the_map = SlotMap.load(slot_map)
    elif shards is not None:
        the_map = SlotMap.even(shards)
    else:
        raise UsageError("--shard needs --shards N or --slot-map FILE")
    path = Path(slot_map) if slot_map is not None else None
    return adopt_role(state, ShardRole(shard, the_map, path))


def record_site(record: Mapping[str, Any], canon: Canonicalizer) -> str | None:
    """:func:`crawlkit.url.site_of_record`, or None when the record has no usable site."""
    try:
        return site_of_record(record, canon)
    except InvalidURL:
        return None


def stale_refusal(record: Mapping[str, Any], why: str) -> FetchRecord:
    """The fetch record of a URL its shard must not fetch (one per URL): a fetch
    refusal like any other (``"refused": "shard"``, ``detail`` and ``error``)."""
    return fetch_refusal(record, str(record.get("url")), "shard", why)


def outbox_dir(state: str | os.PathLike[str], shard: int) -> Path:
    return Path(state) / "outbox" / f"shard-{shard}"


def inbox_dir(state: str | os.PathLike[str]) -> Path:
    return Path(state) / "inbox"


def rejected_dir(state: str | os.PathLike[str]) -> Path:
    return Path(state) / "inbox-rejected"


def inbox_files(state: str | os.PathLike[str], reporter: Reporter | None = None) -> list[Path]:
    """The regular files in ``STATE/inbox`` to queue, oldest name first.

    An entry that is not a regular file (by ``lstat``: a symlink is never followed,
    so a link to ``/etc/passwd`` is not read as records; a directory named
    ``x.ndjson.zst`` would fail every read) is moved to ``STATE/inbox-rejected/`` and
    reported as a warning, so it neither leaks into the queues nor blocks them.
    Names that do not end in ``.ndjson.zst`` (a delivery's temporary file) are left.
    """
    directory = inbox_dir(state)
    if not directory.exists():
        return []
    files: list[Path] = []
    for path in sorted(directory.glob("*.ndjson.zst")):
        try:
            mode = path.lstat().st_mode
        except FileNotFoundError:
            continue  # taken by another reader meanwhile
        if stat.S_ISREG(mode):
            files.append(path)
            continue
        moved = _set_aside(path, rejected_dir(state))
        if reporter is not None:
            reporter.warn(
                f"{path}: not a regular file ({_kind(mode)}); not read, moved to {moved}",
                "inbox entry set aside",
            )
    return files


def _kind(mode: int) -> str:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    return "a special file"


def _set_aside(path: Path, directory: Path) -> Path:
    """Rename ``path`` (whatever it is; a symlink itself, not its target) into
    ``directory`` under a name not taken yet."""
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / path.name
    while os.path.lexists(target):
        target = directory / f"{path.name}.{file_stamp()}"
    os.rename(path, target)
    return target


def file_stamp() -> str:
    return f"{time.time_ns():020d}-{os.getpid()}"


def write_outbox(
    state: str | os.PathLike[str], by_shard: dict[int, list[Record]], tag: str = ""
) -> int:
    """Write each shard's records to its outbox as one new file; returns records written."""
    written = 0
    for shard, records in sorted(by_shard.items()):
        if not records:
            continue
        name = f"{file_stamp()}{'-' + tag if tag else ''}.ndjson.zst"
        with streams.open_output(outbox_dir(state, shard) / name) as out:
            written += out.write_records(records)
    return written


def split_by_owner(
    role: ShardRole, records: Iterable[Record]
) -> tuple[list[Record], dict[int, list[Record]]]:
    """(records this shard owns, records of other shards by shard)."""
    mine: list[Record] = []
    others: dict[int, list[Record]] = defaultdict(list)
    for rec in records:
        site = rec.get("site")
        if not isinstance(site, str) or not site:
            mine.append(rec)  # let the stage that canonicalizes report it
            continue
        owner = role.owner(site)
        if owner == role.shard:
            mine.append(rec)
        else:
            others[owner].append(rec)
    return mine, others


def _move_file(src: Path, dest_dir: Path, sync: bool = True) -> Path:
    """Move ``src`` into ``dest_dir`` so the file appears whole or not at all; without
    ``sync`` the caller fsyncs ``dest_dir`` (once for many files)."""
    dest_dir.mkdir(parents=True, exist_ok=True)
    final = dest_dir / src.name
    try:
        os.rename(src, final)  # same file system: atomic
    except OSError:
        tmp = dest_dir / f".{src.name}.tmp"
        shutil.copyfile(src, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
        src.unlink()
    if sync:
        streams.fsync_dir(dest_dir)
    return final


def deliver(
    state_dirs: Iterable[str | os.PathLike[str]], reporter: Reporter | None = None
) -> dict[str, int]:
    """Move every outbox file of these shards into the inbox of its owner.

    Each directory's shard comes from its ``shard.json``; a file for a shard none of
    the directories is left where it is (counted as ``undeliverable``). An entry that
    is not a regular file (a symlink: a copy across file systems would follow it) is
    not delivered: it is moved to ``STATE/outbox-rejected/`` and reported.
    """
    dirs = [Path(d) for d in state_dirs]
    owner_dir: dict[int, Path] = {}
    for d in dirs:
        shard = saved_shard(d)  # (its map is not needed: a moved state's path is old)
        if shard is None:
            raise UsageError(f"{d} is not a shard's state directory (no {SHARD_FILE})")
        if shard in owner_dir:
            raise UsageError(f"shard {shard} appears twice: {owner_dir[shard]} and {d}")
        owner_dir[shard] = d
    counts = {"files": 0, "undeliverable": 0}
    # Each inbox is fsynced once, after all its files are in: crawl --workers
    # delivers every 0.5 s, a file or two from each peer's every cycle.
    synced: set[Path] = set()
    for d in dirs:
        outbox = d / "outbox"
        if not outbox.exists():
            continue
        for shard_dir in sorted(outbox.glob("shard-*")):
            target = owner_dir.get(int(shard_dir.name.split("-", 1)[1]))
            for f in sorted(shard_dir.glob("*.ndjson.zst")):
                mode = f.lstat().st_mode
                if not stat.S_ISREG(mode):
                    moved = _set_aside(f, d / "outbox-rejected")
                    if reporter is not None:
                        reporter.warn(
                            f"{f}: not a regular file ({_kind(mode)}); not delivered, "
                            f"moved to {moved}",
                            "outbox entry set aside",
                        )
                    continue
                if target is None:
                    counts["undeliverable"] += 1
                    continue
                inbox = inbox_dir(target)
                _move_file(f, inbox, sync=False)
                synced.add(inbox)
                counts["files"] += 1
    for directory in sorted(synced):
        streams.fsync_dir(directory)
    return counts


def grow(old: SlotMap, shards: int) -> SlotMap:
    """A slot map for ``shards`` shards that moves as few slots as possible.

    Each new shard takes slots from the currently largest shards until all hold
    ``slots / shards`` (±1); every moved slot's epoch goes up by one.
    """
    if shards <= old.shards:
        raise UsageError(f"can only grow: the map has {old.shards} shards, asked for {shards}")
    owner = list(old.owner)
    epoch = list(old.epoch)
    target = len(owner) // shards
    by_shard: dict[int, list[int]] = defaultdict(list)
    for slot, s in enumerate(owner):
        by_shard[s].append(slot)
    for new in range(old.shards, shards):
        while len(by_shard[new]) < target:
            donor = max(range(new), key=lambda s: (len(by_shard[s]), -s))
            slot = by_shard[donor].pop()  # from the end: keeps the donor's ranges whole
            owner[slot] = new
            epoch[slot] += 1
            by_shard[new].append(slot)
    return SlotMap(shards, owner, epoch)
