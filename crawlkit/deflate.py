"""Deflate (gzip and zlib streams) for the library, through zlib-ng.

zlib-ng (the ``zlib-ng`` package, bindings to the zlib-ng library) reads and writes
exactly zlib's formats with zlib's API and levels, at about half the CPU. Measured on
181 real pages (scrapinghub's article-extraction-benchmark, 174 KB mean;
``bench/bench_gzip.py``, medians of 5): a level-6 gzip member 1,775 against 3,389 µs
a page for 0.4% more bytes, inflating one 227 against 409 µs. Both release the
interpreter lock while they work. A crawl pays it for every WARC record it writes and
reads back, and for every body sent with ``Content-Encoding: gzip``. Its compressor's
state is larger than zlib's (a 128 KB hash table at any memory level), which
:func:`crawlkit.warc.write.gzip_member` allows for.

Used where the volume is: WARC records written and read (:mod:`crawlkit.warc`), gzip
content coding (the fetcher's bomb guard, extract's decoding) and ``.gz`` inputs
(:mod:`crawlkit.decoders`). Its output bytes are not CPython zlib's (the same data,
other matches), so where bytes must equal another tool's (the ZipNum index of
:mod:`crawlkit.warc.cdxj`, compared with cdxj-indexer's byte for byte) CPython's zlib
stays, as it does where volumes are small (sitemaps, ``.gz`` outputs, the WACZ file's
small members). zlib-ng's level 1 is its "quick" strategy (static Huffman codes only:
19% larger than zlib's level 1 on the pages above); the writers here use 0 (stored)
and 6.
"""

from __future__ import annotations

from typing import cast

from zlib_ng import zlib_ng

__all__ = [
    "DEFLATED",
    "MAX_WBITS",
    "Error",
    "compressobj",
    "crc32",
    "decompressobj",
    "inflate_members",
]

compressobj = zlib_ng.compressobj
crc32 = zlib_ng.crc32
decompressobj = zlib_ng.decompressobj
DEFLATED: int = zlib_ng.DEFLATED
MAX_WBITS: int = zlib_ng.MAX_WBITS
#: What a damaged stream raises (zlib-ng's own class, not ``zlib.error``).
Error = cast(type[Exception], zlib_ng.error)


def inflate_members(data: bytes, wbits: int, cap: int) -> bytes:
    """``data`` inflated member after member, ``cap + 1`` bytes at most (so a caller
    tells a body cut at ``cap`` from one that fits): a gzip body may be several members
    back to back (a server that flushes as it writes; gzip(1) and browsers read them
    all), and reading only the first cut the page short unflagged. Bytes after a member
    that start no gzip member, or a damaged member after the first, end the body there;
    a damaged first one raises :data:`Error`."""
    out: list[bytes] = []
    room = cap + 1
    while data and room > 0:
        obj = decompressobj(wbits)
        try:
            chunk = obj.decompress(data, room)
        except Error:
            if not out:
                raise
            break  # a damaged later member: what came before is the body
        out.append(chunk)
        room -= len(chunk)
        if not obj.eof or not obj.unused_data.startswith(b"\x1f\x8b"):
            break
        data = obj.unused_data
    return b"".join(out)
