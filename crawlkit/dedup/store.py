"""The durable state of ``crawlkit dedup``: pages seen, their digests and simhashes.

Files under ``DIR/dedup/`` (the directory is locked while open, docs/design.md invariant 6):

``pages.bin``
    Append-only, one 40-byte little-endian entry per stored page: simhash, 64-bit
    xxh3 of the digest string (0: none), xxh3 of the URL, offset of the URL in
    ``urls.bin``, URL length, flags (bit 0: the simhash is in the near index). A page's
    id is its entry number.
``urls.bin``
    The URLs, UTF-8, back to back (read only to name ``dup_of``).
``sites.<generation>.json``
    Per-site recent counts ``{site: [pages, exact, near]}``, whole (kept in memory
    packed: :mod:`crawlkit.dedup.sitecounts`).
``sites-journal.<generation>.json``
    The counts of the sites that changed in one commit since the whole copy, applied
    over it in the order the manifest lists them. A commit writes the whole counts
    again only when its journal would hold as many entries as there are sites, or 64
    files: a cycle touches a few hundred sites of the crawl's thousands, and writing
    them all at every commit cost 19.8 ms at 100,000 sites and 203.5 ms (35.8 MB) at
    1,000,000, against the change's size now.
``tables.<generation>.bin``
    A snapshot of the near-copy index's 10 sorted tables covering the first
    ``tables_pages`` log entries: ``tables_rows`` uint32 page ids per table (40 bytes
    a page). Opened as a memory map (only the directories are rebuilt), so a large
    state opens without re-sorting every table. Rewritten when the log has grown by a
    quarter. A snapshot of the older layout (``tables_layout`` absent: 20 tables of
    keys and ids) is not read, the index is rebuilt from the log, and the file is
    replaced by the next snapshot.
``manifest.json``
    ``{"version", "pages", "url_bytes", "sites_generation", "sites_journal",
    "tables_generation", "tables_pages", "tables_rows", "tables_layout"}``: what is
    committed (``sites_journal``: the journal files' generations, oldest first; absent
    in older crawlkits' states, which load as before, and ignored by them: such a
    crawlkit sees the counts of the last whole copy, and its next commit writes a whole
    copy again). Older crawlkits named it ``MANIFEST.json``; such a directory is
    migrated by one rename when opened.

Commit protocol (invariant 5): the directory is a :class:`~crawlkit.durable.DurableDir`
whose generation files are the site counts and table snapshots. New entries and URLs
are appended and fsynced, the site counts are written under a new generation name,
and only then is the manifest replaced atomically. On open, bytes past the manifest's
lengths (a crash between the appends and the manifest) are cut off, and files of other
generations and temporary files are deleted, so the state is always that of the last
commit, and rerunning the same input after a crash gives the same dedup records.

The in-memory indexes (exact digests as a sorted uint64 array, simhashes in a
:class:`~crawlkit.dedup.nearindex.NearIndex`) are rebuilt from ``pages.bin`` on open.
Of each entry only what a lookup reads stays in memory: the simhash (a near match's
distance), the URL's fingerprint (a page never matches its own URL) and the flags, 17
bytes a page beside the indexes' 12 (exact) and ~40 (near). The digest hash, the URL's
offset and length of a committed page are read back from ``pages.bin`` when a duplicate
is named (:meth:`DedupStore.url_of`); held as columns they were 20 bytes a page more,
memory that grew with every page a crawl's step process ever stored (issue 27).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from crawlkit.dedup.nearindex import INDEX_TABLES, NearIndex
from crawlkit.dedup.sitecounts import MAX_WINDOW, SiteCounts
from crawlkit.durable import DurableDir
from crawlkit.errors import StateError
from crawlkit.streams import write_array

__all__ = ["ENTRY", "FLAG_INDEXED", "DedupStore"]

VERSION = 1
#: The table snapshot's layout: 2 = 10 tables of ids (:mod:`crawlkit.dedup.nearindex`).
#: 1 (no ``tables_layout`` in the manifest) was 20 tables of keys and ids.
TABLES_LAYOUT = 2
# Below this many new pages a snapshot is not worth writing: rebuilding is instant.
SNAPSHOT_MIN = 50_000
ENTRY = np.dtype(
    [
        ("sh", "<u8"),
        ("d64", "<u8"),
        ("ufp", "<u8"),
        ("uoff", "<u8"),
        ("ulen", "<u4"),
        ("flags", "<u4"),
    ]
)
FLAG_INDEXED = 1
#: The generation files of ``DIR/dedup``: site counts and table snapshots.
FILES = re.compile(r"^(sites\.\d+\.json|sites-journal\.\d+\.json|tables\.\d+\.bin)$")
#: Journal files of site counts at most between two whole copies (bounds the reads at open).
MAX_SITES_JOURNAL = 64
#: The manifest's name before crawlkit settled on ``manifest.json`` for every state.
OLD_MANIFEST = "MANIFEST.json"


class DedupStore:
    """Pages seen so far, with exact-digest and near-simhash lookups.

    Entries added with :meth:`add` are visible to lookups at once but are durable only
    after :meth:`commit`. ``window`` is the per-site count at which a site's recent
    counts are halved, so they describe roughly its last ``window`` to ``2 * window``
    pages.
    """

    def __init__(self, directory: str | os.PathLike[str], *, window: int = 1000):
        if not 1 <= window <= MAX_WINDOW:
            raise ValueError(f"window must be between 1 and {MAX_WINDOW}, not {window}")
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.window = window
        self.durable = DurableDir(self.dir, owns=FILES, what="dedup", legacy=(OLD_MANIFEST,))
        manifest = self.durable.load()
        if manifest is not None:
            manifest_path = self.durable.manifest_path
            try:
                if manifest.get("version") != VERSION:
                    raise StateError(
                        f"{self.dir}: dedup state version {manifest.get('version')}, "
                        f"this crawlkit reads {VERSION}"
                    )
                n_pages = int(manifest["pages"])
                url_bytes = int(manifest["url_bytes"])
                generation = int(manifest["sites_generation"])
                journal = [int(g) for g in manifest.get("sites_journal", [])]
                tables_gen = int(manifest.get("tables_generation", 0))
                tables_pages = int(manifest.get("tables_pages", 0))
                tables_rows = int(manifest.get("tables_rows", 0))
                tables_layout = int(
                    manifest.get("tables_layout", 1 if tables_gen else TABLES_LAYOUT)
                )
            except (AttributeError, ValueError, KeyError, TypeError) as exc:
                raise StateError(f"{manifest_path}: damaged manifest ({exc})") from exc
        else:
            n_pages, url_bytes, generation, journal = 0, 0, 0, []
            tables_gen, tables_pages, tables_rows = 0, 0, 0
            tables_layout = TABLES_LAYOUT
        self._generation = generation
        self._journal = journal
        self._tables_gen = tables_gen
        self._tables_pages = tables_pages
        self._tables_rows = tables_rows
        self._tables_layout = tables_layout
        self._pages_path = self.dir / "pages.bin"
        self._urls_path = self.dir / "urls.bin"
        entries = self._load_entries(n_pages)
        self._trim(self._urls_path, url_bytes)
        self._committed_pages = n_pages
        self._committed_url_bytes = url_bytes

        capacity = max(1024, n_pages * 2)
        self.simhash = np.zeros(capacity, np.uint64)
        self.ufp = np.zeros(capacity, np.uint64)
        self.flags = np.zeros(capacity, np.uint8)
        self.simhash[:n_pages] = entries["sh"]
        self.ufp[:n_pages] = entries["ufp"]
        self.flags[:n_pages] = entries["flags"]
        self.n = n_pages
        # The entries added since the last commit: what only the commit writes.
        self._pending: list[tuple[int, int, int]] = []  # (digest hash, URL offset, length)
        self._pending_urls = bytearray()

        # Exact index: sorted digest hashes with their ids (each digest stored once).
        d64 = entries["d64"]
        has = d64 != 0
        ids = np.flatnonzero(has).astype(np.uint32)
        order = np.argsort(d64[has], kind="stable")
        self._dkeys = d64[has][order]
        self._dids = ids[order]
        self._pending_digests: dict[int, int] = {}
        del entries, d64, has, ids, order  # the whole log, read once: freed before the tables

        self.near = self._load_tables(n_pages)
        indexed = np.flatnonzero(self.flags[self._tables_pages : n_pages] & FLAG_INDEXED)
        indexed += self._tables_pages
        self.near.add(indexed, self.simhash)
        self.durable.remove_leftovers(self._live_files())

        self.sites = SiteCounts()
        self._journal_entries = 0  # site entries in the journal files
        if generation:
            self._read_sites(f"sites.{generation}.json")
            for g in journal:
                self._journal_entries += self._read_sites(f"sites-journal.{g}.json")
        self._changed_sites: set[str] = set()  # since the last commit
        # Opened last, so a damaged state raises before any file is left open.
        self._url_file = open(self._urls_path, "a+b")  # noqa: SIM115 - closed in close()
        self._pages_file = open(self._pages_path, "a+b")  # noqa: SIM115 - closed in close()

    # ------------------------------------------------------------ loading

    def _read_sites(self, name: str) -> int:
        """Apply the site counts in ``name`` over those read before; how many sites."""
        path = self.dir / name
        try:
            counts = orjson.loads(path.read_bytes())
        except FileNotFoundError:
            raise StateError(f"{path} is missing; state damaged") from None
        except orjson.JSONDecodeError as exc:
            raise StateError(f"{path}: damaged site counts ({exc})") from exc
        if not isinstance(counts, dict):
            raise StateError(f"{path}: damaged site counts (not an object)")
        bad = self.sites.update(counts)
        if bad is not None:
            raise StateError(f"{path}: damaged site counts ({bad!r} is not three counts)")
        return len(counts)

    def _load_tables(self, n_pages: int) -> NearIndex:
        """The committed table snapshot as a memory map (or an empty index)."""
        if not self._tables_gen or self._tables_layout != TABLES_LAYOUT:
            # An older layout's snapshot stays named by the manifest (and on disk)
            # until the next snapshot replaces it; the index is rebuilt from the log.
            self._tables_pages = 0
            return NearIndex()
        path = self.dir / f"tables.{self._tables_gen}.bin"
        rows = self._tables_rows
        n_tables = len(INDEX_TABLES)
        try:
            if self._tables_pages > n_pages or path.stat().st_size != n_tables * rows * 4:
                raise ValueError(f"not {rows} rows for {self._tables_pages} pages")
            if rows == 0:
                return NearIndex()
            arr = np.memmap(path, dtype="<u4", mode="r", shape=(n_tables, rows))
            return NearIndex.from_tables(arr, self.simhash)
        except (OSError, ValueError) as exc:
            raise StateError(f"{path}: missing or damaged table snapshot ({exc})") from exc

    def _live_files(self) -> list[str]:
        """The generation files the committed manifest names."""
        live = [f"sites.{self._generation}.json"] if self._generation else []
        live += [f"sites-journal.{g}.json" for g in self._journal]
        if self._tables_gen:
            live.append(f"tables.{self._tables_gen}.bin")
        return live

    def _load_entries(self, n_pages: int) -> np.ndarray:
        path = self._pages_path
        want = n_pages * ENTRY.itemsize
        have = path.stat().st_size if path.exists() else 0
        if have < want:
            raise StateError(f"{path}: {have} bytes, the manifest says {want}; state damaged")
        self._trim(path, want)
        if n_pages == 0:
            return np.zeros(0, ENTRY)
        return np.fromfile(path, dtype=ENTRY, count=n_pages)

    @staticmethod
    def _trim(path: Path, size: int) -> None:
        """Cut uncommitted bytes (left by a crash) off an append-only file."""
        if not path.exists():
            if size:
                raise StateError(f"{path} is missing; state damaged")
            return
        actual = path.stat().st_size
        if actual < size:
            raise StateError(f"{path}: {actual} bytes, the manifest says {size}; state damaged")
        if actual > size:
            with open(path, "r+b") as f:
                f.truncate(size)
                f.flush()
                os.fsync(f.fileno())

    # ------------------------------------------------------------ lookups

    def url_of(self, page_id: int) -> str:
        """The URL of a stored page."""
        if page_id >= self._committed_pages:
            _, off, length = self._pending[page_id - self._committed_pages]
        else:
            raw = os.pread(self._pages_file.fileno(), ENTRY.itemsize, page_id * ENTRY.itemsize)
            entry = np.frombuffer(raw, ENTRY)[0]
            off, length = int(entry["uoff"]), int(entry["ulen"])
        if off >= self._committed_url_bytes:
            start = off - self._committed_url_bytes
            data = bytes(self._pending_urls[start : start + length])
        else:
            data = os.pread(self._url_file.fileno(), length, off)
        return data.decode("utf-8", "replace")

    def exact_lookup(self, d64s: np.ndarray) -> np.ndarray:
        """For each digest hash, the id of the committed-index page with it, or -1."""
        out = np.full(len(d64s), -1, dtype=np.int64)
        if len(self._dkeys) == 0 or len(d64s) == 0:
            return out
        pos = np.searchsorted(self._dkeys, d64s)
        pos_c = np.minimum(pos, len(self._dkeys) - 1)
        hit = (self._dkeys[pos_c] == d64s) & (d64s != 0)
        out[hit] = self._dids[pos_c[hit]]
        return out

    def pending_digest(self, d64: int) -> int | None:
        return self._pending_digests.get(d64)

    # ------------------------------------------------------------ changes

    def _grow(self) -> None:
        size = len(self.simhash) * 2
        for name in ("simhash", "ufp", "flags"):
            old = getattr(self, name)
            new = np.zeros(size, old.dtype)
            new[: self.n] = old[: self.n]
            setattr(self, name, new)

    def add(self, simhash: int, d64: int, ufp: int, url: str, indexed: bool) -> int:
        """Store a page (visible at once, durable after :meth:`commit`); its id."""
        if self.n == len(self.simhash):
            self._grow()
        page_id = self.n
        data = url.encode("utf-8", "surrogatepass")
        self.simhash[page_id] = simhash
        self.ufp[page_id] = ufp
        self.flags[page_id] = FLAG_INDEXED if indexed else 0
        self._pending.append((d64, self._committed_url_bytes + len(self._pending_urls), len(data)))
        self._pending_urls += data
        if d64:
            self._pending_digests.setdefault(d64, page_id)
        self.n += 1
        return page_id

    def seal_batch(self, first_id: int) -> None:
        """Move the entries from ``first_id`` on into the vectorised indexes."""
        ids = np.arange(first_id, self.n)
        if len(ids) == 0:
            return
        indexed = ids[(self.flags[first_id : self.n] & FLAG_INDEXED) != 0]
        self.near.add(indexed, self.simhash)
        if self._pending_digests:
            keys = np.fromiter(self._pending_digests.keys(), np.uint64, len(self._pending_digests))
            vals = np.fromiter(self._pending_digests.values(), np.uint32, len(keys))
            allk = np.concatenate((self._dkeys, keys))
            allv = np.concatenate((self._dids, vals))
            order = np.argsort(allk, kind="stable")
            self._dkeys, self._dids = allk[order], allv[order]
            self._pending_digests = {}

    def count_site(self, site: str, kind: str) -> None:
        """Count one page of ``site`` as unique, exact or near."""
        self._changed_sites.add(site)
        self.sites.count(site, kind, self.window)

    def commit(self) -> None:
        """Make every added page and the site counts durable (atomic, see module doc)."""
        new_entries = self.n - self._committed_pages
        if new_entries:
            entries = np.zeros(new_entries, ENTRY)
            sl = slice(self._committed_pages, self.n)
            entries["sh"] = self.simhash[sl]
            entries["ufp"] = self.ufp[sl]
            entries["flags"] = self.flags[sl]
            pending = np.array(self._pending, np.uint64).reshape(-1, 3)
            entries["d64"], entries["uoff"], entries["ulen"] = pending.T
            self._pages_file.seek(0, os.SEEK_END)
            self._pages_file.write(entries.tobytes())
            self._pages_file.flush()
            os.fsync(self._pages_file.fileno())
            self._url_file.seek(0, os.SEEK_END)
            self._url_file.write(self._pending_urls)
            self._url_file.flush()
            os.fsync(self._url_file.fileno())
        try:
            manifest = self._write_generation()
            self.durable.commit(manifest)
        except BaseException:
            self.durable.abort()
            raise
        self._generation = manifest["sites_generation"]
        self._journal = list(manifest["sites_journal"])
        # A whole copy empties the journal; otherwise this commit added its changes
        # (none, when nothing changed and the journal stayed as it was).
        self._journal_entries = (
            self._journal_entries + len(self._changed_sites) if self._journal else 0
        )
        self._changed_sites = set()
        self._tables_gen = manifest["tables_generation"]
        self._tables_pages = manifest["tables_pages"]
        self._tables_rows = manifest["tables_rows"]
        self._tables_layout = manifest["tables_layout"]
        self._committed_pages = self.n
        self._committed_url_bytes += len(self._pending_urls)
        self._pending = []
        self._pending_urls = bytearray()

    def _write_generation(self) -> dict[str, Any]:
        """Write the next generation's site counts (and a table snapshot when the log has
        grown enough), retire the files they replace; returns the manifest naming them."""
        generation, journal = self._write_sites()
        if generation != self._generation:
            if self._generation:
                self.durable.retire(f"sites.{self._generation}.json")
            for g in self._journal:
                self.durable.retire(f"sites-journal.{g}.json")
        tables_gen, tables_pages = self._tables_gen, self._tables_pages
        tables_rows, tables_layout = self._tables_rows, self._tables_layout
        if self.n - tables_pages > max(SNAPSHOT_MIN, tables_pages // 4):
            tables_gen, tables_pages = self._tables_gen + 1, self.n
            ids = self.near.compacted(self.simhash)
            tables_rows, tables_layout = int(ids.shape[1]), TABLES_LAYOUT
            with self.durable.create(f"tables.{tables_gen}.bin") as f:
                write_array(f, np.ascontiguousarray(ids, dtype="<u4"))
            if self._tables_gen:
                self.durable.retire(f"tables.{self._tables_gen}.bin")
        return {
            "version": VERSION,
            "pages": self.n,
            "url_bytes": self._committed_url_bytes + len(self._pending_urls),
            "sites_generation": generation,
            "sites_journal": journal,
            "tables_generation": tables_gen,
            "tables_pages": tables_pages,
            "tables_rows": tables_rows,
            "tables_layout": tables_layout,
        }

    def _write_sites(self) -> tuple[int, list[int]]:
        """This commit's site counts: the sites changed since the last commit as the
        next journal file, or all of them when the journal has grown as large as the
        counts (module doc). Returns the manifest's whole copy and journal."""
        changes = self._changed_sites
        entries = self._journal_entries + len(changes)
        if not changes and self._generation:
            return self._generation, list(self._journal)
        following = max([self._generation, *self._journal]) + 1
        if (
            not self._generation
            or len(self._journal) >= MAX_SITES_JOURNAL
            or entries > len(self.sites)
        ):
            self.durable.write(f"sites.{following}.json", self.sites.to_json())
            return following, []
        self.durable.write(f"sites-journal.{following}.json", self.sites.to_json(changes))
        return self._generation, [*self._journal, following]

    def close(self) -> None:
        self._url_file.close()
        self._pages_file.close()

    def index_bytes(self) -> dict[str, int]:
        """Bytes on disk and in memory, for the benchmark's bytes-per-page figure."""
        disk = sum(p.stat().st_size for p in self.dir.iterdir() if p.is_file() and p.name != "LOCK")
        memory = (
            self.near.memory_bytes() + self._dkeys.nbytes + self._dids.nbytes + self.n * (8 + 8 + 1)
        )
        return {"disk": disk, "memory": memory, "pages": self.n}
