"""Compressed input decoded chunk by chunk, with a cut or corrupt stream noticed.

:func:`crawlkit.streams.open_input` wraps a zstd or gzip input in one of these readers
(under an ``io.BufferedReader``): each hands out everything it decoded before any
damage, then raises :class:`~crawlkit.errors.TruncatedInput` or
:class:`~crawlkit.errors.InputError` once, so a stage keeps the records before the
damage and reports it.
"""

from __future__ import annotations

import io
from typing import Any, BinaryIO

import zstandard

from crawlkit import deflate
from crawlkit.errors import InputError, TruncatedInput

__all__ = ["READ_CHUNK", "ZSTD_MAGIC", "DecodingReader", "GzipReader", "ZstdReader", "starts_zstd"]

READ_CHUNK = 1 << 16  # bytes of input decoded at a time
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def starts_zstd(magic: bytes) -> bool:
    """Whether the first four bytes of a stream begin a zstd frame or a skippable frame
    (magic 0x184D2A50 to 0x184D2A5F, little-endian), which ``pzstd`` writes first: read
    as plain text, every record of such a file was lost."""
    if magic.startswith(ZSTD_MAGIC):
        return True
    return len(magic) >= 4 and magic[1:4] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50


class DecodingReader(io.RawIOBase):
    """A raw stream that decodes ``raw`` chunk by chunk and hands out everything it
    decoded before any damage, then raises the damage (``self._error``) once.

    Subclasses fill ``self._pending`` in :meth:`_fill` from one chunk of input, and
    set ``self._done`` (and ``self._error`` when the input was cut or corrupt).
    """

    def __init__(self, raw: BinaryIO, source: str):
        self._raw = raw
        self._source = source
        self._pending = b""  # decoded, handed out up to self._taken
        self._taken = 0
        self._done = False
        self._error: InputError | None = None  # raised once everything before it is out

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while self._taken == len(self._pending) and not self._done:
            self._pending, self._taken = b"", 0
            self._fill()
        if self._taken == len(self._pending) and self._error is not None:
            raise self._error
        # Handed out from an offset: slicing off what was read copied the rest of a
        # decoded chunk at every read (a 64 KiB read of 640 KiB decoded copied ~3 MiB).
        n = min(len(view), len(self._pending) - self._taken)
        view[:n] = memoryview(self._pending)[self._taken : self._taken + n]
        self._taken += n
        return n

    def _fill(self) -> None:
        raise NotImplementedError


class ZstdReader(DecodingReader):
    """Decompresses a stream of one or more zstd frames, and notices truncation.

    ``zstandard.stream_reader`` returns a clean EOF when the input stops mid-frame; a
    crawler must not mistake a half-written file for a complete one, so this reader
    raises :class:`TruncatedInput` instead.
    """

    def __init__(self, raw: BinaryIO, source: str):
        super().__init__(raw, source)
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._in_frame = False

    def _fill(self) -> None:
        chunk = self._raw.read(READ_CHUNK)
        if not chunk:
            self._done = True
            if self._in_frame:
                self._error = TruncatedInput("zstd stream ends inside a frame", source=self._source)
            return
        out = []
        while chunk:
            try:
                out.append(self._obj.decompress(chunk))
            except zstandard.ZstdError as exc:
                # The frames decoded before the damage in this chunk are handed out first.
                self._done = True
                self._error = InputError(f"corrupt zstd data ({exc})", source=self._source)
                break
            self._in_frame = not self._obj.eof
            if self._obj.eof:
                chunk = self._obj.unused_data
                self._obj = self._dctx.decompressobj()
            else:
                chunk = b""
        self._pending = b"".join(out)


class GzipReader(DecodingReader):
    """gzip (also multi-member) decoded incrementally, with truncation noticed.

    ``gzip.GzipFile`` raises on a cut stream and drops what it decoded in that call,
    up to the whole buffer a reader asked for; decoding chunk by chunk with zlib hands
    out everything before the damage first, then raises :class:`TruncatedInput`.
    Like ``gzip``, NUL padding after the last member is ignored.
    """

    _WBITS = 16 + deflate.MAX_WBITS  # a gzip header and trailer (CRC, length) are expected

    def __init__(self, raw: BinaryIO, source: str):
        super().__init__(raw, source)
        self._obj = deflate.decompressobj(self._WBITS)
        self._in_member = False

    def _fill(self) -> None:
        chunk = self._raw.read(READ_CHUNK)
        if not chunk:
            self._done = True
            if self._in_member:
                self._error = TruncatedInput("gzip stream ends early", source=self._source)
            return
        out = []
        while chunk:
            if not self._in_member:
                chunk = chunk.lstrip(b"\x00")  # padding between or after members
                if not chunk:
                    break
            try:
                out.append(self._obj.decompress(chunk))
            except deflate.Error as exc:
                self._done = True
                self._error = InputError(f"corrupt gzip data ({exc})", source=self._source)
                break
            self._in_member = not self._obj.eof
            if self._obj.eof:
                chunk = self._obj.unused_data
                self._obj = deflate.decompressobj(self._WBITS)
            else:
                chunk = b""
        self._pending = b"".join(out)
