"""The totals of all runs of a crawl (``STATE/crawl/totals.json``), and page requests
counted on disk as they are made, so ``--max-pages`` holds over runs that were killed.

``STATE/crawl/totals.json`` gets a run's requests when the run ends; a run killed
before that (kill -9, the OOM killer, a job runner's hard stop) added none, and five
kill -9s let ``--max-pages 300`` fetch 600 pages (server log). Each run now appends
one byte per page request to a journal of its own, ``requests-<start ns>.journal``
in ``STATE/crawl`` (``O_APPEND``, never fsynced: the page cache keeps what a killed
process wrote; a machine that crashes may lose its last seconds). ``totals.json``
names the newest journal it has counted (``last_journal``): the totals of all runs
are what it says plus every journal named after that (:func:`read_totals`, one run
each), and a run ending adds those to the file with its own (:func:`count_journals`)
before it deletes them. Deleting after the write keeps the count right whatever
moment a kill comes: a journal the file has counted is only deleted again.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path
from typing import Any

from crawlkit import streams

__all__ = ["RequestJournal", "count_journals", "forget_journals", "read_totals"]

_GLOB = "requests-*.journal"


class RequestJournal:
    """This run's journal in the crawl directory ``root``: :meth:`count` a request."""

    def __init__(self, root: Path) -> None:
        # Named after every journal before it, also when the clock was set back since
        # (a name not after totals.json's last_journal would be taken as counted).
        path = root / "totals.json"
        last = str(streams.read_json(path).get("last_journal") or "") if path.exists() else ""
        names = [last, *(p.name for p in root.glob(_GLOB))]
        before = max((_number(name) for name in names), default=0)
        self.name = f"requests-{max(time.time_ns(), before + 1):020d}.journal"
        self._fd: int | None = os.open(
            root / self.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644
        )

    def count(self) -> None:
        """One page request made (about 1 us: a write to the page cache)."""
        if self._fd is not None:
            os.write(self._fd, b".")

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _number(name: str) -> int:
    """The number in a journal's name (0 for none)."""
    digits = name.removeprefix("requests-").removesuffix(".journal")
    return int(digits) if digits.isdigit() else 0


def _uncounted(root: Path, totals: dict[str, Any], exclude: str = "") -> list[tuple[Path, int]]:
    """The journals ``totals`` has not counted, with their sizes (oldest first)."""
    last = str(totals.get("last_journal") or "")
    out = []
    for path in sorted(root.glob(_GLOB)):
        if path.name > last and path.name != exclude:
            with contextlib.suppress(FileNotFoundError):  # (deleted meanwhile: counted)
                out.append((path, path.stat().st_size))
    return out


def read_totals(root: Path) -> dict[str, Any]:
    """``totals.json`` of the crawl directory ``root`` with the requests of runs that
    were killed (journals it has not counted) in ``requests`` and ``runs``."""
    path = root / "totals.json"
    totals: dict[str, Any] = streams.read_json(path) if path.exists() else {}
    killed = _uncounted(root, totals)
    if killed:
        before = int(totals.get("requests", totals.get("fetched", 0)) or 0)
        totals["requests"] = before + sum(size for _, size in killed)
        totals["runs"] = int(totals.get("runs", 0) or 0) + len(killed)
    return totals


def count_journals(root: Path, totals: dict[str, Any], own: RequestJournal | None) -> int:
    """Add the journals of killed runs to ``totals`` (``requests`` and ``runs``) and name
    the newest counted, ``own`` (this run's, whose requests the caller adds) included;
    returns the requests added. Call :func:`forget_journals` once ``totals`` is saved."""
    killed = _uncounted(root, totals, exclude=own.name if own is not None else "")
    added = sum(size for _, size in killed)
    totals["runs"] = int(totals.get("runs", 0) or 0) + len(killed)
    names = [path.name for path, _ in killed] + ([own.name] if own is not None else [])
    if names:
        totals["last_journal"] = max([*names, str(totals.get("last_journal") or "")])
    return added


def forget_journals(root: Path, totals: dict[str, Any]) -> None:
    """Delete the journals ``totals`` (saved) has counted."""
    last = str(totals.get("last_journal") or "")
    for path in root.glob(_GLOB):
        if path.name <= last:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
