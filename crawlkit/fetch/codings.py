"""Content and transfer codings of a response body, under caps: counting what a
Content-Encoding decodes to while the body is read (a gzip bomb stops at
``--max-decoded``, the body kept as sent), and undoing a gzip or deflate
Transfer-Encoding once it has been read (a WARC stores the entity-body).
"""

from __future__ import annotations

from typing import Any

from crawlkit import deflate
from crawlkit.fetch.exchange import FetchResult

__all__ = ["MAX_DEFLATE_RATIO", "DecodedCounter", "transfer_codings", "undo_transfer_codings"]

MAX_DEFLATE_RATIO = 1032  # the most deflate expands: output bytes per input byte


class DecodedCounter:
    """Counts gzip/deflate output without keeping it; stops past ``cap``."""

    def __init__(self, encoding: str, cap: int):
        self.cap = cap
        self._total = 0
        self.broken = False
        enc = encoding.strip().lower()
        if enc in ("gzip", "x-gzip"):
            self._d: Any = deflate.decompressobj(47)
        elif enc == "deflate":
            self._d = deflate.decompressobj(47)  # zlib-wrapped; raw deflate retried below
            self._raw_retry = True
        else:
            self._d = None
        self._raw_retry = enc == "deflate"
        self._first = True
        self._held: list[bytes] | None = []
        self._held_size = 0

    @property
    def total(self) -> int:
        """Decoded bytes counted so far (0 while decoding is put off)."""
        return self._total

    @total.setter
    def total(self, value: int) -> None:
        self._total = value

    def feed(self, chunk: bytes) -> bool:
        """Feed raw body bytes; False once the decoded size passed the cap.

        Deflate expands at most 1032:1, so while the raw bytes seen are below
        ``cap / 1032`` the cap cannot be reached and decoding is put off (most pages
        are never decoded here at all).
        """
        if self._d is None or self.broken:
            return True
        if self._held is not None:
            self._held.append(chunk)
            self._held_size += len(chunk)
            if self._held_size * MAX_DEFLATE_RATIO <= self.cap:
                return True
            chunk = b"".join(self._held)
            self._held = None
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> bool:
        data = chunk
        try:
            while data:
                out = self._d.decompress(data, self.cap - self.total + 1)
                self.total += len(out)
                if self.total > self.cap:
                    return False
                data = self._d.unconsumed_tail
                if self._d.eof:
                    data = self._d.unused_data
                    if data:  # concatenated gzip members
                        self._d = deflate.decompressobj(47)
        except deflate.Error:
            if self._first and self._raw_retry:
                self._d, self._raw_retry = deflate.decompressobj(-15), False
                return self._feed(chunk)
            self.broken = True  # undecodable: the raw body cap still holds
        self._first = False
        return True


def transfer_codings(headers: list[tuple[str, str]]) -> list[str]:
    """The transfer codings of a response besides its chunked framing (which the
    parser undoes), in the order the server applied them: ``Transfer-Encoding: gzip,
    chunked`` is ``["gzip"]``. Names are lowercased, ``identity`` is none."""
    codings = [
        coding.split(";", 1)[0].strip().lower()
        for name, value in headers
        if name.lower() == "transfer-encoding"
        for coding in value.split(",")
    ]
    codings = [c for c in codings if c and c != "identity"]
    if codings and codings[-1] == "chunked":
        codings.pop()
    return codings


def undo_transfer_codings(result: FetchResult, cap: int) -> None:
    """Undo the gzip or deflate transfer codings of ``result.body`` (last applied
    first), at most ``cap`` bytes of output (past it the body is cut, ``truncated:
    length``, as a gzip bomb in a Content-Encoding is).

    A transfer coding is the message's, not the page's (RFC 9112 7): the recipient
    removes it, as it removes chunked framing, and what is left is the payload a WARC
    stores and digests (WARC 1.1 5.9: the entity-body, which excludes transfer
    codings). Kept, the WARC held gzip bytes under no Content-Encoding (the writer
    renames Transfer-Encoding so no reader de-chunks the body again), and a replay
    showed them as the page. A coding crawlkit cannot undo (or a body that is not
    what it says) leaves the body as it came, and the record's error says so."""
    codings = transfer_codings(result.headers)
    if not codings:
        return
    body = result.body
    for coding in reversed(codings):
        try:
            body, cut = _inflate(body, coding, cap)
        except (deflate.Error, ValueError) as exc:
            note = f"transfer coding {coding!r} not undone ({exc}): the body is stored as sent"
            result.error = result.error or note[:300]
            return
        if cut:
            result.truncated = result.truncated or "length"
            break
    result.body = body


def _inflate(data: bytes, coding: str, cap: int) -> tuple[bytes, bool]:
    """``data`` decoded from ``coding`` (gzip, x-gzip or deflate: zlib-wrapped or raw,
    as browsers take it) and whether ``cap`` cut the output; ValueError for any other
    coding, ``deflate.Error`` for data that is not in it. A stream cut short gives what
    it holds."""
    if coding in ("gzip", "x-gzip"):
        return _inflate_members(data, 47, cap)
    if coding != "deflate":
        raise ValueError("a coding crawlkit does not decode")
    try:
        return _inflate_members(data, 15, cap)
    except deflate.Error:
        return _inflate_members(data, -15, cap)  # raw deflate, as some servers send it


def _inflate_members(data: bytes, wbits: int, cap: int) -> tuple[bytes, bool]:
    """:func:`crawlkit.deflate.inflate_members` up to ``cap`` bytes, and whether the
    cap cut it."""
    body = deflate.inflate_members(data, wbits, cap)
    return body[:cap], len(body) > cap
