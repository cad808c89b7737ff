"""State directories: one owner at a time (docs/design.md invariant 6).

A stage that keeps state under ``--state DIR`` opens it with :func:`open_state`,
which creates the directory, takes an exclusive ``flock`` on ``DIR/LOCK`` and writes
the owner's pid and host into it. The kernel drops the lock when the process dies
(also on kill -9), so a crash never leaves a stale lock behind; a second live process
gets :class:`LockedError` naming the owner.

Stages keep their files in a subdirectory of their own (``DIR/seen``,
``DIR/frontier``, ...), so one state directory can hold a whole crawl.

A stage whose files are all in its own subdirectory (``dedup``) opens it with
:func:`open_substate`: a *shared* lock on ``DIR/LOCK`` and an exclusive one on
``DIR/NAME/LOCK``. Such stages run beside each other, but not beside an owner of the
whole directory: ``crawlkit dedup --state S`` while ``crawlkit crawl --state S`` runs is
refused before it reads anything, instead of taking ``S/dedup`` from under the crawl
(which then died at its next dedup step), and a crawl is refused while a dedup runs.

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
import time
from collections.abc import Iterator
from pathlib import Path

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import LockedError, StateError, UsageError, describe_os_error

__all__ = [
    "WORKERS_DIR",
    "StateDir",
    "crawl_roots",
    "lock_state",
    "open_state",
    "refuse_workers_state",
    "require_existing_state",
    "workers_of",
]


# Directories this process has locked: resolved path -> [fd, number of openers, mode]
# (mode is fcntl.LOCK_EX or fcntl.LOCK_SH).
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


def _lock(path: Path, wait: bool, mode: int = fcntl.LOCK_EX, owner: str | None = None) -> int:
    lock_path = path / "LOCK"
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a read-only file system, a directory of another user
        raise StateError(
            f"state directory {path} cannot be locked for writing: "
            f"{describe_os_error(OSError(exc.errno, exc.strerror))}"
        ) from exc
    try:
        fcntl.flock(fd, mode | (0 if wait else fcntl.LOCK_NB))
    except BlockingIOError:
        try:
            holder = os.pread(fd, 200, 0).decode("utf-8", "replace").strip() or "unknown"
        finally:
            os.close(fd)
        error = LockedError(f"state directory {path} is in use by another process ({holder})")
        error.holder = holder
        raise error from None
    os.ftruncate(fd, 0)  # the line names the owner, or the latest of the sharers
    label = f" ({owner})" if owner else ""
    os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()}{label}\n".encode(), 0)
    return fd


def open_state(
    path: str | os.PathLike[str],
    *,
    lock: bool = True,
    wait: bool = False,
    shared: bool = False,
    owner: str | None = None,
) -> StateDir:
    """Create (if needed) and lock a state directory.

    ``lock=False`` opens it for reading only (``--dry-run``, ``stats``), without
    excluding the owner. ``wait=True`` blocks until the owner lets go instead of
    raising :class:`LockedError`. ``shared=True`` takes a shared lock: other sharers
    may hold it too, an exclusive owner may not (see :func:`open_substate`). Within
    one process any lock already held is shared; an exclusive request on a directory
    the process holds shared is upgraded, or refused if another process shares it.
    ``owner`` names the kind of owner in the lock file (``"crawl"``: a long-running
    owner that stages waiting for the lock should not wait for).
    """
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        # mkdir would say "already exists", which reads as if the state were there
        # (and mkdir with exist_ok leaves nothing else that is not a directory).
        raise StateError(f"{directory} is a file, not a state directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(
            f"cannot create state directory {directory}: "
            f"{describe_os_error(OSError(exc.errno, exc.strerror))}"
        ) from exc
    if not lock:
        return StateDir(directory, None)
    key = directory.resolve()
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with _held_guard:
        entry = _held.get(key)
        if entry is not None:  # this process holds it already: share the lock
            if mode == fcntl.LOCK_EX and entry[2] == fcntl.LOCK_SH:
                try:
                    fcntl.flock(entry[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise LockedError(
                        f"state directory {directory} is in use by another process"
                    ) from None
                entry[2] = fcntl.LOCK_EX
            entry[1] += 1
            return StateDir(directory, entry[0], key)
    fd = _lock(directory, wait, mode, owner)
    with _held_guard:
        _held[key] = [fd, 1, mode]
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
def open_substate(
    path: str | os.PathLike[str], name: str, *, wait: bool = False
) -> Iterator[StateDir]:
    """Lock the subdirectory ``name`` of the state directory ``path`` for a stage that
    keeps all its files there: ``path`` shared, ``path/name`` exclusive.

    Raises :class:`LockedError` up front, before anything is read or written, when
    another process owns ``path`` (a crawl, a frontier stage) or ``path/name``.
    """
    with (
        open_state(path, wait=wait, shared=True) as root,
        open_state(root.path / name, wait=wait) as sub,
    ):
        yield sub


def lock_state(
    path: str | os.PathLike[str],
    *,
    wait: float,
    reporter: Reporter | None = None,
    owner: str | None = None,
) -> StateDir:
    """Lock the state directory, waiting up to ``wait`` seconds for another owner.

    Raises :class:`LockedError` when the owner keeps it longer, and at once when the
    owner is a running crawl (it keeps the directory for its whole run). ``owner`` is
    as for :func:`open_state`.
    """
    reporter = reporter or NullReporter()
    deadline = time.monotonic() + wait
    told = False
    while True:
        try:
            return open_state(path, owner=owner)
        except LockedError as exc:
            if exc.holder.endswith("(crawl)"):
                raise LockedError(f"{exc}: a crawl keeps it for its whole run") from None
            if time.monotonic() >= deadline:
                raise
            if not told:
                reporter.info(f"{exc}; waiting up to {wait:g} s")
                told = True
            time.sleep(0.05)


# A crawl of --workers N keeps one ordinary crawl state per worker, STATE/workers/K,
# and STATE/workers/fleet.json says N (crawlkit/crawl/workers.py).
WORKERS_DIR = "workers"


def crawl_roots(state: Path) -> list[Path]:
    """The crawl states of ``state``: itself, and each worker's of a ``crawl --workers N``
    (``STATE/workers/K``), whose seen sets, frontiers, waiting rooms and totals are
    their own (a URL is in its owner's alone)."""
    workers = sorted((state / WORKERS_DIR).glob("[0-9]*"), key=lambda p: int(p.name))
    return [state, *workers]


def workers_of(state: Path) -> int:
    """N of a state a ``crawl --workers N`` laid out; 0 for any other state."""
    saved = state / WORKERS_DIR / "fleet.json"
    return int(streams.read_json(saved)["workers"]) if saved.exists() else 0


def refuse_workers_state(state: str | os.PathLike[str], stores: str, instead: str) -> None:
    """A usage error if ``state`` is one of ``crawl --workers N``: its ``stores`` are
    its workers' (``STATE/workers/K``), so a stage on ``state`` itself would make
    stores no worker reads, or answer from empty ones. ``instead`` says what to do."""
    path = Path(state)
    if workers_of(path):
        raise UsageError(
            f"{path} is a crawl of --workers: its {stores} are its workers' "
            f"({path / WORKERS_DIR}/K); {instead}"
        )
