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

__all__ = ["DEFLATED", "MAX_WBITS", "Error", "compressobj", "crc32", "decompressobj"]

compressobj = zlib_ng.compressobj
crc32 = zlib_ng.crc32
decompressobj = zlib_ng.decompressobj
DEFLATED: int = zlib_ng.DEFLATED
MAX_WBITS: int = zlib_ng.MAX_WBITS
#: What a damaged stream raises (zlib-ng's own class, not ``zlib.error``).
Error = cast(type[Exception], zlib_ng.error)
