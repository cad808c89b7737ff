"""What grows in a crawl's heap: tracemalloc snapshots of ``crawlkit crawl`` (the main
process: fetch loop, post-processing, frontier) at two times, and the lines whose
memory grew most between them (issue 27 item 5).

    .venv/bin/python bench/crawl_heap.py --hosts 2000 --for 80 --at 20,60

The web is bench_crawl's few-seed web (``crawlkit testweb``, loopback only), or with
``--scenario seeded`` its seeded one (every host known from the start). tracemalloc
slows the crawl (about 2x): read the growth per line, not the speed. Last, for the
three lines that grew most, what holds their blocks still alive (a class through its
``__dict__``, a container, a record gc does not track): the allocating line says only
where an object was made, this says who keeps it (a site table's tuples kept every
link's copy of a name, found so). Extract workers
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
        f.write("who holds the blocks of the 3 lines that grew most (alive now):\\n")
        grown = {(st.traceback[0].filename, st.traceback[0].lineno) for st in stats[:3]}
        for line in holders(grown):
            f.write(line + "\\n")
def holders(lines):
    # Each object allocated at one of ``lines`` and still alive, counted by what refers
    # to it: an object's class (through its __dict__), a container, or a container
    # inside an untracked record (gc does not list dicts of atoms, e.g. orjson's).
    import collections, gc
    objs = gc.get_objects()
    owner_of = {}
    for o in objs:
        d = None if isinstance(o, type) else getattr(o, "__dict__", None)
        if type(d) is dict:
            owner_of[id(d)] = type(o).__name__
    def at(o):
        tb = tracemalloc.get_object_traceback(o)
        return tb is not None and (tb[0].filename, tb[0].lineno) in lines
    counts = collections.Counter()
    containers = collections.Counter()
    keep = {}
    for c in objs:
        name = owner_of.get(id(c), "") + "." if type(c) is dict and id(c) in owner_of else ""
        name += type(c).__name__
        for r in gc.get_referents(c):
            if at(r):
                counts[name] += 1
                if type(c) in (list, dict, set, collections.deque) and id(c) not in owner_of:
                    containers[id(c)] += 1
                    keep[id(c)] = c
            if type(r) in (dict, tuple) and not gc.is_tracked(r):
                n = sum(1 for rr in gc.get_referents(r) if at(rr))
                if n:
                    counts[name + " > untracked " + type(r).__name__] += n
                    containers[id(c)] += n
                    keep[id(c)] = c
    out = [f"  {n:9d} {k}" for k, n in counts.most_common(12)]
    for cid, n in containers.most_common(6):
        c = keep[cid]
        refs = []
        for u in gc.get_referrers(c):
            if u is objs or u is keep:
                continue
            refs.append(owner_of.get(id(u), type(u).__name__) + ("" if type(u) is not dict else
                        "." + next((str(k) for k, v in u.items() if v is c), "?")))
        size = len(c) if hasattr(c, "__len__") else "-"
        out.append(f"  {n:9d} in one {type(c).__name__} of {size} held by {refs[:4]}")
    return out
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
    ap.add_argument(
        "--no-warm",
        action="store_true",
        help="the web makes its pages as they are asked for (a large web starts at once; "
        "the server then takes more of the CPU)",
    )
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="crawl-heap-") as tmp:
        out = Path(tmp) / "growth.txt"
        with testweb(
            Path(tmp), args.scenario, args.hosts, args.pages, False, warm=not args.no_warm
        ) as web:
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
