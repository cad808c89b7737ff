"""A fast WARC writer: one gzip member per record, rotating files, IIPC-style names.

Each capture is written as ``request``, ``response`` (or ``revisit``) and ``metadata``
records, one gzip member each (any record can be read alone from its offset). Files
start with a ``warcinfo`` record, are written under ``NAME.open`` and renamed to
``NAME`` (``PREFIX-YYYYMMDDhhmmss-SERIAL-HOST-PID.warc.gz``) when closed, after an
fsync, so a reader that globs ``*.warc.gz`` never sees a half-written file and a crash
leaves only a ``.open`` file behind (docs/design.md invariant 5); the next writer in the same
directory cuts such a file after its last complete record and renames it
(:func:`salvage_open_files`), so what was archived before the crash is kept. A file is
rotated once it passes ``max_size`` bytes; a capture never spans two files.

The response record holds the HTTP response as received: status line and original
headers, then the body with its Content-Encoding intact but its transfer codings
undone by the client (de-chunked; ``Transfer-Encoding: gzip, chunked`` gunzipped too:
the payload of WARC 1.1 5.9 is the entity-body, which has no transfer coding); a
``Transfer-Encoding`` header is kept as ``X-Crawlkit-Transfer-Encoding`` so readers do
not try to undo it again. ``WARC-Payload-Digest`` is the SHA-1 (base32) of that
body; ``WARC-Truncated: length`` marks a body cut at a cap. A body identical to an
earlier capture is written as a ``revisit`` record (identical-payload-digest profile)
with the headers only.

With ``index=True`` the writer also keeps the file's CDXJ index (pywb's format, see
:mod:`crawlkit.warc.cdxj`): one line per response or revisit, appended to
``NAME.cdxj.open`` as the record is written and sorted into ``NAME.cdxj`` before the
file gets its final name, so a collection index never has to read the WARC again. A
file finished by salvage after a crash loses its index files (its cut may have dropped
records they name); an indexer then reads the file itself.

This writer is used from one thread at a time (the fetch engine hands it to a single
worker thread so zlib-ng, which releases the GIL, compresses off the event loop).

Members are deflated by zlib-ng (:mod:`crawlkit.deflate`): zlib's format and levels at
about half the CPU of CPython's zlib for 0.4% more bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import re
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, TextIO

from crawlkit import deflate
from crawlkit.errors import UsageError
from crawlkit.streams import atomic_write_bytes, fsync_dir
from crawlkit.times import iso
from crawlkit.warc.cdxj import capture_line
from crawlkit.warc.salvage import cut_to_whole_records

try:  # optional C extension (setup.py); without it zlib-ng makes every member
    from crawlkit.warc._gzip import gzip_member as _held_gzip_member
except ImportError:  # built without a C compiler or zlib's header
    _held_gzip_member = None  # type: ignore[assignment]

__all__ = [
    "DEFAULT_MAX_SIZE",
    "DEFAULT_WARC",
    "INDEX_SUFFIX",
    "Capture",
    "WarcLocation",
    "WarcOptions",
    "WarcWriter",
    "discard_index",
    "finish_open_file",
    "gzip_member",
    "index_of",
    "named_by",
    "salvage_open_files",
    "sha1_digest",
    "stored_member",
    "warc_date",
]

#: A new WARC file is started past this size (``--warc-size``), as Heritrix does.
DEFAULT_MAX_SIZE = 1_000_000_000


@dataclass(frozen=True)
class WarcOptions:
    """How fetch and crawl write WARC files (``--warc-size``, ``--warc-prefix``,
    ``--warc-version``), with their defaults written once; passed whole to
    :meth:`WarcWriter.from_options`."""

    size: int = DEFAULT_MAX_SIZE  # a new file past this many bytes
    prefix: str = "crawlkit"  # file names start with it
    version: str = "1.1"  # WARC/1.1 or WARC/1.0
    # The directory is shared with peer writers that recover their own files (the
    # workers of ``crawl --workers``): salvage only the files of this prefix.
    shared: bool = False


DEFAULT_WARC = WarcOptions()

_PROFILE = {
    "1.1": "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest",
    "1.0": "http://netpreserve.org/warc/1.0/revisit/identical-payload-digest",
}
# A 304 to a conditional GET: the server says the page is as it was (WARC 1.1 6.7.2).
_NOT_MODIFIED_PROFILE = {
    "1.1": "http://netpreserve.org/warc/1.1/revisit/server-not-modified",
    "1.0": "http://netpreserve.org/warc/1.0/revisit/server-not-modified",
}


def sha1_digest(data: bytes) -> str:
    """``sha1:BASE32`` as WARC writers (Heritrix, warcio, wget) spell it.

    The 160 bits are spelled as sixteen 10-bit groups, two letters each: what
    ``base64.b32encode`` writes (no padding: 160 is a multiple of 40) at half its
    cost, which is Python code in 3.11; the WARC thread takes two or three a capture.
    """
    n = int.from_bytes(hashlib.sha1(data).digest(), "big")
    pairs = _B32_PAIRS
    return "sha1:" + "".join([pairs[(n >> shift) & 1023] for shift in _B32_SHIFTS])


_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"  # RFC 4648's alphabet
_B32_PAIRS = [a + b for a in _B32 for b in _B32]  # 10 bits -> two letters
_B32_SHIFTS = range(150, -1, -10)


def gzip_member(raw: bytes, level: int) -> bytes:
    """``raw`` as one gzip member, as zlib-ng's ``compress(raw, level, wbits=31)``
    would make it, at a fraction of the cost for a small record.

    A compress call sets up a 32 KB window and hash tables for every call: with
    zlib-ng over 256 KiB, a block of its own in a crawl's processes
    (:func:`crawlkit.heap.map_large_blocks`), mapped and zeroed page by page: 162 µs
    for a 300-byte request record, against 6.8 µs here. A window no larger than the
    record, with hash tables to match, finds the same matches (the same sizes on
    records of 200 B to 60 KB). zlib-ng's hash table is 128 KB whatever the memory
    level, so the memory level stays at most 7: a record of 8 to 16 KB then stays
    under the mapping threshold (221 against 300 µs on real pages cut to 12 KB, the
    same sizes). Level 0 (a body already compressed) is written as stored blocks here,
    with no compressor at all (:func:`stored_member`). A record of at most
    :data:`HELD_MEMBER_MAX` bytes is deflated by the system's zlib without letting go of
    the interpreter lock (the same format, other bytes).
    """
    if level == 0:
        return stored_member(raw)
    bits, mem_level = member_window(len(raw))
    if len(raw) <= HELD_MEMBER_MAX and _held_gzip_member is not None:
        return _held_gzip_member(raw, level, bits, mem_level)
    packer = deflate.compressobj(level, deflate.DEFLATED, 16 + bits, mem_level)
    return packer.compress(raw) + packer.flush()


def member_window(size: int) -> tuple[int, int]:
    """(window bits, memory level) of the deflate state for a record of ``size`` bytes:
    a window no larger than the record, hash tables to match (see :func:`gzip_member`)."""
    bits = max(9, min(15, (size - 1).bit_length()))
    return bits, max(1, min(7, bits - 6))


# Records up to this size (a request, a metadata record, a revisit: 200-600 bytes as a
# rule) are deflated by crawlkit/warc/_gzip.c, which keeps the interpreter lock: zlib-ng
# lets it go for every call, and in a crawl the WARC thread then waits to take it back
# from the event loop, at more CPU than the deflate (a futex wait and a context switch
# each time; bench/bench_warc_write.py --contend). At 4 KiB the system zlib takes
# ~37 µs at level 6 against zlib-ng's ~31: a short hold; larger records let it go.
HELD_MEMBER_MAX = 4096

# The WARC file's buffer. A response record is larger than the default 8 KiB, so each
# went out in its own write call, and a write lets the interpreter lock go (see
# HELD_MEMBER_MAX): ~2 a capture. The crawl's archiver flushes after each batch of
# captures (tens of them in a busy crawl) before it says where they are, so with a
# buffer this size a batch goes out in one or a few writes and nothing said is lost.
WRITE_BUFFER = 1 << 20


# A gzip header as zlib writes it for level 0: no name, no time, "fastest" (XFL 4), Unix.
_STORED_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\x03"
_STORED_BLOCK = 65535  # the most a stored deflate block holds (RFC 1951, 3.2.4)


def stored_member(raw: bytes) -> bytes:
    """``raw`` as one gzip member of stored deflate blocks (RFC 1951 BTYPE 00, RFC
    1952 framing), as zlib writes level 0.

    zlib-ng sets up its whole compressor even to store: 180 µs for a 20 KB body in a
    crawl's processes (its state is mapped apart, see :func:`gzip_member`), against
    3.4 µs to frame the bytes here. A crawl stores most response bodies this way
    (servers send them gzip-encoded already).
    """
    size = len(raw)
    parts: list[bytes | memoryview] = [_STORED_HEADER]
    view = memoryview(raw)
    for start in range(0, max(size, 1), _STORED_BLOCK):
        block = view[start : start + _STORED_BLOCK]
        final = start + _STORED_BLOCK >= size
        parts.append(struct.pack("<BHH", final, len(block), len(block) ^ 0xFFFF))
        parts.append(block)
    parts.append(struct.pack("<II", deflate.crc32(raw), size & 0xFFFFFFFF))
    return b"".join(parts)


def warc_date(t: float, version: str = "1.1") -> str:
    """WARC-Date: microseconds in WARC/1.1, whole seconds in WARC/1.0 (both UTC)."""
    return iso(t, 0 if version == "1.0" else 6)


@dataclass(frozen=True)
class WarcLocation:
    """Where a record lives: the final file name (no directory), offset and length;
    ``record_id`` is its WARC-Record-ID when the writer tells it (not in
    :meth:`to_dict`: a fetch record names a place, not a record)."""

    file: str
    offset: int
    length: int
    record_id: str = field(default="", compare=False)

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "offset": self.offset, "length": self.length}


@dataclass
class Capture:
    """One HTTP exchange to archive. ``response_head`` ends with the blank line."""

    url: str
    ip: str | None
    date: float
    request_head: bytes
    response_head: bytes
    body: bytes
    payload_digest: str
    truncated: str | None = None
    depth: int | None = None
    revisit_of: tuple[str, str] | None = None  # (uri, WARC-Date) of the earlier capture
    revisit_of_id: str | None = None  # and its WARC-Record-ID, when known
    # A 304 to a conditional GET: a revisit of the server-not-modified profile, of
    # ``revisit_of`` when the earlier capture is known; ``payload_digest`` is its digest.
    not_modified: bool = False
    precompressed: bool = False  # the body has a Content-Encoding (gzip, br, ...)
    metadata: dict[str, str] = field(default_factory=dict)


def _rid() -> str:
    """A random (version 4) UUID URN; ~3x cheaper than ``uuid.uuid4()`` formatting."""
    h = os.urandom(16).hex()
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-4{h[13:16]}-{_VARIANT[h[16]]}{h[17:20]}-{h[20:]}>"


_VARIANT = {c: "89ab"[int(c, 16) & 3] for c in "0123456789abcdef"}


INDEX_SUFFIX = ".cdxj"  # NAME.warc.gz -> NAME.warc.gz.cdxj, the file's sorted index


def index_of(warc: Path) -> Path:
    """The sorted CDXJ index a writer with ``index=True`` leaves beside ``warc``."""
    return warc.with_name(warc.name + INDEX_SUFFIX)


def discard_index(warc: Path) -> None:
    """Remove the index files of ``warc`` (its final name): after a salvage they may
    name records that the cut dropped."""
    index = index_of(warc)
    for path in (index, index.with_name(index.name + ".open")):
        path.unlink(missing_ok=True)


def finish_open_file(path: Path) -> int:
    """Finish ``NAME.open``, a WARC file its writer did not close: cut it after its
    last whole record (:mod:`crawlkit.warc.salvage`) and rename it ``NAME``, or remove
    it when no record is whole; its index files go either way. Returns where the
    whole records end (0: removed)."""
    final = path.with_name(path.name[: -len(".open")])
    discard_index(final)
    end = cut_to_whole_records(path)
    if end:
        os.replace(path, final)
    else:
        path.unlink(missing_ok=True)
    return end


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def named_by(name: str, prefix: str) -> bool:
    """Whether the WARC file ``name`` was named by a writer of ``prefix``:
    ``PREFIX-<time>-...`` (so ``crawlkit-w1-...`` is not ``crawlkit``'s)."""
    head = f"{prefix}-"
    return name.startswith(head) and name[len(head) : len(head) + 1].isdigit()


def salvage_open_files(directory: str | os.PathLike[str], prefix: str | None = None) -> list[Path]:
    """Finish ``*.warc.gz.open`` files left by a writer that died (kill -9, power loss).

    A file whose writer (by the host and pid in its name) is still alive is left
    alone, and with a ``prefix`` so is every file another prefix named (a directory
    shared by writers that each recover their own: two finishing one file race, and
    the loser finds it gone). Otherwise it is cut after its last complete record and
    renamed to its final name (:mod:`crawlkit.warc.salvage`), so ``crawlkit extract``
    reads what was archived before the crash; a file with no complete record is
    removed. Returns the files finished.
    """
    done: list[Path] = []
    here = socket.gethostname().split(".")[0] or "localhost"
    for path in sorted(Path(directory).glob("*.warc.gz.open")):
        if prefix is not None and not named_by(path.name, prefix):
            continue
        parts = path.name[: -len(".warc.gz.open")].rsplit("-", 2)
        if len(parts) == 3 and parts[2].isdigit():
            pid = int(parts[2])
            if parts[1] == here and (pid == os.getpid() or _pid_alive(pid)):
                continue
        elif len(parts) != 3:
            continue
        if finish_open_file(path):
            done.append(path.with_name(path.name[: -len(".open")]))
    if done:
        fsync_dir(directory)
    return done


MAX_PREFIX = 100
_SERIALS = itertools.count(1)  # the serial numbers of this process's WARC files
_PREFIX = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


def check_warc_prefix(prefix: str, option: str = "--warc-prefix") -> str:
    """Return ``prefix`` if it can start a WARC file name; raise :class:`UsageError` if not.

    A prefix is one file name component: letters, digits, ``.``, ``_``, ``+``, ``-``,
    not starting with a dot or a dash, at most :data:`MAX_PREFIX` characters, so the
    whole name (prefix, time, serial, host, pid, ``.warc.gz.open``) stays under the
    255-byte limit of a file name. ``../x``, ``/abs`` or ``a/b`` would write outside
    the WARC directory or fail only when the first file opens, after requests were
    made; commands call this before any request.
    """
    if not _PREFIX.fullmatch(prefix) or len(prefix) > MAX_PREFIX:
        raise UsageError(
            f"{option} must be a file name of 1 to {MAX_PREFIX} letters, digits, '.', '_', "
            f"'+' or '-', starting with a letter or digit (not a path): {prefix!r}"
        )
    return prefix


class WarcWriter:
    """Writes captures into rotating ``.warc.gz`` files in ``directory``."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        prefix: str = DEFAULT_WARC.prefix,
        version: str = DEFAULT_WARC.version,
        max_size: int = DEFAULT_WARC.size,
        level: int = 6,
        info: dict[str, str] | None = None,
        index: bool = False,
        shared: bool = False,
    ):
        if version not in _PROFILE:
            raise ValueError(f"WARC version must be 1.1 or 1.0, not {version!r}")
        self.directory = Path(directory)
        self.prefix = check_warc_prefix(prefix, "WARC prefix")
        self.version = version
        self.max_size = max_size
        self.level = level
        self.info = dict(info or {})
        self.index = index
        self.shared = shared  # salvage only this prefix's files (WarcOptions.shared)
        self._index: TextIO | None = None  # NAME.cdxj.open, the lines in file order
        self._file: BinaryIO | None = None
        self._name = ""
        self._size = 0
        self._serial = 0
        self._warcinfo_id = ""
        self._host = socket.gethostname().split(".")[0] or "localhost"
        self.salvaged: list[Path] = []
        self._salvage_checked = False

    # -- files -------------------------------------------------------------------------

    @classmethod
    def from_options(
        cls,
        directory: str | os.PathLike[str],
        options: WarcOptions,
        *,
        info: dict[str, str] | None = None,
        index: bool = False,
    ) -> WarcWriter:
        """A writer of ``options`` (size, prefix, version) into ``directory``."""
        return cls(
            directory,
            prefix=options.prefix,
            version=options.version,
            max_size=options.size,
            info=info,
            index=index,
            shared=options.shared,
        )

    def _open(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if not self._salvage_checked:
            self._salvage_checked = True
            self.salvaged = salvage_open_files(self.directory, self.prefix if self.shared else None)
        # One count for every writer of the process: two writers opened in the same
        # second (``crawlkit crawl`` starts one a fetch run) must not pick one name.
        stamp = time.strftime("%Y%m%d%H%M%S", time.gmtime())
        while True:  # and never take the name of a file that is there ("x": fail if so)
            self._serial = next(_SERIALS)
            self._name = (
                f"{self.prefix}-{stamp}-{self._serial:05d}-{self._host}-{os.getpid()}.warc.gz"
            )
            if (self.directory / self._name).exists():
                continue
            with contextlib.suppress(FileExistsError):
                self._file = open(  # noqa: SIM115
                    self.directory / (self._name + ".open"), "xb", buffering=WRITE_BUFFER
                )
                break
        if self.index:
            self._index = open(self._index_path(".open"), "w", encoding="utf-8")  # noqa: SIM115
        self._size = 0
        self._warcinfo_id = _rid()
        fields = {
            "software": "crawlkit",
            "format": f"WARC File Format {self.version}",
            "conformsTo": f"https://iipc.github.io/warc-specifications/specifications/"
            f"warc-format/warc-{self.version}/",
            **self.info,
        }
        block = "".join(f"{k}: {v}\r\n" for k, v in fields.items()).encode("utf-8")
        self._append(
            [
                ("WARC-Type", "warcinfo"),
                ("WARC-Record-ID", self._warcinfo_id),
                ("WARC-Date", warc_date(time.time(), self.version)),
                ("WARC-Filename", self._name),
                ("Content-Type", "application/warc-fields"),
            ],
            block,
        )

    def close(self) -> None:
        """Finish the current file: fsync, rename ``.open`` away. Safe to call twice."""
        if self._file is None:
            return
        self._file.flush()
        os.fsync(self._file.fileno())
        self._file.close()
        self._file = None
        if self._index is not None:
            self._finish_index()
        final = self.directory / self._name
        os.replace(self.directory / (self._name + ".open"), final)
        fsync_dir(self.directory)

    @property
    def name(self) -> str:
        """The final name of the file being written (or last written); "" before any."""
        return self._name

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def _index_path(self, suffix: str = "") -> Path:
        index = index_of(self.directory / self._name)
        return index.with_name(index.name + suffix)

    def _finish_index(self) -> None:
        """Sort the open file's index lines into ``NAME.cdxj`` (before the file's rename,
        so a closed file's index is there as soon as the file is)."""
        assert self._index is not None
        self._index.close()
        self._index = None
        unsorted = self._index_path(".open")
        lines = unsorted.read_text(encoding="utf-8").split("\n")
        lines.pop()  # after the last newline
        lines.sort()  # as crawlkit.warc.cdxj.index_lines sorts (whole lines, no newline)
        atomic_write_bytes(self._index_path(), "".join(f"{x}\n" for x in lines).encode())
        unsorted.unlink()

    # -- records -----------------------------------------------------------------------
    def _append(
        self, headers: list[tuple[str, str]], block: bytes, level: int | None = None
    ) -> tuple[int, int]:
        head = [f"WARC/{self.version}\r\n"]
        head.extend(f"{k}: {v}\r\n" for k, v in headers)
        head.append(f"Content-Length: {len(block)}\r\n\r\n")
        raw = "".join(head).encode("utf-8") + block + b"\r\n\r\n"
        data = gzip_member(raw, self.level if level is None else level)
        offset = self._size
        assert self._file is not None
        self._file.write(data)
        self._size += len(data)
        return offset, len(data)

    def write_capture(self, cap: Capture) -> WarcLocation:
        """Write request + response/revisit + metadata; returns the response's location
        (with its WARC-Record-ID)."""
        if self._file is None:
            self._open()
        date = warc_date(cap.date, self.version)
        response_id, request_id = _rid(), _rid()
        common = [("WARC-Target-URI", cap.url), ("WARC-Date", date)]
        if cap.ip:
            common.append(("WARC-IP-Address", cap.ip))
        common.append(("WARC-Warcinfo-ID", self._warcinfo_id))
        head = _clean_head(cap.response_head)
        revisit = cap.revisit_of is not None or cap.not_modified
        if not revisit:
            block = head + cap.body
            headers = [
                ("WARC-Type", "response"),
                ("WARC-Record-ID", response_id),
                *common,
                ("WARC-Block-Digest", sha1_digest(block)),
                ("WARC-Payload-Digest", cap.payload_digest),
            ]
            if cap.truncated:
                headers.append(("WARC-Truncated", cap.truncated))
        else:
            block = head
            profiles = _NOT_MODIFIED_PROFILE if cap.not_modified else _PROFILE
            headers = [
                ("WARC-Type", "revisit"),
                ("WARC-Record-ID", response_id),
                *common,
                ("WARC-Profile", profiles[self.version]),
            ]
            if cap.revisit_of is not None:
                if cap.revisit_of_id:  # (WARC 1.1 6.7: to be used when known)
                    headers.append(("WARC-Refers-To", cap.revisit_of_id))
                headers += [
                    ("WARC-Refers-To-Target-URI", cap.revisit_of[0]),
                    ("WARC-Refers-To-Date", cap.revisit_of[1]),
                ]
            headers += [
                ("WARC-Block-Digest", sha1_digest(block)),
                ("WARC-Payload-Digest", cap.payload_digest),
            ]
        if cap.depth is not None:
            headers.append(("WARC-Crawlkit-Depth", str(cap.depth)))
        headers.append(("Content-Type", "application/http; msgtype=response"))
        # An already compressed body does not shrink (deflate gains ~1% on gzip output at
        # ~100-150 µs for 8 KB); stored deflate blocks cost ~8 µs and ~0.3 KB of headers.
        level = 0 if cap.precompressed and not revisit else None
        offset, length = self._append(headers, block, level)
        location = WarcLocation(self._name, offset, length, response_id)
        if self._index is not None and not cap.not_modified:  # (cdxj.py: not indexed)
            line = capture_line(
                url=cap.url,
                date=date,
                http_head=head,
                revisit=revisit,
                digest=cap.payload_digest or sha1_digest(cap.body),
                offset=offset,
                length=length,
                filename=self._name,
            )
            self._index.write(line + "\n")
        self._append(
            [
                ("WARC-Type", "request"),
                ("WARC-Record-ID", request_id),
                *common,
                ("WARC-Concurrent-To", response_id),
                ("WARC-Block-Digest", sha1_digest(cap.request_head)),
                ("Content-Type", "application/http; msgtype=request"),
            ],
            cap.request_head,
        )
        if cap.metadata:
            meta = "".join(f"{k}: {v}\r\n" for k, v in cap.metadata.items()).encode("utf-8")
            self._append(
                [
                    ("WARC-Type", "metadata"),
                    ("WARC-Record-ID", _rid()),
                    *common,
                    ("WARC-Concurrent-To", response_id),
                    ("Content-Type", "application/warc-fields"),
                ],
                meta,
            )
        if self._size >= self.max_size:
            self.close()
        return location

    def write_resource(
        self, uri: str, content_type: str, data: bytes, *, date: float | None = None
    ) -> WarcLocation:
        """One ``resource`` record (a file that says how the collection was made: the
        crawl log, the report), its ``WARC-Block-Digest`` and payload digest the
        SHA-1 of ``data``; returns its location."""
        if self._file is None:
            self._open()
        digest = sha1_digest(data)  # the block is the payload: one digest for both
        offset, length = self._append(
            [
                ("WARC-Type", "resource"),
                ("WARC-Record-ID", _rid()),
                ("WARC-Target-URI", uri),
                ("WARC-Date", warc_date(time.time() if date is None else date, self.version)),
                ("WARC-Warcinfo-ID", self._warcinfo_id),
                ("WARC-Block-Digest", digest),
                ("WARC-Payload-Digest", digest),
                ("Content-Type", content_type),
            ],
            data,
        )
        return WarcLocation(self._name, offset, length)

    def write_metadata(
        self, uri: str, fields: list[tuple[str, str]], *, refers_to: str | None, date: str
    ) -> None:
        """One ``metadata`` record (``application/warc-fields``) about the capture of
        ``uri`` at ``date`` (a WARC-Date) whose record id is ``refers_to``: what was
        learned after the capture was written (its outlinks)."""
        if self._file is None:
            self._open()
        block = "".join(f"{k}: {' '.join(v.split())}\r\n" for k, v in fields).encode("utf-8")
        headers = [
            ("WARC-Type", "metadata"),
            ("WARC-Record-ID", _rid()),
            ("WARC-Target-URI", uri),
            ("WARC-Date", date),
            ("WARC-Warcinfo-ID", self._warcinfo_id),
        ]
        if refers_to:
            headers.append(("WARC-Refers-To", refers_to))
        headers += [
            ("WARC-Block-Digest", sha1_digest(block)),
            ("Content-Type", "application/warc-fields"),
        ]
        self._append(headers, block)

    def __enter__(self) -> WarcWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _clean_head(head: bytes) -> bytes:
    """Rename Transfer-Encoding: the stored body has its transfer codings undone."""
    if b"transfer-encoding" not in head.lower():
        return head
    lines = head.split(b"\r\n")
    for i, line in enumerate(lines):
        if line.lower().startswith(b"transfer-encoding:"):
            lines[i] = b"X-Crawlkit-" + line
    return b"\r\n".join(lines)
