"""The ZIP writer of ``crawlkit wacz``: zip64 only where a member needs it.

One job: write a ZIP file member by member, streaming, with the zip64 extensions used
only for a value that does not fit its 32-bit field (a member of 4 GiB or more, a
member that starts 4 GiB or more into the file, 65,535 members or more). Python's
:mod:`zipfile` switches to zip64 at 2 GiB, and with ``force_zip64`` for every member;
ReplayWeb.page (wabac.js) shows "Archived Page Not Found" for a WACZ whose WARC
members carry zip64 headers they do not need, so the rule is kept here, in one place
(:func:`needs_zip64`), where a test checks it without writing 4 GiB.

Contracts:

* Members are stored (``compress=False``: a reader seeks into them by offset) or
  deflated. Names are UTF-8 (the language-encoding flag is set for non-ASCII names).
* Each member's local header is written first and patched with its CRC-32 and sizes
  once the data is written (no data descriptors), so the output must be seekable.
* :meth:`ZipWriter.add` returns the member's uncompressed size and sha256, which
  ``datapackage.json`` lists, from the same single read of the data.
"""

from __future__ import annotations

import hashlib
import io
import struct
import time
import zlib
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["ZIP32_LIMIT", "ZipWriter", "needs_zip64"]

# A 32-bit field holds up to 0xFFFFFFFE; 0xFFFFFFFF means "see the zip64 extra field".
ZIP32_LIMIT = 0xFFFFFFFF
_MARKER = 0xFFFFFFFF
_COUNT_LIMIT = 0xFFFF
_CHUNK = 1 << 20
_UTF8_FLAG = 0x0800
_VERSION_20 = 20
_VERSION_ZIP64 = 45
_MADE_BY_UNIX = (3 << 8) | _VERSION_ZIP64
_FILE_MODE = (0o100644 << 16) & 0xFFFFFFFF


def needs_zip64(size: int, offset: int = 0) -> bool:
    """Whether a member of ``size`` bytes (compressed or not, the larger) whose local
    header starts ``offset`` bytes into the file needs the zip64 extensions: only when
    one of the two does not fit a 32-bit field (4 GiB or more)."""
    return size >= ZIP32_LIMIT or offset >= ZIP32_LIMIT


def _dos_time(stamp: time.struct_time) -> tuple[int, int]:
    year = max(stamp.tm_year, 1980)
    date = ((year - 1980) << 9) | (stamp.tm_mon << 5) | stamp.tm_mday
    clock = (stamp.tm_hour << 11) | (stamp.tm_min << 5) | (stamp.tm_sec // 2)
    return date, clock


@dataclass(slots=True)
class _Member:
    name: bytes
    flags: int
    method: int
    crc: int
    size: int
    compressed: int
    offset: int


class ZipWriter:
    """Writes members to a seekable binary file; :meth:`close` writes the directory."""

    def __init__(self, out: BinaryIO, *, stamp: time.struct_time):
        self._out = out
        self._date, self._clock = _dos_time(stamp)
        self._members: list[_Member] = []
        self._names: set[bytes] = set()
        self._pos = out.tell()

    def _write(self, data: bytes) -> None:
        self._out.write(data)
        self._pos += len(data)

    def _local_header(self, m: _Member, zip64: bool) -> bytes:
        extra = b""
        size, compressed = m.size, m.compressed
        if zip64:
            extra = struct.pack("<HHQQ", 1, 16, m.size, m.compressed)
            size = compressed = _MARKER
        return (
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                _VERSION_ZIP64 if zip64 else _VERSION_20,
                m.flags,
                m.method,
                self._clock,
                self._date,
                m.crc,
                compressed,
                size,
                len(m.name),
                len(extra),
            )
            + m.name
            + extra
        )

    def add(self, name: str, src: BinaryIO, size: int, *, compress: bool) -> tuple[int, str]:
        """Write the member ``name`` from ``src`` (``size`` bytes, read to its end);
        returns ``(size, "sha256:...")`` of the bytes read. Raises ValueError for a
        name given twice or data whose size is not ``size``."""
        raw_name = name.encode("utf-8")
        if raw_name in self._names:
            raise ValueError(f"{name}: two ZIP members of one name")
        self._names.add(raw_name)
        flags = _UTF8_FLAG if not name.isascii() else 0
        method = 8 if compress else 0
        # A deflated member can come out a little larger than its input (5 bytes a
        # 16 KiB block at worst); decide on that bound before the header is written.
        bound = size + (size >> 12) + 64 if compress else size
        m = _Member(raw_name, flags, method, 0, size, size, self._pos)
        zip64 = needs_zip64(bound)
        start = self._pos
        self._write(self._local_header(m, zip64))
        crc = 0
        digest = hashlib.sha256()
        read = 0
        written = 0
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15) if compress else None
        while chunk := src.read(_CHUNK):
            read += len(chunk)
            crc = zlib.crc32(chunk, crc)
            digest.update(chunk)
            out = deflate.compress(chunk) if deflate is not None else chunk
            self._write(out)
            written += len(out)
        if deflate is not None:
            tail = deflate.flush()
            self._write(tail)
            written += len(tail)
        if read != size:
            raise ValueError(f"{name}: {read} bytes read, {size} expected (changed while read?)")
        m.crc, m.compressed = crc, written
        end = self._pos
        self._out.seek(start)
        self._out.write(self._local_header(m, zip64))
        self._out.seek(end)
        self._members.append(m)
        return size, "sha256:" + digest.hexdigest()

    def add_bytes(self, name: str, data: bytes, *, compress: bool = True) -> tuple[int, str]:
        """:meth:`add` for bytes in memory."""
        return self.add(name, io.BytesIO(data), len(data), compress=compress)

    def close(self) -> None:
        """Write the central directory and its end records (zip64 ones only when the
        member count, the directory's size or its offset needs them)."""
        cd_start = self._pos
        for m in self._members:
            fields: list[int] = []
            size, compressed, offset = m.size, m.compressed, m.offset
            if size >= ZIP32_LIMIT:
                fields.append(size)
                size = _MARKER
            if compressed >= ZIP32_LIMIT:
                fields.append(compressed)
                compressed = _MARKER
            if offset >= ZIP32_LIMIT:
                fields.append(offset)
                offset = _MARKER
            extra = (
                struct.pack(f"<HH{len(fields)}Q", 1, 8 * len(fields), *fields) if fields else b""
            )
            self._write(
                struct.pack(
                    "<IHHHHHHIIIHHHHHII",
                    0x02014B50,
                    _MADE_BY_UNIX,
                    _VERSION_ZIP64 if fields else _VERSION_20,
                    m.flags,
                    m.method,
                    self._clock,
                    self._date,
                    m.crc,
                    compressed,
                    size,
                    len(m.name),
                    len(extra),
                    0,
                    0,
                    0,
                    _FILE_MODE,
                    offset,
                )
                + m.name
                + extra
            )
        cd_size = self._pos - cd_start
        count = len(self._members)
        if count >= _COUNT_LIMIT or needs_zip64(cd_size, cd_start):
            end64 = self._pos
            self._write(
                struct.pack(
                    "<IQHHIIQQQQ",
                    0x06064B50,
                    44,
                    _MADE_BY_UNIX,
                    _VERSION_ZIP64,
                    0,
                    0,
                    count,
                    count,
                    cd_size,
                    cd_start,
                )
            )
            self._write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
            count = min(count, _COUNT_LIMIT)
            cd_size = _MARKER if cd_size >= ZIP32_LIMIT else cd_size
            cd_start = _MARKER if cd_start >= ZIP32_LIMIT else cd_start
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, count, count, cd_size, cd_start, 0))
