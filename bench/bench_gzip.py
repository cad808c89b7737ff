"""Benchmark: gzip members as the WARC writer makes them, CPython's zlib against zlib-ng.

Run on demand (never in CI)::

    .venv/bin/python bench/bench_gzip.py PAGES_DIR [--levels 1,5,6,9] [--repeat 5]

PAGES_DIR holds saved web pages (any files; ``*.gz`` files are read decompressed), for
instance the 181 pages of scrapinghub/article-extraction-benchmark (``html/*.html.gz``,
brought with the ``fetch`` tool or ``git clone``; ``bench/real_corpus.py`` makes the
larger folders). For each library and level it prints the CPU µs a page to make one
gzip member of each page (the writer's :func:`~crawlkit.warc.write.gzip_member`: a
window sized to the record), the mean member's bytes, and the µs for a WARC request
record (~300 bytes, the writer makes one a page); then the µs a page to
inflate the members again (what ``extract`` and ``index`` pay reading a WARC, and the
fetcher decoding a ``Content-Encoding: gzip`` body). Medians of ``--repeat`` passes.
Blocks of 256 KiB or more are mapped apart, as in a crawl's processes
(:func:`crawlkit.heap.map_large_blocks`): zlib-ng's state for a record over 16 KB is
that large, so it costs more there than in a plain Python process.
"""

from __future__ import annotations

import argparse
import functools
import gzip
import statistics
import time
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

from zlib_ng import zlib_ng

from crawlkit.heap import map_large_blocks

LIBRARIES: dict[str, ModuleType] = {"zlib": zlib, "zlib-ng": zlib_ng}
REQUEST = (
    b"WARC/1.1\r\nWARC-Type: request\r\nWARC-Record-ID: <urn:uuid:0f0e0d0c-0b0a-4908-8706-"
    b"050403020100>\r\nWARC-Date: 2026-12-05T08:00:00.123456Z\r\nWARC-Target-URI: "
    b"https://www.example.org/news/2026/12/05/a-page.html\r\nContent-Type: application/"
    b"http; msgtype=request\r\nContent-Length: 120\r\n\r\nGET /news/2026/12/05/a-page.html "
    b"HTTP/1.1\r\nHost: www.example.org\r\nUser-Agent: crawlkit\r\nAccept-Encoding: gzip"
    b"\r\n\r\n\r\n\r\n"
)


def member(lib: Any, raw: bytes, level: int) -> bytes:
    """One gzip member of ``raw`` with a window sized to it, as the WARC writer makes
    it with each library (memory level at most 8 with zlib, as it was, 7 with zlib-ng,
    as :func:`~crawlkit.warc.write.gzip_member` does)."""
    bits = max(9, min(15, (len(raw) - 1).bit_length()))
    mem_level = 1 if level == 0 else max(1, min(8 if lib is zlib else 7, bits - 6))
    deflate = lib.compressobj(level, lib.DEFLATED, 16 + bits, mem_level)
    return bytes(deflate.compress(raw) + deflate.flush())


def inflate(lib: Any, data: bytes) -> bytes:
    return bytes(lib.decompressobj(47).decompress(data))


def cpu_per_item(fn: Any, items: list[bytes], repeat: int) -> float:
    """Median CPU µs per item of ``fn`` over ``items``."""
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for item in items:
            fn(item)
        runs.append(time.process_time() - start)
    return 1e6 * statistics.median(runs) / len(items)


def read_pages(folder: Path) -> list[bytes]:
    pages = []
    for path in sorted(folder.iterdir()):
        if path.is_file():
            data = path.read_bytes()
            pages.append(gzip.decompress(data) if path.suffix == ".gz" else data)
    return pages


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", type=Path)
    ap.add_argument("--levels", default="1,5,6,9")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    map_large_blocks()  # as in a crawl's processes: zlib-ng's full state is mapped apart
    pages = read_pages(args.pages)
    mean = sum(map(len, pages)) / len(pages) / 1000
    median = statistics.median(map(len, pages)) / 1000
    print(f"{len(pages)} pages, {mean:.1f} KB mean, {median:.1f} KB median")
    print(f"{'library':8} {'level':>5} {'µs a page':>10} {'bytes a page':>13} {'request':>8}")
    made: dict[str, list[bytes]] = {}
    for level in (int(x) for x in args.levels.split(",")):
        for name, lib in LIBRARIES.items():
            deflate = functools.partial(member, lib, level=level)
            us = cpu_per_item(deflate, pages, args.repeat)
            small = cpu_per_item(deflate, [REQUEST] * 2000, args.repeat)
            members = [deflate(raw) for raw in pages]
            size = sum(map(len, members)) / len(members)
            print(f"{name:8} {level:>5} {us:>10.1f} {size:>13.0f} {small:>8.2f}")
            if level == 6:
                made[name] = members
    members = made.get("zlib") or [member(zlib, raw, 6) for raw in pages]
    for name, lib in LIBRARIES.items():
        us = cpu_per_item(functools.partial(inflate, lib), members, args.repeat)
        print(f"inflate, {name}: {us:.1f} µs a page (zlib's level-6 members)")


if __name__ == "__main__":
    main()
