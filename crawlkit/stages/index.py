"""``crawlkit index``: a CDXJ index of WARC files, as pywb and cdxj-indexer write it.

The index lines are :mod:`crawlkit.warc.cdxj`'s; this stage sorts them into a file
with an external sort (:func:`crawlkit.warc.cdxj.sorted_index`), so memory stays
bounded by ``max_bytes`` whatever the number of captures.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from crawlkit import streams
from crawlkit.diag import shown_path
from crawlkit.warc.cdxj import sorted_index

__all__ = ["distinct_files", "name_clash", "repeats_note", "write_index"]


_Path = str | os.PathLike[str]


def distinct_files(paths: Iterable[_Path]) -> tuple[list[_Path], list[tuple[_Path, _Path]]]:
    """Split ``paths`` into the first naming of each file and the later ones.

    Two paths name one file when they have the same device and inode (the same name
    twice, ``./a`` and ``a``, a symlink or a hard link), so a file is read once, under
    the name it was first given. Returns ``(kept, repeats)``, ``kept`` in the given
    order, ``repeats`` as ``(path, the earlier path it repeats)``. A path that cannot
    be stat'ed is kept, for the reader to report by its name.
    """
    first: dict[tuple[int, int], _Path] = {}
    kept: list[_Path] = []
    repeats: list[tuple[_Path, _Path]] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            kept.append(path)
            continue
        key = (st.st_dev, st.st_ino)
        if key in first:
            repeats.append((path, first[key]))
        else:
            first[key] = path
            kept.append(path)
    return kept, repeats


def repeats_note(repeats: Iterable[tuple[_Path, _Path]]) -> str:
    """The line that tells which WARC files :func:`distinct_files` read once (the
    ``index`` and ``wacz`` commands print it), each path as a message shows it (bytes
    that are not UTF-8 as ``\\xNN``)."""
    shown = "; ".join(f"{shown_path(path)} is {shown_path(earlier)}" for path, earlier in repeats)
    return f"the same WARC file named more than once, read once: {shown}"


def name_clash(paths: Iterable[_Path]) -> tuple[_Path, _Path] | None:
    """Two of ``paths`` (distinct files: see :func:`distinct_files`) with the same base
    name, the first such pair, or None. An index line names its WARC by base name, the
    name replay opens, so the lines of the two would point into one of them: the
    capture at an offset of the other file is a wrong record, or none."""
    seen: dict[str, _Path] = {}
    for path in paths:
        name = Path(path).name
        if name in seen:
            return seen[name], path
        seen[name] = path
    return None


def write_index(
    paths: Iterable[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    max_bytes: int = 0,
    tmpdir: str | os.PathLike[str] | None = None,
) -> int:
    """Write the sorted index of ``paths`` to ``out`` (``-`` is stdout; written to a
    temporary name and renamed). Returns the number of lines. ``max_bytes`` bounds
    the lines held in memory (0: the default); the rest are sorted in run files in
    ``tmpdir`` (default: the system's), removed when done. A file named twice is
    indexed twice: callers drop repeats with :func:`distinct_files`."""
    pairs = [(p, Path(p).name) for p in paths]
    with sorted_index(pairs, tmpdir=tmpdir, max_bytes=max_bytes) as sorter:
        with streams.open_output(out) as sink:
            batch: list[str] = []
            for line in sorter:
                batch.append(line)
                if len(batch) >= 4096:
                    sink.write(("\n".join(batch) + "\n").encode("utf-8"))
                    batch.clear()
            if batch:
                sink.write(("\n".join(batch) + "\n").encode("utf-8"))
        return sorter.count
