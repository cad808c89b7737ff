"""Where a fetcher's WARC files are as they move: being written, closed, archived.

A writer writes ``WARC_DIR/new/NAME.open`` and renames it ``WARC_DIR/new/NAME`` when it
closes it; ``crawlkit crawl`` moves it to ``WARC_DIR/NAME`` once its records are
extracted. A fetch record names its file by ``NAME`` alone.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["find_warc", "warc_new_dir"]


def warc_new_dir(warc_dir: str | os.PathLike[str]) -> Path:
    """Where finished WARC files go: ``WARC_DIR/new`` (``crawlkit extract`` reads there)."""
    return Path(warc_dir) / "new"


def find_warc(warc_dir: str | os.PathLike[str], name: str) -> Path | None:
    """Where the WARC file ``name`` is now, or None.

    Looked up in the order a file moves (``.open`` → ``new/`` → the archive), so a
    rename between two lookups cannot hide it.
    """
    new_dir = warc_new_dir(warc_dir)
    for path in (new_dir / f"{name}.open", new_dir / name, Path(warc_dir) / name):
        if path.exists():
            return path
    return None
