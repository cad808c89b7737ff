"""The end of a run's collection index: index.cdxj brought up to date.

Builds a collection of per-file indexes as a crawl leaves them (``indexes/NAME.cdxj``
beside empty stand-ins of the WARC files: only the indexes are read), CDXJ lines of
~270 bytes over 15,000 hosts, then times ``update_collection_index``: once over all of
them, once with nothing new, and once after one more run's files. Synthetic lines (the
merge reads only their order); medians of ``--repeat``.

    .venv/bin/python bench/bench_collection_index.py --lines 1000000 --new 100000

Run it with ``PYTHONPATH`` of another tree to compare (a tree that merges everything
each time shows it in the last two figures).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from crawlkit.crawl.archive import INDEX_DIR, update_collection_index

LINES_A_FILE = 5000


def add_files(warc_dir: Path, first: int, lines: int, rng: random.Random) -> int:
    """Per-file indexes of ``lines`` lines in all, files numbered from ``first``."""
    n = first
    for start in range(0, lines, LINES_A_FILE):
        out = []
        for _ in range(min(LINES_A_FILE, lines - start)):
            host, page = rng.randrange(15000), rng.randrange(100)
            out.append(
                f"test,host{host})/wiki/page-{page}.html 2026120{rng.randrange(10**7):07d} "
                f'{{"url": "http://host{host}.test/wiki/page-{page}.html", "mime": "text/html", '
                f'"status": "200", "digest": "sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", '
                f'"length": "4321", "offset": "{rng.randrange(10**8)}", '
                f'"filename": "crawl-{n:06d}.warc.gz"}}\n'
            )
        out.sort()
        name = f"crawl-{n:06d}.warc.gz"
        (warc_dir / INDEX_DIR / f"{name}.cdxj").write_text("".join(out))
        (warc_dir / name).write_bytes(b"")
        n += 1
    return n


def timed(warc_dir: Path) -> float:
    start = time.perf_counter()
    update_collection_index(warc_dir)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lines", type=int, default=1_000_000, help="lines the index holds")
    ap.add_argument("--new", type=int, default=100_000, help="lines one more run adds")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    figures: dict[str, list[float]] = {"all": [], "nothing new": [], "one more run": []}
    for seed in range(args.repeat):
        rng = random.Random(seed)
        root = Path(tempfile.mkdtemp(prefix="bench-index-"))
        try:
            (root / INDEX_DIR).mkdir()
            n = add_files(root, 0, args.lines, rng)
            figures["all"].append(timed(root))
            figures["nothing new"].append(timed(root))
            add_files(root, n, args.new, rng)
            figures["one more run"].append(timed(root))
        finally:
            shutil.rmtree(root)
    print(f"index of {args.lines:,} lines, then {args.new:,} more; medians of {args.repeat}")
    for what, values in figures.items():
        runs = ", ".join(f"{v:.3f}" for v in values)
        print(f"  {what:<14} {statistics.median(values):7.3f} s  ({runs})")


if __name__ == "__main__":
    main()
