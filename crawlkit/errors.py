"""The one exception tree of crawlkit.

Library code raises these; only the CLI's single exit point prints them (one line,
``crawlkit <command>: <message>``) and turns them into an exit status::

    CrawlkitError                 exit 1 unless noted
    ├── UsageError                exit 2: bad flags or arguments
    ├── InputError                a stream or file cannot be read (file, line)
    │   └── TruncatedInput        compressed input ended early; records before it kept
    ├── OutputError               an output cannot be written (read-only, full disk, ...)
    ├── InvalidURL                a URL cannot be parsed or is not http(s)
    ├── ProxyError                the --proxy failed a request: the fetch run stopped
    └── StateError                a state directory is missing, corrupt or of another version
        └── LockedError           another process holds the state directory

A *bad record* is not an exception that ends a stage: readers report it on stderr with
its file and line number, count it and go on (docs/design.md stream conventions). Nor is a
refusal (robots, trap limits, network policy) or a failed fetch (DNS, connect, TLS,
timeout): each is the outcome of one URL, written in its fetch record (``outcome``
``robots-denied``, ``refused`` or ``error``, with ``error`` and ``error_code``), and
the stage goes on with the next.

An ``OSError`` from the environment (a full disk, a read-only file system) that reaches
the exit point is printed in plain words by :func:`describe_os_error`, never as an
internal error.
"""

from __future__ import annotations

import errno
import resource
import sqlite3


class CrawlkitError(Exception):
    """Base class of every error crawlkit raises on purpose."""

    exit_code = 1


class UsageError(CrawlkitError):
    """The command line or the arguments of a call make no sense."""

    exit_code = 2


class InputError(CrawlkitError):
    """An input stream cannot be read; ``source`` and ``line`` say where."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        where = source or ""
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


class TruncatedInput(InputError):
    """A compressed stream ended before its end marker (a partial download or a crash)."""


class OutputError(CrawlkitError):
    """An output cannot be written: its file system is read-only or full, or access is
    denied. Checked before the work starts where it can be
    (:func:`crawlkit.streams.check_output`)."""


class InvalidURL(CrawlkitError, ValueError):
    """A URL that cannot be parsed, or whose scheme is not http or https."""


class ProxyError(CrawlkitError):
    """The proxy every request goes through failed one (unreachable, or it refused a
    CONNECT or asked for credentials): the fetch run stopped, every URL it had not
    fetched written out ``deferred``, since the rest would fail alike and be blamed
    on their sites."""


class StateError(CrawlkitError):
    """A state directory is missing, damaged, or written by an incompatible version."""


class LockedError(StateError):
    """Another live process owns the state directory (docs/design.md invariant 6).

    ``holder`` is the owner's line in the lock file: ``pid N on HOST``, plus
    `` (crawl)`` when the owner is a crawl, which keeps it for its whole run."""

    holder: str = ""


# Plain words for the faults a user's environment causes; the rest keep their strerror.
_PLAIN = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "read-only file system",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EISDIR: "is a directory",
    errno.ENOTDIR: "not a directory",
    errno.ENOENT: "no such file or directory",
    errno.EEXIST: "already exists",
    errno.EIO: "input/output error",
    errno.EMFILE: "too many open files",
    errno.ENAMETOOLONG: "file name too long",
}


def describe_os_error(exc: OSError) -> str:
    """``PATH: no space left on device``: an OSError in plain words, with its file.

    numpy's ``tofile`` reports a short write as ``N requested and M written`` without
    an errno; nearly always a full disk, so it is called a short write and that cause
    is named.
    """
    reason = _PLAIN.get(exc.errno or 0) or (exc.strerror or str(exc)).lower()
    if exc.errno is None and "requested and" in str(exc):
        reason = f"short write ({exc}); is the disk full?"
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        # the file it failed on is only the one that came last: name the limit
        reason += f" ({_open_file_limit()})"
    return f"{exc.filename}: {reason}" if exc.filename else reason


def _open_file_limit() -> str:
    """The process's open-file limit and what a crawl needs, in words."""
    try:
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):
        return "raise the open-file limit, ulimit -n"
    return (
        f"the open-file limit, ulimit -n, is {soft}: a crawl holds about 100 files "
        "besides its connections (--concurrency); raise the limit"
    )


def environment_error(exc: BaseException) -> str | None:
    """What the environment did behind ``exc``, in plain words (``PATH: no space left
    on device``), or None when nothing did.

    The first OSError in its chain of causes counts, so a full disk met while the run
    shut down (a store's own write failing after the WARC writer's did) is still named
    as the disk, not as the store's error; SQLite's "database or disk is full" is a
    full disk too.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for error in chain:
        if isinstance(error, OSError):
            return describe_os_error(error)
    for error in chain:
        if isinstance(error, sqlite3.OperationalError) and "disk is full" in str(error):
            return "no space left on device (an SQLite store: database or disk is full)"
    return None
