"""A sitemap document's bytes as the readers take them: gzip undone, cut at the size
limit, and re-encoded to UTF-8 where Python, not expat, decodes (a declared legacy
encoding, UTF-16 text). Damage ends a document with :class:`SitemapError` after
what came before it."""

from __future__ import annotations

import codecs
import io
from collections.abc import Iterator
from typing import Any, BinaryIO

from crawlkit.decoders import GzipReader
from crawlkit.errors import InputError
from crawlkit.sitemap.model import CHUNK, SitemapError, SitemapStats

__all__ = ["UTF16_BOMS", "document_chunks", "transcode", "utf16_as_utf8", "utf16_is_xml"]

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")


def document_chunks(
    stream: BinaryIO, stats: SitemapStats, max_bytes: int, source: str
) -> Iterator[bytes]:
    """Uncompressed chunks, gzip undone, stopped at ``max_bytes`` (counted in
    ``stats.bytes``; ``stats.truncated`` says it was reached).

    Each read takes what one read of the source gives (``read1``): a buffered
    reader's ``read(n)`` drops what it gathered when the source then raises, and
    a gzip input cut short (decoded by :func:`crawlkit.streams.open_input`, or
    here when the bytes came from a fetch) raised after up to 64 KiB of entries,
    all of a small file's, where the records before the damage are kept.
    """
    read = getattr(stream, "read1", stream.read)
    try:
        chunk = read(CHUNK)
        if chunk.startswith(b"\x1f\x8b"):
            gunzip = GzipReader(_Prefixed(chunk, stream), "")  # type: ignore[arg-type]
            read = gunzip.read  # a raw stream: one read of the source a call
            chunk = read(CHUNK)
        while chunk:
            room = max_bytes - stats.bytes
            if len(chunk) > room:
                if room > 0:
                    stats.bytes += room
                    yield chunk[:room]
                stats.truncated = True
                return
            stats.bytes += len(chunk)
            yield chunk
            chunk = read(CHUNK)
    except InputError as exc:
        if exc.source:  # the input's own reader: it says where already
            raise
        raise SitemapError(f"corrupt or truncated gzip data ({exc})", source=source) from exc


def transcode(chunks: Iterator[bytes], decoder: codecs.IncrementalDecoder) -> Iterator[bytes]:
    """``chunks`` decoded by ``decoder`` (a character may span two) and re-encoded as UTF-8."""
    for chunk in chunks:
        yield decoder.decode(chunk).encode("utf-8")
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail.encode("utf-8")


def utf16_is_xml(body: bytes) -> bool:
    """Whether ``body`` (UTF-16, BOM first) is XML: its first character after white
    space is ``<``; else it is a text sitemap."""
    return body[:4096].decode("utf-16", errors="replace").lstrip().startswith("<")


def utf16_as_utf8(
    body: bytes, chunks: Iterator[bytes], stats: SitemapStats, source: str
) -> Iterator[bytes]:
    """``body`` (BOM first) and the ``chunks`` after it, UTF-16 decoded to UTF-8 as
    they come. Bytes that are no UTF-16 end the document with a SitemapError, after
    the text before them (replacement characters would invent URLs)."""
    codec = "utf-16-le" if body.startswith(b"\xff\xfe") else "utf-16-be"
    decoder = codecs.getincrementaldecoder(codec)()
    try:
        yield decoder.decode(body[2:]).encode("utf-8")
        for chunk in chunks:
            yield decoder.decode(chunk).encode("utf-8")
        if not stats.truncated:  # (a cut at max_bytes may split a character)
            decoder.decode(b"", final=True)  # an odd byte or a lone surrogate at the end
    except UnicodeDecodeError as exc:
        yield exc.object[: exc.start].decode(codec).encode("utf-8")  # whole up to there
        raise SitemapError(
            f"invalid UTF-16 text ({exc.reason}); the file has a UTF-16 byte order mark",
            source=source,
        ) from exc


class _Prefixed(io.RawIOBase):
    """A stream with some already-read bytes put back in front."""

    def __init__(self, head: bytes, rest: BinaryIO):
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)
