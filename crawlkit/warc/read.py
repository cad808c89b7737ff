"""Reading HTTP responses out of WARC files, from any writer.

One job: turn a WARC file into a stream of :class:`WarcResponse` objects. It reads
WARC/1.0 and WARC/1.1 (and the older 0.17/0.18 version lines), uncompressed, gzipped
per record (the usual ``.warc.gz``), gzipped as one stream, or zstd-compressed as a
whole, as written by crawlkit, wget, Heritrix, warcio or Common Crawl.

Contracts:

* ``response`` and ``revisit`` records with an HTTP message, and ``resource`` records
  of an ``http:``/``https:`` URI (a document as archived, as warcit writes them:
  yielded as the response a replay serves, status 200, the record's Content-Type,
  its block as the body), are yielded in file order; ``warcinfo``, ``request``,
  ``metadata``, other ``resource`` records and non-HTTP responses (``dns:``) are
  passed over and counted in :attr:`WarcStats.other`.
* The body is read only when ``want_body(status, content_type)`` says so (others are
  skipped without being held in memory). It is the entity body with the transfer
  coding (chunked) and the content coding (gzip, deflate, zstd; br when the brotli
  module is installed) undone, capped at ``max_body`` decoded bytes
  (:attr:`WarcResponse.truncated` says so).
* A WARC that ends in the middle of a record, or a damaged gzip member, raises
  :class:`~crawlkit.errors.TruncatedInput` (or :class:`~crawlkit.errors.InputError`
  for data that is not a WARC) after every complete record before it was yielded,
  so the caller keeps them.
* Line ends are read as warcio reads them: CRLF as the WARC grammar has it, a bare
  LF, or CRs doubled by a CRLF conversion run twice (``\\r\\r\\n``), in the WARC
  head, the blank lines between records and the HTTP head. Only CR and LF bytes are
  passed over so: anything else after a record's Content-Length is an error naming it.
* ``payload_digest`` is the record's ``WARC-Payload-Digest`` as written; when absent,
  one is computed over the payload as stored (``sha1:`` + base32, as WARC writers do).

* :func:`crawlkit.warc.records.iter_records` gives every record's head and its place
  in the file as stored (for ``crawlkit index``), with the same parser and limits
  (:mod:`crawlkit.warc.head`: a record's WARC head, its version line, each header line
  and all of them, is at most :data:`MAX_HEADER_BYTES`, so a header line of 200 MB is
  refused after reading 256 KiB of it).

The reader parses the format itself instead of going through warcio: warcio accepts a
truncated last record silently, and a plain reader over the buffered, decompressed
stream from :func:`crawlkit.streams.open_input` is also faster. :func:`open_warc` is the one
place to swap in another reader.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import hashlib
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import zstandard

from crawlkit import deflate
from crawlkit.decoders import starts_zstd
from crawlkit.errors import InputError, TruncatedInput
from crawlkit.streams import display_name, is_stdio
from crawlkit.warc.head import MAX_HEADER_BYTES, read_head
from crawlkit.warc.payload import MAX_BODY, decode_body, parse_http_head, split_http_head

__all__ = [
    "MAX_HEADER_BYTES",
    "WarcResponse",
    "WarcStats",
    "current_name",
    "iter_responses",
    "iter_responses_at",
    "open_warc",
]

_SKIP_CHUNK = 1 << 20


@dataclass(slots=True)
class WarcResponse:
    """One HTTP response (or revisit) record.

    ``headers`` holds the HTTP response headers with lowercased names (the last value
    of a repeated header wins, but X-Robots-Tag keeps every line, joined by newlines).
    ``body`` is None when it was not asked for.
    """

    record_type: str  # "response", "revisit" or "resource"
    target_uri: str
    date: str | None
    record_id: str | None
    payload_digest: str | None
    status: int | None
    headers: dict[str, str]
    depth: int
    body: bytes | None
    truncated: str | None  # WARC-Truncated, or "length" when max_body cut the body
    record_number: int

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")


@dataclass(slots=True)
class WarcStats:
    """What a reader passed over, by kind."""

    records: int = 0
    other: int = 0
    undecodable: int = 0
    errors: list[str] = field(default_factory=list)


_GZIP_MAGIC = b"\x1f\x8b"
_FILL = 1 << 20
_PIECE = 16384
_FILL_OUT = 4 << 20


class WarcStream:
    """The decompressed bytes of a WARC file, with ``read`` and ``readline``.

    gzip (one member per record, or one for the whole file) and zstd are undone here
    rather than by a buffered reader, so that when the file is cut off or damaged every
    byte decoded before the damage is still handed out; :attr:`damage` then says what
    went wrong, and reads after that point come back short.
    """

    def __init__(self, raw: BinaryIO, source: str):
        self._raw = raw
        self.source = source
        self._buf = b""
        self._pos = 0
        self._base = 0  # the decoded offset of _buf[0]
        self._raw_read = 0  # raw bytes read from the file so far
        # (decoded offset, raw offset) where each gzip member / zstd frame starts, from
        # the one holding the oldest record still asked about (see raw_span)
        self._members: collections.deque[tuple[int, int]] = collections.deque([(0, 0)])
        self._eof = False
        self._last_span_start = -1  # where raw_span's last record's member started
        self.damage: str | None = None
        magic = self._peek_raw()
        self._mode = "plain"
        if magic.startswith(_GZIP_MAGIC):
            self._mode = "gzip"
            self._dec: object = deflate.decompressobj(31)
            self._in_member = False
        elif starts_zstd(magic):
            self._mode = "zstd"
            self._zctx = zstandard.ZstdDecompressor()
            self._dec = self._zctx.decompressobj()
            self._in_member = False
        self._raw_pending = magic

    def _peek_raw(self) -> bytes:
        data = self._raw.read(4) or b""
        self._raw_read += len(data)
        return data

    def tell(self) -> int:
        """The decoded offset of the next byte :meth:`read` gives."""
        return self._base + self._pos

    def raw_span(self, start: int, end: int) -> tuple[int, int]:
        """``(offset, length)`` in the file as stored of the decoded bytes from
        ``start`` to ``end`` (as :meth:`tell` counts): for a compressed file, from the
        start of the member that holds ``start`` to the start of the first member at
        or after ``end`` (or the end of the file), as warcio and cdxj-indexer count a
        record of a ``.warc.gz``; for a plain file, the bytes themselves. Calls must
        come in file order (members before ``start`` are forgotten). Raises
        :class:`InputError` when the bytes share a member with the last call's or
        span more than one member (neither has an offset a replay can read)."""
        if self._mode == "plain":
            return start, end - start
        members = self._members
        while len(members) > 1 and members[1][0] <= start:
            members.popleft()
        raw_start = members[0][1]
        if raw_start == self._last_span_start:
            # A WARC gzipped whole (or a frame of several records): every record would
            # point at the file's start, and a replay of any would read the first.
            kind = "gzip member" if self._mode == "gzip" else "zstd frame"
            raise InputError(
                f"a record shares its {kind} with the one before it: the file is not "
                f"compressed record by record, so no record has an offset of its own "
                f"(recompress it, e.g. warcio recompress)",
                source=self.source,
            )
        self._last_span_start = raw_start
        while not self._eof and members[-1][0] < end:
            self._fill()
        raw_end = next((raw for dec, raw in members if dec >= end), self._raw_read)
        # A record cut into several members (its head in one, its block in the next):
        # a replay reads one member at the offset, so it would serve an empty page.
        inside = sum(1 for dec, _ in members if start < dec < end)
        if inside:
            kind = "gzip members" if self._mode == "gzip" else "zstd frames"
            raise InputError(
                f"a record spans {inside + 1} {kind}: a replay would read only the "
                f"first (recompress it, e.g. warcio recompress)",
                source=self.source,
            )
        return raw_start, raw_end - raw_start

    def close(self) -> None:
        self._raw.close()

    def _fill(self) -> None:
        """Decode more input into the buffer; sets ``_eof`` (and ``damage``) at the end.

        One call decodes at most about ``_FILL_OUT`` bytes of gzip output, so a record
        of zeros that expands a thousandfold is never held whole; input not yet
        decoded waits in ``_raw_pending``.
        """
        pending = self._raw_pending
        if len(pending) >= _FILL:
            chunk = pending
        else:
            more = self._raw.read(_FILL) or b""
            self._raw_read += len(more)
            chunk = pending + more
        chunk_at = self._raw_read - len(chunk)  # the raw offset of chunk[0]
        self._raw_pending = b""
        if self._buf and self._pos:
            self._base += self._pos
            self._buf = self._buf[self._pos :]
            self._pos = 0
        if not chunk:
            self._eof = True
            if self._mode != "plain" and self._in_member:
                self.damage = f"{self._mode} data ends in the middle of a member"
            return
        if self._mode == "plain":
            self._buf += chunk
            return
        out: list[bytes] = []
        produced = 0
        view = memoryview(chunk)
        pos = 0
        gz = self._mode == "gzip"
        try:
            # Feed the decompressor small pieces: at the end of a member it copies the
            # rest of its input into ``unused_data``, which is cheap for a small piece
            # and quadratic for a large one (records are often only a few KB).
            while pos < len(view) and produced < _FILL_OUT:
                piece = view[pos : pos + _PIECE]
                dec: Any = self._dec
                data = dec.decompress(piece, _FILL_OUT - produced) if gz else dec.decompress(piece)
                out.append(data)
                produced += len(data)
                if dec.eof:
                    pos += len(piece) - len(dec.unused_data)
                    self._dec = self._new_decompressor()
                    self._in_member = False
                    decoded_at = self._base + len(self._buf) + produced
                    self._members.append((decoded_at, chunk_at + pos))
                else:
                    pos += len(piece) - (len(dec.unconsumed_tail) if gz else 0)
                    self._in_member = True
        except Exception as exc:  # deflate.Error, zstandard.ZstdError
            self.damage = f"corrupt {self._mode} data ({exc})"
            self._eof = True
            pos = len(view)
        self._raw_pending = bytes(view[pos:])
        self._buf += b"".join(out)

    def _new_decompressor(self) -> object:
        if self._mode == "gzip":
            return deflate.decompressobj(31)
        return self._zctx.decompressobj()

    def read(self, n: int) -> bytes:
        while len(self._buf) - self._pos < n and not self._eof:
            self._fill()
        data = self._buf[self._pos : self._pos + n]
        self._pos += len(data)
        return data

    def plain_head(self, limit: int) -> tuple[int, bytes] | None:
        """The next record's head when it is in the buffer as plain CRLF lines:
        ``(decoded offset of its version line, its version and header lines up to the
        blank line, each with its CRLF)``, the stream moved past the blank line; the
        CRLF blank lines before it are skipped. None when the line-by-line reader must
        decide, the stream unmoved: a head not yet buffered, longer than ``limit``
        bytes, not starting with ``WARC/``, or with a bare CR or LF in it."""
        buf = self._buf
        start = self._pos
        while buf.startswith(b"\r\n", start):
            start += 2
        if not buf.startswith(b"WARC/", start):
            return None
        end = buf.find(b"\r\n\r\n", start, start + limit)
        if end < 0:
            return None
        head = buf[start : end + 2]
        lines = head.count(b"\r\n")
        if head.count(b"\n") != lines or head.count(b"\r") != lines:
            return None
        self._pos = end + 4
        return self._base + start, head

    def readline(self, limit: int) -> bytes:
        scan = self._pos
        while True:
            end = min(len(self._buf), self._pos + limit)
            nl = self._buf.find(b"\n", scan, end)
            if nl >= 0:
                line = self._buf[self._pos : nl + 1]
                self._pos = nl + 1
                return line
            if end - self._pos >= limit or self._eof:
                line = self._buf[self._pos : end]
                self._pos = end
                return line
            offset = end - self._pos  # _fill moves the buffer; keep the scan relative
            self._fill()
            scan = self._pos + offset


def open_warc(path: str | os.PathLike[str] | None) -> WarcStream:
    """The decompressed byte stream of a WARC file (``-`` or None: stdin)."""
    source = display_name(path)
    if path is None or is_stdio(path):
        return WarcStream(sys.stdin.buffer, source)
    try:
        raw: BinaryIO = open(path, "rb")  # noqa: SIM115 - owned by the WarcStream
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), source=source) from exc
    return WarcStream(raw, source)


def _read_exact(stream: WarcStream, n: int) -> bytes:
    return stream.read(n)


def _skip(stream: WarcStream, n: int, hasher: Any = None) -> int:
    """Read past ``n`` bytes (feeding ``hasher`` if given); returns how many were there."""
    done = 0
    while done < n:
        chunk = stream.read(min(_SKIP_CHUNK, n - done))
        if not chunk:
            break
        if hasher is not None:
            hasher.update(chunk)
        done += len(chunk)
    return done


def iter_responses(
    path: str | os.PathLike[str] | None,
    *,
    want_body: Callable[[int | None, str | None], bool] | None = None,
    max_body: int = MAX_BODY,
    stats: WarcStats | None = None,
) -> Iterator[WarcResponse]:
    """Yield the HTTP response and revisit records of one WARC file, and its resource
    records of http(s) URIs (see the module docstring), in order.

    Raises :class:`TruncatedInput` / :class:`InputError` when the file is cut off or
    damaged, after yielding every complete record before the damage.
    """
    source = display_name(path)
    stats = stats if stats is not None else WarcStats()
    with contextlib.closing(open_warc(path)) as stream:
        yield from _iter_stream(stream, source, want_body, max_body, stats)


def current_name(path: str) -> str:
    """Where the WARC file named ``path`` is now: a file being written is ``NAME.open``
    until its writer closes it and renames it ``NAME`` in the same directory, which a
    reader that was given the open name may find done (a cycle's records, read after
    the file rotated or the run ended)."""
    if path.endswith(".open") and not os.path.exists(path):
        return path[: -len(".open")]
    return path


def iter_responses_at(
    path: str | os.PathLike[str],
    ranges: Iterable[tuple[int, int]],
    *,
    want_body: Callable[[int | None, str | None], bool] | None = None,
    max_body: int = MAX_BODY,
    stats: WarcStats | None = None,
    on_damage: Callable[[InputError], None] | None = None,
) -> Iterator[WarcResponse]:
    """Like :func:`iter_responses`, over the records at ``(offset, length)`` ranges of
    ``path`` (as fetch records give them), read in the order given; the file may still
    be growing (a writer appends after them). A range that does not hold whole records
    (past the file's end, not a record's start) raises :class:`TruncatedInput` /
    :class:`InputError` after the records before it; with ``on_damage``, that is
    called instead and the next range is read (one bad fetch record lost every later
    page of its file).
    """
    source = display_name(path)
    stats = stats if stats is not None else WarcStats()
    try:
        raw = open(path, "rb")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), source=source) from exc
    with raw:
        for offset, length in ranges:
            try:
                yield from _iter_range(raw, offset, length, source, want_body, max_body, stats)
            except InputError as exc:
                if on_damage is None:
                    raise
                on_damage(exc)


def _iter_range(
    raw: BinaryIO,
    offset: int,
    length: int,
    source: str,
    want_body: Callable[[int | None, str | None], bool] | None,
    max_body: int,
    stats: WarcStats,
) -> Iterator[WarcResponse]:
    """The responses of the records at ``offset`` (``length`` bytes) of ``raw``."""
    if offset < 0 or length <= 0:
        raise InputError(f"no record at offset {offset} of length {length}", source=source)
    if offset + length > os.fstat(raw.fileno()).st_size:  # never read a made-up length
        raise TruncatedInput(f"no whole record at offset {offset}", source=source)
    raw.seek(offset)
    data = raw.read(length)
    if len(data) < length:
        raise TruncatedInput(f"no whole record at offset {offset}", source=source)
    stream = WarcStream(io.BytesIO(data), f"{source}@{offset}")
    yield from _iter_stream(stream, source, want_body, max_body, stats)


def _iter_stream(
    stream: WarcStream,
    source: str,
    want_body: Callable[[int | None, str | None], bool] | None,
    max_body: int,
    stats: WarcStats,
) -> Iterator[WarcResponse]:
    """The responses of one decoded stream (a file, or the records of one range)."""
    number = whole = 0  # records begun, records read whole
    while True:
        whole = number
        try:
            head = read_head(stream, number + 1, source)
            if head is None:
                break
            number += 1
            _, wh, length = head
            rec_type = wh.get("warc-type", "").lower()
            target = wh.get("warc-target-uri", "").strip("<> ")
            stats.records += 1
            is_http = target.lower().startswith(("http://", "https://"))
            if rec_type == "resource" and is_http:
                response = _read_resource(
                    stream, wh, length, target, number, source, want_body, max_body
                )
            elif rec_type not in ("response", "revisit") or not is_http:
                stats.other += 1
                if _skip(stream, length) < length:
                    raise TruncatedInput(f"WARC ends inside record {number}", source=source)
                continue
            else:
                response = _read_response(
                    stream,
                    wh,
                    length,
                    rec_type,
                    target,
                    number,
                    source,
                    want_body,
                    max_body,
                    stats,
                )
        except InputError as exc:
            why = f" ({stream.damage})" if stream.damage else ""
            raise type(exc)(
                f"{_bare(exc, source)}{why}; the {whole} records before it were kept",
                source=source,
            ) from None
        yield response
    if stream.damage:
        raise InputError(
            f"{stream.damage} after record {number}; the {number} records before it were kept",
            source=source,
        )


def _bare(exc: InputError, source: str) -> str:
    text = str(exc)
    prefix = f"{source}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def _read_resource(
    stream: WarcStream,
    wh: dict[str, str],
    length: int,
    target: str,
    number: int,
    source: str,
    want_body: Callable[[int | None, str | None], bool] | None,
    max_body: int,
) -> WarcResponse:
    """A ``resource`` record as the response a replay serves for it: status 200, its
    WARC Content-Type as the content type, its block as the body (stored as it is, no
    codings to undo) and its payload, capped at ``max_body`` like a response's."""
    headers = {"content-type": wh["content-type"]} if "content-type" in wh else {}
    digest = wh.get("warc-payload-digest") or None
    truncated = wh.get("warc-truncated") or None
    body: bytes | None = None
    if want_body is None or want_body(200, headers.get("content-type")):
        body = _read_exact(stream, min(length, max_body))
        if len(body) < min(length, max_body):
            raise TruncatedInput(f"WARC ends inside record {number}", source=source)
    hasher = hashlib.sha1(body or b"") if digest is None else None
    rest = length - len(body or b"")
    if rest > 0 and _skip(stream, rest, hasher) < rest:
        raise TruncatedInput(f"WARC ends inside record {number}", source=source)
    if body is not None and rest > 0 and truncated is None:
        truncated = "length"
    if hasher is not None:
        digest = "sha1:" + base64.b32encode(hasher.digest()).decode("ascii")
    return WarcResponse(
        record_type="resource",
        target_uri=target,
        date=wh.get("warc-date"),
        record_id=wh.get("warc-record-id"),
        payload_digest=digest,
        status=200,
        headers=headers,
        depth=_depth(wh),
        body=body,
        truncated=truncated,
        record_number=number,
    )


def _depth(wh: dict[str, str]) -> int:
    try:
        return int(wh.get("warc-crawlkit-depth", "0") or 0)
    except ValueError:
        return 0


def _read_response(
    stream: WarcStream,
    wh: dict[str, str],
    length: int,
    rec_type: str,
    target: str,
    number: int,
    source: str,
    want_body: Callable[[int | None, str | None], bool] | None,
    max_body: int,
    stats: WarcStats,
) -> WarcResponse:
    # Read the HTTP head first (it is small), so a body nobody wants is skipped
    # without holding it in memory.
    first = _read_exact(stream, min(length, 65536))
    got = len(first)
    split = split_http_head(first)
    if split is None and length > got:
        more = _read_exact(stream, min(length - got, MAX_HEADER_BYTES))
        first += more
        got += len(more)
        split = split_http_head(first)
    if got < min(length, 65536):
        raise TruncatedInput(f"WARC ends inside record {number}", source=source)
    if split is None:  # headers only, no blank line (a revisit often ends so)
        head, body_start = first, len(first)
    else:
        head, body_start = split
    status, headers = parse_http_head(head)
    depth = _depth(wh)
    digest = wh.get("warc-payload-digest") or None
    body: bytes | None = None
    truncated = wh.get("warc-truncated") or None
    wanted = rec_type == "response" and (
        want_body is None or want_body(status, headers.get("content-type"))
    )
    if wanted:
        # Hold at most max_body bytes of the payload; past that, read on only to
        # reach the next record (and to finish a digest we have to compute).
        need = length - got
        keep = max(0, min(need, max_body - (got - body_start)))
        rest = _read_exact(stream, keep) if keep > 0 else b""
        if len(rest) < keep:
            raise TruncatedInput(f"WARC ends inside record {number}", source=source)
        raw = first[body_start:] + rest if rest else first[body_start:]
        hasher = hashlib.sha1(raw) if digest is None else None
        if need > keep:
            if _skip(stream, need - keep, hasher) < need - keep:
                raise TruncatedInput(f"WARC ends inside record {number}", source=source)
            if truncated is None:
                truncated = "length"
        if hasher is not None:
            digest = "sha1:" + base64.b32encode(hasher.digest()).decode("ascii")
        body, cut, undecodable = decode_body(raw, headers, max_body)
        if undecodable:
            stats.undecodable += 1
        if cut and truncated is None:
            truncated = "length"
    else:
        need = length - got
        if need > 0 and _skip(stream, need) < need:
            raise TruncatedInput(f"WARC ends inside record {number}", source=source)
    return WarcResponse(
        record_type=rec_type,
        target_uri=target,
        date=wh.get("warc-date"),
        record_id=wh.get("warc-record-id"),
        payload_digest=digest,
        status=status,
        headers=headers,
        depth=depth,
        body=body,
        truncated=truncated,
        record_number=number,
    )
