"""Benchmark of ``crawlkit index`` and ``crawlkit wacz`` on big collections; run on demand.

    nice .venv/bin/python bench/bench_index.py            # 100k and 1M captures (~6 min)
    nice .venv/bin/python bench/bench_index.py --quick    # 100k captures (~1 min)

For each size it writes a synthetic collection (four ``.warc.gz`` files of
per-record gzip members: HTTP 200 responses of random hosts and paths in random
order, 1 in 100 of them HTML pages, the rest images and stylesheets, each with
its WARC-Payload-Digest as crawlers write it) and measures, each step in a child
process so its peak RSS (VmHWM) is its own:

* ``read``: one pass of :func:`crawlkit.warc.records.iter_records` over the files
  (the floor: every step below reads them at least once); the baseline;
* ``index-in-memory``: :func:`crawlkit.warc.cdxj.index_lines` and one join, as
  ``crawlkit index`` worked before (every line held and sorted in memory);
* ``index``: :func:`crawlkit.stages.index.write_index` (the external sort, 64 MiB of
  lines held at most);
* ``wacz``: :func:`crawlkit.stages.wacz.write_wacz` (index by external sort,
  written as ZipNum above 100,000 lines; pages with their text; the ZIP).

Each figure is given with its ratio to ``read`` in the same run. Files go to a
temporary directory (``--dir`` to choose) removed afterwards.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

MB = 1 << 20
FILES = 4


def _member(data: bytes) -> bytes:
    comp = zlib.compressobj(1, zlib.DEFLATED, 31)
    return comp.compress(data) + comp.flush()


UNIQUE = 100_000  # records made; a bigger collection repeats them (the lines still differ)


def make_collection(directory: Path, captures: int, seed: int = 1) -> list[Path]:
    """Write the synthetic collection (see the module docstring); returns its files.
    ``UNIQUE`` records are made and written over again up to ``captures`` (each copy's
    index lines differ by offset), which keeps writing 1M captures to seconds."""
    rng = random.Random(seed)
    paths = [directory / f"big-{n:02d}.warc.gz" for n in range(FILES)]
    members: list[list[bytes]] = [[] for _ in range(FILES)]
    for i in range(min(captures, UNIQUE)):
        host = f"h{rng.randrange(20000)}.example.org"
        kind = rng.randrange(100)
        if kind == 0:
            ctype, ext = "text/html; charset=utf-8", ".html"
            body = f"<html><title>Page {i}</title><p>Text of page {i}.</p></html>".encode()
        elif kind < 60:
            ctype, ext = "image/png", ".png"
            body = b"\x89PNG\r\n\x1a\n" + i.to_bytes(8, "big") * 4
        else:
            ctype, ext = "text/css", ".css"
            body = f".c{i} {{ color: red }}\n".encode()
        url = f"http://{host}/d{rng.randrange(1000)}/item-{i}{ext}?q={rng.randrange(100)}"
        sec = rng.randrange(86400 * 30)
        date = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(1_790_000_000 + sec))
        http = (
            f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode() + body
        digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
        head = (
            "WARC/1.1\r\nWARC-Type: response\r\n"
            f"WARC-Target-URI: {url}\r\nWARC-Date: {date}\r\n"
            f"WARC-Record-ID: <urn:uuid:{i:032x}>\r\n"
            f"WARC-Payload-Digest: {digest}\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(http)}\r\n\r\n"
        ).encode()
        members[i % FILES].append(_member(head + http + b"\r\n\r\n"))
    for path, mine in zip(paths, members, strict=True):
        with open(path, "wb") as f:
            for _ in range(max(captures // UNIQUE, 1)):
                f.write(b"".join(mine))
    return paths


def _peak_rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def run_step(step: str, files: list[str], work: str) -> None:
    """In a child process: one step, then a JSON line with its time and peak RSS."""
    start = time.perf_counter()
    count = 0
    if step == "read":
        from crawlkit.warc.records import iter_records

        for path in files:
            for _ in iter_records(path):
                count += 1
    elif step == "index-in-memory":
        from crawlkit.warc.cdxj import index_lines

        lines = index_lines(files)
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        Path(work, "mem.cdxj").write_bytes(data)
        count = len(lines)
    elif step == "index":
        from crawlkit.stages.index import write_index

        count = write_index(files, os.path.join(work, "ext.cdxj"), tmpdir=work)
    elif step == "wacz":
        from crawlkit.stages.wacz import write_wacz

        package = write_wacz(files, os.path.join(work, "big.wacz"))
        count = len(package["resources"])
    seconds = time.perf_counter() - start
    print(json.dumps({"step": step, "seconds": seconds, "peak_rss": _peak_rss(), "n": count}))


def measure(step: str, files: list[Path], work: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--step", step, "--work", str(work), *map(str, files)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--dir", default=None)
    parser.add_argument("--step", default=None)
    parser.add_argument("--work", default=None)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    if args.step:
        run_step(args.step, args.files, args.work)
        return
    sizes = [100_000] if args.quick else [100_000, 1_000_000]
    for captures in sizes:
        with tempfile.TemporaryDirectory(dir=args.dir, prefix="bench-index-") as tmp:
            work = Path(tmp)
            t0 = time.perf_counter()
            files = make_collection(work, captures)
            made = time.perf_counter() - t0
            size = sum(f.stat().st_size for f in files)
            print(
                f"\n{captures:,} captures: {FILES} files, {size / MB:.0f} MiB "
                f"(written in {made:.0f} s)"
            )
            base = measure("read", files, work)
            print(f"  {'step':<16} {'seconds':>8} {'x read':>7} {'peak RSS MiB':>13} {'x read':>7}")
            for step in ("read", "index-in-memory", "index", "wacz"):
                got = base if step == "read" else measure(step, files, work)
                print(
                    f"  {step:<16} {got['seconds']:8.1f} {got['seconds'] / base['seconds']:7.2f}"
                    f" {got['peak_rss'] / MB:13.0f} {got['peak_rss'] / base['peak_rss']:7.2f}"
                )
            wacz = work / "big.wacz"
            if wacz.exists():
                import zipfile

                with zipfile.ZipFile(wacz) as zf:
                    names = [n for n in zf.namelist() if n.startswith("indexes/")]
                print(f"  wacz: {wacz.stat().st_size / MB:.0f} MiB, indexes: {', '.join(names)}")


if __name__ == "__main__":
    main()
