"""Every record of a WARC file with its place in the file, for ``crawlkit index``.

One job: :func:`iter_records` walks all records of a WARC file (any type) and gives
each one's WARC headers, HTTP head, payload digest, and offset and length in the file
as stored, as warcio and cdxj-indexer count them. It reads with the stream of
:mod:`crawlkit.warc.read` (which undoes gzip and zstd) and the record-head parser of
:mod:`crawlkit.warc.head` (with its limits), so ``extract``, ``index`` and ``wacz``
accept and refuse the same files with the same messages.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass

from crawlkit.errors import InputError, TruncatedInput
from crawlkit.streams import display_name
from crawlkit.warc.head import MAX_HEADER_BYTES, read_head
from crawlkit.warc.payload import split_http_head
from crawlkit.warc.read import WarcStream, _bare, _skip, open_warc

__all__ = ["WarcRecord", "iter_records"]


@dataclass(slots=True)
class WarcRecord:
    """The head of any record, and its place in the file, for an index.

    ``headers`` are the WARC headers (names lowercased). ``offset`` and ``length``
    are the record's place in the file as stored (for a ``.warc.gz``, its gzip
    member; for a plain WARC, from ``WARC/`` to the end of its block, the blank
    lines after it left out), as warcio and cdxj-indexer count them. ``http_head``
    is the HTTP status line and headers at the start of the block of a ``response``
    or ``revisit`` record of an ``http:``/``https:`` URI (None for others).
    ``payload_digest`` is ``WARC-Payload-Digest``, or when absent a ``sha1:`` of the
    payload (the block after ``http_head``) computed while reading.
    """

    number: int
    record_type: str
    headers: dict[str, str]
    offset: int
    length: int
    http_head: bytes | None
    payload_digest: str


_HTTP_SCHEMES = ("http:", "https:")
_HTTP_RECORDS = ("response", "revisit")


def iter_records(path: str | os.PathLike[str]) -> Iterator[WarcRecord]:
    """Every record of one WARC file, in file order, with its place in the file.

    The same parser and limits as :func:`iter_responses`. Raises
    :class:`TruncatedInput` when the file ends inside a record (its head or its
    block, whatever its Content-Length says) or a gzip member, and
    :class:`InputError` for bytes that are not a WARC record or a head over
    :data:`MAX_HEADER_BYTES`, after yielding every complete record before it.
    """
    source = display_name(path)
    with contextlib.closing(open_warc(path)) as stream:
        number = 0
        while True:
            try:
                head = read_head(stream, number + 1, source)
                if head is None:
                    break
                start, wh, length = head
                record = _read_record(stream, number + 1, start, wh, length, source)
            except InputError as exc:
                why = f" ({stream.damage})" if stream.damage else ""
                raise type(exc)(
                    f"{_bare(exc, source)}{why}; {number} whole records before it",
                    source=source,
                ) from None
            number += 1
            yield record
        if stream.damage:
            raise InputError(f"{stream.damage} after record {number}", source=source)


def _read_record(
    stream: WarcStream, number: int, start: int, wh: dict[str, str], length: int, source: str
) -> WarcRecord:
    rec_type = wh.get("warc-type", "").lower()
    target = wh.get("warc-target-uri", "")
    digest = wh.get("warc-payload-digest") or None
    http_head: bytes | None = None
    got = 0
    hasher = None
    if rec_type in _HTTP_RECORDS and target.startswith(_HTTP_SCHEMES) and length > 0:
        first = stream.read(min(length, 65536))
        split = split_http_head(first)
        if split is None and length > len(first) == 65536:
            first += stream.read(min(length - len(first), MAX_HEADER_BYTES))
            split = split_http_head(first)
        got = len(first)
        head, body_start = split if split is not None else (first, len(first))
        http_head = head
        if digest is None:
            hasher = hashlib.sha1(first[body_start:])
    elif digest is None:
        hasher = hashlib.sha1()
    rest = length - got
    short = http_head is not None and got < min(length, 65536)
    if short or _skip(stream, rest, hasher) < rest:
        raise TruncatedInput(
            f"WARC ends inside record {number} (its Content-Length is {length})",
            source=source,
        )
    if hasher is not None:
        digest = "sha1:" + base64.b32encode(hasher.digest()).decode("ascii")
    offset, raw_length = stream.raw_span(start, stream.tell())
    return WarcRecord(
        number=number,
        record_type=rec_type,
        headers=wh,
        offset=offset,
        length=raw_length,
        http_head=http_head,
        payload_digest=digest or "",
    )
