"""A private temporary directory for a crawl, and the sweep of those a killed one left.

A crawl's processes make temporary files the crawl never names: multiprocessing's fork
server keeps its socket in ``$TMPDIR/pymp-*``, each worker of ``--workers N`` gets a
directory (``ckwK-*``). A crawl killed with SIGKILL leaves them: nothing of it is alive
to remove them, and a cron-driven crawl that a job runner kills now and then fills
``/tmp`` with them. So a crawl makes ``$TMPDIR/crawlkit-XXXXXXXX`` and works under it
(``tempfile`` and, through ``TMPDIR``, every process it starts); inside, a ``lock`` file
stays ``flock``-ed for the crawl's life. The crawl removes the directory when it ends,
and every crawl that starts removes the ``crawlkit-*`` directories whose lock it can
take: their owner is dead (the kernel drops a dead process's locks, also on SIGKILL,
and an ``flock`` is seen across PID namespaces that share the directory, where a
PID is not).

A base temporary directory so long that a fork server's socket (an AF_UNIX path of at
most 107 bytes) would not fit under a private directory is used as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["PREFIX", "private_temp_dir", "sweep"]

PREFIX = "crawlkit-"
LOCK = "lock"
# Below the private directory: a worker's directory, then the fork server's socket.
_ROOM = 107 - len("/ckw0-XXXXXXXX/pymp-XXXXXXXX/listener-XXXXXXXX")


@contextlib.contextmanager
def private_temp_dir() -> Iterator[Path | None]:
    """Work under a private temporary directory until the block ends (see the module
    doc); yields it, or None when the base directory's path is too long for one."""
    base = Path(tempfile.gettempdir())
    sweep(base)
    path = Path(tempfile.mkdtemp(prefix=PREFIX, dir=base))
    if len(os.fsencode(path)) > _ROOM:
        path.rmdir()
        yield None
        return
    # Locked under another name, then renamed: a sweep never finds the lock free
    # between its making and its taking.
    lock = os.open(path / "lock.new", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    os.rename(path / "lock.new", path / LOCK)
    before = (tempfile.tempdir, os.environ.get("TMPDIR"))
    tempfile.tempdir = str(path)
    os.environ["TMPDIR"] = str(path)
    try:
        yield path
    finally:
        tempfile.tempdir = before[0]
        if before[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = before[1]
        _remove_after_multiprocessing(path, lock)


def _remove_after_multiprocessing(path: Path, lock: int) -> None:
    """Remove the private directory now, or at exit if multiprocessing made its own
    directory in it (``pymp-*``, when the crawl started a fork server): multiprocessing
    removes that one as the interpreter exits and printed a traceback when it was gone
    already, at the end of every crawl. Then this one goes after it (a finalizer of
    lower priority than its -100), its lock held until then."""

    def remove() -> None:
        shutil.rmtree(path, ignore_errors=True)
        os.close(lock)

    try:
        theirs = any(entry.name.startswith("pymp-") for entry in os.scandir(path))
    except OSError:
        theirs = False
    util = sys.modules.get("multiprocessing.util")  # loaded if it made a directory here
    if not theirs or util is None:
        remove()
        return
    util.Finalize(None, remove, exitpriority=-101)


def sweep(base: Path) -> int:
    """Remove the private directories in ``base`` whose owner is dead (their lock is
    free); returns how many. One whose lock cannot be opened is left alone."""
    removed = 0
    try:
        entries = [e for e in os.scandir(base) if e.name.startswith(PREFIX) and e.is_dir()]
    except OSError:
        return 0
    for entry in entries:
        try:
            fd = os.open(os.path.join(entry.path, LOCK), os.O_RDWR | os.O_CLOEXEC)
        except OSError:
            continue  # not ours, or still being made
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue  # its crawl is alive
        shutil.rmtree(entry.path, ignore_errors=True)
        os.close(fd)
        removed += 1
    return removed
