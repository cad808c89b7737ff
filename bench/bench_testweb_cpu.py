"""Benchmark: CPU time `crawlkit testweb` spends per request, crawl-shaped load.

Run on demand (never in CI):

    .venv/bin/python bench/bench_testweb_cpu.py [--hosts 2000 --pages 15 --requests 3000]
    .venv/bin/python bench/bench_testweb_cpu.py --src A=/tmp/base --src B=.

Why: bench_crawl.py runs the crawler and the test web on the same 2-core machine, so
every millisecond of CPU the server burns is taken from the crawler. wrk
(bench_testweb.py) measures throughput on a hot cache; a crawl instead fetches each
page once, so here every request is a first fetch, like a crawl's.

What it does, per ``--src`` (a source tree holding ``crawlkit/``; default: this
tree), in alternation for ``--repeat`` rounds: starts the testweb process with the
few-seed options of bench_crawl.py, reads its manifest, then fetches ``--requests``
URLs over loopback -- host by host (robots.txt first, then that host's pages, one
keep-alive connection per host, ``Accept-Encoding: gzip, deflate`` like the crawler)
with ``--conns`` hosts at once -- and reads the server's user+system CPU time from
``/proc/PID/stat`` before and after the load. Reports ms CPU per request (median of
the rounds) and the ratio of each tree to the first.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
TICK = os.sysconf("SC_CLK_TCK")

LAUNCH = (
    "import sys; sys.path.insert(0, sys.argv.pop(1)); import crawlkit; "
    "assert crawlkit.__file__.startswith(sys.path[0]), crawlkit.__file__; "
    "from crawlkit_cli.main import main; sys.argv[0] = 'crawlkit'; main()"
)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of ``pid`` (fields 14 and 15 of /proc/PID/stat)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


async def fetch_host(addr: str, port: int, host: str, paths: list[str], gzip: bool) -> int:
    """GET every path over one keep-alive connection; returns the body bytes read."""
    reader, writer = await asyncio.open_connection(addr, port)
    got = 0
    accept = "Accept-Encoding: gzip, deflate\r\n" if gzip else ""
    try:
        for path in paths:
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: bench\r\n{accept}\r\n".encode()
            )
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            got += len(await reader.readexactly(length))
    finally:
        writer.close()
    return got


async def load(manifest: dict, requests: int, conns: int, gzip: bool = True) -> int:
    jobs: list[tuple[str, int, str, list[str]]] = []
    left = requests
    for h in manifest["hosts"]:
        if h["private"] or h["kind"] != "ordinary" or left <= 0:
            continue
        urls = [h["robots"]["url"], *h["pages"]][:left]
        left -= len(urls)
        parts = urlsplit(urls[0])
        paths = [
            urlsplit(u).path + ("?" + urlsplit(u).query if urlsplit(u).query else "") for u in urls
        ]
        jobs.append((h["addr"], parts.port or 80, h["name"], paths))
    queue: asyncio.Queue[tuple[str, int, str, list[str]]] = asyncio.Queue()
    for job in jobs:
        queue.put_nowait(job)
    done = 0

    async def worker() -> None:
        nonlocal done
        while not queue.empty():
            addr, port, name, paths = queue.get_nowait()
            await fetch_host(addr, port, name, paths, gzip)
            done += len(paths)

    await asyncio.gather(*(worker() for _ in range(conns)))
    return done


def one_round(src: Path, args: argparse.Namespace) -> float:
    with tempfile.TemporaryDirectory(prefix="twcpu-") as tmp:
        cmd = [
            sys.executable, "-c", LAUNCH, str(src), "testweb", "--dir", tmp,
            "--hosts", str(args.hosts), "--pages", str(args.pages), "--seed", "11",
            "--ip-hosts", "--seed-hosts", "5", "--robots-404", "0.5",
            "--crawl-delay-hosts", "100",
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=src)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()  # the ready line: wait on the event
            info = json.loads(line)
            manifest = json.loads(Path(info["manifest"]).read_text())
            before = cpu_seconds(proc.pid)
            n = asyncio.run(load(manifest, args.requests, args.conns, not args.identity))
            after = cpu_seconds(proc.pid)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
    return (after - before) * 1000.0 / n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--src", action="append", default=[], help="NAME=DIR (repeatable)")
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=15)
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--conns", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument(
        "--identity", action="store_true", help="no Accept-Encoding (shows gzip's share)"
    )
    args = ap.parse_args()
    trees = [s.split("=", 1) for s in args.src] or [["this", str(ROOT)]]
    results: dict[str, list[float]] = {name: [] for name, _ in trees}
    for _ in range(args.repeat):
        for name, src in trees:
            ms = one_round(Path(src).resolve(), args)
            results[name].append(ms)
            print(f"{name}: {ms:.3f} ms CPU/request", flush=True)
    first = statistics.median(results[trees[0][0]])
    for name, runs in results.items():
        med = statistics.median(runs)
        print(f"{name}: median {med:.3f} ms CPU/request, ratio {med / first:.2f} x {trees[0][0]}")


if __name__ == "__main__":
    main()
