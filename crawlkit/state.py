"""State directories: one owner at a time (DESIGN.md invariant 6).

A stage that keeps state under ``--state DIR`` opens it with :func:`open_state`,
which creates the directory, takes an exclusive ``flock`` on ``DIR/LOCK`` and writes
the owner's pid and host into it. The kernel drops the lock when the process dies
(also on kill -9), so a crash never leaves a stale lock behind; a second live process
gets :class:`LockedError` naming the owner.

Stages keep their files in a subdirectory of their own (``DIR/seen``,
``DIR/frontier``, ...), so one state directory can hold a whole crawl.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
from collections.abc import Iterator
from pathlib import Path

from crawlkit.errors import LockedError, StateError

__all__ = ["StateDir", "open_state"]


class StateDir:
    """A locked state directory. ``path / name`` gives a stage's subdirectory."""

    def __init__(self, path: Path, lock_fd: int | None):
        self.path = path
        self._lock_fd = lock_fd

    def sub(self, name: str) -> Path:
        """The stage subdirectory ``name`` (created on first use)."""
        directory = self.path / name
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def close(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            os.close(self._lock_fd)
            self._lock_fd = None

    def __enter__(self) -> StateDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(path: Path, wait: bool) -> int:
    lock_path = path / "LOCK"
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        try:
            owner = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        raise LockedError(
            f"state directory {path} is in use by another process ({owner})"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}\n".encode(), 0)
    return fd


def open_state(path: str | os.PathLike[str], *, lock: bool = True, wait: bool = False) -> StateDir:
    """Create (if needed) and lock a state directory.

    ``lock=False`` opens it for reading only (``--dry-run``, ``stats``), without
    excluding the owner. ``wait=True`` blocks until the owner lets go instead of
    raising :class:`LockedError`.
    """
    directory = Path(path)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"cannot create state directory {directory}: {exc.strerror}") from exc
    if not directory.is_dir():
        raise StateError(f"{directory} is not a directory")
    return StateDir(directory, _lock(directory, wait) if lock else None)


@contextlib.contextmanager
def locked_state(path: str | os.PathLike[str], *, wait: bool = False) -> Iterator[StateDir]:
    state = open_state(path, wait=wait)
    try:
        yield state
    finally:
        state.close()
