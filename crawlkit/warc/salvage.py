"""Salvage a WARC file cut off by a crash: keep its leading run of whole records.

The one salvage of the project: the fetch stage's writer finishes ``.open`` files
left by a dead writer with it (:func:`crawlkit.warc.write.salvage_open_files`), and so
does ``crawlkit crawl`` when it recovers a killed run.

:func:`whole_records_length` reads the file with the project's own WARC reading rules
(:mod:`crawlkit.warc.read`: a record is a ``WARC/`` version line, headers, a blank line,
``Content-Length`` bytes and the two CRLFs that end it) and returns how many leading
bytes hold only whole records. For a ``.warc.gz`` file the cut must also fall between
gzip members; a record may span several members (other writers), and a member that
is complete but holds half a record is not kept. Unlike warcio, which reads a record
whose block is cut short as if it were whole, a record missing even its last byte is
dropped, so after :func:`cut_to_whole_records` warcio, FastWARC, cdxj-indexer and
``crawlkit extract`` all read the file without error.

Memory: one gzip member's decoded bytes (one record for crawlkit's writer); an
uncompressed file is read header by header and its blocks are skipped with seeks.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from crawlkit import deflate
from crawlkit.warc.head import parse_warc_headers

__all__ = ["cut_to_whole_records", "whole_records_length"]

_GZIP_MAGIC = b"\x1f\x8b"
_MAX_HEADER = 256 * 1024
_READ = 1 << 20


def _record_size(head: bytes) -> int | None:
    """Size of the record starting ``head`` (closing CRLFs included), from its headers;
    None when ``head`` does not start with whole WARC headers."""
    if not head.startswith(b"WARC/"):
        return None
    head_end = head.find(b"\r\n\r\n")
    if head_end < 0:
        return None
    lines = head[:head_end].split(b"\r\n")[1:]
    headers = parse_warc_headers([line + b"\r\n" for line in lines])
    try:
        length = int(headers.get("content-length", ""))
    except ValueError:
        return None
    return None if length < 0 else head_end + 4 + length + 4


def _whole_prefix(buf: bytes) -> int:
    """Bytes at the start of ``buf`` that are whole records (CRLFs between allowed)."""
    pos = good = 0
    while True:
        while buf.startswith(b"\r\n", pos):
            pos += 2
        if pos >= len(buf):
            return len(buf)
        size = _record_size(buf[pos : pos + _MAX_HEADER])
        if size is None or pos + size > len(buf) or buf[pos + size - 4 : pos + size] != b"\r\n\r\n":
            return good
        pos = good = pos + size


def _gzip_members(path: Path) -> Iterator[tuple[int, bytes]]:
    """(file offset after the member, its decoded bytes) for each complete gzip member."""
    base = 0
    dec = deflate.decompressobj(31)
    out: list[bytes] = []
    with open(path, "rb") as fh:
        while data := fh.read(_READ):
            while data:
                try:
                    out.append(dec.decompress(data))
                except deflate.Error:
                    return
                if not dec.eof:
                    base += len(data)
                    break
                rest = dec.unused_data
                base += len(data) - len(rest)
                yield base, b"".join(out)
                out = []
                dec = deflate.decompressobj(31)
                data = rest


def _plain_length(path: Path) -> int:
    """Whole records of an uncompressed file: headers read, blocks seeked over."""
    size = path.stat().st_size
    pos = good = 0
    with open(path, "rb") as fh:
        while True:
            fh.seek(pos)
            head = fh.read(_MAX_HEADER)
            skip = len(head) - len(head.lstrip(b"\r\n"))
            if skip == len(head):
                return size if head else good  # only CRLFs after the last record
            record = _record_size(head[skip:])
            if record is None or pos + skip + record > size:
                return good
            fh.seek(pos + skip + record - 4)
            if fh.read(4) != b"\r\n\r\n":
                return good
            pos = good = pos + skip + record


def whole_records_length(path: str | os.PathLike[str]) -> int:
    """Leading bytes of ``path`` that hold only whole WARC records (0 if none)."""
    path = Path(path)
    with open(path, "rb") as fh:
        magic = fh.read(2)
    if magic != _GZIP_MAGIC:
        return _plain_length(path)
    good = 0
    pending = b""
    for end, data in _gzip_members(path):
        pending += data
        # A member may end inside a record (other writers): the cut can fall only
        # after a member whose end is also the end of a record.
        if _whole_prefix(pending) == len(pending):
            good, pending = end, b""
    return good


def cut_to_whole_records(path: str | os.PathLike[str]) -> int:
    """Truncate ``path`` after its last whole record (fsynced); returns the new length."""
    length = whole_records_length(path)
    with open(path, "r+b") as fh:
        if fh.seek(0, os.SEEK_END) != length:
            fh.truncate(length)
        fh.flush()
        os.fsync(fh.fileno())
    return length
