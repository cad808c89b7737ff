"""``crawlkit index``: a CDXJ index of WARC files, as pywb and cdxj-indexer write it.

The index lines are :mod:`crawlkit.warc.cdxj`'s; this stage sorts them into a file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from crawlkit import io
from crawlkit.warc.cdxj import index_lines

__all__ = ["write_index"]


def write_index(paths: Iterable[str | os.PathLike[str]], out: str | os.PathLike[str]) -> int:
    """Write the sorted index of ``paths`` to ``out`` (``-`` is stdout; written to a
    temporary name and renamed). Returns the number of lines."""
    lines = index_lines(paths)
    with io.open_output(out) as sink:
        sink.write("".join(line + "\n" for line in lines).encode("utf-8"))
    return len(lines)
