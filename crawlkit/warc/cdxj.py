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
``metadata`` records, except ``application/warc-fields`` resources and metadata, and
(unlike cdxj-indexer) revisits of the server-not-modified profile: a 304 to a
conditional GET, which pywb replays as an empty 304 whatever record it refers to, so
that a replay of the page at a later time shows the capture the 304 confirmed.
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

import contextlib
import datetime
import hashlib
import io
import itertools
import json
import os
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from warcio.recordloader import ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeadersParser
from warcio.timeutils import iso_date_to_timestamp

from crawlkit.errors import InputError
from crawlkit.streams import display_name
from crawlkit.warc.extsort import LineSorter
from crawlkit.warc.records import WarcRecord, iter_records
from crawlkit.warc.surt import surt_key

__all__ = [
    "INDEXED_TYPES",
    "NOT_MODIFIED_PROFILE",
    "ZIPNUM_LINES",
    "capture_line",
    "index_lines",
    "index_warc",
    "sorted_index",
    "write_zipnum",
]

INDEXED_TYPES = frozenset({"response", "revisit", "resource", "metadata"})
_MIME_END = re.compile(r"[;\s]")


_W3CDTF = re.compile(r"\d{4}(-\d{2}(-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})?)?)?)?")
_PAD_14 = "10000101000000"  # a date given to the year, month or day: its first second


def _timestamp(date: str, number: int, source: str) -> str:
    """The 14-digit timestamp of a WARC-Date, as warcio (so cdxj-indexer) makes it; a
    date of lower precision (W3C-DTF allows "2026", "2026-12", ...) from its first
    second."""
    if not date:
        raise InputError(f"record {number}: no WARC-Date", source=source)
    try:
        return str(iso_date_to_timestamp(date))
    except (TypeError, ValueError, OverflowError):
        pass
    if _W3CDTF.fullmatch(date):
        digits = re.sub(r"\D", "", date.split(".")[0].partition("Z")[0])[:14]
        if len(digits) in (4, 6, 8, 12):
            return digits + _PAD_14[len(digits) :]
    shown = date if len(date) <= 40 else date[:40] + "..."
    raise InputError(f"record {number}: WARC-Date {shown!r} is not a date", source=source)


#: The end of a server-not-modified revisit's WARC-Profile (WARC 1.0 and 1.1).
NOT_MODIFIED_PROFILE = "/revisit/server-not-modified"


def _line(record: WarcRecord, name: str, source: str) -> str | None:
    """The index line of one record, or None for a record that is not indexed (as
    cdxj-indexer's defaults: response, revisit, resource and metadata records, but
    not application/warc-fields ones)."""
    rec_type = record.record_type
    if rec_type not in INDEXED_TYPES:
        return None
    wh = record.headers
    if rec_type in ("resource", "metadata") and wh.get("content-type") == "application/warc-fields":
        return None
    if rec_type == "revisit" and wh.get("warc-profile", "").endswith(NOT_MODIFIED_PROFILE):
        return None
    url = wh.get("warc-target-uri", "")
    if not url and rec_type != "metadata":
        raise InputError(
            f"record {record.number}: a {rec_type} with no WARC-Target-URI", source=source
        )
    date = _timestamp(wh.get("warc-date", ""), record.number, source)
    headers = None
    if record.http_head:
        with contextlib.suppress(EOFError, ValueError):
            headers = _HTTP_HEAD.parse(io.BytesIO(record.http_head))
    mime: str | None
    if rec_type == "revisit":
        mime = "warc/revisit"
    elif rec_type == "response":
        mime = _mime_type(headers.get_header("content-type") if headers else None)
    else:
        mime = _mime_type(wh.get("content-type"))
    return _format_line(
        url=url,
        date=date,
        mime=mime,
        status=headers.get_statuscode() if headers else None,
        digest=record.payload_digest,
        length=record.length,
        offset=record.offset,
        filename=name,
        timestamp=True,
    )


def _mime_type(content_type: str | None) -> str | None:
    """``text/html`` of ``text/html; charset=utf-8`` (None when empty)."""
    return _MIME_END.split(content_type, 1)[0].strip() if content_type else None


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
    timestamp: bool = False,
) -> str:
    """One index line: key, timestamp and the JSON block in cdxj-indexer's field order
    (a field without a value left out; no ``url`` for a record without one).
    ``timestamp`` says ``date`` is already the 14-digit timestamp."""
    # json.dumps of these fields as a dict, written a field at a time: its ", " and
    # ": ", ASCII escapes, the names' quoting done once here
    block = [f'"url": {_json(url)}'] if url else []
    if mime:
        block.append(f'"mime": {_json(mime)}')
    if status is not None:
        block.append(f'"status": {_json(status)}')
    block.append(f'"digest": {_json(digest)}')
    block.append(f'"length": {_json(str(length))}')
    block.append(f'"offset": {_json(str(offset))}')
    block.append(f'"filename": {_json(filename)}')
    stamp = date if timestamp else _iso_timestamp(date)
    return f"{surt_key(url)} {stamp} {{{', '.join(block)}}}"


_json_str = json.encoder.encode_basestring_ascii  # what json.dumps writes a str as


def _json(value: object) -> str:
    """``value`` as json.dumps writes it inside an object (a str by its C escaper)."""
    return _json_str(value) if type(value) is str else json.dumps(value)


_WARC_DATE = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]+)?Z"
)


def _iso_timestamp(date: str) -> str:
    """``iso_date_to_timestamp(date)``, read directly from a well-formed WARC-Date
    (``2026-12-02T15:00:00.123456Z``): warcio builds a datetime and formats it back,
    a quarter of an index line's cost. Any other date goes to warcio, which also
    raises for a date that is no date."""
    m = _WARC_DATE.fullmatch(date)
    if m is not None and m.group(1) >= "1000":  # strftime writes years < 1000 unpadded
        parts = m.groups()
        year, month, day, hour, minute, second = (int(x) for x in parts)
        with contextlib.suppress(ValueError):  # February 30th: warcio raises
            datetime.datetime(year, month, day, hour, minute, second)
            return "".join(parts)
    return iso_date_to_timestamp(date)


# The parser warcio's record loader reads a response's HTTP head with (ArchiveIterator's
# default: the status line is not verified), so a line made here equals index_warc's.
_HTTP_HEAD = StatusAndHeadersParser(ArcWarcRecordLoader.HTTP_TYPES, False)


def _plain_head(head: bytes) -> tuple[str | None, str | None] | None:
    """``(status, content type)`` of an HTTP head as :data:`_HTTP_HEAD` reads them, for
    the common head (ASCII, no continuation lines); None: ask warcio's parser.

    The WARC thread writes an index line per capture, and warcio's line-by-line parse
    of the head was a tenth of each capture's write (``bench/bench_warc_write.py``).
    Each step follows the parser: lines end at "\\n" and are right-stripped, the head
    ends at the first empty line, a line without ":" is no header, the first
    content-type wins, and a parse with neither a status nor a header is no parse.
    """
    if not head:
        return None, None
    if not head.isascii():
        return None
    lines = head.decode("ascii").split("\n")
    first = lines[0].rstrip()
    parts = first.split(" ", 1)
    statusline = parts[1].strip() if len(parts) > 1 else ""
    content_type = None
    headers = False
    for raw in itertools.islice(lines, 1, None) if first else ():
        line = raw.rstrip()
        if not line:
            break
        if line[0] in " \t":  # a continuation line: warcio joins it to the one before
            return None
        name, colon, value = line.partition(":")
        if colon:
            headers = True
            if content_type is None and name.rstrip(" \t").lower() == "content-type":
                content_type = value.lstrip()
    if not (statusline or headers):  # warcio's parse is then false: no status either
        return None, None
    return statusline.split(" ", 1)[0], content_type


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
    plain = _plain_head(http_head)
    if plain is not None:
        status, content_type = plain
    else:
        headers = None
        with contextlib.suppress(EOFError):  # an empty head: no headers, no status
            headers = _HTTP_HEAD.parse(io.BytesIO(http_head)) if http_head else None
        content_type = headers.get_header("content-type") if headers else None
        status = headers.get_statuscode() if headers else None
    return _format_line(
        url=url,
        date=date,
        mime="warc/revisit" if revisit else _mime_type(content_type),
        status=status,
        digest=digest,
        length=length,
        offset=offset,
        filename=filename,
    )


def index_warc(path: str | os.PathLike[str], *, filename: str | None = None) -> Iterator[str]:
    """The index lines of one WARC file, in file order (unsorted), without newlines.

    ``filename`` is what the lines name the file (its base name by default). Read
    with :func:`crawlkit.warc.records.iter_records` (the reader and limits of
    ``extract`` and ``wacz``). Raises :class:`InputError` for a file that is not a
    WARC, ends inside a record, or has a record that cannot be indexed (no
    WARC-Date, a WARC-Date that is not a date, a response, revisit or resource with
    no WARC-Target-URI), naming the file and the record.
    """
    name = filename if filename is not None else Path(path).name
    source = display_name(path)
    for record in iter_records(path):
        line = _line(record, name, source)
        if line is not None:
            yield line


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
    lines: Iterable[str],
    data: BinaryIO,
    *,
    data_name: str = "index.cdx.gz",
    block_lines: int = ZIPNUM_LINES,
) -> list[str]:
    """Write sorted index ``lines`` to ``data`` as a ZipNum index, as cdxj-indexer's
    ``CompressedWriter`` (and so py-wacz) writes it: blocks of ``block_lines`` lines,
    each its own gzip member; returns the lines of the secondary index (``index.idx``,
    with newlines): a ``!meta`` header naming ``data_name``, then per
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
        if len(block) == block_lines:
            flush()
    if block:
        flush()
    return idx
