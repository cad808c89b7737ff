"""Diagnostics: how stages report bad records and warnings on stderr.

A stage never prints on its own. It is handed a :class:`Reporter`, which writes one
line per problem, prefixed with the program name (``crawlkit extract: ...``), and
counts them so the summary can say how many records were skipped.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from typing import TextIO


class Reporter:
    """Writes one-line diagnostics to a text stream and counts them by kind.

    ``limit`` caps how many lines of one kind are printed (the count goes on), so a
    file of a million bad lines does not flood a terminal.
    """

    def __init__(self, prog: str = "crawlkit", stream: TextIO | None = None, limit: int = 100):
        self.prog = prog
        self.stream = stream
        self.limit = limit
        self.counts: Counter[str] = Counter()

    def warn(self, message: str, kind: str = "warning") -> None:
        self.counts[kind] += 1
        if self.counts[kind] == self.limit + 1:
            self._write(f"more {kind} lines suppressed; the summary counts them")
        elif self.counts[kind] <= self.limit:
            self._write(message)

    def bad_record(self, source: str, line: int, message: str) -> None:
        """Report a record that was skipped: ``source:line: message``."""
        self.warn(f"{source}:{line}: {message}", kind="bad record")

    def info(self, message: str) -> None:
        self._write(message)

    def _write(self, message: str) -> None:
        stream = self.stream if self.stream is not None else sys.stderr
        print(f"{self.prog}: {message}", file=stream, flush=True)

    @property
    def bad_records(self) -> int:
        return self.counts["bad record"]

    @property
    def input_damaged(self) -> bool:
        """A truncated or corrupt input was read (its records before the damage were
        kept): the command exits 1 at the end (docs/design.md)."""
        return bool(self.counts["truncated input"] or self.counts["corrupt input"])


class HeldReporter(Reporter):
    """Keeps its lines until :meth:`release` passes them on, in order, to another
    reporter: for an attempt that may be redone, whose lines then say nothing (the
    attempt that counts reports anew)."""

    def __init__(self) -> None:
        super().__init__()
        self.held: list[tuple[str, str | None]] = []  # (message, kind; None for info)

    def warn(self, message: str, kind: str = "warning") -> None:
        self.held.append((message, kind))

    def info(self, message: str) -> None:
        self.held.append((message, None))

    def release(self, into: Reporter) -> None:
        for message, kind in self.held:
            if kind is None:
                into.info(message)
            else:
                into.warn(message, kind)
        self.held.clear()


class NullReporter(Reporter):
    """A reporter that only counts (library callers that want no output)."""

    def _write(self, message: str) -> None:
        pass


def shown_path(path: str | os.PathLike[str]) -> str:
    """A file name as a message shows it: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
