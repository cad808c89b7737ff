"""The frontier: durable priority queues with trap limits, site budgets and blocks.

Layout of ``DIR/frontier/`` (the caller holds the state directory's lock):

``manifest.json``
    the one file whose atomic replacement commits a change: every queue's segment
    list and read offset, the cycle, counters, the blocks, and the names of the
    current generation of the side files below.
``seg-<id>.ndjson.zst``
    immutable segments of URL records (see :mod:`crawlkit.frontier.queues`).
``sites-<seq>.json.zst``, ``hosts-<seq>.json.zst``, ``recrawl-<seq>.fps``
    per-site signals and counters, per-host queued counts, and the fingerprints of
    queued recrawls; rewritten at each commit under a new name that the manifest
    names, so the manifest and its side files always match.
``inbox/``
    operator commands (``frontier block``) written without the lock, applied and
    removed by the next process that owns the frontier.

Queues: ``new-0`` .. ``new-3`` (levels, 0 most urgent), ``new-d`` (discovery: the
first URL of a site never handed out yet), ``recrawl-0`` .. ``recrawl-3``, and for
each of them a parked twin holding URLs over their site's budget until the next
cycle.

Durability (DESIGN.md invariants 1 and 5): nothing changes on disk until
:meth:`Frontier.commit`, which writes new segments and side files, fsyncs them and
then replaces the manifest. A crash before the replacement leaves the previous
state; after it, the new one. :meth:`Frontier.next` hands out a batch without
committing, so the caller writes the batch first and commits after: a crash in
between hands the same URLs out again (at least once), never loses them.

Memory: per-site and per-host counters (about 200 bytes a site, 100 a host), the
fingerprints of queued recrawls (about 70 bytes each, loaded only when recrawls are
added or handed out) and the segments being read or written; never the queued URLs
themselves.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import zstandard

from crawlkit.errors import InvalidURL, StateError
from crawlkit.frontier.budgets import BudgetPolicy, SiteTable
from crawlkit.frontier.priority import LEVEL_WEIGHTS, LEVELS, new_url_level, recrawl_level, split
from crawlkit.frontier.queues import SEGMENT_LINES, SegmentQueue, SegmentStore
from crawlkit.frontier.traps import TrapChecker, TrapLimits
from crawlkit.io import Record, atomic_write_bytes, atomic_write_json
from crawlkit.times import iso, parse_time
from crawlkit.url import Canonicalizer, site_of_url

__all__ = [
    "QUEUES",
    "REASONS",
    "AddResult",
    "Batch",
    "Frontier",
    "NextOptions",
    "normalize_target",
    "parse_time",
]

MANIFEST_VERSION = 1
REASONS = ("seed", "link", "sitemap", "redirect", "recrawl")
NEW_QUEUES = tuple(f"new-{level}" for level in range(LEVELS))
RECRAWL_QUEUES = tuple(f"recrawl-{level}" for level in range(LEVELS))
DISCOVERY = "new-d"
QUEUES = (*RECRAWL_QUEUES, *NEW_QUEUES, DISCOVERY)
_DUMPS_OPT = orjson.OPT_APPEND_NEWLINE
_WINDOW_CAP = 1 << 18  # records read from one queue head per pass


def normalize_target(target: str) -> str:
    """A block target (site, host, or a URL naming a host) in the form records use."""
    text = target.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
        text = text.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return text.rstrip(".")


@dataclass
class AddResult:
    """What one :meth:`Frontier.add_records` call did (for the summary line)."""

    queued: int = 0
    refused: int = 0
    duplicates: int = 0
    site_records: int = 0
    routed: int = 0  # sharded: records written to other shards' outboxes
    delivered: int = 0  # sharded: inbox records new to this shard's seen set


@dataclass(frozen=True)
class NextOptions:
    """How :meth:`Frontier.next` builds a batch."""

    max_urls: int
    per_host: int = 10
    recrawl_share: float = 0.6
    discovery_share: float = 0.1
    budgets: bool = True
    cycle: float = 86400.0
    now: float | None = None
    # URLs per host handed out earlier and not answered yet (a running fetcher's):
    # they count against ``per_host``, so a slow host cannot collect a long backlog.
    outstanding: Mapping[str, int] = field(default_factory=dict)


@dataclass
class Batch:
    """A batch handed out by :meth:`Frontier.next`: ``lines`` are the URL records (NDJSON
    lines, in the order to write them); ``refused`` are records of blocked URLs."""

    lines: list[bytes]
    refused: list[Record]
    held_per_host: int = 0  # URLs read but left for a later batch by --per-host
    over_budget: dict[str, Any] | None = None  # Frontier.over_budget(), when looked at


class Frontier:
    """The frontier of one state directory. Build with :meth:`open`; one owner at a time.

    The caller must hold the state directory's lock for the life of the object
    (``crawlkit.state.open_state``), and call :meth:`commit` to make changes durable.
    """

    def __init__(
        self,
        directory: Path,
        *,
        policy: BudgetPolicy | None = None,
        limits: TrapLimits | None = None,
        canonicalizer: Canonicalizer | None = None,
    ):
        self.directory = directory
        self.inbox = directory / "inbox"
        self.sites = SiteTable(policy)
        self.limits = limits or TrapLimits()
        self._canon = canonicalizer
        self.store = SegmentStore(directory)
        self.queues = {name: SegmentQueue(self.store) for name in QUEUES}
        self.parked = {name: SegmentQueue(self.store) for name in QUEUES}
        self._budgets_checked = -1  # SiteTable.version when parked sites were last checked
        self.hosts: Counter[str] = Counter()
        self.reasons: Counter[str] = Counter()
        self.refused: Counter[str] = Counter()
        self.totals: Counter[str] = Counter()
        self.blocks: set[str] = set()
        self.cycle_start: float | None = None
        self.cycle_number = 0
        self.seq = 0
        self._files: dict[str, str] = {}
        self._recrawl_fps: set[int] | None = None
        self._recrawl_dirty = False
        self._inbox_done: list[Path] = []
        self._new_blocks = False
        # Records added and not yet in a segment: one buffer and a line count per queue
        # (a list of orjson's bytes objects would cost ~4 KB a line in allocations).
        self._pending: dict[str, tuple[bytearray, list[int]]] = {}

    # ----------------------------------------------------------------- open / commit

    @classmethod
    def open(
        cls,
        directory: str | os.PathLike[str],
        *,
        policy: BudgetPolicy | None = None,
        limits: TrapLimits | None = None,
        canonicalizer: Canonicalizer | None = None,
        read_only: bool = False,
    ) -> Frontier:
        """Load the committed state (or start an empty one) from ``directory``.

        Unless ``read_only``, orphans of a crashed process are removed and pending
        operator commands in ``inbox/`` are applied (they become durable with the
        next commit).
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self = cls(path, policy=policy, limits=limits, canonicalizer=canonicalizer)
        manifest_path = path / "manifest.json"
        manifest: dict[str, Any] = {}
        if manifest_path.exists():
            try:
                manifest = orjson.loads(manifest_path.read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                raise StateError(f"frontier manifest {manifest_path} is unreadable: {exc}") from exc
            if manifest.get("version") != MANIFEST_VERSION:
                raise StateError(
                    f"frontier manifest {manifest_path} has version {manifest.get('version')!r}; "
                    f"this crawlkit reads version {MANIFEST_VERSION}"
                )
        self._load(manifest)
        if not read_only:
            live = {seg for q in self._all_queues() for seg in q.segment_ids()}
            self.store.remove_orphans(live)
            self._remove_stale_side_files()
            self._read_inbox(apply=True)
        return self

    def _load(self, m: dict[str, Any]) -> None:
        self.seq = int(m.get("seq", 0))
        self.store.next_id = int(m.get("next_segment", 1))
        queues = m.get("queues", {})
        parked = m.get("parked", {})
        for name in QUEUES:
            self.queues[name] = SegmentQueue.from_json(self.store, queues.get(name, {}))
            self.parked[name] = SegmentQueue.from_json(self.store, parked.get(name, {}))
        cycle = m.get("cycle", {})
        self.cycle_start = cycle.get("start")
        self.cycle_number = int(cycle.get("number", 0))
        self.reasons = Counter(m.get("reasons", {}))
        self.refused = Counter(m.get("refused", {}))
        self.totals = Counter(m.get("totals", {}))
        self.blocks = set(m.get("blocks", []))
        self._new_blocks = bool(m.get("purge_blocked", False))
        self._files = dict(m.get("files", {}))
        if "sites" in self._files:
            self.sites.load_json(self._read_side(self._files["sites"]))
        if "hosts" in self._files:
            self.hosts = Counter(self._read_side(self._files["hosts"]))

    def _read_side(self, name: str) -> Any:
        path = self.directory / name
        try:
            return orjson.loads(
                zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes())
            )
        except (OSError, zstandard.ZstdError, orjson.JSONDecodeError) as exc:
            raise StateError(f"frontier state file {path} is unreadable: {exc}") from exc

    def _remove_stale_side_files(self) -> None:
        keep = set(self._files.values()) | {"manifest.json"}
        for entry in os.scandir(self.directory):
            stem = entry.name.split("-", 1)[0]
            stale = stem in ("sites", "hosts", "recrawl") and entry.name not in keep
            if stale or entry.name.startswith(".manifest.json."):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(entry.path)

    def _flush_pending(self) -> None:
        for name, (buf, count) in self._pending.items():
            if count[0]:
                self.queues[name].push_back_raw(bytes(buf), count[0])
        self._pending.clear()

    def _all_queues(self) -> Iterable[SegmentQueue]:
        yield from self.queues.values()
        yield from self.parked.values()

    @contextlib.contextmanager
    def discard_on_error(self) -> Iterator[Frontier]:
        """Delete what was written since the last commit if the block raises.

        Segment files are written before the commit that names them (a large add, a
        ``next``); after a failure (a full disk) no manifest names them, and leaving
        them until the next open would keep the disk full.
        """
        try:
            yield self
        except BaseException:
            self.store.discard_uncommitted()
            raise

    def commit(self) -> None:
        """Make every change since the last commit durable, atomically (see module doc).

        If it fails (a full disk), the files it wrote are deleted before the error is
        raised, the last committed state stays as it was, and this object must not be
        used again.
        """
        written: list[str] = []
        try:
            files = self._write_commit(written)
        except BaseException:
            self.store.discard_uncommitted()
            for name in written:
                with contextlib.suppress(OSError):
                    (self.directory / name).unlink()
            raise
        old = set(self._files.values()) - set(files.values())
        self._files = files
        self._recrawl_dirty = False
        self.store.collect()
        for name in old:
            with contextlib.suppress(FileNotFoundError):
                (self.directory / name).unlink()
        for path in self._inbox_done:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._inbox_done.clear()

    def _write_commit(self, written: list[str]) -> dict[str, str]:
        """Write the segments, side files and manifest of the next commit.

        Returns the manifest's ``files``; each side file's name is put in ``written``
        before it is made, so a failed commit can delete it.
        """
        self._flush_pending()
        self.store.sync()
        self.seq += 1
        files = dict(self._files)
        cctx = zstandard.ZstdCompressor(level=1)
        files["sites"] = f"sites-{self.seq}.json.zst"
        written.append(files["sites"])
        atomic_write_bytes(
            self.directory / files["sites"], cctx.compress(orjson.dumps(self.sites.to_json()))
        )
        files["hosts"] = f"hosts-{self.seq}.json.zst"
        written.append(files["hosts"])
        atomic_write_bytes(
            self.directory / files["hosts"], cctx.compress(orjson.dumps(dict(self.hosts)))
        )
        if self._recrawl_dirty and self._recrawl_fps is not None:
            files["recrawl"] = f"recrawl-{self.seq}.fps"
            written.append(files["recrawl"])
            array = np.fromiter(self._recrawl_fps, dtype="<u8", count=len(self._recrawl_fps))
            atomic_write_bytes(self.directory / files["recrawl"], array.tobytes())
        manifest = {
            "version": MANIFEST_VERSION,
            "seq": self.seq,
            "next_segment": self.store.next_id,
            "queues": {name: q.to_json() for name, q in self.queues.items()},
            "parked": {name: q.to_json() for name, q in self.parked.items()},
            "cycle": {"start": self.cycle_start, "number": self.cycle_number},
            "reasons": {k: v for k, v in self.reasons.items() if v},
            "refused": dict(self.refused),
            "totals": dict(self.totals),
            "blocks": sorted(self.blocks),
            "purge_blocked": self._new_blocks,  # a block not yet applied to the queues
            "files": files,
        }
        atomic_write_json(self.directory / "manifest.json", manifest)
        return files

    # ----------------------------------------------------------------- operator blocks

    def _read_inbox(self, *, apply: bool) -> set[str]:
        blocks = set(self.blocks)
        if not self.inbox.is_dir():
            return blocks
        for path in sorted(self.inbox.glob("*.json")):
            try:
                command = orjson.loads(path.read_bytes())
            except (OSError, orjson.JSONDecodeError):
                continue  # a half-written command cannot exist (atomic rename); skip junk
            target = normalize_target(str(command.get("target", "")))
            if not target:
                continue
            if command.get("op") == "block":
                if target not in blocks:
                    blocks.add(target)
                    self._new_blocks = True
            elif command.get("op") == "unblock":
                blocks.discard(target)
            if apply:
                self._inbox_done.append(path)
        if apply:
            self.blocks = blocks
        return blocks

    def apply_commands(self) -> None:
        """Apply operator commands posted since the frontier was opened (an owner that
        keeps it open, like ``crawlkit crawl``, calls this before each ``next``)."""
        self._read_inbox(apply=True)

    @staticmethod
    def post_command(directory: str | os.PathLike[str], op: str, target: str) -> Path:
        """Write an operator command (``block``/``unblock``) to the inbox; no lock needed.

        The command is a new file, written atomically, so it can be posted while
        another process owns the frontier; that process applies it at its next
        ``next`` or ``add`` (its next open), and the batch after that honours it.
        """
        inbox = Path(directory) / "inbox"
        inbox.mkdir(parents=True, exist_ok=True)
        name = f"{time.time_ns():020d}-{os.getpid()}-{op}.json"
        path = inbox / name
        atomic_write_json(path, {"op": op, "target": normalize_target(target), "at": time.time()})
        return path

    def is_blocked(self, site: str, host: str) -> bool:
        if not self.blocks:
            return False
        return site in self.blocks or host in self.blocks or host.partition(":")[0] in self.blocks

    # ----------------------------------------------------------------- add

    def _canonicalizer(self) -> Canonicalizer:
        if self._canon is None:
            self._canon = Canonicalizer()
        return self._canon

    def _recrawls(self) -> set[int]:
        if self._recrawl_fps is None:
            name = self._files.get("recrawl")
            if name:
                data = (self.directory / name).read_bytes()
                self._recrawl_fps = set(np.frombuffer(data, dtype="<u8").tolist())
            else:
                self._recrawl_fps = set()
        return self._recrawl_fps

    def add_records(
        self,
        records: Iterable[Record],
        *,
        now: float | None = None,
        on_refused: Callable[[Record], None],
    ) -> AddResult:
        """Queue URL records; every refused one is passed to ``on_refused``.

        Each record with a ``url`` is either queued or refused (a copy of the record
        with ``outcome: "refused"``, ``refused`` (the reason) and ``detail``), never
        dropped (invariant 1). Records without ``fp``, ``site`` or ``host`` are
        canonicalized first. A record with ``yield`` and ``site`` but no ``url`` is a
        dedup site record and updates that site's budget. A recrawl of a URL whose
        recrawl is already queued is counted as a duplicate and not queued twice.
        Records without ``url`` or ``yield`` raise nothing: they are returned to the
        caller's ``on_refused`` with reason ``no-url``.
        """
        now = time.time() if now is None else now
        check = TrapChecker(self.limits, now=now).check
        result = AddResult()
        sites = self.sites
        site_infos = sites.sites
        pending = self._pending
        for name in QUEUES:
            pending.setdefault(name, (bytearray(), [0]))
        hosts = self.hosts
        reasons: dict[str, int] = {}
        blocks = self.blocks
        dumps = orjson.dumps
        queued = 0
        for rec in records:
            url = rec.get("url")
            if url is None:
                if "yield" in rec and isinstance(rec.get("site"), str):
                    try:
                        sites.note_yield(
                            rec["site"], int(rec.get("pages") or 0), float(rec["yield"])
                        )
                    except (TypeError, ValueError):
                        self._refuse(rec, "bad-record", "unusable yield", on_refused, result)
                        continue
                    result.site_records += 1
                    continue
                self._refuse(rec, "bad-record", "no url", on_refused, result)
                continue
            fp = rec.get("fp")
            site = rec.get("site")
            host = rec.get("host")
            if (
                not (
                    type(fp) is str and type(site) is str and type(host) is str and type(url) is str
                )
                or len(fp) != 16
            ):
                if not isinstance(url, str):
                    self._refuse(rec, "invalid-url", "url is not a string", on_refused, result)
                    continue
                try:
                    parsed = self._canonicalizer().parse(url)
                except InvalidURL as exc:
                    self._refuse(rec, "invalid-url", str(exc), on_refused, result)
                    continue
                rec["url"], rec["host"], rec["site"], rec["fp"] = parsed
                url, host, site, fp = parsed
            depth = rec.get("depth")
            if type(depth) is not int:
                depth = rec["depth"] = 0
            trap = check(url, depth)
            if trap is not None:
                self._refuse(rec, trap[0], trap[1], on_refused, result)
                continue
            if blocks and self.is_blocked(site, host):
                self._refuse(rec, "blocked", "operator block", on_refused, result)
                continue
            reason = rec.get("reason")
            if type(reason) is not str:
                reason = rec["reason"] = "link"
            info = site_infos.get(site)
            if info is None:
                info = sites.get(site)
            if reason == "recrawl":
                fpi = int(fp, 16)
                queued_recrawls = self._recrawls()
                if fpi in queued_recrawls:
                    result.duplicates += 1
                    self.totals["duplicate-recrawls"] += 1
                    continue
                queued_recrawls.add(fpi)
                self._recrawl_dirty = True
                prio = rec.get("importance", rec.get("priority"))
                base = prio if isinstance(prio, int) and 0 <= prio < LEVELS else 2
                due = parse_time(rec.get("due"))
                interval = rec.get("interval")
                overdue = now - due if due is not None else 0.0
                level = recrawl_level(
                    base, overdue, interval if isinstance(interval, int | float) else None
                )
                name = RECRAWL_QUEUES[level]
            else:
                if reason == "seed":
                    sites.note_seed(site)
                else:
                    source = rec.get("from") or rec.get("via")
                    if source and rec.get("nofollow") is not True:  # not an endorsement
                        from_site = site_of_url(source)
                        if from_site and from_site != site:
                            linkers = info.linkers
                            if linkers is None or from_site not in linkers:
                                sites.note_link(site, from_site)
                lastmod = rec.get("lastmod")
                age = now - t if lastmod and (t := parse_time(lastmod)) is not None else None
                level = new_url_level(reason, depth, len(info.linkers) if info.linkers else 0, age)
                if level > 0 and not info.fetched and not info.queued and not info.parked:
                    name = DISCOVERY
                else:
                    name = NEW_QUEUES[level]
            rec["priority"] = level
            buf, count = pending[name]
            buf += dumps(rec, option=_DUMPS_OPT)
            count[0] += 1
            if count[0] >= SEGMENT_LINES:
                self.queues[name].push_back_raw(bytes(buf), count[0])
                buf.clear()
                count[0] = 0
            info.queued += 1
            hosts[host] = hosts.get(host, 0) + 1
            reasons[reason] = reasons.get(reason, 0) + 1
            queued += 1
        for reason, n in reasons.items():
            self.reasons[reason] += n
        result.queued = queued
        self.totals["added"] += result.queued
        return result

    def note_seeds(self, sites: Iterable[str]) -> None:
        """Mark sites as seeds (trusted) without queueing anything.

        Every shard of a fleet notes every seed's site, so trust spreads from the same
        roots in each shard's site graph as in one shard's.
        """
        for site in sites:
            self.sites.note_seed(site)

    def note_links(self, records: Iterable[Record]) -> tuple[int, int]:
        """Learn the site graph from link records without queueing anything.

        seen-merge passes on only links to URLs never seen before, so ``add`` alone
        learns one linker per URL; feeding every link record here (all of extract's
        output) keeps "distinct sites linking to a site" complete. Returns (records
        read, cross-site links noted); nofollow links and links within a site are
        skipped. Changes are durable at the next :meth:`commit`.
        """
        sites = self.sites
        read = noted = 0
        for rec in records:
            read += 1
            if rec.get("nofollow") is True:
                continue
            from_site = site_of_url(rec.get("from") or rec.get("via"))
            if not from_site:
                continue
            site = rec.get("site")
            if type(site) is not str:
                site = site_of_url(rec.get("url"))
                if not site:
                    continue
            if site != from_site:
                info = sites.sites.get(site)
                if info is None or info.linkers is None or from_site not in info.linkers:
                    sites.note_link(site, from_site)
                noted += 1
        return read, noted

    def _refuse(
        self,
        rec: Record,
        reason: str,
        detail: str,
        on_refused: Callable[[Record], None],
        result: AddResult | None = None,
    ) -> None:
        out = dict(rec)
        out["outcome"] = "refused"
        out["refused"] = reason
        out["detail"] = detail
        self.refused[reason] += 1
        if result is not None:
            result.refused += 1
        on_refused(out)

    # ----------------------------------------------------------------- next

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values()) + sum(
            c[0] for _, c in self._pending.values()
        )

    def next(self, opts: NextOptions) -> Batch:
        """Choose a batch (see the module doc of :mod:`crawlkit.frontier`); not committed.

        The records chosen leave the queues in memory only; write them out, then
        :meth:`commit`. Blocked URLs met on the way (all of them, right after a new
        block) come back in ``Batch.refused`` with reason ``blocked``.
        """
        now = time.time() if opts.now is None else opts.now
        self._flush_pending()
        refused: list[Record] = []
        if self._new_blocks:
            self._purge_blocked(refused)
            self._new_blocks = False
        if not opts.budgets:
            self._unpark_all()
        elif self.cycle_start is None or now >= self.cycle_start + opts.cycle:
            self.cycle_start = now
            self.cycle_number += 1
            self.sites.new_cycle()
            self._unpark_all()
        elif (
            self.sites.version != self._budgets_checked
            and any(len(q) for q in self.parked.values())  # the site scan only if needed
            and self.sites.budget_grew()
        ):
            # A site's budget rose after its URLs were parked (links learned since, e.g.
            # from other shards): they come back now, not a whole cycle later; the
            # picker parks again what is still over budget.
            self._unpark_all()
        self._budgets_checked = self.sites.version
        picker = _Picker(self, opts, refused)
        plan = self._plan(opts)
        for _ in range(8 + opts.max_urls // _WINDOW_CAP):
            for name in QUEUES:
                if plan.get(name, 0) > 0:
                    picker.take(name, plan[name])
            short = opts.max_urls - len(picker.batch)
            if short <= 0:
                break
            open_queues = {
                name: float(_weight(name, opts))
                for name in QUEUES
                if picker.remaining[name] > 0 or picker.held[name]
            }
            if not open_queues:
                break
            plan = split(short, open_queues)
        picker.finish()
        self.totals["handed-out"] += len(picker.batch)
        held = sum(len(lines) for lines in picker.rotate.values())
        return Batch(picker.batch, refused, held_per_host=held)

    def _plan(self, opts: NextOptions) -> dict[str, int]:
        n = opts.max_urls
        recrawl_waiting = sum(len(self.queues[q]) for q in RECRAWL_QUEUES)
        new_waiting = sum(len(self.queues[q]) for q in (*NEW_QUEUES, DISCOVERY))
        if recrawl_waiting and new_waiting:
            n_recrawl = round(n * opts.recrawl_share)
        elif recrawl_waiting:
            n_recrawl = n
        else:
            n_recrawl = 0
        n_new = n - n_recrawl
        plan = split(n_recrawl, {q: float(LEVEL_WEIGHTS[i]) if len(self.queues[q]) else 0.0
                                 for i, q in enumerate(RECRAWL_QUEUES)})  # fmt: skip
        new_weights = {q: float(LEVEL_WEIGHTS[i]) if len(self.queues[q]) else 0.0
                       for i, q in enumerate(NEW_QUEUES)}  # fmt: skip
        n_disc = 0
        if len(self.queues[DISCOVERY]) and n_new:
            if not any(new_weights.values()):
                n_disc = n_new
            elif opts.discovery_share > 0:
                n_disc = max(1, round(n_new * opts.discovery_share))
        plan[DISCOVERY] = n_disc
        plan.update(split(n_new - n_disc, new_weights))
        return plan

    def _unpark_all(self) -> None:
        for name in QUEUES:
            parked = self.parked[name]
            if len(parked):
                self.queues[name].extend_segments(parked)
        for info in self.sites.sites.values():
            if info.parked:
                info.queued += info.parked
                info.parked = 0

    def _purge_blocked(self, refused: list[Record]) -> None:
        """Take every queued URL of a blocked site or host out, as a refused record."""
        for queues, parked in ((self.queues, False), (self.parked, True)):
            for queue in queues.values():
                for line in queue.remove_where(self._line_blocked):
                    rec = orjson.loads(line)
                    self._forget(rec, parked=parked)
                    self._refuse(rec, "blocked", "operator block", refused.append)

    def take_where(self, predicate: Callable[[Record], bool]) -> list[Record]:
        """Remove and return every queued or parked record for which ``predicate`` holds.

        Used to hand a site over to another shard (``crawlkit shard --handoff``); like
        every change it is on disk only after :meth:`commit`.
        """
        taken: list[Record] = []
        for queues, parked in ((self.queues, False), (self.parked, True)):
            for queue in queues.values():
                for line in queue.remove_where(lambda ln: predicate(orjson.loads(ln))):
                    rec = orjson.loads(line)
                    self._forget(rec, parked=parked)
                    taken.append(rec)
        return taken

    def _line_blocked(self, line: bytes) -> bool:
        rec = orjson.loads(line)
        return self.is_blocked(rec.get("site", ""), rec.get("host", ""))

    def _forget(self, rec: Record, *, parked: bool, handed: bool = False) -> None:
        """Counters for a record leaving the frontier (handed out or refused)."""
        info = self.sites.get(rec["site"])
        if parked:
            info.parked -= 1
        else:
            info.queued -= 1
        if handed:
            info.fetched += 1  # ``used`` was counted when the record was picked
        host = rec["host"]
        left = self.hosts[host] - 1
        if left > 0:
            self.hosts[host] = left
        else:
            self.hosts.pop(host, None)
        self.reasons[rec.get("reason", "link")] -= 1
        if rec.get("reason") == "recrawl":
            fps = self._recrawls()
            fps.discard(int(rec["fp"], 16))
            self._recrawl_dirty = True

    # ----------------------------------------------------------------- stats

    def over_budget(self, limit: int = 10) -> dict[str, Any]:
        """The URLs parked until the next budget cycle, and why: ``{"urls", "sites",
        "cycle_start" (unix seconds; its length is the caller's option), "top"}``
        where ``top`` holds up to ``limit`` sites with the most parked URLs, each with its
        ``budget`` (under this frontier's policy), ``used`` this cycle, ``seed`` and
        ``trusted_linkers``. Scans the site table: call it when someone will read it."""
        parked = [(name, info) for name, info in self.sites.sites.items() if info.parked]
        parked.sort(key=lambda item: (-item[1].parked, item[0]))
        top = [
            {
                "site": name,
                "parked": info.parked,
                "budget": self.sites.budget(name),
                "used": info.used,
                "seed": info.seed,
                "trusted_linkers": self.sites.credited(name),
            }
            for name, info in parked[:limit]
        ]
        return {
            "urls": sum(info.parked for _, info in parked),
            "sites": len(parked),
            "cycle_start": self.cycle_start,
            "top": top,
        }

    def stats(self) -> dict[str, Any]:
        """The JSON object ``frontier stats`` prints (see its help)."""
        blocks = sorted(self._read_inbox(apply=False))
        levels_new = [len(self.queues[q]) for q in NEW_QUEUES]
        levels_recrawl = [len(self.queues[q]) for q in RECRAWL_QUEUES]
        parked = sum(len(q) for q in self.parked.values())
        waiting_sites = [info for info in self.sites.sites.values() if info.queued or info.parked]
        return {
            "queued": sum(levels_new) + sum(levels_recrawl) + len(self.queues[DISCOVERY]),
            "levels": {
                "new": levels_new,
                "recrawl": levels_recrawl,
                "discovery": len(self.queues[DISCOVERY]),
            },
            "parked": parked,
            "reasons": {k: v for k, v in sorted(self.reasons.items()) if v},
            "sites": len(waiting_sites),
            "sites_known": len(self.sites.sites),
            "hosts": len(self.hosts),
            "refused": dict(sorted(self.refused.items())),
            "added": self.totals["added"],
            "handed_out": self.totals["handed-out"],
            "duplicate_recrawls": self.totals["duplicate-recrawls"],
            "budgets": {
                "cycle": self.cycle_number,
                "cycle_start": iso(self.cycle_start) if self.cycle_start else None,
                "used": sum(info.used for info in self.sites.sites.values()),
                "sites_over_budget": sum(1 for info in waiting_sites if info.parked),
                "parked_sites": self.over_budget()["top"],
            },
            "blocked": blocks,
            "segments": sum(len(q.segs) for q in self._all_queues()),
        }


def _weight(name: str, opts: NextOptions) -> float:
    if name == DISCOVERY:
        return LEVEL_WEIGHTS[-1]
    level = int(name.rsplit("-", 1)[1])
    share = opts.recrawl_share if name.startswith("recrawl") else 1.0 - opts.recrawl_share
    return LEVEL_WEIGHTS[level] * max(share, 0.01)


class _Picker:
    """The working state of one :meth:`Frontier.next` call.

    Reads windows of records from queue heads and picks, host by host in turn, the
    records that may go out: not more than ``per_host`` for a host, not more than
    the site's remaining budget. What it reads but does not pick goes back: records
    of hosts already at their limit to the tail of their queue (so a host with a
    million URLs cannot hide the others behind it), records of sites over budget to
    the parked queue, and records simply not needed back to the head.
    """

    def __init__(self, frontier: Frontier, opts: NextOptions, refused: list[Record]):
        self.f = frontier
        self.opts = opts
        self.refused = refused
        self.batch: list[bytes] = []
        self.host_n: Counter[str] = Counter(opts.outstanding)
        self.remaining = {name: len(frontier.queues[name]) for name in QUEUES}
        self.held: dict[str, list[tuple[bytes, Record]]] = {name: [] for name in QUEUES}
        self.rotate: dict[str, list[bytes]] = {name: [] for name in QUEUES}
        self.park: dict[str, list[bytes]] = {name: [] for name in QUEUES}
        self._budget: dict[str, int] = {}

    def _left(self, site: str) -> int:
        budget = self._budget.get(site)
        if budget is None:
            budget = self._budget[site] = self.f.sites.budget(site)
        return budget - self.f.sites.get(site).used

    def take(self, name: str, need: int) -> int:
        cands = self.held[name]
        self.held[name] = []
        # Read about twice what is needed, so hosts at their limit can be skipped; a
        # cap keeps a huge --max from reading a whole queue into memory at once.
        want = max(0, min(need * 2 + 256, _WINDOW_CAP) - len(cands))
        if want and self.remaining[name]:
            lines = self.f.queues[name].take(min(want, self.remaining[name]))
            self.remaining[name] -= len(lines)
            cands.extend((line, orjson.loads(line)) for line in lines)
        if not cands:
            return 0
        groups: dict[str, list[int]] = {}
        for i, (_, rec) in enumerate(cands):
            groups.setdefault(rec["host"], []).append(i)
        status = bytearray(len(cands))  # 0 not looked at, 1 picked, 2 rotate, 3 park, 4 refused
        picked: list[int] = []
        active = list(groups.values())
        per_host = self.opts.per_host
        budgets = self.opts.budgets
        f = self.f
        r = 0
        while active and len(picked) < need:
            still = []
            for idx in active:
                i = idx[r]
                rec = cands[i][1]
                host = rec["host"]
                site = rec["site"]
                # Budget before --per-host: a URL whose site has used its budget waits
                # for the next cycle whatever its host's turn, so say so now (parked)
                # rather than rotate it to the tail for the next batch to park.
                if f.blocks and f.is_blocked(site, host):
                    status[i] = 4
                elif budgets and self._left(site) <= 0:
                    status[i] = 3
                elif per_host and self.host_n[host] >= per_host:
                    status[i] = 2
                else:
                    status[i] = 1
                    picked.append(i)
                    self.host_n[host] += 1
                    f.sites.get(site).used += 1
                if r + 1 < len(idx):
                    still.append(idx)
                if len(picked) >= need:
                    break
            active = still
            r += 1
        held = self.held[name]
        for i, (line, rec) in enumerate(cands):
            st = status[i]
            if st == 0:
                held.append((line, rec))
            elif st == 2:
                self.rotate[name].append(line)
            elif st == 3:
                self.park[name].append(line)
                info = f.sites.get(rec["site"])
                info.queued -= 1
                info.parked += 1
            elif st == 4:
                f._forget(rec, parked=False)
                f._refuse(rec, "blocked", "operator block", self.refused.append)
        for i in picked:
            line, rec = cands[i]
            self.batch.append(line)
            f._forget(rec, parked=False, handed=True)
        return len(picked)

    def finish(self) -> None:
        """Put back what was read and not handed out (in memory; durable at commit)."""
        for name in QUEUES:
            queue = self.f.queues[name]
            queue.push_front([line for line, _ in self.held[name]])
            queue.push_back(self.rotate[name])
            self.f.parked[name].push_back(self.park[name])
