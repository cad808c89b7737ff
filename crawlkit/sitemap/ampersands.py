"""Bare ``&`` in a sitemap or feed, read as ``&amp;``.

XML has no bare ampersand: every ``&`` begins a reference (``&amp;``, ``&#38;``,
``&name;``). Sitemaps and feeds written by string concatenation break that rule at
every URL with a query (``<loc>http://a/?x=1&y=2</loc>``) and every title with an
"&", and expat stops at the first: a sitemap of 50,000 such URLs gave none. Search
engines' and feed readers' parsers read on. So does this filter, on the UTF-8 bytes
on their way into expat: an ``&`` that begins no reference becomes ``&amp;``, the
byte it stood for. A document that is well formed is passed through unchanged (a
bare ``&`` cannot occur in one), and so are CDATA sections and comments, where an
``&`` is only text. A reference to an entity that is not declared stays as it is
(expat's error, or the entity handling of :mod:`crawlkit.sitemap.xmlreader`).

It works chunk by chunk: what the end of a chunk leaves undecided (an ``&`` whose
name runs on, a ``<!`` that may open a section, the end marker of a section cut in
two) is held for the next.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

__all__ = ["BareAmpersands", "repaired"]

# A name longer than this with no ";" in sight is no reference (real ones are short):
# the held bytes stay bounded whatever the document, and a long one is judged alike
# whether a chunk's end cuts it or not.
_LONGEST_NAME = 256
# A reference, after its "&": a name (XML's, ASCII and any non-ASCII byte), or a
# decimal or hexadecimal character number, and the ";" that ends it, in at most
# _LONGEST_NAME bytes.
_REFERENCE = (
    rb"(?:[A-Za-z_:\x80-\xff][\w.:\x80-\xff-]{0,254}|#[0-9]{1,254}|#[xX][0-9A-Fa-f]{1,253});"
)
# What a chunk's scan stops at: an ampersand that begins no reference, or the opening
# of a CDATA section or comment (whose text is passed over to its end marker). The
# references themselves are passed over in C: a sitemap of 50,000 URLs with two
# "&amp;" each took 7% longer when each stopped the scan.
_STOP = re.compile(rb"&(?!" + _REFERENCE + rb")|<!\[CDATA\[|<!--")
# Where the scan of a reference's name would run past the chunk: undecided.
_NAME_TO_END = re.compile(rb"#?[\w.:\x80-\xff-]*\Z")
_SECTION_END = {b"<![CDATA[": b"]]>", b"<!--": b"-->"}
_LONGEST_OPENING = max(len(opening) for opening in _SECTION_END) - 1


class BareAmpersands:
    """The filter's state between chunks; :attr:`repaired` counts the ``&`` escaped."""

    def __init__(self) -> None:
        self.repaired = 0
        self._held = b""
        self._section_end: bytes | None = None  # inside a CDATA section or comment

    def feed(self, data: bytes, final: bool = False) -> bytes:
        """``data`` (after what was held) with its bare ``&`` escaped, up to what the
        chunk leaves undecided; ``final``: the document ends here, nothing is held."""
        data = self._held + data
        self._held = b""
        out: list[bytes] = []
        pos = 0
        while True:
            if self._section_end is not None:
                end = data.find(self._section_end, pos)
                if end < 0:
                    keep = 0 if final else len(self._section_end) - 1
                    cut = max(pos, len(data) - keep)
                    out.append(data[pos:cut])
                    self._held = data[cut:]
                    return b"".join(out)
                end += len(self._section_end)
                out.append(data[pos:end])
                pos, self._section_end = end, None
            found = _STOP.search(data, pos)
            if found is None:
                # A "<!" or "<![CD" at the very end may open a section next chunk.
                tail = 0 if final else _undecided_opening(data, pos)
                out.append(data[pos : len(data) - tail])
                self._held = data[len(data) - tail :]
                return b"".join(out)
            start = found.start()
            out.append(data[pos:start])
            token = found.group()
            if token != b"&":
                self._section_end = _SECTION_END[token]
                out.append(token)
                pos = found.end()
                continue
            after = start + 1  # (an "&" that begins a whole reference is not found)
            if not final and len(data) - after <= _LONGEST_NAME and _NAME_TO_END.match(data, after):
                self._held = data[start:]  # the name may end in ";" in the next chunk
                return b"".join(out)
            else:
                out.append(b"&amp;")
                self.repaired += 1
            pos = after


def _undecided_opening(data: bytes, pos: int) -> int:
    """How many bytes at the end of ``data`` (from ``pos``) may begin a section's
    opening that the next chunk completes."""
    for size in range(min(_LONGEST_OPENING, len(data) - pos), 0, -1):
        tail = data[len(data) - size :]
        if any(opening.startswith(tail) for opening in _SECTION_END):
            return size
    return 0


def repaired(
    first: bytes, chunks: Iterator[bytes], fix: BareAmpersands
) -> tuple[bytes, Iterator[bytes]]:
    """``first`` and ``chunks`` through ``fix``: the first chunk at once (the caller
    reads the XML declaration in it), the rest as they are read."""

    def rest() -> Iterator[bytes]:
        for chunk in chunks:
            yield fix.feed(chunk)
        yield fix.feed(b"", final=True)

    return fix.feed(first), rest()
