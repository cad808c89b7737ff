"""Benchmark: `crawlkit testweb` throughput (req/s on one core, 20 KB pages) with wrk.

Run on demand (never in CI):  .venv/bin/python bench/bench_testweb.py [--seconds 5]

Needs wrk (Debian: apt-get install -y wrk), an independent load generator written in C.
The server process is pinned to CPU 0 and wrk to CPU 1 (taskset) when there are two
CPUs, so "one core" is literal. Measured in the same run:

* baseline: a bare uvloop asyncio Protocol answering every request with the same
  20 KB bytes (no parsing, no routing, no log): the ceiling of this design;
* testweb: the real `crawlkit testweb` process (Host routing, rendering cache,
  conditional-GET check, one NDJSON log line per request), keep-alive, wrk cycling
  over 50 pages of one host;
* startup: wall time from launching `crawlkit testweb --hosts 3 --pages 20` to its
  ready line.

Reports medians of --repeat runs and the ratio testweb / baseline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BASELINE = r"""
import asyncio, sys, uvloop
body = b"x" * 20480
resp = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n"
        b"Connection: keep-alive\r\n\r\n" % len(body)) + body
class P(asyncio.Protocol):
    def connection_made(self, t): self.t = t; self.buf = b""
    def data_received(self, d):
        self.buf += d
        while b"\r\n\r\n" in self.buf:
            _, _, self.buf = self.buf.partition(b"\r\n\r\n")
            self.t.write(resp)
async def main():
    srv = await asyncio.get_running_loop().create_server(P, "127.0.0.1", 0)
    print(srv.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
uvloop.run(main())
"""

LUA = """
paths = {%s}
i = 0
request = function()
  i = (i %% #paths) + 1
  return wrk.format("GET", paths[i], {["Host"] = "%s"})
end
"""


def pin(cpu: int) -> list[str]:
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        return ["taskset", "-c", str(cpu)]
    return []


def wrk(url: str, seconds: float, conns: int, script: str | None) -> float:
    cmd = [*pin(1), "wrk", "-t1", f"-c{conns}", f"-d{seconds:g}s"]
    if script:
        cmd += ["-s", script]
    out = subprocess.run([*cmd, url], capture_output=True, text=True, check=True).stdout
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if errors:
        raise SystemExit(f"wrk saw {errors.group(1)} error responses:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def start(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, proc.stdout.readline()


def stop(proc: subprocess.Popen[str]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--conns", type=int, default=32)
    args = ap.parse_args()
    if not shutil.which("wrk"):
        raise SystemExit("wrk is not installed (apt-get install -y wrk); no figure measured")
    tmp = Path(tempfile.mkdtemp(prefix="bench-testweb-"))

    base_rates = []
    proc, line = start([*pin(0), sys.executable, "-c", BASELINE])
    try:
        port = int(line)
        for _ in range(args.repeat):
            base_rates.append(wrk(f"http://127.0.0.1:{port}/", args.seconds, args.conns, None))
    finally:
        stop(proc)

    web_rates = []
    cmd = [
        *pin(0),
        sys.executable,
        "-m",
        "crawlkit",
        "testweb",
        "--hosts",
        "1",
        "--pages",
        "50",
        "--page-kb",
        "20",
        "--special",
        "none",
        "--dir",
        str(tmp / "web"),
    ]
    proc, line = start(cmd)
    try:
        info = json.loads(line)
        manifest = json.loads(Path(info["manifest"]).read_text())
        h0 = manifest["hosts"][0]
        paths = [u.split(str(info["port"]), 1)[1] for u in h0["pages"]]
        script = tmp / "paths.lua"
        host = f"h0.test:{info['port']}"
        script.write_text(LUA % (", ".join(f'"{p}"' for p in paths), host))
        url = f"http://{h0['addr']}:{info['port']}/"
        wrk(url, 1, args.conns, str(script))  # warm the page cache
        for _ in range(args.repeat):
            web_rates.append(wrk(url, args.seconds, args.conns, str(script)))
    finally:
        stop(proc)
    with open(info["log"], "rb") as log:
        logged = sum(1 for _ in log)
    sizes = list(paths)

    startups = []
    for i in range(args.repeat):
        t0 = time.perf_counter()
        proc, line = start(
            [
                sys.executable,
                "-m",
                "crawlkit",
                "testweb",
                "--hosts",
                "3",
                "--pages",
                "20",
                "--dir",
                str(tmp / f"small{i}"),
            ]
        )
        startups.append(time.perf_counter() - t0)
        stop(proc)
        json.loads(line)

    base, web = statistics.median(base_rates), statistics.median(web_rates)
    pinned = "yes (server CPU 0, wrk CPU 1)" if pin(0) else "no"
    print(
        f"pinned: {pinned}; wrk -t1 -c{args.conns} -d{args.seconds:g}s x{args.repeat}; "
        f"{len(sizes)} pages"
    )
    print(f"baseline bare uvloop 20 KB : {base:10.0f} req/s (runs: {base_rates})")
    print(f"crawlkit testweb 20 KB     : {web:10.0f} req/s (runs: {web_rates})")
    print(f"ratio testweb / baseline   : {web / base:10.2f}")
    print(f"request log lines written  : {logged}")
    print(f"startup to ready (3x20 web): {statistics.median(startups) * 1000:10.0f} ms (median)")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
