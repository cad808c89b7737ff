"""State directories: one owner at a time (DESIGN.md invariant 6).

A stage that keeps state under ``--state DIR`` opens it with :func:`open_state`,
which creates the directory, takes an exclusive ``flock`` on ``DIR/LOCK`` and writes
the owner's pid and host into it. The kernel drops the lock when the process dies
(also on kill -9), so a crash never leaves a stale lock behind; a second live process
gets :class:`LockedError` naming the owner.

Stages keep their files in a subdirectory of their own (``DIR/seen``,
``DIR/frontier``, ...), so one state directory can hold a whole crawl.

The lock is re-entrant within one process: ``crawlkit crawl`` owns the directory and
calls the stages' library functions, which open it again; they share the owner's
lock instead of locking themselves out (``flock`` locks belong to an open file, so
a second ``open`` of ``LOCK`` in the same process would otherwise conflict).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

from crawlkit.errors import LockedError, StateError, describe_os_error

__all__ = ["StateDir", "open_state", "require_existing_state"]


# Directories this process has locked: resolved path -> [fd, number of openers].
_held: dict[Path, list[int]] = {}
_held_guard = threading.Lock()


class StateDir:
    """A locked state directory. ``path / name`` gives a stage's subdirectory."""

    def __init__(self, path: Path, lock_fd: int | None, key: Path | None = None):
        self.path = path
        self._lock_fd = lock_fd
        self._key = key

    def sub(self, name: str) -> Path:
        """The stage subdirectory ``name`` (created on first use)."""
        directory = self.path / name
        directory.mkdir(parents=True, exist_ok=True)
        return directory

    def close(self) -> None:
        if self._lock_fd is None:
            return
        fd, self._lock_fd = self._lock_fd, None
        with _held_guard:
            entry = _held.get(self._key) if self._key is not None else None
            if entry is not None:
                entry[1] -= 1
                if entry[1] > 0:
                    return
                del _held[self._key]  # type: ignore[arg-type]
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> StateDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(path: Path, wait: bool) -> int:
    lock_path = path / "LOCK"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only file system, a directory of another user
        raise StateError(
            f"state directory {path} cannot be locked for writing: "
            f"{describe_os_error(OSError(exc.errno, exc.strerror))}"
        ) from exc
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
        raise StateError(
            f"cannot create state directory {directory}: "
            f"{describe_os_error(OSError(exc.errno, exc.strerror))}"
        ) from exc
    if not directory.is_dir():
        raise StateError(f"{directory} is not a directory")
    if not lock:
        return StateDir(directory, None)
    key = directory.resolve()
    with _held_guard:
        entry = _held.get(key)
        if entry is not None:  # this process owns it already: share the lock
            entry[1] += 1
            return StateDir(directory, entry[0], key)
    fd = _lock(directory, wait)
    with _held_guard:
        _held[key] = [fd, 1]
    return StateDir(directory, fd, key)


def require_existing_state(path: str | os.PathLike[str]) -> Path:
    """``path`` if it is a state directory some stage has written; else StateError.

    Commands that only read state (``report``, ``frontier stats``) create nothing, and
    a mistyped ``--state`` must not read as an empty crawl. Every stage that writes
    state locks it first, so a state directory has a ``LOCK`` file (or, when only
    ``frontier block`` has posted to it, which takes no lock, a ``frontier`` directory).
    """
    directory = Path(path)
    if not directory.exists():
        raise StateError(f"state directory {directory} does not exist (mistyped --state?)")
    if not directory.is_dir():
        raise StateError(f"--state {directory} is not a directory")
    if not (directory / "LOCK").exists() and not (directory / "frontier").is_dir():
        raise StateError(
            f"{directory} is not a crawlkit state directory (no LOCK file; mistyped --state?)"
        )
    return directory


@contextlib.contextmanager
def locked_state(path: str | os.PathLike[str], *, wait: bool = False) -> Iterator[StateDir]:
    state = open_state(path, wait=wait)
    try:
        yield state
    finally:
        state.close()
