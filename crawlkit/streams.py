"""Record streams: the one place where crawlkit opens files, stdin and stdout.

Conventions (docs/design.md "Stream conventions"):

* ``-`` or no path means stdin / stdout; at most one input may be stdin.
* Input compression is detected from magic bytes (zstd, gzip), so a pipe can carry
  either; output is compressed by the file name's extension (``.zst``, ``.gz``).
* One JSON object a line, UTF-8. Records are plain dicts, so fields a stage does not
  know pass through untouched.
* A bad line (not JSON, not an object, invalid UTF-8, longer than the line cap) is
  reported with its file and line number, counted and skipped; the stream goes on.
* A truncated zstd or gzip stream is reported as such; the records before the damage
  are kept, and the reporter remembers the failure so the command can exit 1.
* Output files are written under a temporary name, fsynced and renamed when complete,
  so a crash never leaves a half file under the final name (invariant 5). An output
  that is not a regular file (``/dev/null``, a FIFO, ``/dev/stdout``, a process
  substitution's ``/dev/fd/63``) is written straight through: renaming over it would
  replace the device or pipe with a plain file for every other program.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import select
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

import orjson
import zstandard

from crawlkit.decoders import READ_CHUNK, GzipReader, ZstdReader, starts_zstd
from crawlkit.decoders import ZSTD_MAGIC as ZSTD_MAGIC  # (a name of this module too)
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InputError, OutputError, TruncatedInput, UsageError, describe_os_error
from crawlkit.records import Record

GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark, which JSON (RFC 8259) lets a reader drop
DEFAULT_MAX_LINE = 16 * 1024 * 1024


def is_stdio(path: str | os.PathLike[str] | None) -> bool:
    return path is None or str(path) == "-"


def display_name(path: str | os.PathLike[str] | None) -> str:
    return "<stdin>" if is_stdio(path) else str(path)


def open_input(path: str | os.PathLike[str] | None) -> io.BufferedReader:
    """Open a path (or ``-`` for stdin) as a decompressed, buffered binary stream."""
    source = display_name(path)
    buffered: io.BufferedReader
    if path is None or is_stdio(path):
        stdin = sys.stdin.buffer  # a BytesIO under a test runner: peek() needs the wrapper
        # (ignore: typeshed's BinaryIO declares no readinto(), which a binary stdin has)
        buffered = (
            stdin if isinstance(stdin, io.BufferedReader) else io.BufferedReader(stdin)  # type: ignore[arg-type]
        )
    else:
        try:
            buffered = open(path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
        except OSError as exc:
            raise InputError(exc.strerror or str(exc), source=source) from exc
    magic = buffered.peek(4)[:4]
    if starts_zstd(magic):
        return io.BufferedReader(ZstdReader(buffered, source), READ_CHUNK)
    if magic.startswith(GZIP_MAGIC):
        return io.BufferedReader(GzipReader(buffered, source), READ_CHUNK)
    return buffered


def check_single_stdin(paths: Sequence[str | os.PathLike[str]]) -> None:
    if sum(1 for p in paths if is_stdio(p)) > 1:
        raise UsageError("at most one input may be standard input ('-')")


def iter_lines(
    stream: BinaryIO,
    source: str,
    reporter: Reporter,
    max_line: int = DEFAULT_MAX_LINE,
    *,
    keep_overlong: bool = False,
) -> Iterator[tuple[int, bytes | None]]:
    """Yield ``(line_number, line)`` without the line end; overlong lines are skipped.

    An overlong line is read past in chunks, never held whole in memory, and reported;
    with ``keep_overlong`` it is also yielded as ``(line_number, None)``, so callers
    that answer every input line keep their output aligned.
    A truncated compressed stream is reported and ends this input (records before it
    were already yielded).
    """
    lineno = 0
    try:
        while True:
            line = stream.readline(max_line + 1)
            if not line:
                return
            lineno += 1
            if lineno == 1 and line.startswith(_BOM):
                line = line[len(_BOM) :]  # Windows editors start a file with one
            if len(line) > max_line and not line.endswith(b"\n"):
                skipped = len(line)
                while line and not line.endswith(b"\n"):
                    line = stream.readline(READ_CHUNK)
                    skipped += len(line)
                reporter.bad_record(source, lineno, f"line longer than {max_line} bytes skipped")
                if keep_overlong:
                    yield lineno, None
                continue
            yield lineno, line.rstrip(b"\r\n")
    except TruncatedInput as exc:
        reporter.warn(f"{exc}; the {lineno} lines before the damage were kept", "truncated input")
    except InputError as exc:
        reporter.warn(f"{exc}; the {lineno} lines before the damage were kept", "corrupt input")


def parse_record(line: bytes) -> Record:
    """Parse one NDJSON line into a dict; raises ValueError with a short reason."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        if b"\xff" in line or _invalid_utf8(line):
            raise ValueError("invalid UTF-8") from exc
        raise ValueError(f"not JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object (a {type(value).__name__})")
    return value


def _invalid_utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


def read_records(
    paths: Sequence[str | os.PathLike[str]] | None,
    reporter: Reporter | None = None,
    *,
    max_line: int = DEFAULT_MAX_LINE,
) -> Iterator[Record]:
    """Yield the records of every input in order; bad lines are reported and skipped."""
    for _, _, record in read_records_with_lines(paths, reporter, max_line=max_line):
        yield record


def read_records_with_lines(
    paths: Sequence[str | os.PathLike[str]] | None,
    reporter: Reporter | None = None,
    *,
    max_line: int = DEFAULT_MAX_LINE,
) -> Iterator[tuple[str, int, Record]]:
    """Like :func:`read_records`, with the source name and line number of each record."""
    reporter = reporter if reporter is not None else NullReporter()
    inputs: Sequence[str | os.PathLike[str]] = list(paths) if paths else ["-"]
    check_single_stdin(inputs)
    for path in inputs:
        source = display_name(path)
        with contextlib.closing(open_input(path)) as stream:
            for lineno, line in iter_lines(stream, source, reporter, max_line):
                # (isspace, unlike strip, copies nothing: the same ASCII whitespace)
                if line is None or not line or line.isspace():
                    continue
                # Every stage reads its records here: the common case (an object)
                # goes without parse_record's call, which only words the errors.
                try:
                    value = orjson.loads(line)
                except orjson.JSONDecodeError:
                    value = None
                if type(value) is dict:
                    yield source, lineno, value
                    continue
                try:
                    yield source, lineno, parse_record(line)
                except ValueError as exc:
                    reporter.bad_record(source, lineno, str(exc))


@dataclass(frozen=True, slots=True)
class LineError:
    """An input line that could not be read (already reported on stderr)."""

    reason: str


def read_text_lines(
    paths: Sequence[str | os.PathLike[str]] | None,
    reporter: Reporter | None = None,
    *,
    max_line: int = DEFAULT_MAX_LINE,
    aligned: bool = False,
) -> Iterator[tuple[str, int, Any]]:
    """Yield ``(source, line_number, text)``; text is None for a line that is not UTF-8.

    Callers that keep lines aligned (``crawlkit canon``) need to see the bad line too:
    with ``aligned`` every input line is yielded, and text is a :class:`LineError`
    (with its reason) for a line that is not UTF-8 or is longer than ``max_line``.
    """
    reporter = reporter if reporter is not None else NullReporter()
    inputs: Sequence[str | os.PathLike[str]] = list(paths) if paths else ["-"]
    check_single_stdin(inputs)
    overlong = LineError(f"line longer than {max_line} bytes")
    for path in inputs:
        source = display_name(path)
        with contextlib.closing(open_input(path)) as stream:
            lines = iter_lines(stream, source, reporter, max_line, keep_overlong=aligned)
            for lineno, line in lines:
                if line is None:
                    yield source, lineno, overlong
                    continue
                try:
                    yield source, lineno, line.decode("utf-8")
                except UnicodeDecodeError:
                    reporter.bad_record(source, lineno, "invalid UTF-8")
                    yield source, lineno, LineError("invalid UTF-8") if aligned else None


def dumps(record: Mapping[str, Any]) -> bytes:
    """One NDJSON line (with its newline)."""
    return orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE)


def writes_through(path: str | os.PathLike[str]) -> bool:
    """True if ``path`` must be opened and written in place, never renamed over.

    That is any existing target that is not a regular file (a character device such
    as ``/dev/null``, a FIFO, a socket), and any path whose symlinks lead through
    ``/proc`` (``/dev/stdout``, ``/dev/fd/N``): such a name stands for an open file
    of this process, even when that file is a regular one (``> log``), and renaming
    over it would replace the symlink in ``/dev`` instead.
    """
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return True
    current = os.path.abspath(path)
    for _ in range(40):  # the kernel's own limit on a symlink chain
        if current.startswith(("/proc/", "/dev/fd/")):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.join(os.path.dirname(current), os.readlink(current))
        current = os.path.abspath(current)
    return False


def check_output(path: str | os.PathLike[str] | None, option: str = "output") -> None:
    """Refuse, before any work, an output file that cannot be made.

    A directory in its place or on its way is a :class:`UsageError`; a read-only file
    system or a directory this process may not write is an :class:`OutputError`. A
    target that :func:`writes_through` (``/dev/null``) needs only to be writable.
    ``-`` (stdout) always passes. Commands that open an output only after their work
    (``dedup --sites``) call this first, so the work is not lost at the final rename.
    """
    if path is None or is_stdio(path):
        return
    target = Path(path)
    if target.is_dir():
        raise UsageError(f"{option} {target} is a directory; give a file name")
    if writes_through(target):
        if not os.access(target, os.W_OK):
            raise OutputError(f"{option} {target}: {_why_not_writable(target)}")
        return
    ancestor = target.parent
    while not ancestor.exists():
        if os.path.lexists(ancestor):  # a dangling symlink on the way
            raise UsageError(f"{option} {target}: {ancestor} is a broken symlink")
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise UsageError(f"{option} {target}: {ancestor} is not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(
            f"{option} {target}: cannot write in {ancestor}: {_why_not_writable(ancestor)}"
        )


def check_output_dir(path: str | os.PathLike[str] | None, option: str) -> None:
    """Refuse, before any work, an output directory (``--out-dir``) that is a file."""
    if path is None:
        return
    directory = Path(path)
    probe = directory
    while not probe.exists():
        if probe == probe.parent:
            return
        probe = probe.parent
    if not probe.is_dir():
        what = "is a file" if probe == directory else f"is under {probe}, which is a file"
        raise UsageError(f"{option} {directory} {what}; give a directory")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise OutputError(f"{option} {directory}: {_why_not_writable(probe)}")


def _why_not_writable(path: Path) -> str:
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "read-only file system"
    except OSError:
        pass
    return "permission denied"


_WRITE_BATCH = 64 * 1024  # bytes of records Output.write_records joins into one write

#: The output files this process gave up (an error, a reader of its standard output
#: gone): a command that stops because ``| head`` closed its stdout is a normal end
#: only when nothing else it was asked to write was lost (cli/main.py).
ABANDONED: list[Path] = []


@contextlib.contextmanager
def on_reader_gone(fd: int, callback: Callable[[], object]) -> Iterator[None]:
    """Call ``callback`` (from a thread of its own) once the reader of the pipe on
    ``fd`` goes away, for as long as the block runs; nothing if ``fd`` is not a pipe.

    A stage finds a closed stdout at its next write; one that writes rarely (a fetch
    waiting out a host's Crawl-delay between records) would go on working for that
    long, into a pipe nobody reads. The kernel says it at once: the write end of a
    pipe without readers polls as POLLERR.
    """
    try:
        is_pipe = stat.S_ISFIFO(os.fstat(fd).st_mode)
    except OSError:
        is_pipe = False
    if not is_pipe:
        yield
        return
    wake_r, wake_w = os.pipe()

    def watch() -> None:
        poller = select.poll()
        poller.register(fd, 0)  # no events asked for: POLLERR (no reader) comes anyway
        poller.register(wake_r, select.POLLIN)
        # (blocks until one of them; a signal's EINTR is retried inside, PEP 475)
        events = dict(poller.poll())
        if fd in events and wake_r not in events:
            callback()

    thread = threading.Thread(target=watch, name="reader-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        os.write(wake_w, b"x")
        thread.join()
        os.close(wake_r)
        os.close(wake_w)


def write_verdict(data: bytes) -> None:
    """Write ``data`` (a report, a summary) to standard output, for a command whose
    exit status says something of its own once its work is done: audit's violations,
    a crawl's failure. A reader gone (``crawlkit audit ... | head``) is no error here,
    so the command goes on to end with that status; ended by the BrokenPipeError, it
    exited 0, and ``set -o pipefail`` took a failed audit for a passed one. The rest
    of ``data`` is dropped: nobody can read it.
    """
    with contextlib.suppress(BrokenPipeError):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()


@contextlib.contextmanager
def still_to_write(*paths: str | os.PathLike[str] | None) -> Iterator[None]:
    """Name the outputs a command writes only after the block (``dedup --sites F``
    writes F once its records are out): if the block ends because the reader of
    standard output went away, they are never written, and the command must say so
    and exit 1 as when an open output is abandoned (``extract --links L | head -1``),
    not end 0 with F missing. Standard output itself (``-``, None) is not counted."""
    try:
        yield
    except BrokenPipeError:
        ABANDONED.extend(Path(p) for p in paths if p is not None and not is_stdio(p))
        raise


class Output:
    """A binary output that is either stdout or a file committed atomically on close.

    Use it as a context manager: on a clean exit the temporary file is flushed,
    fsynced and renamed to its final name; on an exception it is removed and the
    final name is left as it was. A target that :func:`writes_through` is opened
    and written in place instead (its type and inode stay as they were).
    """

    def __init__(self, path: str | os.PathLike[str] | None, *, level: int = 3):
        self.path = None if path is None or is_stdio(path) else Path(path)
        self._tmp: Path | None = None
        self._raw: IO[bytes]
        self._stream: IO[bytes]
        self._closer: Any = None
        if self.path is None:
            self._raw = sys.stdout.buffer
            self._stream = self._raw
            return
        name = self.path.name  # (its format: the name given, not a link's target's)
        if self.path.is_symlink() and not writes_through(self.path):
            # written where the link leads, as the shell's > and sort -o write: renamed
            # over, the link itself was replaced by a file and its target left old
            self.path = Path(os.path.realpath(self.path))
        check_output(self.path)
        try:
            self._open()
        except OSError as exc:  # name the output, not its temporary file
            raise OutputError(f"{self.path}: {describe_os_error(_without_name(exc))}") from exc
        if name.endswith(".zst"):
            self._closer = zstandard.ZstdCompressor(level=level, write_checksum=True).stream_writer(
                self._raw, closefd=False
            )
            self._stream = self._closer
        elif name.endswith(".gz"):
            self._closer = gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
            self._stream = self._closer
        else:
            self._stream = self._raw

    def _open(self) -> None:
        assert self.path is not None
        if writes_through(self.path):
            # O_APPEND: a regular file behind /dev/stdout keeps what the shell's own
            # redirection (>>) meant; devices and pipes ignore it.
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(
                prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent
            )
            os.fchmod(fd, _file_mode())
            self._tmp = Path(tmp)
        self._raw = os.fdopen(fd, "wb")

    def write(self, data: bytes) -> None:
        try:
            self._write(data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._failed(exc) from exc

    def _failed(self, exc: OSError) -> OSError | OutputError:
        """A write error of a file output, naming the output (stdout's stay as they are)."""
        if self.path is None:
            return exc
        return OutputError(f"{self.path}: {describe_os_error(_without_name(exc))}")

    def _write(self, data: bytes) -> None:
        if self._stream is not self._raw:
            self._stream.write(data)  # a compressor takes all of it or raises
            return
        # A write larger than the BufferedWriter's buffer goes straight to the OS, and a
        # short write followed by an error (the reader of a pipe went away) comes back as
        # a short count, not an exception. Writing the rest raises the error, so a
        # caller never counts as written what did not get out (invariant 4).
        n = self._raw.write(data)
        view = memoryview(data)
        while n is not None and n < len(view):
            view = view[n:]
            n = self._raw.write(view)

    def write_record(self, record: Mapping[str, Any]) -> None:
        self.write(dumps(record))

    def write_records(self, records: Iterable[Mapping[str, Any]]) -> int:
        # To stdout a record goes out as it comes (a pipe reads on); a file's records
        # are joined into one write (one compressor call) per ~64 KiB, a cost a crawl's
        # post thread pays per record otherwise. zstd and gzip bytes are the same.
        limit = 0 if self.path is None else _WRITE_BATCH
        n = size = 0
        batch: list[bytes] = []
        try:
            for record in records:
                line = dumps(record)
                batch.append(line)
                size += len(line)
                n += 1
                if size >= limit:
                    data = b"".join(batch)
                    batch.clear()  # before writing: a failed write is not written again
                    size = 0
                    self.write(data)
        finally:  # (what came before a failing record is written, as one at a time was)
            if batch:
                data = b"".join(batch)
                batch.clear()
                self.write(data)
        return n

    def commit(self) -> None:
        if self.path is None:
            self._raw.flush()
            return
        try:
            self._commit()
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.abort()
            raise self._failed(exc) from exc

    def _commit(self) -> None:
        assert self.path is not None
        if self._closer is not None:
            self._closer.close()
        self._raw.flush()
        if self._tmp is None:  # written through: nothing to rename, nothing to fsync
            self._raw.close()
            return
        os.fsync(self._raw.fileno())
        self._raw.close()
        os.replace(self._tmp, self.path)
        fsync_dir(self.path.parent)

    def abort(self) -> None:
        if self.path is None:
            return
        if self._tmp is None:
            with contextlib.suppress(OSError):
                self._raw.close()
            return
        with contextlib.suppress(Exception):
            if self._closer is not None:
                self._closer.close()
        with contextlib.suppress(OSError):
            self._raw.close()
        with contextlib.suppress(OSError):
            self._tmp.unlink()
        ABANDONED.append(self.path)

    def __enter__(self) -> Output:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


class ByProduct:
    """A record sink for what a stage reports on the side of its work (``frontier
    add``'s refused records), which must not cut that work short.

    A reader of the records gone (``frontier add | head -1``: ``write`` raises
    BrokenPipeError) drops the rest, and the stage goes on: the work its input asked
    for (queue the other URLs) is done and committed. Stopped there instead, an input
    read from a pipe (``seen-merge | frontier add``, whose URLs seen-merge has
    already marked seen) was gone for good. :meth:`end` then raises the error, so the
    command ends as any other whose reader went away (quietly, cli/main.py).
    """

    def __init__(self, write: Callable[[Any], None]) -> None:
        self._write = write
        self._gone: BrokenPipeError | None = None

    def __call__(self, record: Any) -> None:
        if self._gone is not None:
            return  # nobody reads them any more
        try:
            self._write(record)
        except BrokenPipeError as exc:
            self._gone = exc

    def end(self) -> None:
        """Raise the BrokenPipeError that ended the records, if one did."""
        if self._gone is not None:
            raise self._gone


def _without_name(exc: OSError) -> OSError:
    """The error without its file name (a temporary name means nothing to the user)."""
    return OSError(exc.errno, exc.strerror) if exc.errno is not None else exc


_MODE: list[int] = []


def _file_mode() -> int:
    """The mode a plainly created file would get (0666 less the umask).

    ``mkstemp`` makes 0600 files; outputs and state files should look like any other
    file the user makes, e.g. readable by the group that shares a crawl.
    """
    if not _MODE:
        mask = os.umask(0o022)
        os.umask(mask)
        _MODE.append(0o666 & ~mask)
    return _MODE[0]


def open_output(path: str | os.PathLike[str] | None) -> Output:
    """Open an output by the conventions above (``-`` or None is stdout)."""
    return Output(path)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename durable: fsync the directory that holds the entry."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(
    path: str | os.PathLike[str],
    *,
    tmp: str | os.PathLike[str] | None = None,
    mode: int | None = None,
) -> Iterator[BinaryIO]:
    """A binary file that replaces ``path`` only when the block ends without error.

    Written under ``tmp`` (a fresh hidden name beside ``path`` by default; stages that
    clean up their own leftovers pass a name they recognise), then flushed, fsynced,
    renamed and the directory fsynced, so a crash leaves the old file or the new one.
    ``mode`` (0600 for a file that holds secrets) replaces the umask's mode.
    A target that :func:`writes_through` (``/dev/null``) is written in place.
    """
    target = Path(path)
    if writes_through(target):
        with open(target, "ab") as f:
            yield f
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    if tmp is None:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    else:
        name = str(tmp)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, _file_mode() if mode is None else mode)
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(name, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
    fsync_dir(target.parent)


def write_array(f: BinaryIO, array: Any) -> None:
    """Write a C-contiguous array's bytes to ``f`` without copying them.

    numpy's ``tofile`` reports a full disk as ``N requested and M written`` with no
    errno; a file's own ``write`` raises ``ENOSPC``, which is said in plain words.
    """
    f.write(memoryview(array).cast("B"))


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, *, mode: int | None = None
) -> None:
    """Replace ``path`` with ``data`` so that a crash leaves the old or the new file
    (``mode``: see :func:`atomic_file`)."""
    with atomic_file(path, mode=mode) as f:
        f.write(data)


def atomic_write_json(path: str | os.PathLike[str], value: Any, *, mode: int | None = None) -> None:
    atomic_write_bytes(path, orjson.dumps(value, option=orjson.OPT_INDENT_2) + b"\n", mode=mode)


def read_json(path: str | os.PathLike[str]) -> Any:
    return orjson.loads(Path(path).read_bytes())
