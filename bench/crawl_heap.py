"""What grows in a crawl's heap: tracemalloc snapshots of ``crawlkit crawl`` (the main
process: fetch loop, post-processing, frontier) at two times, and the lines whose
memory grew most between them (issue 27 item 5).

    .venv/bin/python bench/crawl_heap.py --hosts 2000 --for 80 --at 20,60

The web is bench_crawl's few-seed web (``crawlkit testweb``, loopback only), or with
``--scenario seeded`` its seeded one (every host known from the start). tracemalloc
slows the crawl (about 2x): read the growth per line, not the speed. Extract workers
(``-j``) are other processes and not traced; the link resolver's cache lives there.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_crawl import testweb

TRACED = """
import runpy, sys, threading, time, tracemalloc
at, out = [float(x) for x in sys.argv[1].split(",")], sys.argv[2]
sys.argv = ["crawlkit", *sys.argv[3:]]
tracemalloc.start(1)
def snap():
    start, shots = time.monotonic(), []
    for t in at:
        time.sleep(max(0.0, start + t - time.monotonic()))
        shots.append(tracemalloc.take_snapshot())
    stats = shots[1].compare_to(shots[0], "lineno")
    size = [s.size for s in shots[1].statistics("filename")]
    with open(out, "w") as f:
        f.write(f"traced at {at[0]:g}s / {at[1]:g}s: "
                f"{sum(s.size for s in shots[0].statistics('filename')) >> 20} / "
                f"{sum(size) >> 20} MiB\\n")
        for s in stats[:25]:
            f.write(f"{s.size_diff / 1024:+10.0f} KiB {s.count_diff:+8d} {s.traceback}\\n")
        f.write("largest at the second snapshot:\\n")
        for s in shots[1].statistics("lineno")[:15]:
            f.write(f"{s.size / 1024:10.0f} KiB {s.count:8d} {s.traceback}\\n")
def guarded():
    try:
        snap()
    except BaseException as exc:
        with open(out, "w") as f:
            f.write(f"snapshot failed: {exc!r}\\n")
threading.Thread(target=guarded).start()  # the process waits for it
runpy.run_module("crawlkit", run_name="__main__")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--scenario", choices=["few-seed", "seeded"], default="few-seed")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=15)
    ap.add_argument("--for", dest="duration", type=float, default=80.0)
    ap.add_argument("--at", default="20,60", help="the two snapshot times, seconds")
    ap.add_argument("--concurrency", type=int, default=256, help="as bench_crawl's")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawl-heap-") as tmp:
        out = Path(tmp) / "growth.txt"
        with testweb(Path(tmp), args.scenario, args.hosts, args.pages, False) as web:
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    TRACED,
                    args.at,
                    str(out),
                    "crawl",
                    web["seeds"],
                    "--state",
                    str(Path(tmp) / "state"),
                    "--scope",
                    "any",
                    "--min-delay",
                    "0",
                    "--concurrency",
                    str(args.concurrency),
                    "--for",
                    f"{args.duration:g}s",
                    "--allow-net",
                    web["allow_net"],
                    "--hosts-file",
                    web["hosts_file"],
                    "-j",
                    "1",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
        print(out.read_text() if out.exists() else "no snapshot (the crawl ended first)")


if __name__ == "__main__":
    main()
