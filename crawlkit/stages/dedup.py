"""``crawlkit dedup``: page records to dedup records (exact, near, or unique).

For every input page record with a ``url``, exactly one dedup record comes out, in
input order (docs/design.md invariant 1)::

    {"url", "kind": "exact"|"near"|"unique", "dup_of", "distance", "site", "fp",
     "digest", "simhash"}

* ``exact``: another URL was stored earlier with the same ``digest`` string;
  ``dup_of`` is that first URL, ``distance`` 0.
* ``near``: a stored page of another URL has a simhash at most ``k`` (3) bits away;
  ``dup_of`` is the closest one (the earliest among equally close), ``distance`` the
  number of differing bits. Pages with no visible text (``text_bytes`` 0), with no
  word that counts (simhash 0: a table of prices, a date alone) or no simhash are
  only checked for exact copies.
* ``unique``: neither; ``dup_of`` and ``distance`` are null.

A URL is never a duplicate of itself: a recrawl whose content did not change matches
its own stored digest and is not counted as a copy (``dup_of`` always differs from
``url``). What is stored: the first URL of every digest, and the simhash of every
unique page (near copies are not indexed, so ``dup_of`` always names an original).

Work goes in chunks: the chunk is looked up in the vectorised indexes at once, then
decided record by record in order, with pages of the same chunk found through small
dictionaries; state is committed every ``commit_every`` pages and at the end.

Site records ``{"site", "pages", "exact", "near", "yield"}`` give, per site, the
recent pages and how many were copies; ``yield`` is the share of copies
``(exact + near) / pages``, which the frontier uses to cut a site's budget.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import xxhash

from crawlkit.dedup.nearindex import table_keys
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.records import DedupRecord, PageRecord, SiteYieldRecord, dedup_record
from crawlkit.state import StateDir, lock_state, open_substate, refuse_workers_state
from crawlkit.url import fingerprint, fingerprint_int, site_of_record

__all__ = [
    "WRITER_WAIT",
    "DedupStats",
    "dedup_records",
    "lock_dedup_writer",
    "open_dedup_store",
    "site_records",
]

MAX_DISTANCE = 3
# Seconds a new writer of the dedup index waits for the one before (a crawl's orphaned
# step process ends within its orphan watch's half-second poll): then a one-line error.
WRITER_WAIT = 60.0


@dataclass(slots=True)
class DedupStats:
    """Counts of one run, and the sites it touched (for the site records)."""

    pages: int = 0
    exact: int = 0
    near: int = 0
    unique: int = 0
    skipped: int = 0
    sites: set[str] = field(default_factory=set)

    def summary(self) -> str:
        return (
            f"{self.pages} pages: {self.exact} exact copies, {self.near} near copies, "
            f"{self.unique} unique; {self.skipped} records skipped"
        )


@dataclass(slots=True)
class _Item:
    record: PageRecord
    url: str
    ufp: int
    d64: int
    simhash: int | None
    eligible: bool
    site: str


def _digest_hash(digest: object) -> int:
    if not isinstance(digest, str) or not digest.strip():
        return 0
    return xxhash.xxh3_64_intdigest(digest.strip().encode("utf-8", "surrogatepass")) or 1


def _site_of(record: PageRecord) -> str:
    try:
        return site_of_record(record)
    except InvalidURL:
        return ""


def _other_kind(record: PageRecord) -> str | None:
    """What a record that is not a page record is (extract's page records have no
    outcome, no finder and no reason), or None."""
    if "outcome" in record:
        return "a fetch record (it has an outcome)"
    if "from" in record or "reason" in record:
        return "a link or URL record (it has from or reason)"
    return None


def _parse(source: str, lineno: int, record: PageRecord, reporter: Reporter) -> _Item | None:
    url = record.get("url")
    if not isinstance(url, str) or not url:
        reporter.bad_record(source, lineno, 'no "url" (not a page record)')
        return None
    other = _other_kind(record)
    if other is not None:
        # stored as a page, a link or a fetch record counted against its site's yield
        # (pages, no unique ones), which sets the frontier's budgets
        reporter.bad_record(source, lineno, f"{other}, not a page record")
        return None
    sh: int | None = None
    raw = record.get("simhash")
    if raw is not None:
        try:
            if not isinstance(raw, str) or not 1 <= len(raw) <= 16:
                raise ValueError
            sh = int(raw, 16)
        except ValueError:
            reporter.warn(
                f"{source}:{lineno}: simhash {raw!r} is not 16 hex digits; "
                "checked for exact copies only",
                "bad simhash",
            )
    text_bytes = record.get("text_bytes")
    # A simhash of 0 is a text with no word that counts (digits and dates only): all
    # such pages would be near copies of each other, across sites.
    eligible = bool(sh) and not (isinstance(text_bytes, int) and text_bytes <= 0)
    return _Item(
        record,
        url,
        fingerprint_int(url),
        _digest_hash(record.get("digest")),
        sh,
        eligible,
        _site_of(record),
    )


def _main_near(
    store: DedupStore, items: list[_Item], k: int
) -> tuple[dict[int, tuple[int, int]], set[int]]:
    """Best stored near match per item index (other URLs only), and items that met
    themselves (their own URL within ``k`` bits)."""
    idx = [i for i, it in enumerate(items) if it.eligible]
    if not idx or len(store.near) == 0:
        return {}, set()
    q = np.fromiter((items[i].simhash for i in idx), np.uint64, len(idx))
    qfp = np.fromiter((items[i].ufp for i in idx), np.uint64, len(idx))
    qi, cid, dist = store.near.within(q, store.simhash, k)
    if len(qi) == 0:
        return {}, set()
    same = store.ufp[cid] == qfp[qi]
    selfs = {idx[int(i)] for i in np.unique(qi[same])}
    qi, cid, dist = qi[~same], cid[~same], dist[~same]
    # Sorted by query, distance, id: the first row of each query is its best match.
    uq, first = np.unique(qi, return_index=True)
    best = {idx[int(q_)]: (int(cid[f]), int(dist[f])) for q_, f in zip(uq, first, strict=True)}
    return best, selfs


def _colliding_keys(items: list[_Item]) -> dict[int, list[int]]:
    """The 20 table keys of each eligible item that shares a key with another one."""
    idx = np.array([i for i, it in enumerate(items) if it.eligible], dtype=np.int64)
    if len(idx) < 2:
        return {}
    sims = np.fromiter((items[i].simhash for i in idx), np.uint64, len(idx))
    keys = table_keys(sims)
    order = np.argsort(keys, axis=1, kind="stable")
    ranked = np.take_along_axis(keys, order, 1)
    same = ranked[:, 1:] == ranked[:, :-1]
    hit = np.zeros(keys.shape, dtype=np.bool_)
    hit[:, 1:] |= same
    hit[:, :-1] |= same
    collide = np.zeros(len(idx), dtype=np.bool_)
    for t in range(keys.shape[0]):
        collide[order[t][hit[t]]] = True
    rows = np.flatnonzero(collide)
    return dict(zip(idx[rows].tolist(), keys[:, rows].T.tolist(), strict=True))


def _decide_chunk(
    store: DedupStore,
    items: list[_Item],
    k: int,
    stats: DedupStats,
) -> list[DedupRecord]:
    first_id = store.n
    exact_main = store.exact_lookup(np.fromiter((it.d64 for it in items), np.uint64, len(items)))
    best_main, self_main = _main_near(store, items, k)
    # Pages of this chunk can match each other only if they share a table key; find
    # those few (vectorised) and give only them the per-record dictionary work.
    keys = _colliding_keys(items)
    delta: list[dict[int, list[int]]] = [{} for _ in range(20)]
    delta_size = 0
    out: list[DedupRecord] = []
    for i, it in enumerate(items):
        kind = "unique"
        dup_id = -1
        distance: int | None = None
        self_seen = False
        if it.d64:
            pid = int(exact_main[i])
            if pid < 0:
                pending = store.pending_digest(it.d64)
                pid = -1 if pending is None else pending
            if pid >= 0:
                if int(store.ufp[pid]) != it.ufp:
                    kind, dup_id, distance = "exact", pid, 0
                else:
                    self_seen = True
        self_near = i in self_main
        if kind == "unique" and it.eligible:
            assert it.simhash is not None
            best = best_main.get(i)
            row = keys.get(i)
            if delta_size and row is not None:
                found: set[int] = set()
                for t, key in enumerate(row):
                    bucket = delta[t].get(key)
                    if bucket:
                        found.update(bucket)
                for c in found:
                    d = (int(store.simhash[c]) ^ it.simhash).bit_count()
                    if d > k:
                        continue
                    if int(store.ufp[c]) == it.ufp:
                        self_near = True
                    elif best is None or (d, c) < (best[1], best[0]):
                        best = (c, d)
            if best is not None:
                kind, dup_id, distance = "near", best[0], best[1]
        if kind != "exact" and not self_seen:
            indexed = kind == "unique" and it.eligible and not self_near
            new_id = store.add(it.simhash or 0, it.d64, it.ufp, it.url, indexed)
            row = keys.get(i)
            if indexed and row is not None:
                for t, key in enumerate(row):
                    delta[t].setdefault(key, []).append(new_id)
                delta_size += 1
        store.count_site(it.site, kind)
        stats.sites.add(it.site)
        stats.pages += 1
        if kind == "exact":
            stats.exact += 1
        elif kind == "near":
            stats.near += 1
        else:
            stats.unique += 1
        rec = it.record
        fp = rec.get("fp")
        verdict = dedup_record(
            url=it.url,
            kind=kind,
            dup_of=store.url_of(dup_id) if dup_id >= 0 else None,
            distance=distance,
            site=it.site,
            fp=fp if isinstance(fp, str) else fingerprint(it.url),
            digest=rec.get("digest"),
            simhash=rec.get("simhash"),
        )
        out.append(verdict)
    store.seal_batch(first_id)
    return out


def dedup_records(
    records: Iterable[tuple[str, int, PageRecord]],
    store: DedupStore,
    *,
    k: int = MAX_DISTANCE,
    chunk_size: int = 16384,
    commit_every: int = 200_000,
    reporter: Reporter | None = None,
    stats: DedupStats | None = None,
) -> Iterator[DedupRecord]:
    """One dedup record per page record (see the module docstring), in input order.

    ``records`` are ``(source, line, record)`` triples (as from
    :func:`crawlkit.streams.read_records_with_lines`); a record without ``url`` is reported
    as a bad record and skipped. The store is committed every ``commit_every`` pages
    and when the input ends.
    """
    reporter = reporter or NullReporter()
    stats = stats if stats is not None else DedupStats()
    since_commit = 0
    chunk: list[_Item] = []

    def flush() -> list[DedupRecord]:
        nonlocal since_commit, chunk
        done = _decide_chunk(store, chunk, k, stats)
        since_commit += len(chunk)
        chunk = []
        if since_commit >= commit_every:
            store.commit()
            since_commit = 0
        return done

    # Skipped records are counted by the reporter, which also counts the lines the
    # reader skipped (not JSON, not an object), so the summary matches stderr.
    bad_before = reporter.bad_records
    for source, lineno, record in records:
        item = _parse(source, lineno, record, reporter)
        stats.skipped = reporter.bad_records - bad_before
        if item is None:
            continue
        chunk.append(item)
        if len(chunk) >= chunk_size:
            yield from flush()
    if chunk:
        yield from flush()
    store.commit()
    stats.skipped = reporter.bad_records - bad_before


@contextlib.contextmanager
def open_dedup_store(state: str | os.PathLike[str], *, window: int = 1000) -> Iterator[DedupStore]:
    """Lock ``state/dedup`` (invariant 6) and open the store in it.

    ``state`` is locked shared (:func:`~crawlkit.state.open_substate`): a second dedup,
    or any process that owns ``state`` (a running crawl), makes this raise
    :class:`~crawlkit.errors.LockedError` before anything is read.
    """
    refuse_workers_state(state, "dedup indexes", "dedup on one of them, or crawl it")
    with open_substate(state, "dedup") as sdir:
        store = DedupStore(sdir.path, window=window)
        try:
            yield store
        finally:
            store.close()


def lock_dedup_writer(dedup_dir: str | os.PathLike[str], reporter: Reporter) -> StateDir:
    """The dedup index's writer lock (its directory's ``LOCK``), for a writer that
    works beside the owner of the state directory (``crawlkit crawl``'s step process,
    or the crawl itself once that died): taken once the writer before has let go, at
    most :data:`WRITER_WAIT` seconds later (``reporter`` says that it waits);
    :class:`~crawlkit.errors.LockedError` after that. Held until closed or until this
    process ends. :func:`open_dedup_store` is the stage's way in."""
    return lock_state(dedup_dir, wait=WRITER_WAIT, reporter=reporter, owner="dedup writer")


def site_records(store: DedupStore, sites: Iterable[str]) -> Iterator[SiteYieldRecord]:
    """``{"site", "pages", "exact", "near", "yield"}`` for each site, sorted by name."""
    for site in sorted(sites):
        pages, exact, near = store.sites.get(site) or [0, 0, 0]
        share = (exact + near) / pages if pages else 0.0
        yield {
            "site": site,
            "pages": pages,
            "exact": exact,
            "near": near,
            "yield": round(share, 4),
        }
