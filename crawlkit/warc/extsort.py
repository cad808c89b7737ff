"""An external sort of text lines, for indexes larger than memory.

One job: :class:`LineSorter` takes lines in any order and gives them back in plain
string order (the order of their UTF-8 bytes), holding at most about ``max_bytes`` of
them in memory: each time that much has come in, the lines held are sorted and written
to a run file in ``tmpdir``; iterating merges the runs (and what is still held) with
:func:`heapq.merge`, reading each run a buffer at a time.

Contracts: lines must not contain ``\\n``. Run files are removed when the sorter is
closed (it is a context manager), also after an error. With fewer lines than
``max_bytes`` nothing is written to disk.
"""

from __future__ import annotations

import heapq
import os
import tempfile
from collections.abc import Iterator
from types import TracebackType
from typing import IO

__all__ = ["DEFAULT_MAX_BYTES", "LineSorter"]

DEFAULT_MAX_BYTES = 64 << 20
_OVERHEAD = 64  # what a str costs besides its characters (CPython, about)


class LineSorter:
    """Sort lines in bounded memory (see the module docstring)."""

    def __init__(self, *, tmpdir: str | os.PathLike[str] | None = None, max_bytes: int = 0):
        self._tmpdir = os.fspath(tmpdir) if tmpdir is not None else None
        self._max = max_bytes or DEFAULT_MAX_BYTES
        self._held: list[str] = []
        self._held_bytes = 0
        self._runs: list[IO[str]] = []
        self.count = 0

    def add(self, line: str) -> None:
        self._held.append(line)
        self._held_bytes += len(line) + _OVERHEAD
        self.count += 1
        if self._held_bytes >= self._max:
            self._spill()

    def _spill(self) -> None:
        self._held.sort()
        run = tempfile.TemporaryFile(  # noqa: SIM115 - closed in close()
            "w+", encoding="utf-8", newline="\n", dir=self._tmpdir, prefix="crawlkit-sort-"
        )
        self._runs.append(run)
        run.writelines(line + "\n" for line in self._held)
        run.flush()
        self._held = []
        self._held_bytes = 0

    @property
    def runs(self) -> int:
        """How many run files were written (0: everything fit in memory)."""
        return len(self._runs)

    def __iter__(self) -> Iterator[str]:
        self._held.sort()
        if not self._runs:
            yield from self._held
            return

        def read(run: IO[str]) -> Iterator[str]:
            run.seek(0)
            for line in run:
                yield line[:-1]

        yield from heapq.merge(*(read(r) for r in self._runs), iter(self._held))

    def close(self) -> None:
        for run in self._runs:
            run.close()
        self._runs = []
        self._held = []

    def __enter__(self) -> LineSorter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
