"""The frontier's side tables on disk: a full copy now and then, a journal of changes between.

The site table (:class:`~crawlkit.frontier.budgets.SiteTable`) and the per-host queued
counts change a little at every commit (a batch touches a few hundred sites of
thousands), so writing them whole at every commit costs CPU in proportion to the
table, not to the change. :class:`SideTables` writes them whole only when the
journal has grown as large as the tables (a *compaction*), and otherwise one
``journal-<seq>.json.zst`` per commit holding what changed since the last one:

    {"site_changes": {site: SiteInfo.to_json(), ...}, "hosts": {host: count, ...}}

where a host count of 0 means the host has nothing queued any more (it is dropped),
and a site's last field, its linkers, is ``{"+": [names]}`` (the linkers it gained
since the last commit; ``{}``: none) rather than the whole list, which a site keeps
up to 256 of (:meth:`SiteTable.take_changes
<crawlkit.frontier.budgets.SiteTable.take_changes>`); a whole list (what a handoff's
merge writes) replaces the site's linkers. Journals written before linker deltas
hold whole entries under ``"sites"``, read as before; the new key keeps a crawlkit
of that time from reading ``{"+": ...}`` as a list of linkers: it ignores the key,
and sees the site table as of the last compaction (as below).
The manifest names the full copies in ``files`` (``sites``, ``hosts``, as before the
journal existed) and the journal files after them, oldest first, in ``journal``;
loading reads the full copies and applies the journal in order. Every journal file
is a generation file of the frontier's :class:`~crawlkit.durable.DurableDir`
(fsynced and renamed before the manifest that names it), so the crash guarantees of
:mod:`crawlkit.frontier.store` are unchanged: a commit's journal file counts only
once its manifest is in place.

Compatibility: a manifest without ``journal`` (every older crawlkit's) loads as
before. An older crawlkit opening a newer state ignores ``journal``: it sees the site
table and host counts of the last compaction (site signals and counters up to one
table's worth of changes old; the queues themselves are exact), and its next commit
writes full copies again, which this version reads as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

import orjson
import zstandard

from crawlkit.durable import DurableDir
from crawlkit.frontier.budgets import SiteTable

__all__ = ["MAX_JOURNAL_FILES", "HostCounts", "SideTables"]

#: Journal files at most between two compactions (bounds the reads at open).
MAX_JOURNAL_FILES = 64


class HostCounts(Counter[str]):
    """Queued URLs per host, remembering which hosts changed since :meth:`take_changes`.

    Every change goes through ``__setitem__`` or ``pop`` (what the frontier uses);
    ``+=`` and ``-=`` on an item are ``__setitem__`` too.
    """

    def __init__(self, counts: dict[str, int] | None = None):
        super().__init__()
        if counts:
            dict.update(self, counts)
        self.changed: set[str] = set()

    def __setitem__(self, host: str, count: int) -> None:
        dict.__setitem__(self, host, count)
        self.changed.add(host)

    def pop(self, host: str, *default: Any) -> Any:
        self.changed.add(host)
        return dict.pop(self, host, *default)

    def take_changes(self) -> dict[str, int]:
        """The count of each host changed since the last call (0: no longer queued)."""
        changes = {host: self.get(host, 0) for host in self.changed}
        self.changed = set()
        return changes


class SideTables:
    """Reads and writes the site table and host counts of one frontier (see module doc).

    ``read`` loads a generation file's JSON value (raising ``StateError`` when it is
    missing or damaged).
    """

    #: Compact when the journal holds this many entries per entry of the tables.
    compact_at = 1.0

    def __init__(self, durable: DurableDir, read: Callable[[str], Any]):
        self.durable = durable
        self.read = read
        self.journal: list[str] = []
        self._entries = 0  # site and host entries in the journal files
        self._pending: tuple[list[str], int] = ([], 0)  # written, not yet committed

    def load(self, files: dict[str, str], journal: Iterable[str], sites: SiteTable) -> HostCounts:
        """Fill ``sites`` from the committed files; returns the host counts."""
        if "sites" in files:
            sites.load_json(self.read(files["sites"]))
        hosts = HostCounts(self.read(files["hosts"]) if "hosts" in files else None)
        self.journal = list(journal)
        self._entries = 0
        for name in self.journal:
            change = self.read(name)
            # "sites": whole entries (journals written before linker deltas);
            # "site_changes": entries whose linkers may be deltas (see the module doc).
            site_changes = {**change.get("sites", {}), **change.get("site_changes", {})}
            host_changes = change.get("hosts", {})
            sites.apply_json(site_changes)
            for host, count in host_changes.items():
                if count:
                    dict.__setitem__(hosts, host, count)
                else:
                    dict.pop(hosts, host, None)
            self._entries += len(site_changes) + len(host_changes)
        sites.forget_changes()
        hosts.changed.clear()
        return hosts

    def names(self) -> list[str]:
        return list(self.journal)

    def write(
        self, seq: int, files: dict[str, str], sites: SiteTable, hosts: HostCounts
    ) -> tuple[dict[str, str], list[str]]:
        """Write this commit's changes: a journal file, full copies, or nothing.

        Returns the manifest's ``files`` and ``journal``; the files they replace are
        retired (deleted once the commit is made). Once the manifest is committed,
        call :meth:`committed`.
        """
        site_changes = sites.take_changes()
        host_changes = hosts.take_changes()
        files = dict(files)
        entries = self._entries + len(site_changes) + len(host_changes)
        full = (
            "sites" not in files
            or "hosts" not in files
            or len(self.journal) >= MAX_JOURNAL_FILES
            or entries > self.compact_at * (len(sites.sites) + len(hosts))
        )
        cctx = zstandard.ZstdCompressor(level=1, write_checksum=True)
        if full:
            for kind, value in (("sites", sites.to_json()), ("hosts", dict(hosts))):
                name = f"{kind}-{seq}.json.zst"
                self.durable.write(name, cctx.compress(orjson.dumps(value)))
                if kind in files:
                    self.durable.retire(files[kind])
                files[kind] = name
            for name in self.journal:
                self.durable.retire(name)
            self._pending = ([], 0)
        elif site_changes or host_changes:
            name = f"journal-{seq}.json.zst"
            data = orjson.dumps({"site_changes": site_changes, "hosts": host_changes})
            self.durable.write(name, cctx.compress(data))
            self._pending = ([*self.journal, name], entries)
        else:
            self._pending = (list(self.journal), self._entries)
        return files, list(self._pending[0])

    def committed(self) -> None:
        """The manifest naming what :meth:`write` returned is committed."""
        self.journal, self._entries = self._pending
