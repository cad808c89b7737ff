"""Benchmark: what the shared per-IP table (``--ip-table``) costs per request.

Run: ``nice .venv/bin/python bench/bench_iptable.py [--requests 200000] [--repeat 5]
[--fetch]``

1. The scheduler's request cycle (``pop_ready``, ``start``, ``finish``, ``push``) on a
   fake clock, 2,000 hosts on 1,000 addresses, a request every 0.5 ms (so no address is
   ever refused: this is the price every request pays), without a gate (the baseline,
   measured in the same run), then through a real :class:`IpTable` with no gap
   (slot locks only) and with a 0.25 s gap (slot locks and the time's lock, read and
   write). Rounds alternate; medians of ``--repeat``.
2. The table's ``acquire`` and ``release`` alone, and a refused ``acquire`` (every slot
   held by another process).
3. With ``--fetch``: ``crawlkit fetch`` over a ``crawlkit testweb`` (400 hosts, 10 pages
   of 4 KB, gaps 0, 100 connections) with and without ``--ip-table``, alternating; CPU
   seconds of the fetch process per 1,000 requests, medians.

Times in 1. and 2. are the thread's CPU time (``time.thread_time``), so other work on
this shared machine inflates them less than wall time would; still, the ratio is the
figure to quote.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from crawlkit.fetch.iptable import IpClaim, IpTable
from crawlkit.fetch.scheduler import HostQueue, Scheduler

ROOT = Path(__file__).resolve().parent.parent


def cycle(requests: int, table: IpTable | None, gap: float) -> float:
    """Seconds per request of the scheduler's cycle (fake clock, shared with the table)."""
    now = [0.0]
    if table is not None:
        table.clock = lambda: now[0]
    sched = Scheduler(min_delay=0.0, delay_factor=0.0, per_ip=2, per_ip_delay=gap, ip_gate=table)
    hosts = [HostQueue(f"h{i}", address=f"10.0.{i // 500}.{i // 2 % 250}") for i in range(2000)]
    for h in hosts:
        h.items.append(None)
        sched.push(h)
    done = 0
    t0 = time.thread_time()
    while done < requests:
        t = now[0]
        h = sched.pop_ready(t)
        if h is None:
            nt = sched.next_time()
            now[0] = t + 0.0005 if nt is None else max(nt, t + 0.0005)
            continue
        sched.start(h, t)
        sched.finish(h, t, elapsed=0.0001, status=200)
        sched.push(h)
        now[0] = t + 0.0005
        done += 1
    elapsed = time.thread_time() - t0
    sched.close()
    return elapsed / requests


def _hold(path: str, ready: object, stop: object) -> None:
    table = IpTable(path)
    table.acquire("192.0.2.1", 1, 0.0)
    ready.set()  # type: ignore[attr-defined]
    stop.wait(60)  # type: ignore[attr-defined]


def direct(path: Path, n: int) -> dict[str, float]:
    """Microseconds of one acquire + release, with and without a gap, and of a refusal."""
    table = IpTable.open(path)
    out: dict[str, float] = {}
    for name, gap in (("acquire+release, no gap", 0.0), ("acquire+release, gap", 1e-9)):
        t0 = time.thread_time()
        for i in range(n):
            claim = table.acquire(f"10.0.{i % 200}.1", 2, gap)
            assert isinstance(claim, IpClaim)
            table.release(claim, True)
        out[name] = (time.thread_time() - t0) / n * 1e6
    ctx = multiprocessing.get_context("fork")
    ready, stop = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(str(path), ready, stop))
    proc.start()
    ready.wait(30)
    t0 = time.thread_time()
    for _ in range(n):
        assert not isinstance(table.acquire("192.0.2.1", 1, 0.0), IpClaim)
    out["refused acquire (slot held elsewhere)"] = (time.thread_time() - t0) / n * 1e6
    stop.set()
    proc.join(30)
    return out


def fetch_cpu(web: dict, urls: bytes, tmp: Path, table: Path | None) -> float:
    """CPU seconds (user + system) of one ``crawlkit fetch`` run per 1,000 requests."""
    state = Path(tempfile.mkdtemp(dir=tmp))
    args = [sys.executable, "-m", "crawlkit", "fetch", "--state", str(state)]
    args += ["--hosts-file", web["hosts_file"], "--allow-net", web["allow_net"]]
    args += ["--min-delay", "0s", "--delay-factor", "0", "--per-ip-delay", "0s", "--quiet"]
    args += ["--concurrency", "100", "--log", str(state / "log.ndjson")]
    if table is not None:
        args += ["--ip-table", str(table)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(args, input=urls, check=True, cwd=ROOT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    n = urls.count(b"\n")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu / (n + 400) * 1000  # pages and one robots.txt per host


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fetch", action="store_true")
    opts = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-iptable-"))
    path = tmp / "ip.table"
    table = IpTable.open(path)
    kinds = [(gap, t) for gap in (0.0, 0.25) for t in (None, table)]
    rounds: dict[tuple[float, bool], list[float]] = {(g, t is not None): [] for g, t in kinds}
    for _ in range(opts.repeat):
        for gap, t in kinds:
            rounds[(gap, t is not None)].append(cycle(opts.requests, t, gap))
    print(f"scheduler cycle, {opts.requests} requests x {opts.repeat} rounds (medians):")
    for gap in (0.0, 0.25):
        base = statistics.median(rounds[(gap, False)])
        med = statistics.median(rounds[(gap, True)])
        print(
            f"  per-IP gap {gap:4}: no table {base * 1e6:6.2f} µs/request, table "
            f"{med * 1e6:6.2f} µs/request: x{med / base:.2f} (+{(med - base) * 1e6:.2f} µs)"
        )
    table.clock = time.monotonic
    print("table calls alone:")
    for name, us in direct(tmp / "direct.table", 100_000).items():
        print(f"  {name:40} {us:6.2f} µs")
    if opts.fetch:
        fetch_rounds(tmp, opts.repeat)


def fetch_rounds(tmp: Path, repeat: int) -> None:
    web_dir = tmp / "web"
    args = [sys.executable, "-m", "crawlkit", "testweb", "--hosts", "400", "--pages", "10"]
    args += ["--page-kb", "4", "--special", "none", "--dir", str(web_dir)]
    proc = subprocess.Popen(
        args,
        stdout=subprocess.PIPE,
        cwd=ROOT,
    )
    try:
        assert proc.stdout is not None
        web = json.loads(proc.stdout.readline())
        manifest = json.loads(Path(web["manifest"]).read_text())
        lines = [u for h in manifest["hosts"] for u in h["allowed"][:10]]
        urls = ("\n".join(lines) + "\n").encode()
        fetch_cpu(web, urls, tmp, None)  # warm-up: fills the test web's page cache
        res: dict[str, list[float]] = {"no table": [], "table": []}
        for i in range(repeat):
            res["no table"].append(fetch_cpu(web, urls, tmp, None))
            res["table"].append(fetch_cpu(web, urls, tmp, tmp / f"fetch-{i}.table"))
        base = statistics.median(res["no table"])
        print(f"crawlkit fetch, {len(lines)} pages + 400 robots.txt, {repeat} rounds (medians):")
        for name, values in res.items():
            med = statistics.median(values)
            runs = ", ".join(f"{v:.3f}" for v in sorted(values))
            print(f"  {name:9} {med:.3f} CPU s per 1,000 requests  x{med / base:.3f}  ({runs})")
    finally:
        proc.terminate()
        proc.wait()
    os.sync()


if __name__ == "__main__":
    main()
