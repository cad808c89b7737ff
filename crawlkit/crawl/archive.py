"""What an archive crawl adds to the link step: requisites, exclude patterns, an index.

``crawlkit crawl`` calls into this module at three points and nowhere else:

* :meth:`LinkPolicy.sort` decides, for the link and redirect records of a cycle,
  which go on to the seen set and which are refused (with a reason and the rule
  that refused them):

  - A requisite of a page (``reason: "requisite"``) is followed whatever
    ``--scope`` says: it is one hop, and it carries ``requisite_hops`` (1 for a
    page's requisite). A requisite found in something that was itself fetched as a
    requisite (a stylesheet's ``url()`` and ``@import``) gets one hop more, up to
    :data:`MAX_REQUISITE_HOPS`; past that it is refused (``requisite-depth``), so a
    stylesheet that imports itself or nests imports endlessly ends bounded (one that
    imports itself is also stopped by the seen set). A redirect of a requisite keeps
    its hop count and is followed whatever the scope.
  - The ordinary links of something fetched as a requisite are not followed
    (``from-requisite``): requisites are never crawled as pages.
  - Other links go through ``in_scope`` when one is given; ``crawlkit crawl`` leaves
    the scope to the stages (``seen-merge --scope``, ``frontier add --scope``, which
    let requisites pass too), so the crawl and the pipeline ``--explain`` prints
    refuse alike.
  - With requisites off (``--no-requisites``) requisite records are passed over,
    as nofollow links are.
  - Any URL that an exclude pattern matches is refused (``excluded``, with
    ``detail`` naming the pattern and where it came from), requisites included.

  robots.txt, politeness, trap limits and the network policy apply to requisites as
  to every URL: they go through the same seen set, frontier and fetcher.

* :meth:`LinkPolicy.exclude_batch` refuses queued URLs that an exclude pattern
  matches when the frontier hands them out, so a pattern added to the ignore file
  while the crawl runs stops URLs already queued (grab-site's live ignores).

* :func:`update_collection_index` keeps ``index.cdxj`` beside the WARC files.

:class:`~crawlkit.patterns.Excludes` (``--exclude``, ``--ignore-file``) lives in
:mod:`crawlkit.patterns`, which ``seen-merge`` and ``frontier add``/``next`` use too;
a URL over the length limit is refused (``url-length``) before any pattern runs.
"""

from __future__ import annotations

import heapq
import io
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError
from crawlkit.patterns import Excludes
from crawlkit.records import Record, Refusal, refusal
from crawlkit.warc.cdxj import index_lines
from crawlkit.warc.sortedmerge import merge_lines

__all__ = [
    "MAX_REQUISITE_HOPS",
    "ArchiveOptions",
    "Excludes",
    "LinkPolicy",
    "adopt_file_index",
    "update_collection_index",
]

MAX_REQUISITE_HOPS = 5
INDEX_NAME = "index.cdxj"
INDEX_DIR = "indexes"
MERGED_NAME = "merged.json"  # in INDEX_DIR: what index.cdxj holds


@dataclass(frozen=True)
class ArchiveOptions:
    """The archive knobs of ``crawlkit crawl`` (see its help)."""

    requisites: bool = True
    excludes: tuple[str, ...] = ()
    ignore_file: Path | None = None
    max_requisite_hops: int = MAX_REQUISITE_HOPS
    index: bool = True  # keep index.cdxj beside the WARC files (each writer keeps its file's)
    # merge index.cdxj at the end of the run: not in a worker of crawl --workers, whose
    # writers keep their files' indexes for the parent to merge once
    merge_index: bool = True


def _refuse(rec: Record, reason: str, detail: str) -> Refusal:
    return refusal(rec, reason, detail)


@dataclass
class LinkPolicy:
    """Requisites and exclude patterns in the link step (see the module docstring)."""

    options: ArchiveOptions = field(default_factory=ArchiveOptions)
    reporter: Reporter = field(default_factory=NullReporter)

    def __post_init__(self) -> None:
        self.excludes = Excludes(
            self.options.excludes, self.options.ignore_file, reporter=self.reporter
        )
        self._held_checked = 0  # the patterns' version the fetcher's URLs were checked at

    def sort(
        self,
        records: Iterable[Record],
        in_scope: Callable[[Record], bool],
        fetched: Mapping[str, Record],
        scope_name: str = "",
    ) -> tuple[list[Record], list[Refusal]]:
        """``(candidates, refused)`` of a cycle's link and redirect records.

        ``fetched`` maps the URLs of the cycle's fetch records to them: what each
        link's source was fetched as. Nofollow links and, with requisites off,
        requisite records are in neither list.
        """
        self.excludes.refresh()
        max_hops = self.options.max_requisite_hops
        candidates: list[Record] = []
        refused: list[Refusal] = []
        for rec in records:
            if rec.get("nofollow"):
                continue  # kept in the link file; not followed
            reason = rec.get("reason")
            source = fetched.get(str(rec.get("from") or rec.get("via") or ""))
            source_hops = _hops(source)
            if reason == "requisite" or (reason == "redirect" and _hops(rec)):
                if not self.options.requisites:
                    continue
                if reason == "requisite":
                    hops = source_hops + 1
                    if hops > max_hops:
                        refused.append(
                            _refuse(
                                rec,
                                "requisite-depth",
                                f"{hops} requisite hops from a page (at most {max_hops})",
                            )
                        )
                        continue
                    rec = {**rec, "requisite_hops": hops}
            elif source_hops:
                refused.append(
                    _refuse(rec, "from-requisite", "links of a page requisite are not followed")
                )
                continue
            elif not in_scope(rec):
                refused.append(_refuse(rec, "out-of-scope", f"scope {scope_name}".strip()))
                continue
            out = self.excludes.refusal(rec) if self.excludes else None
            if out is not None:  # url-length (before any pattern) or excluded
                refused.append(out)
                continue
            candidates.append(rec)
        return candidates, refused

    def refuse_held(self, fetcher: Any, on_refused: Callable[[list[Record]], None]) -> None:
        """After a batch: if the ignore file's patterns changed since the fetcher was
        last checked, the URLs it holds that they match are answered refused
        (``excluded``) instead of fetched, as a block's are: held, they were asked for
        minutes after the operator excluded them (``--per-host`` of them a host, at
        each host's gap). Requests in flight finish."""
        excludes = self.excludes
        if not excludes or excludes.version == self._held_checked:
            return
        self._held_checked = excludes.version
        detail = f"an exclude pattern ({excludes.ignore_file}, changed during the run)"
        on_refused(
            fetcher.refuse_queued(lambda rec: excludes.refusal(rec) is not None, "excluded", detail)
        )

    def exclude_batch(self, records: list[Record]) -> tuple[list[Record], list[Refusal]]:
        """``(kept, refused)``: a batch from the frontier without excluded URLs."""
        if not self.excludes:
            return records, []
        self.excludes.refresh()
        kept: list[Record] = []
        refused: list[Refusal] = []
        for rec in records:
            out = self.excludes.refusal(rec)
            if out is None:
                kept.append(rec)
            else:
                refused.append(out)
        return kept, refused


def _hops(rec: Record | None) -> int:
    value = rec.get("requisite_hops") if rec is not None else None
    return value if isinstance(value, int) and value > 0 else 0


def adopt_file_index(index: Path, warc_dir: Path, name: str) -> None:
    """Move ``index``, the sorted index a writer kept for the WARC file ``name``
    (:func:`crawlkit.warc.write.index_of`), to where :func:`update_collection_index`
    looks for it, so that file is never read to index it. Missing: nothing to do."""
    if index.exists():
        (warc_dir / INDEX_DIR).mkdir(exist_ok=True)
        os.replace(index, _file_index(warc_dir, name))


def _file_index(warc_dir: Path, name: str) -> Path:
    """Where the collection keeps the sorted index of its WARC file ``name``."""
    return warc_dir / INDEX_DIR / f"{name}.cdxj"


def update_collection_index(warc_dir: Path, reporter: Reporter | None = None) -> int:
    """Keep ``WARC_DIR/index.cdxj`` (pywb's CDXJ, SURT-sorted) up to date.

    Each WARC file directly in ``warc_dir`` gets its own sorted index in
    ``WARC_DIR/indexes/NAME.cdxj`` once (a file being written is never there: the
    crawl moves WARC files in when they are closed and extracted, with the index its
    writer kept, see :func:`adopt_file_index`; others are read here). ``index.cdxj``
    is their merge, written to a temporary name and renamed. ``indexes/merged.json``
    says which per-file indexes it holds (and their sizes and its own); while that is
    true, only the new files' lines are merged into it, by a copy of the old index
    (:func:`crawlkit.warc.sortedmerge.merge_lines`), so the end of a run costs a copy
    of the index rather than a merge of every capture the collection ever made. Any
    other case (no record, a file gone or changed, the index edited) merges all of
    them again. Returns the number of lines. A WARC that cannot be indexed is
    reported and left out, never fatal to the crawl.
    """
    reporter = reporter or NullReporter()
    index_dir = warc_dir / INDEX_DIR
    warcs = sorted(p for p in warc_dir.glob("*.warc*") if p.is_file() and ".open" not in p.name)
    if not warcs:
        return 0
    index_dir.mkdir(exist_ok=True)
    parts: list[Path] = []
    for warc in warcs:
        part = _file_index(warc_dir, warc.name)
        if not part.exists():
            try:
                lines = index_lines([warc])
            except InputError as exc:
                reporter.warn(f"not indexed: {exc}", "index")
                continue
            streams.atomic_write_bytes(part, "".join(line + "\n" for line in lines).encode())
        parts.append(part)
    index = warc_dir / INDEX_NAME
    sizes = {part.name: part.stat().st_size for part in parts}
    held = _merged_parts(index_dir, index)
    if held is not None and held[0] == sizes:
        return held[1]  # nothing new since the last merge
    if held is not None and all(sizes.get(name) == size for name, size in held[0].items()):
        new = [part for part in parts if part.name not in held[0]]
        count = _merge_into(index, new, old=index)
    else:
        count = _merge_into(index, parts, old=None)
    _record_merged(index_dir, index, sizes, count)
    return count


def _merge_into(index: Path, parts: list[Path], *, old: Path | None) -> int:
    """Write ``index`` as the lines of ``old`` (none when None) merged with those of
    ``parts``; returns the lines written."""
    files = [open(p, "rb") for p in parts]  # noqa: SIM115
    try:
        with (
            open(old, "rb") if old is not None else io.BytesIO() as source,
            streams.open_output(index) as sink,
        ):
            return merge_lines(source, heapq.merge(*files), sink)
    finally:
        for f in files:
            f.close()


def _merged_parts(index_dir: Path, index: Path) -> tuple[dict[str, int], int] | None:
    """The per-file indexes (name: size) ``index`` holds and its line count, from
    ``merged.json``; None when there is no such record or ``index`` is not the file
    it was written for."""
    try:
        record = json.loads((index_dir / MERGED_NAME).read_bytes())
        stat = index.stat()
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("index") != [stat.st_size, stat.st_mtime_ns]:
        return None
    parts, lines = record.get("parts"), record.get("lines")
    if not isinstance(parts, dict) or not isinstance(lines, int):
        return None
    return {str(k): v for k, v in parts.items()}, lines


def _record_merged(index_dir: Path, index: Path, sizes: dict[str, int], lines: int) -> None:
    """Note that ``index`` now holds the per-file indexes ``sizes`` (see
    :func:`_merged_parts`). Written after ``index``: a crash between the two leaves
    a record that does not match the new index, so the next run merges them all."""
    stat = index.stat()
    record = {"index": [stat.st_size, stat.st_mtime_ns], "lines": lines, "parts": sizes}
    streams.atomic_write_bytes(index_dir / MERGED_NAME, json.dumps(record).encode())
