"""CDXJ indexes of WARC files, in the format pywb and cdxj-indexer write.

One job: one index line per capture, sorted, so replay tools (pywb, ReplayWeb.page, a
WACZ reader) find a URL's records by binary search::

    com,example)/about 20261130120000 {"url": "http://example.com/about", "mime":
    "text/html", "status": "200", "digest": "sha1:...", "length": "1523", "offset":
    "2210", "filename": "crawl.warc.gz"}

(one line). The key is :func:`crawlkit.warc.surt.surt_key` of ``WARC-Target-URI``; the
timestamp is ``WARC-Date`` as 14 digits; the JSON block has the fields, order and
spacing of cdxj-indexer's default output (``url``, ``mime``, ``status``, ``digest``,
``length``, ``offset``, ``filename``; a field without a value is left out), so the two
indexes of one WARC are the same bytes, which a test checks.

Indexed: ``response``, ``revisit`` (mime ``warc/revisit``), ``resource`` and
``metadata`` records, except ``application/warc-fields`` resources and metadata.
``offset`` and ``length`` are the record's place in the file as stored (the gzip
member, for ``.warc.gz``); ``filename`` is the file's base name. ``digest`` is
``WARC-Payload-Digest``, or a sha1 of the payload computed when the record has none.

:func:`capture_line` makes the same line from what a writer knows when it writes a
capture (``crawlkit.warc.write.WarcWriter`` with ``index=True`` keeps them beside the
file), so a crawl's collection index needs no second pass over its WARC files.

Buffers: :func:`index_lines` holds and sorts every line in memory (about 250 bytes a
capture); :func:`sorted_index` holds a bounded amount and sorts the rest on disk (an
external sort, :mod:`crawlkit.warc.extsort`), and :func:`write_zipnum` writes a large
index as a compressed ZipNum index (``index.cdx.gz`` + ``index.idx``). A WARC that is
cut or damaged raises :class:`~crawlkit.errors.InputError` naming the file; the lines
of the files before it are not lost (the caller decides).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed
from warcio.recordloader import ArcWarcRecord, ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeadersParser
from warcio.timeutils import iso_date_to_timestamp

from crawlkit.errors import InputError
from crawlkit.warc.extsort import LineSorter
from crawlkit.warc.surt import surt_key

__all__ = [
    "INDEXED_TYPES",
    "ZIPNUM_LINES",
    "capture_line",
    "index_lines",
    "index_warc",
    "sorted_index",
    "write_zipnum",
]

INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})
_MIME_END = re.compile(r"[;\s]")


def _mime(record: ArcWarcRecord) -> str | None:
    rec_type = record.rec_type
    if rec_type == "revisit":
        return "warc/revisit"
    if rec_type == "response":
        headers = record.http_headers
        value = headers.get_header("content-type") if headers else None
    else:
        value = record.rec_headers.get_header("content-type")
    return _mime_type(value)


def _mime_type(content_type: str | None) -> str | None:
    """``text/html`` of ``text/html; charset=utf-8`` (None when empty)."""
    return _MIME_END.split(content_type, 1)[0].strip() if content_type else None


def _digest(record: ArcWarcRecord) -> str:
    value = record.rec_headers.get_header("WARC-Payload-Digest")
    if value:
        return str(value)
    sha1 = hashlib.sha1()
    stream = record.raw_stream
    while chunk := stream.read(1 << 16):
        sha1.update(chunk)
    return "sha1:" + base64.b32encode(sha1.digest()).decode("ascii")


def _check_start(path: str | os.PathLike[str]) -> None:
    """Raise InputError unless the file starts like a WARC (or ARC) record; warcio
    would read other bytes as records with warnings."""
    with open(path, "rb") as f:
        head = f.read(2)
        f.seek(0)
        if head == b"\x1f\x8b":
            try:
                head = gzip.GzipFile(fileobj=f).read(16)
            except (OSError, EOFError) as exc:
                raise InputError(f"{path}: not a readable WARC file ({exc})") from exc
        else:
            head = f.read(16)
    if not head.startswith((b"WARC/", b"filedesc://")):
        raise InputError(f"{path}: not a WARC file (it does not start with a WARC record)")


def _line(record: ArcWarcRecord, it: ArchiveIterator, name: str) -> str | None:
    """The index line of one record, or None for a record that is not indexed."""
    rec_type = record.rec_type
    if rec_type not in INDEXED_TYPES:
        return None
    if (
        rec_type in ("resource", "metadata")
        and record.rec_headers.get_header("Content-Type") == "application/warc-fields"
    ):
        return None
    status = None
    if rec_type in ("response", "revisit") and record.http_headers:
        status = record.http_headers.get_statuscode()
    return _format_line(
        url=record.rec_headers.get_header("WARC-Target-URI") or "",
        date=record.rec_headers.get_header("WARC-Date") or "",
        mime=_mime(record),
        status=status,
        digest=_digest(record),
        length=it.get_record_length(),
        offset=it.get_record_offset(),
        filename=name,
    )


def _format_line(
    *,
    url: str,
    date: str,
    mime: str | None,
    status: str | None,
    digest: str,
    length: int,
    offset: int,
    filename: str,
) -> str:
    """One index line: key, timestamp and the JSON block in cdxj-indexer's field order
    (a field without a value left out)."""
    fields: dict[str, str] = {"url": url}
    if mime:
        fields["mime"] = mime
    if status is not None:
        fields["status"] = status
    fields["digest"] = digest
    fields["length"] = str(length)
    fields["offset"] = str(offset)
    fields["filename"] = filename
    return f"{surt_key(url)} {iso_date_to_timestamp(date)} {json.dumps(fields)}"


# The parser warcio's record loader reads a response's HTTP head with (ArchiveIterator's
# default: the status line is not verified), so a line made here equals index_warc's.
_HTTP_HEAD = StatusAndHeadersParser(ArcWarcRecordLoader.HTTP_TYPES, False)


def capture_line(
    *,
    url: str,
    date: str,
    http_head: bytes,
    revisit: bool,
    digest: str,
    offset: int,
    length: int,
    filename: str,
) -> str:
    """The index line of a ``response`` (or ``revisit``) record as it is written:
    ``url`` is its WARC-Target-URI, ``date`` its WARC-Date, ``http_head`` the HTTP status
    line and headers at the start of its block, ``digest`` its WARC-Payload-Digest,
    ``offset`` and ``length`` its place in the file (the gzip member). Equal to the line
    :func:`index_warc` reads back for it (a test checks)."""
    headers = None
    with contextlib.suppress(EOFError):  # an empty head: no headers, no status
        headers = _HTTP_HEAD.parse(io.BytesIO(http_head)) if http_head else None
    content_type = headers.get_header("content-type") if headers else None
    return _format_line(
        url=url,
        date=date,
        mime="warc/revisit" if revisit else _mime_type(content_type),
        status=headers.get_statuscode() if headers else None,
        digest=digest,
        length=length,
        offset=offset,
        filename=filename,
    )


def index_warc(path: str | os.PathLike[str], *, filename: str | None = None) -> Iterator[str]:
    """The index lines of one WARC file, in file order (unsorted), without newlines.

    ``filename`` is what the lines name the file (its base name by default).
    Raises :class:`InputError` for a file that is not a WARC or ends mid-record.
    """
    name = filename if filename is not None else Path(path).name
    try:
        _check_start(path)
        with open(path, "rb") as f:
            it = ArchiveIterator(f, arc2warc=True)
            end = 0
            for record in it:
                line = _line(record, it, name)
                end = it.get_record_offset() + it.get_record_length()
                if line is not None:
                    yield line
            # warcio ends a cut file quietly; a record that ends past the file, or bytes
            # after the last record, mean the file is not whole. (An uncompressed
            # record's length leaves out the blank lines that end it: 4 bytes.)
            if not 0 <= os.path.getsize(path) - end <= 4:
                raise InputError(f"{path}: ends in the middle of a record (at byte {end})")
    except (ArchiveLoadFailed, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise InputError(f"{path}: no such file") from exc
        raise InputError(f"{path}: not a readable WARC file ({exc})".strip()) from exc


def index_lines(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The sorted index lines of every file in ``paths`` (pywb's order: plain string
    order of whole lines, so a key's captures are in time order), in memory; see
    :func:`sorted_index` for a collection larger than memory."""
    lines: list[str] = []
    for path in paths:
        lines.extend(index_warc(path))
    lines.sort()
    return lines


def sorted_index(
    paths: Iterable[tuple[str | os.PathLike[str], str]],
    *,
    tmpdir: str | os.PathLike[str] | None = None,
    max_bytes: int = 0,
) -> LineSorter:
    """The index lines of ``(path, filename)`` pairs in a :class:`LineSorter` (iterate
    it for the lines in order; close it): memory holds about ``max_bytes`` of lines
    (default :data:`~crawlkit.warc.extsort.DEFAULT_MAX_BYTES`), the rest waits sorted
    in run files in ``tmpdir``. Raises as :func:`index_warc` does, leaving no run files.
    """
    sorter = LineSorter(tmpdir=tmpdir, max_bytes=max_bytes)
    try:
        for path, name in paths:
            for line in index_warc(path, filename=name):
                sorter.add(line)
    except BaseException:
        sorter.close()
        raise
    return sorter


ZIPNUM_LINES = 1024  # index lines a compressed block holds (py-wacz's default)


def write_zipnum(
    lines: Iterable[str], data: BinaryIO, *, data_name: str = "index.cdx.gz"
) -> list[str]:
    """Write sorted index ``lines`` to ``data`` as a ZipNum index, as cdxj-indexer's
    ``CompressedWriter`` (and so py-wacz) writes it: blocks of :data:`ZIPNUM_LINES`
    lines, each its own gzip member; returns the lines of the secondary index
    (``index.idx``, with newlines): a ``!meta`` header naming ``data_name``, then per
    block its first line's key and timestamp and ``{"offset", "length", "digest"}``
    (the sha256 of the member). Memory holds one block."""
    idx = ["!meta 0 " + json.dumps({"format": "cdxj-gzip-1.0", "filename": data_name}) + "\n"]
    offset = 0
    block: list[str] = []

    def flush() -> None:
        nonlocal offset
        comp = zlib.compressobj(wbits=16 + zlib.MAX_WBITS)
        member = comp.compress("".join(block).encode("utf-8")) + comp.flush()
        prefix = block[0].split("{", 1)[0].strip()
        digest = "sha256:" + hashlib.sha256(member).hexdigest()
        idx.append(
            f"{prefix} "
            + json.dumps({"offset": offset, "length": len(member), "digest": digest})
            + "\n"
        )
        data.write(member)
        offset += len(member)
        block.clear()

    for line in lines:
        block.append(line + "\n")
        if len(block) == ZIPNUM_LINES:
            flush()
    if block:
        flush()
    return idx
