"""What a WARC response record's block holds: the HTTP head as sent, and the body with
its transfer and content codings undone (chunked; gzip, deflate, zstd; br when a
brotli module is installed), capped at a number of decoded bytes.

Split from :mod:`crawlkit.warc.read`, which finds the records in a file and hands each
block here; nothing in this module reads a file.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

import zstandard

from crawlkit import deflate

__all__ = ["MAX_BODY", "decode_body", "parse_http_head", "split_http_head"]

MAX_BODY = 10 * 1024 * 1024

# The end of an HTTP head: its first blank line, CRLF, a bare LF or CRs doubled.
_HEAD_END = re.compile(rb"\n\r*\n")

try:  # br content coding (a dependency; Google's Brotli >= 1.2 serves as well)
    import brotlicffi

    _brotli: Any = brotlicffi
except ImportError:  # pragma: no cover - depends on the environment
    try:
        import brotli

        _brotli = brotli if hasattr(brotli.Decompressor(), "process") else None
    except ImportError:
        _brotli = None


def split_http_head(block: bytes) -> tuple[bytes, int] | None:
    """The HTTP head and the offset of the body, or None if the head is incomplete.

    The head ends at its first blank line (see :func:`crawlkit.warc.head.is_blank`): CRLF as HTTP
    writes it, a bare LF, or CRs doubled by a CRLF conversion run twice."""
    end = _HEAD_END.search(block)
    if end is None:
        return None
    return block[: end.start()].rstrip(b"\r"), end.end()


# Repeated headers whose every line counts, kept one a line: X-Robots-Tag lines add up
# (and an agent's name on one line does not reach into the next).
_EACH_LINE = frozenset({"x-robots-tag"})
# Headers whose lines are one comma-separated list: two `Content-Encoding: gzip` lines
# are a body gzipped twice, and the last line alone left it gzipped once.
_LISTS = frozenset({"content-encoding", "transfer-encoding"})


def parse_http_head(head: bytes) -> tuple[int | None, dict[str, str]]:
    lines = head.replace(b"\r\n", b"\n").split(b"\n")
    status: int | None = None
    parts = lines[0].split(None, 2) if lines else []
    if len(parts) >= 2 and parts[0].upper().startswith(b"HTTP/"):
        with contextlib.suppress(ValueError):
            status = int(parts[1])
    headers: dict[str, str] = {}
    for raw in lines[1:]:
        name, sep, value = raw.partition(b":")
        if sep:
            key = name.strip().decode("latin-1").lower()
            text = value.strip().decode("latin-1")
            if key in _EACH_LINE and key in headers:
                text = f"{headers[key]}\n{text}"
            elif key in _LISTS and key in headers:
                text = f"{headers[key]}, {text}"  # one list (RFC 9110 5.3): both codings
            headers[key] = text
    return status, headers


def _dechunk(data: bytes) -> bytes | None:
    """Undo chunked transfer coding; None if ``data`` is not validly chunked."""
    out: list[bytes] = []
    pos = 0
    n = len(data)
    while pos < n:
        eol = data.find(b"\n", pos)
        if eol < 0:
            return None
        size_text = data[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            return None
        pos = eol + 1
        if size == 0:
            return b"".join(out)
        out.append(data[pos : pos + size])
        pos += size
        if data[pos : pos + 2] == b"\r\n":
            pos += 2
        elif data[pos : pos + 1] == b"\n":
            pos += 1
    return b"".join(out)  # no final 0-size chunk: a cut-off body, keep what came


def _decompress(data: bytes, coding: str, cap: int) -> bytes | None:
    """Undo one content coding, stopping at ``cap`` bytes; None if it is not that."""
    if coding in ("gzip", "x-gzip", "deflate"):
        for wbits in (47,) if coding != "deflate" else (15, -15, 47):
            try:
                return deflate.inflate_members(data, wbits, cap)
            except deflate.Error:
                continue
        return None
    if coding == "zstd":
        # A stream reader stops at the cap: a small zstd body can expand enormously.
        try:
            with zstandard.ZstdDecompressor().stream_reader(data) as reader:
                return reader.read(cap + 1)
        except zstandard.ZstdError:
            return None
    if coding == "br" and _brotli is not None:
        try:
            return bytes(_brotli.Decompressor().process(data, output_buffer_limit=cap + 1))
        except Exception:  # brotli.error, or an old brotli without the limit
            return None
    return None


def decode_body(
    raw: bytes, headers: dict[str, str], cap: int = MAX_BODY
) -> tuple[bytes, bool, bool]:
    """``(body, cut, undecodable)``: the entity body with codings undone.

    Transfer codings first (a writer that kept the body as it came on the wire, as
    wget does: chunks, and ``Transfer-Encoding: gzip, chunked`` gunzipped too), then
    content codings. ``cut`` is true when the decoded body went over ``cap`` (and was
    cut there). ``undecodable`` is true when a coding could not be undone (the bytes
    are returned as far as they were decoded then).
    """
    body = raw
    transfer = [c.strip().lower() for c in headers.get("transfer-encoding", "").split(",")]
    if "chunked" in transfer:
        dechunked = _dechunk(raw)
        if dechunked is not None:
            body = dechunked
    undecodable = False
    # Applied in this order (content codings, then transfer codings but the chunks,
    # already joined), undone the other way.
    codings = [c.strip().lower() for c in headers.get("content-encoding", "").split(",")]
    codings += [c for c in transfer if c != "chunked"]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        decoded = _decompress(body, coding, cap)
        if decoded is None:
            # Many servers say gzip and send plain text; keep the bytes if they look so.
            undecodable = True
            break
        body = decoded
    cut = len(body) > cap
    if cut:
        body = body[:cap]
    return body, cut, undecodable
