"""A text sitemap's lines: one URL a line, any line ending (CRLF, LF, CR alone),
blank lines left out, a line longer than ``MAX_TEXT`` skipped without being held
in memory. The bytes come in UTF-8 (a UTF-16 file is decoded to it before)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from crawlkit.sitemap.model import MAX_TEXT, SitemapStats

__all__ = ["read_lines"]

_TEXT_LINES = re.compile(rb"\r\n|\r|\n")


def read_lines(
    first: bytes,
    chunks: Iterator[bytes],
    stats: SitemapStats,
    on_line: Callable[[bytes, int], None],
    on_overlong: Callable[[int], None],
) -> Iterator[None]:
    """Call ``on_line(raw, line number)`` for each line with something on it, and
    ``on_overlong(line number)`` once for each line longer than ``MAX_TEXT``; yields
    after each chunk, for the caller to hand on what ``on_line`` made. A last line
    cut by the size limit (``stats.truncated``) is left out."""
    buf = first.removeprefix(b"\xef\xbb\xbf")
    lineno = 0  # lines completed so far
    skipping = False  # inside an overlong line
    while True:
        # CR alone ends a line too (old Mac editors): split on \n only, such a
        # file's URLs were glued into one invented URL (the parser drops the CRs).
        lines = _TEXT_LINES.split(buf)
        buf = lines.pop()  # the unfinished last line
        for i, line in enumerate(lines):
            if skipping:
                skipping = False  # this piece ends the overlong line
            elif line and not line.isspace():
                on_line(line, lineno + i + 1)
        lineno += len(lines)
        if len(buf) > MAX_TEXT:
            if not skipping:
                on_overlong(lineno + 1)
            skipping = True
            buf = b""
        yield
        chunk = next(chunks, None)
        if chunk is None:
            break
        buf += chunk
    if buf and not skipping and not stats.truncated and not buf.isspace():
        on_line(buf, lineno + 1)
