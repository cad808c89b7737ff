"""A WARC record's head: its version line and headers, read and parsed, under one limit.

One job, for every reader of WARC files (:mod:`crawlkit.warc.read` for ``extract`` and
``wacz``, :mod:`crawlkit.warc.records` for ``index``, :mod:`crawlkit.warc.salvage`), so
they accept and refuse the same heads with the same messages:

* :func:`read_head` gives the next record's decoded offset, its WARC headers (names
  lowercased, as warcio decodes each line: UTF-8, else Latin-1) and its
  Content-Length, or None at the end. A head of plain CRLF lines already in the buffer
  is split at once (:meth:`HeadStream.plain_head`); any other goes line by line
  (:func:`read_head_by_lines`), where every way a head can be wrong is named: cut
  short, not a WARC record (an ARC file is named as one), a missing, bad or negative
  Content-Length, or longer than :data:`MAX_HEADER_BYTES` (the version line, each
  header line and all of them together).
* Line ends are read as warcio reads them: CRLF, a bare LF, or CRs doubled by a CRLF
  conversion run twice (:func:`is_blank`).
"""

from __future__ import annotations

from typing import Protocol

from crawlkit.errors import InputError, TruncatedInput

__all__ = ["MAX_HEADER_BYTES", "HeadStream", "is_blank", "parse_warc_headers", "read_head"]

MAX_HEADER_BYTES = 256 * 1024  # a record's WARC head, and an HTTP head, at most


class HeadStream(Protocol):
    """What a head is read from (:class:`crawlkit.warc.read.WarcStream`)."""

    def plain_head(self, limit: int) -> tuple[int, bytes] | None: ...
    def readline(self, limit: int) -> bytes: ...
    def tell(self) -> int: ...


def read_head(
    stream: HeadStream, number: int, source: str
) -> tuple[int, dict[str, str], int] | None:
    """The next record's head: ``(decoded offset of its first byte, WARC headers with
    lowercased names, Content-Length)``, or None at the end of the stream. The one
    place the limits on a record's head are kept (:data:`MAX_HEADER_BYTES` for the
    version line, each header line and all of them together), for every reader."""
    plain = stream.plain_head(MAX_HEADER_BYTES)
    if plain is not None:  # nearly every head: split at once, not read a line at a time
        start, block = plain
        return start, *_checked_length(_parse_head_block(block), number, source)
    return read_head_by_lines(stream, number, source)


def read_head_by_lines(
    stream: HeadStream, number: int, source: str
) -> tuple[int, dict[str, str], int] | None:
    """:func:`read_head` a line at a time: any head, and every way one can be wrong."""
    line = stream.readline(MAX_HEADER_BYTES)
    while is_blank(line):
        line = stream.readline(MAX_HEADER_BYTES)
    if not line:
        return None
    start = stream.tell() - len(line)
    cut = not line.endswith(b"\n") and len(line) < MAX_HEADER_BYTES
    if cut and b"WARC/".startswith(line[:5]):  # cut inside "WARC/": no other damage
        raise TruncatedInput(f"WARC ends inside the headers of record {number}", source=source)
    if not line.startswith(b"WARC/"):
        if number == 1 and line.startswith(b"filedesc://"):  # an ARC file's version block
            raise InputError(
                "an ARC file, not a WARC: ARC is not read (convert it to WARC, e.g. "
                "warcio recompress FILE.arc.gz FILE.warc.gz)",
                source=source,
            )
        # Bytes where a record's Content-Length says it ends: most often that length is
        # wrong (a hand-edited record), which the user cannot guess from the bytes alone.
        after = (
            f" where record {number - 1} ends by its Content-Length, which may be wrong"
            if number > 1
            else ""
        )
        raise InputError(
            f"record {number}: not a WARC record (starts {line[:20]!r}){after}", source=source
        )
    if not line.endswith(b"\n"):
        if len(line) < MAX_HEADER_BYTES:
            raise TruncatedInput(f"WARC ends inside the headers of record {number}", source=source)
        raise InputError(f"record {number}: WARC version line too long", source=source)
    header_lines: list[bytes] = []
    size = 0
    while True:
        hline = stream.readline(MAX_HEADER_BYTES)
        if not hline:
            raise TruncatedInput(f"WARC ends inside the headers of record {number}", source=source)
        if is_blank(hline):
            break
        size += len(hline)
        if not hline.endswith(b"\n") and len(hline) < MAX_HEADER_BYTES:
            raise TruncatedInput(f"WARC ends inside the headers of record {number}", source=source)
        if size > MAX_HEADER_BYTES or not hline.endswith(b"\n"):
            raise InputError(
                f"record {number}: WARC headers longer than {MAX_HEADER_BYTES} bytes",
                source=source,
            )
        header_lines.append(hline)
    return start, *_checked_length(parse_warc_headers(header_lines), number, source)


def _parse_head_block(block: bytes) -> dict[str, str]:
    """:func:`parse_warc_headers` of a head's version and header lines, each ending in
    CRLF and nothing else (:meth:`HeadStream.plain_head`): decoded at once where all of
    it is UTF-8 (then each line is, as lines split at CRLF), else line by line."""
    try:
        text = block.decode("utf-8")
    except UnicodeDecodeError:
        return parse_warc_headers(block.split(b"\r\n")[1:-1])
    return _parse_header_texts(text.split("\r\n")[1:-1])


def _checked_length(wh: dict[str, str], number: int, source: str) -> tuple[dict[str, str], int]:
    """``(wh, its Content-Length)``; InputError when it is missing, bad or negative."""
    try:
        length = int(wh.get("content-length", ""))
    except ValueError:
        raise InputError(f"record {number}: missing or bad Content-Length", source=source) from None
    if length < 0:
        raise InputError(f"record {number}: negative Content-Length", source=source)
    return wh, length


def parse_warc_headers(lines: list[bytes]) -> dict[str, str]:
    texts: list[str] = []
    for raw in lines:
        try:  # as warcio decodes a header line (so the index is cdxj-indexer's)
            texts.append(raw.decode("utf-8").rstrip("\r\n"))
        except UnicodeDecodeError:
            texts.append(raw.decode("iso-8859-1").rstrip("\r\n"))
    return _parse_header_texts(texts)


def _parse_header_texts(lines: list[str]) -> dict[str, str]:
    """A head's header lines, decoded and without line ends, as a dict of lowercased
    names (a continuation line joins the header before it)."""
    headers: dict[str, str] = {}
    last = ""
    for line in lines:
        if line[:1] in (" ", "\t") and last:
            headers[last] += " " + line.strip()
            continue
        name, sep, value = line.partition(":")
        if not sep:
            continue
        last = name.strip().lower()
        headers[last] = value.strip()
    uri = headers.get("warc-target-uri")
    if uri is not None:
        # As warcio reads it (so the index is cdxj-indexer's): wget 1.19 and later write
        # it in angle brackets, WARC 1.0's grammar; a space is percent-encoded.
        if uri.startswith("<") and uri.endswith(">"):
            uri = uri[1:-1]
        headers["warc-target-uri"] = uri.replace(" ", "%20")
    return headers


def is_blank(line: bytes) -> bool:
    """Whether ``line`` is an empty line: CRLF, a bare LF, or CRs and LF (a CRLF
    conversion run twice over a file writes ``\\r\\r\\n``; warcio, pywb and
    cdxj-indexer read such a file, and the CRs hold nothing)."""
    return line.endswith(b"\n") and not line.rstrip(b"\r\n")
