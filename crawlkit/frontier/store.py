"""The frontier: durable priority queues with trap limits, site budgets and blocks.

Layout of ``DIR/frontier/`` (the caller holds the state directory's lock):

``manifest.json``
    the one file whose atomic replacement commits a change: every queue's segment
    list and read offset, the cycle, counters, the blocks, and the names of the
    current generation of the side files below.
``seg-<id>.ndjson.zst``
    immutable segments of URL records (see :mod:`crawlkit.frontier.queues`).
``sites-<seq>.json.zst``, ``hosts-<seq>.json.zst``, ``journal-<seq>.json.zst``
    per-site signals and counters and per-host queued counts: full copies written
    now and then, and a journal of what changed at each commit since (see
    :mod:`crawlkit.frontier.journal`);
``recrawl-<seq>.fps``
    the fingerprints of queued recrawls, rewritten at each commit that changes them.
    Every side file gets a new name that the manifest names, so the manifest and its
    side files always match.
``inbox/``
    operator commands (``frontier block``) written without the lock, applied and
    removed by the next process that owns the frontier.

Queues: ``new-0`` .. ``new-3`` (levels, 0 most urgent), ``new-d`` (discovery: the
first URL of a site never handed out yet), ``recrawl-0`` .. ``recrawl-3``, and for
each of them a parked twin holding URLs over their site's budget until the next
cycle.

Durability (docs/design.md invariants 1 and 5): the directory is a
:class:`~crawlkit.durable.DurableDir`. Nothing changes on disk until
:meth:`Frontier.commit`, which writes new segments and side files, fsyncs them and
then replaces the manifest. A crash before the replacement leaves the previous
state; after it, the new one; files no manifest names are deleted at the next open.
:meth:`Frontier.next` hands out a batch without committing, so the caller writes the
batch first and commits after: a crash in between hands the same URLs out again (at
least once), never loses them.

Memory: per-site and per-host counters (about 200 bytes a site, 100 a host; once
budgets are asked for, the trusted-site index adds about 10 bytes a cross-site link
and 100 a trusted site), the fingerprints of queued recrawls (about 70 bytes each,
loaded only when recrawls are added or handed out) and the segments being read or
written; never the queued URLs themselves.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import zstandard

from crawlkit.durable import DurableDir
from crawlkit.errors import StateError
from crawlkit.frontier.add import AddResult, AddRun, PendingQueues
from crawlkit.frontier.batch import Batch, NextOptions, Picker, pick
from crawlkit.frontier.budgets import BudgetPolicy, SiteTable, has_linker
from crawlkit.frontier.commands import is_blocked, normalize_target, post_command, read_commands
from crawlkit.frontier.journal import HostCounts, SideTables
from crawlkit.frontier.priority import DISCOVERY, NEW_QUEUES, QUEUES, RECRAWL_QUEUES
from crawlkit.frontier.queues import SegmentQueue, SegmentStore
from crawlkit.frontier.sitelinks import SiteLinks
from crawlkit.frontier.traps import TrapLimits
from crawlkit.records import Record, Refusal, refusal
from crawlkit.times import iso, parse_time
from crawlkit.url import Canonicalizer

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
#: The generation files of ``DIR/frontier`` (see the module doc).
FILES = re.compile(
    r"^(seg-\d+\.ndjson\.zst|(sites|hosts|journal)-\d+\.json\.zst|recrawl-\d+\.fps)$"
)


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
        self.durable = DurableDir(directory, owns=FILES, what="frontier")
        self.sites = SiteTable(policy)
        self.limits = limits or TrapLimits()
        self._canon = canonicalizer
        self.store = SegmentStore(self.durable)
        self.queues = {name: SegmentQueue(self.store) for name in QUEUES}
        self.parked = {name: SegmentQueue(self.store) for name in QUEUES}
        self._budgets_checked = -1  # SiteTable.version when parked sites were last checked
        self.hosts = HostCounts()
        self._side = SideTables(self.durable, self._read_side)
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
        self._committed = b""  # the manifest as last committed (or read), as JSON
        self._new_blocks = False
        self._pending = PendingQueues(self.queues)

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
        manifest = self.durable.load(migrate=not read_only) or {}
        if manifest and manifest.get("version") != MANIFEST_VERSION:
            raise StateError(
                f"frontier manifest {self.durable.manifest_path} has version "
                f"{manifest.get('version')!r}; this crawlkit reads version {MANIFEST_VERSION}"
            )
        self._load(manifest)
        if not read_only:
            self.durable.remove_leftovers(self._live_files())
            self.apply_commands()
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
        self._committed = orjson.dumps(m)
        self.hosts = self._side.load(self._files, m.get("journal", []), self.sites)

    def _read_side(self, name: str) -> Any:
        path = self.directory / name
        try:
            return orjson.loads(
                zstandard.ZstdDecompressor().decompressobj().decompress(path.read_bytes())
            )
        except (OSError, zstandard.ZstdError, orjson.JSONDecodeError) as exc:
            raise StateError(f"frontier state file {path} is unreadable: {exc}") from exc

    def _live_files(self) -> set[str]:
        """The files the committed manifest names: segments and side files."""
        segments = {self.store.name(seg) for q in self._all_queues() for seg in q.segment_ids()}
        return segments | set(self._files.values()) | set(self._side.journal)

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

        A commit with nothing new (the crawl commits after every step, and some
        steps change nothing) writes nothing: the committed state is already this one.
        If it fails (a full disk), the files it wrote are deleted before the error is
        raised, the last committed state stays as it was, and this object must not be
        used again.
        """
        try:
            self._pending.flush()
            if not self._changed():
                self._remove_applied_commands()
                return
            files, journal = self._write_side_files()
            manifest = self._manifest(files, journal)
            self.durable.commit(manifest)
        except BaseException:
            self.durable.abort()
            raise
        self._committed = orjson.dumps(manifest)
        self._files = files
        self._side.committed()
        self._recrawl_dirty = False
        self._remove_applied_commands()

    def _changed(self) -> bool:
        """False if the committed manifest and side files already hold this state."""
        return bool(
            self.sites.changed
            or self.hosts.changed
            or self._recrawl_dirty
            or self.durable.pending
            or orjson.dumps(self._manifest(self._files, self._side.journal)) != self._committed
        )

    def _remove_applied_commands(self) -> None:
        """Delete the operator commands the committed state has applied."""
        for path in self._inbox_done:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._inbox_done.clear()

    def _write_side_files(self) -> tuple[dict[str, str], list[str]]:
        """Write this commit's side files; returns the manifest's ``files`` and
        ``journal`` (the replaced ones are retired, deleted once the commit is made)."""
        self.seq += 1
        files, journal = self._side.write(self.seq, self._files, self.sites, self.hosts)
        fps = self._recrawl_fps
        if self._recrawl_dirty and fps is not None:
            name = f"recrawl-{self.seq}.fps"
            self.durable.write(name, np.fromiter(fps, dtype="<u8", count=len(fps)).tobytes())
            if "recrawl" in files:
                self.durable.retire(files["recrawl"])
            files["recrawl"] = name
        return files, journal

    def _manifest(self, files: dict[str, str], journal: list[str]) -> dict[str, Any]:
        return {
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
            "journal": journal,  # applied after files' sites and hosts, in order
        }

    # ----------------------------------------------------------------- operator blocks

    def apply_commands(self) -> None:
        """Apply operator commands posted since the frontier was opened (an owner that
        keeps it open, like ``crawlkit crawl``, calls this before each ``next``)."""
        commands = read_commands(self.inbox, self.blocks)
        self.blocks = commands.blocks
        self._new_blocks = self._new_blocks or commands.new_block
        self._inbox_done.extend(commands.files)

    @staticmethod
    def post_command(directory: str | os.PathLike[str], op: str, target: str) -> Path:
        """Write an operator command (``block``/``unblock``) to the inbox; no lock needed.

        The command is a new file, written atomically, so it can be posted while
        another process owns the frontier; that process applies it at its next
        ``next`` or ``add`` (its next open), and the batch after that honours it.
        """
        return post_command(directory, op, target)

    def is_blocked(self, site: str, host: str) -> bool:
        return is_blocked(self.blocks, site, host)

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
        on_refused: Callable[[Refusal], None],
    ) -> AddResult:
        """Queue URL records; every refused one is passed to ``on_refused``.

        Each record with a ``url`` is either queued or refused (a copy of the record
        with ``outcome: "refused"``, ``refused`` (the reason) and ``detail``), never
        dropped (invariant 1). Records without ``fp``, ``site`` or ``host`` are
        canonicalized first. A record with ``yield`` and ``site`` but no ``url`` is a
        dedup site record and updates that site's budget. A recrawl of a URL whose
        recrawl is already queued is counted as a duplicate and not queued twice.
        Records without ``url`` or ``yield`` raise nothing: they are returned to the
        caller's ``on_refused`` with reason ``no-url``. The steps are
        :class:`~crawlkit.frontier.add.AddRun`'s.
        """
        run = AddRun(
            now=time.time() if now is None else now,
            limits=self.limits,
            sites=self.sites,
            hosts=self.hosts,
            blocks=self.blocks,
            pending=self._pending,
            canonicalizer=self._canonicalizer,
            recrawls=self._recrawls,
            refuse=lambda rec, reason, detail: self._refuse(rec, reason, detail, on_refused),
        )
        for rec in records:
            run.add(rec)
        self._count_added(run)
        return run.result

    def _count_added(self, run: AddRun) -> None:
        """Fold one add's counts into the frontier's (durable at the next commit)."""
        for reason, n in run.reasons.items():
            self.reasons[reason] += n
        self.totals["added"] += run.result.queued
        if run.result.duplicates:
            self.totals["duplicate-recrawls"] += run.result.duplicates
        if run.recrawls_changed:
            self._recrawl_dirty = True

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
        links = SiteLinks()
        links.add(records)
        return self.note_site_links(links)

    def note_site_links(self, links: SiteLinks) -> tuple[int, int]:
        """:meth:`note_links` of the records ``links`` was given; returns the same."""
        sites = self.sites
        for site, from_site in links.pairs:
            info = sites.sites.get(site)
            if info is None or not has_linker(info.linkers, from_site):
                sites.note_link(site, from_site)
        return links.read, links.noted

    def _refuse(
        self, rec: Record, reason: str, detail: str, on_refused: Callable[[Refusal], None]
    ) -> None:
        """Count a refusal and pass on a copy of the record saying why."""
        self.refused[reason] += 1
        on_refused(refusal(rec, reason, detail))

    # ----------------------------------------------------------------- next

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values()) + len(self._pending)

    def next(self, opts: NextOptions) -> Batch:
        """Choose a batch (see the module doc of :mod:`crawlkit.frontier`); not committed.

        The records chosen leave the queues in memory only; write them out, then
        :meth:`commit`. Blocked URLs met on the way (all of them, right after a new
        block) come back in ``Batch.refused`` with reason ``blocked``.
        """
        now = time.time() if opts.now is None else opts.now
        self._pending.flush()
        refused: list[Refusal] = []
        if self._new_blocks:
            self._purge_blocked(refused)
            self._new_blocks = False
        self._turn_budgets(opts, now)

        def blocked(rec: Record) -> None:
            self._forget(rec, parked=False)
            self._refuse(rec, "blocked", "operator block", refused.append)

        picker = Picker(
            self.queues,
            self.parked,
            self.sites,
            opts,
            is_blocked=self.is_blocked if self.blocks else None,
            on_handed=lambda rec: self._forget(rec, parked=False, handed=True),
            on_blocked=blocked,
            queued_hosts=self.hosts,
            period=self.cycle_number if opts.budgets else None,
        )
        pick(picker, opts)
        self.totals["handed-out"] += len(picker.batch)
        return Batch(picker.batch, refused, held_per_host=picker.held_per_host)

    def _turn_budgets(self, opts: NextOptions, now: float) -> None:
        """Unpark the URLs parked over budget when budgets are off, when a new budget
        cycle starts, or when a site's budget grew since they were parked."""
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

    def _unpark_all(self) -> None:
        """Move every parked URL back to the tail of its queue (without rewriting)."""
        for name in QUEUES:
            parked = self.parked[name]
            if len(parked):
                self.queues[name].extend_segments(parked)
        self.sites.unpark_all()

    def _purge_blocked(self, refused: list[Refusal]) -> None:
        """Take every queued URL of a blocked site or host out, as a refused record."""
        for queues, parked in ((self.queues, False), (self.parked, True)):
            for queue in queues.values():
                for line in queue.remove_where(self._line_blocked):
                    rec = orjson.loads(line)
                    self._forget(rec, parked=parked)
                    self._refuse(rec, "blocked", "operator block", refused.append)

    def queued_among(self, urls: set[str], reason: str) -> set[str]:
        """Those of ``urls`` queued or parked with ``reason`` (a read of every segment,
        made only while the counts say some URL of that reason is queued)."""
        if not urls or not self.reasons.get(reason):
            return set()
        marker = b'"reason":' + orjson.dumps(reason)
        found: set[str] = set()
        for queue in self._all_queues():
            for line in queue.lines():
                if marker in line and (url := orjson.loads(line).get("url")) in urls:
                    found.add(url)
        return found

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
        blocks = sorted(read_commands(self.inbox, self.blocks).blocks)
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
