"""The files of a crawl under ``STATE/crawl``: cycle directories and their step markers.

A cycle directory ``cycles/NNNNNN/`` holds the cycle's batch, fetch log, page, link,
dedup and refusal records; each step marks itself done with a ``<step>.done`` file
(written atomically), so a restarted crawl resumes at the first step not done.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.fetch.cookies import cookie_jar
from crawlkit.state import StateDir
from crawlkit.streams import Record

__all__ = [
    "CYCLE_FORMAT",
    "CrawlDir",
    "batch_files_in",
    "cycle_dirs_in",
    "is_done",
    "mark_done",
    "read_file",
    "write_file",
]

CYCLE_FORMAT = "{:06d}"


class CrawlDir:
    """The ``STATE/crawl`` directory: cycles, the waiting room, totals, the scope."""

    def __init__(self, state: StateDir):
        self.state_path = state.path
        self.root = state.sub("crawl")
        self.cycles = self.root / "cycles"
        self.cycles.mkdir(exist_ok=True)
        self.batches = self.root / "batches"  # handed to the fetcher, not all fetched yet
        self.batches.mkdir(exist_ok=True)
        self.admitted = self.root / "admitted"  # marked seen, not yet queued
        self.admitted.mkdir(exist_ok=True)

    def batch_files(self) -> list[Path]:
        return batch_files_in(self.root)

    def cycle_dirs(self) -> list[Path]:
        return cycle_dirs_in(self.root)

    def new_cycle(self) -> Path:
        dirs = self.cycle_dirs()
        number = int(dirs[-1].name) + 1 if dirs else 1
        path = self.cycles / CYCLE_FORMAT.format(number)
        path.mkdir()
        return path

    @property
    def waiting(self) -> Path:
        return self.root / "waiting.ndjson.zst"

    @property
    def totals(self) -> Path:
        return self.root / "totals.json"

    @property
    def cookies(self) -> Path:
        """The cookies the sites set (with --cookies), kept for the next run."""
        return cookie_jar(self.state_path)


def batch_files_in(root: Path) -> list[Path]:
    """The batch files under a ``STATE/crawl`` directory ``root``: URLs handed to the
    fetcher, not all answered yet (none when it has no such directory)."""
    return sorted((root / "batches").glob("*.ndjson.zst"))


def cycle_dirs_in(root: Path) -> list[Path]:
    """The cycle directories under a ``STATE/crawl`` directory ``root``, oldest first."""
    cycles = root / "cycles"
    if not cycles.is_dir():
        return []
    return sorted(p for p in cycles.iterdir() if p.is_dir() and p.name.isdigit())


def is_done(cycle: Path, step: str) -> bool:
    return (cycle / f"{step}.done").exists()


def mark_done(cycle: Path, step: str, info: dict[str, Any] | None = None) -> None:
    streams.atomic_write_bytes(cycle / f"{step}.done", orjson.dumps(info or {}) + b"\n")


def read_file(path: Path) -> Iterator[Record]:
    if path.exists():
        yield from streams.read_records([path])


def write_file(path: Path, records: Iterable[Mapping[str, Any]]) -> int:
    with streams.open_output(path) as out:
        return out.write_records(records)
