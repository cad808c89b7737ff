"""What the step process keeps per page: a crawl's cycles replayed through its steps.

The step process of ``crawlkit crawl`` (crawlkit/crawl/step_process.py) runs the dedup
and recrawl steps on each cycle and keeps their stores open all run. This replays the
cycles of a finished crawl's state through the same functions (:func:`dedup_cycle`,
:func:`recrawl_cycle`) on fresh stores in this process, and prints after each cycle the
memory Python allocated (tracemalloc, numpy arrays included), the process's anonymous
RSS and glibc's heap (``mallinfo2``: in use, free, mapped apart), then the lines whose
memory grew most from ``--from`` cycles on, per page. Run on demand (never in CI), on
the state of ``bench/bench_crawl.py --keep``::

    nice .venv/bin/python bench/step_memory.py /tmp/bench-crawl-*/crawlkit-*/state

The state is not changed: its cycles are copied to a temporary directory first.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from crawlkit import streams
from crawlkit.crawl.step_process import dedup_cycle, recrawl_cycle
from crawlkit.dedup.store import DedupStore
from crawlkit.diag import NullReporter
from crawlkit.heap import map_large_blocks, release_free_heap
from crawlkit.recrawl import History

sys.path.insert(0, str(Path(__file__).parent))
from bench_crawl import anon_kib

# What the steps write into a cycle: removed from the copy, so each step runs afresh.
STEP_OUTPUTS = ("dedup.ndjson.zst", "sites.ndjson.zst", "recrawl-due.ndjson.zst")


def rss_anon() -> int:
    """This process's anonymous resident memory, in bytes."""
    return (anon_kib(os.getpid()) or 0) * 1024


class _MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def glibc_heap() -> str:
    """glibc's heap in use and free, and its separately mapped blocks ("" elsewhere):
    memory tracemalloc does not see (SQLite's, for one) is in these."""
    try:
        mallinfo2 = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return ""
    mallinfo2.restype = _MallInfo2
    info = mallinfo2()
    return (
        f", heap in use {info.uordblks / 1e6:6.2f} MB, free {info.fordblks / 1e6:5.2f}, "
        f"mapped {info.hblkhd / 1e6:6.2f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("state", type=Path, help="a crawl's state directory")
    ap.add_argument("--from", dest="start", type=int, default=5, help="warm-up cycles")
    ap.add_argument("--top", type=int, default=8, help="lines of growth to print")
    ap.add_argument("--cycles", type=int, default=0, help="replay only the first N cycles")
    ap.add_argument(
        "--no-trace",
        action="store_true",
        help="RSS only: tracemalloc keeps a trace of every live block, which is RSS too",
    )
    args = ap.parse_args()
    map_large_blocks()  # as the step process does
    with tempfile.TemporaryDirectory(prefix="step-memory-") as tmp:
        root = Path(tmp)
        shutil.copytree(args.state / "crawl" / "cycles", root / "cycles")
        cycles = sorted(p for p in (root / "cycles").iterdir() if p.is_dir())
        if args.cycles:
            cycles = cycles[: args.cycles]
        for cycle in cycles:
            for name in STEP_OUTPUTS:
                (cycle / name).unlink(missing_ok=True)
        store = DedupStore(root / "dedup")
        history = History(root / "recrawl")
        if not args.no_trace:
            tracemalloc.start(12)
        pages = 0
        first = None  # the snapshot after cycle --from
        seen: list[tuple[int, int, int]] = []  # (pages, traced, RssAnon) after each cycle
        for i, cycle in enumerate(cycles):
            pages += sum(1 for _ in streams.read_records([cycle / "pages.ndjson.zst"]))
            dedup_cycle(store, cycle, NullReporter())
            release_free_heap()
            recrawl_cycle(history, cycle, time.time(), 1.0, NullReporter())
            release_free_heap()
            gc.collect()
            now = (pages, tracemalloc.get_traced_memory()[0], rss_anon())
            seen.append(now)
            line = f"cycle {i:3d}: {pages:7,d} pages, traced {now[1] / 1e6:6.2f} MB, "
            line += f"RssAnon {now[2] / 1e6:6.2f} MB{glibc_heap()}"
            if i == args.start:
                first = tracemalloc.take_snapshot() if tracemalloc.is_tracing() else None
            elif i > args.start and pages > seen[args.start][0]:
                base = seen[args.start]
                per = pages - base[0]
                line += f"  (+{(now[1] - base[1]) / per:.0f} and "
                line += f"+{(now[2] - base[2]) / per:.0f} bytes a page since cycle {args.start})"
            print(line)
        if len(seen) < args.start + 2 or pages == seen[args.start][0]:
            print(f"fewer than {args.start + 2} cycles with pages: nothing to compare")
            return
        # The second half of the run: past the warm-up of SQLite's page cache and of
        # the allocator's arenas, which the figures since --from still include.
        (p0, t0, r0), (p1, t1, r1) = seen[len(seen) // 2], seen[-1]
        if p1 > p0:
            print(
                f"\nsecond half of the cycles ({p1 - p0:,} pages): traced "
                f"+{(t1 - t0) / (p1 - p0):.0f}, RssAnon +{(r1 - r0) / (p1 - p0):.0f} bytes a page"
            )
        per = pages - seen[args.start][0]
        if first is not None:  # not with --no-trace
            print(f"\ngrowth per page from cycle {args.start} ({per:,} pages), by line:")
            for stat in tracemalloc.take_snapshot().compare_to(first, "traceback")[: args.top]:
                frames = [f for f in stat.traceback if "/crawlkit/" in f.filename][-2:]
                where = " <- ".join(f"{Path(f.filename).name}:{f.lineno}" for f in reversed(frames))
                print(f"  {stat.size_diff / per:7.1f} bytes a page  {where}")
        store.close()
        history.close()


if __name__ == "__main__":
    main()
