"""``crawlkit seen-merge``: pass on only the URLs the crawl has never seen.

Reads link or URL records (NDJSON; a line that is not a JSON object is taken as a bare
URL) in chunks of ``chunk_size``. For each chunk:

1. records without ``fp`` are canonicalized (``url``, ``host``, ``site`` and ``fp`` are
   set; a URL that cannot be used is reported as a bad record and skipped);
   a URL longer than ``max_url_length`` is passed to the caller as a refused record
   (``url-length``) before any pattern runs on it; so is one an exclude pattern
   matches (``excluded``, ``--exclude``/``--ignore-file``), with a scope
   (``--scope``) one outside it, and with ``max_depth`` (``--max-depth``) a link more
   hops from a seed (``max-depth``, :func:`crawlkit.frontier.traps.depth_refusal`):
   refused records are never checked nor marked seen;
2. repeats within the input are dropped, the first occurrence wins and input order
   is kept;
3. the store is asked about the whole chunk at once: Bloom filter, then an exact
   check of every "maybe" against the sorted runs (docs/design.md invariant 4);
4. the never-seen records are written, all their fields kept (a record that already
   had ``fp`` is written byte for byte as it came);
5. only after the write has succeeded are their fingerprints committed to the store.

So a URL is never marked seen unless it was also written out. When writing fails
(a closed pipe, a full disk) nothing of that chunk is committed, and a rerun emits
those URLs again: a crash can repeat URLs, never lose them.

When the output is a file that is renamed into place only at the end, "written" means
"renamed": the caller keeps the chunks' fingerprints pending (``commit_each_chunk=
False``) and calls :meth:`SeenMerge.commit_pending` after the rename. Pending
fingerprints are still checked, so later chunks do not repeat earlier ones.

Memory: one chunk of output lines and a few arrays of 8-byte keys per chunk, plus
8 bytes per pending fingerprint; the store itself is memory-mapped.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass
from io import BufferedReader
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError, InvalidURL, TruncatedInput, UsageError
from crawlkit.frontier.scope import Scope
from crawlkit.frontier.traps import depth_refusal
from crawlkit.patterns import MAX_URL_LENGTH, Excludes, too_long
from crawlkit.records import Record, Refusal, refusal
from crawlkit.seen import SeenStore
from crawlkit.seen.runs import lookup_sorted, merge_sorted
from crawlkit.url import Canonicalizer, ParsedURL

__all__ = [
    "DEFAULT_CHUNK",
    "FreshRecords",
    "SeenMerge",
    "SeenMergeStats",
    "fresh_in",
    "fresh_records",
    "read_lines",
    "store_stats",
]

DEFAULT_CHUNK = 1_000_000
_HEX16 = re.compile(r"[0-9a-fA-F]{16}")
_MAX_PENDING_ARRAYS = 8
_BLOCK = 1 << 20
# Canonical forms of recent URLs: link streams repeat navigation links a lot. Bounded
# so a chunk of a million distinct URLs does not keep a million parses alive, and by
# size, not by luck: a URL may be kilobytes long (65,536 URLs of 60 KB held 7.9 GB).
# Each entry costs about its URL twice (the key and the canonical form) and the
# objects around them (_ENTRY_BYTES); past _CACHE_BYTES the cache is cleared, which
# costs less per lookup than an LRU and refills with the URLs at hand.
_CACHE_MAX = 65536
_CACHE_BYTES = 32 * 1024 * 1024
_ENTRY_BYTES = 400

Line = tuple[str, int, "bytes | Record"]


@dataclass
class SeenMergeStats:
    """What one run saw. ``checked`` keys were asked of the store; of them the filter
    said "maybe" for ``bloom_maybes``, ``confirmed_seen`` were really stored and
    ``false_positives`` were not (they were emitted as new, like every unseen key)."""

    records: int = 0
    bad_records: int = 0
    duplicates: int = 0
    checked: int = 0
    bloom_maybes: int = 0
    confirmed_seen: int = 0
    false_positives: int = 0
    new: int = 0
    committed: int = 0
    chunks: int = 0  # chunks processed; --stats names it "batches", as it always did
    out_of_scope: int = 0  # refused by --scope, not checked, never marked seen
    excluded: int = 0  # refused by --exclude / --ignore-file, likewise
    too_long: int = 0  # refused as longer than --max-url-length, likewise
    too_deep: int = 0  # refused as more link hops from a seed than --max-depth, likewise

    @property
    def measured_fp_rate(self) -> float | None:
        """False positives among the checked keys that were not stored."""
        negatives = self.checked - self.confirmed_seen
        return self.false_positives / negatives if negatives else None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = asdict(self)
        out["batches"] = out.pop("chunks")
        out["measured_fp_rate"] = self.measured_fp_rate
        return out


def read_lines(
    paths: Sequence[str | os.PathLike[str]] | None,
    reporter: Reporter | None = None,
    *,
    max_line: int = streams.DEFAULT_MAX_LINE,
) -> Iterator[tuple[str, int, bytes]]:
    """``(source, line_number, line)`` of every non-blank line of the inputs, in order.

    Same contract as :func:`crawlkit.streams.iter_lines` (overlong lines reported and
    skipped, a damaged compressed stream reported and the lines before it kept), but
    it splits blocks of up to 1 MiB instead of calling ``readline`` per line, which is several
    times faster and matters at hundreds of thousands of lines per second.
    """
    reporter = reporter if reporter is not None else NullReporter()
    inputs: Sequence[str | os.PathLike[str]] = list(paths) if paths else ["-"]
    streams.check_single_stdin(inputs)
    for path in inputs:
        source = streams.display_name(path)
        with contextlib.closing(streams.open_input(path)) as stream:
            yield from _block_lines(stream, source, reporter, max_line)


def _block_lines(
    stream: BufferedReader, source: str, reporter: Reporter, max_line: int
) -> Iterator[tuple[str, int, bytes]]:
    lineno = 0
    carry = b""
    overlong = False  # inside a line that is being skipped
    try:
        while True:
            # read1: one call to the decoder below. read() loops until it has the whole
            # block, and a decoder that raises at the damage takes with it everything
            # that loop had gathered (a 1 MiB block of good lines).
            block = stream.read1(_BLOCK)
            if not block:
                break
            lines = block.split(b"\n")
            lines[0] = carry + lines[0]
            carry = lines.pop()
            for line in lines:
                lineno += 1
                if overlong:
                    overlong = False
                    continue
                if len(line) > max_line:
                    reporter.bad_record(
                        source, lineno, f"line longer than {max_line} bytes skipped"
                    )
                    continue
                if line and not line.isspace():
                    yield source, lineno, line.rstrip(b"\r")
            if len(carry) > max_line:
                if not overlong:
                    reporter.bad_record(
                        source, lineno + 1, f"line longer than {max_line} bytes skipped"
                    )
                overlong, carry = True, b""
    except TruncatedInput as exc:
        reporter.warn(f"{exc}; the {lineno} lines before the damage were kept", "truncated input")
        return
    except InputError as exc:
        reporter.warn(f"{exc}; the {lineno} lines before the damage were kept", "corrupt input")
        return
    if carry and not overlong and not carry.isspace():
        yield source, lineno + 1, carry.rstrip(b"\r")


class SeenMerge:
    """Runs the chunk algorithm over lines (or records) against one store.

    ``dry_run`` checks and writes exactly what a real run would, but never commits.
    """

    def __init__(
        self,
        store: SeenStore,
        *,
        canonicalizer: Canonicalizer,
        chunk_size: int = DEFAULT_CHUNK,
        reporter: Reporter | None = None,
        dry_run: bool = False,
        scope: Scope | None = None,
        on_refused: Callable[[Refusal], None] | None = None,
        excludes: Excludes | None = None,
        max_url_length: int = MAX_URL_LENGTH,
        reason: str | None = None,
        max_depth: int | None = None,
    ):
        """``reason`` is given to bare URL lines (``--reason seed`` for a seeds file)."""
        if chunk_size < 1:
            raise UsageError(f"chunk size must be at least 1, not {chunk_size}")
        if not dry_run and not store.writable:
            raise UsageError("seen-merge needs a writable store unless it is a dry run")
        self.store = store
        self.canon = canonicalizer
        self.chunk_size = chunk_size
        self.reporter = reporter if reporter is not None else NullReporter()
        self.dry_run = dry_run
        self.stats = SeenMergeStats()
        # URLs outside the scope go to on_refused before they are checked: never seen,
        # so a seed that widens the scope later finds them new (frontier add --scope
        # would refuse them too, but only after they were marked seen).
        self.scope = scope
        self.on_refused = on_refused or (lambda rec: None)
        self.excludes = excludes if excludes else None
        self.max_url_length = max_url_length
        self.reason = reason
        # A link refused for its depth is not marked seen either: the depth is the
        # path's, and a shorter path found later must still queue the URL.
        self.max_depth = max_depth
        self._pending: list[npt.NDArray[np.uint64]] = []
        self._cache: dict[str, ParsedURL] = {}
        self._cache_bytes = 0

    # -- per record ----------------------------------------------------------------------

    def _prepare(self, source: str, lineno: int, item: bytes | Record) -> tuple[int, bytes] | None:
        """The fingerprint and the output line (no newline) of one line, or None if bad."""
        record: Record
        raw: bytes | None
        if isinstance(item, bytes):
            if item[:1] == b"{" or item.lstrip()[:1] == b"{":
                try:
                    record = streams.parse_record(item)
                except ValueError as exc:
                    self._bad(source, lineno, str(exc))
                    return None
                raw = item
            else:
                try:
                    text = item.decode("utf-8").strip()
                except UnicodeDecodeError:
                    self._bad(source, lineno, "invalid UTF-8")
                    return None
                record, raw = {"url": text}, None
                if self.reason is not None:
                    record["reason"] = self.reason
        else:
            record, raw = item, None
        # A record without "fp" is canonicalized: its line is written anew.
        if record.get("fp") is None:
            raw = None
        fp = self._record_fp(source, lineno, record)
        if fp is None:
            return None
        return fp, (raw if raw is not None else orjson.dumps(record))

    def _remember(self, url: str, parsed: ParsedURL) -> None:
        """Keep ``url``'s canonical form for the next time it comes (see _CACHE_BYTES);
        a URL over ``max_url_length`` is refused when it comes, and not kept."""
        if len(parsed.url) > self.max_url_length:
            return
        cost = _ENTRY_BYTES + len(url) + len(parsed.url) + len(parsed.host) + len(parsed.site)
        if len(self._cache) >= _CACHE_MAX or self._cache_bytes + cost > _CACHE_BYTES:
            self._cache.clear()
            self._cache_bytes = 0
        self._cache[url] = parsed
        self._cache_bytes += cost

    def _record_fp(self, source: str, lineno: int, record: Record) -> int | None:
        """The fingerprint of one record, or None if it is bad or refused; a record
        without ``fp`` gets its canonical ``url``, ``host``, ``site`` and ``fp``."""
        fp = record.get("fp")
        if fp is None:
            url = record.get("url")
            if not isinstance(url, str):
                self._bad(source, lineno, 'record has neither "fp" nor a "url" string')
                return None
            parsed = self._cache.get(url)
            if parsed is None:
                try:
                    parsed = self.canon.parse(url)
                except InvalidURL as exc:
                    self._bad(source, lineno, str(exc))
                    return None
                self._remember(url, parsed)
            record["url"], record["host"], record["site"], record["fp"] = parsed
            fp = parsed.fp
        elif not isinstance(fp, str) or not _HEX16.fullmatch(fp):
            self._bad(source, lineno, '"fp" is not 16 hex digits')
            return None
        if self._refused(record):
            return None
        return int(fp, 16)

    def _refused(self, record: Record) -> bool:
        """True if ``record`` was refused (and handed to ``on_refused``): too long
        first, so no pattern runs on an unbounded URL, then excluded, then out of
        scope (the order ``crawl`` refuses in), then too deep."""
        url = record.get("url")
        if isinstance(url, str):
            length = too_long(url, self.max_url_length)
            if length is not None:
                self.stats.too_long += 1
                self.on_refused(refusal(record, "url-length", length))
                return True
            if self.excludes is not None:
                detail = self.excludes.match(url)
                if detail is not None:
                    self.stats.excluded += 1
                    self.on_refused(refusal(record, "excluded", detail))
                    return True
        if self.scope is not None:
            out = self.scope.refusal(record, self.canon)
            if out is not None:
                self.stats.out_of_scope += 1
                self.on_refused(out)
                return True
        too_deep = depth_refusal(record, self.max_depth)
        if too_deep is None:
            return False
        self.stats.too_deep += 1
        self.on_refused(refusal(record, *too_deep))
        return True

    def _bad(self, source: str, lineno: int, message: str) -> None:
        self.stats.bad_records += 1
        self.reporter.bad_record(source, lineno, message)

    # -- per chunk -----------------------------------------------------------------------

    def run(
        self,
        lines: Iterable[Line],
        write: Callable[[bytes], object],
        flush: Callable[[], object] = lambda: None,
        *,
        commit_each_chunk: bool = True,
    ) -> SeenMergeStats:
        """Process every line; ``write`` gets each chunk's new records, then ``flush``.

        ``lines`` yields ``(source, line_number, item)``; an item is an NDJSON line
        (bytes) or a record (a dict, updated in place when it lacks ``fp``). ``write``
        must raise when the data does not get out; it is called once per chunk with
        the chunk's new records as NDJSON.

        With ``commit_each_chunk`` a chunk's fingerprints are committed right after its
        ``flush`` returns; otherwise they stay pending until :meth:`commit_pending`.
        """
        # Machine arrays, not lists: 8 bytes a record instead of about 40.
        fps = array("Q")
        # Output lines go into one buffer: a million separate bytes objects from
        # orjson.dumps cost more to keep than to make.
        buf = bytearray()
        ends = array("q")
        prepare, chunk_size = self._prepare, self.chunk_size
        for source, lineno, item in lines:
            prepared = prepare(source, lineno, item)
            if prepared is None:
                continue
            fp, data = prepared
            fps.append(fp)
            buf += data
            buf += b"\n"
            ends.append(len(buf))
            if len(fps) >= chunk_size:
                self._chunk(fps, buf, ends, write, flush, commit_each_chunk)
                fps, buf, ends = array("Q"), bytearray(), array("q")
        if fps:
            self._chunk(fps, buf, ends, write, flush, commit_each_chunk)
        return self.stats

    def _chunk(
        self,
        fp_list: array[int],
        buf: bytearray,
        ends: array[int],
        write: Callable[[bytes], object],
        flush: Callable[[], object],
        commit_each_chunk: bool,
    ) -> None:
        emit, new_keys = self._new_rows(fp_list)
        # Write, and only then commit (invariant 4): an exception here leaves the store
        # as it was.
        write(_gather_lines(buf, np.frombuffer(ends, dtype=np.int64), emit))
        flush()
        self._mark(new_keys, commit_each_chunk)

    def _new_rows(self, fp_list: array[int]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.uint64]]:
        """Of one chunk's fingerprints: the rows to emit (each new key's first
        occurrence, ascending) and the new keys."""
        stats = self.stats
        stats.chunks += 1
        stats.records += len(fp_list)
        fps = np.frombuffer(fp_list, dtype=np.uint64)
        # First occurrences: after a stable sort the first of each group of equal keys
        # is the earliest in the input.
        order = np.argsort(fps, kind="stable")
        ordered = fps[order]
        starts = np.ones(len(ordered), dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
        keys = ordered[starts]  # distinct, ascending
        first = order[starts]  # where each key first occurs
        del order, ordered, starts
        fresh = ~lookup_sorted(self._pending, keys) if self._pending else None
        if fresh is not None:
            keys, first = keys[fresh], first[fresh]
        stats.duplicates += len(fps) - len(keys)
        answer = self.store.lookup(keys)
        stats.checked += len(keys)
        stats.bloom_maybes += answer.maybes
        stats.confirmed_seen += answer.confirmed
        stats.false_positives += answer.false_positives
        unseen = ~answer.seen
        emit = np.sort(first[unseen])
        stats.new += len(emit)
        return emit, keys[unseen]

    def _mark(self, new_keys: npt.NDArray[np.uint64], commit_each_chunk: bool) -> None:
        """Commit a written chunk's new keys, or keep them pending."""
        if self.dry_run or not commit_each_chunk:
            self._add_pending(new_keys)
        else:
            self.store.commit(new_keys)
            self.stats.committed += len(new_keys)

    def _add_pending(self, keys: npt.NDArray[np.uint64]) -> None:
        if len(keys):
            self._pending.append(keys)
        if len(self._pending) > _MAX_PENDING_ARRAYS:
            self._pending = [merge_sorted(self._pending)]

    def run_records(self, records: Iterable[Record]) -> list[Record]:
        """:meth:`run` over records in memory, without its commits: the new records
        (copies), their keys pending until :meth:`commit_pending`.

        No record is written as a line: only the new ones are copied (most links of a
        cycle are seen already), each a new dict of the same fields, equal to what the
        lines of ``seen-merge`` read back: fields set on a copy (the frontier's) never
        reach the caller's record. Nested values are shared, not copied (link records
        have none); a JSON round trip per record cost 7-10% of the crawl's links step
        (``bench/bench_links_step.py``).
        ``records`` is taken ``chunk_size`` at a time: an iterator that reads them as
        it goes holds no more than a chunk of the records that are not new.
        """
        fresh: list[Record] = []
        it = iter(records)
        first = 1  # the number of the chunk's first record
        while chunk := list(itertools.islice(it, self.chunk_size)):
            fps = array("Q")
            kept: list[Record] = []
            for n, rec in enumerate(chunk, first):
                fp = self._record_fp("records", n, rec)
                if fp is not None:
                    fps.append(fp)
                    kept.append(rec)
            first += len(chunk)
            if fps:
                emit, new_keys = self._new_rows(fps)
                fresh += [dict(kept[i]) for i in emit.tolist()]
                self._mark(new_keys, commit_each_chunk=False)
        return fresh

    def commit_pending(self) -> None:
        """Commit every pending fingerprint (call once the output is durable)."""
        if self.dry_run or not self._pending:
            return
        keys = merge_sorted(self._pending)
        self.store.commit(keys)
        self.stats.committed += len(keys)
        self._pending = []


@dataclass
class FreshRecords:
    """What :func:`fresh_records` found: the records never seen, and the run's counts."""

    records: list[Record]
    stats: SeenMergeStats
    commit: Callable[[], None]  # marks them seen; call once they are written or queued


def fresh_in(
    store: SeenStore,
    records: Iterable[Record],
    *,
    canonicalizer: Canonicalizer,
    reporter: Reporter | None = None,
    scope: Scope | None = None,
    on_refused: Callable[[Refusal], None] | None = None,
    chunk_size: int = DEFAULT_CHUNK,
    max_depth: int | None = None,
) -> FreshRecords:
    """The records the opened seen ``store`` has not seen (the stage on an opened store).

    With a ``scope``, records outside it go to ``on_refused`` instead, unchecked and
    never marked seen (see :mod:`crawlkit.frontier.scope`); so do links more than
    ``max_depth`` hops from a seed. ``records`` are taken ``chunk_size`` at a time
    (:meth:`SeenMerge.run_records`).

    Nothing is marked seen until the result's ``commit()`` is called, which the caller
    does only once the records are safe elsewhere (written out, or queued): a URL is
    never seen without being queued (invariant 4). Not calling it marks nothing.
    """
    merger = SeenMerge(
        store,
        canonicalizer=canonicalizer,
        reporter=reporter,
        scope=scope,
        on_refused=on_refused,
        chunk_size=chunk_size,
        max_depth=max_depth,
    )
    fresh = merger.run_records(records)
    return FreshRecords(fresh, merger.stats, merger.commit_pending)


@contextlib.contextmanager
def fresh_records(
    state_path: str | os.PathLike[str],
    records: Sequence[Record],
    *,
    canonicalizer: Canonicalizer,
    reporter: Reporter | None = None,
    on_refused: Callable[[Refusal], None] | None = None,
    scope: Scope | None = None,
    max_depth: int | None = None,
) -> Iterator[FreshRecords]:
    """:func:`fresh_in` on the seen set of ``state_path``, held open (and locked) for
    the block: call ``commit()`` inside it."""
    with SeenStore.open(state_path, reporter=reporter) as store:
        yield fresh_in(
            store,
            records,
            canonicalizer=canonicalizer,
            reporter=reporter,
            scope=scope,
            on_refused=on_refused,
            max_depth=max_depth,
        )


def _gather_lines(buf: bytearray, ends: npt.NDArray[np.int64], rows: npt.NDArray[np.intp]) -> bytes:
    """The lines ``rows`` (ascending) of ``buf``, whose line ``i`` ends at ``ends[i]``.

    Consecutive rows are copied as one slice, so a chunk of mostly new URLs costs a
    few large copies rather than a Python step per line.
    """
    if len(rows) == 0:
        return b""
    # Runs of consecutive rows: [rows[first], rows[last]] for each run.
    breaks = np.flatnonzero(np.diff(rows) != 1)
    firsts = rows[np.concatenate([[0], breaks + 1])]
    lasts = rows[np.concatenate([breaks, [len(rows) - 1]])]
    starts = np.where(firsts > 0, ends[np.maximum(firsts - 1, 0)], 0)
    with memoryview(buf) as view:
        return b"".join(
            [view[a:b] for a, b in zip(starts.tolist(), ends[lasts].tolist(), strict=True)]
        )


def store_stats(store: SeenStore, *, count_bits: bool = True) -> dict[str, Any]:
    """The store's figures for ``--stats``: size, filter fill, bytes per stored URL.

    ``bytes_per_url_ram`` counts the filter, which probing keeps resident; the runs
    are memory-mapped and only the pages a chunk touches are read. Chunk buffers
    depend on the chunk size, not on the number of stored URLs.
    """
    stored = store.stored
    bloom = store.filter
    out: dict[str, Any] = {
        "stored": stored,
        "runs": len(store.manifest.runs) if store.manifest else 0,
    }
    if bloom is None:
        out.update(
            capacity=None,
            filter_bits=0,
            filter_k=0,
            filter_fill=0.0,
            bytes_per_url_disk=None,
            bytes_per_url_ram=None,
        )
        return out
    fill = bloom.fill() if count_bits else None
    out.update(
        capacity=bloom.capacity,
        fp_rate=bloom.fp_rate,
        filter_bits=bloom.m,
        filter_k=bloom.k,
        filter_fill=fill,
        expected_fp_rate=fill**bloom.k if fill is not None else None,
        disk_bytes=store.disk_bytes(),
        bytes_per_url_disk=store.disk_bytes() / stored if stored else None,
        bytes_per_url_ram=bloom.nbytes / stored if stored else None,
    )
    return out
