"""CPU a loopback TCP connect costs the fetch process, by event loop.

    .venv/bin/python bench/bench_connect.py [--connects 3000] [--repeat 5]

A listener in another process accepts and closes each connection (its CPU is not
counted). Each candidate connects ``--connects`` non-blocking sockets one after
another, as aiohttp's connector does (``await loop.sock_connect(sock, (address,
port))``), and the process's CPU time (user + system: the kernel's handshake is in it)
is divided by the connects. Candidates, in turns:

- ``uvloop``: uvloop's own ``sock_connect``, which resolves the numeric address on
  libuv's thread pool first (the baseline);
- ``fetch loop``: :class:`crawlkit.fetch.eventloop` (connects in place);
- ``asyncio``: the standard library's loop;
- ``connect_ex``: the bare system call, no event loop (the floor).

Medians of ``--repeat`` runs, each candidate's ratio to uvloop's.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import uvloop

from crawlkit.fetch import eventloop

LISTENER = """
import socket, sys
server = socket.create_server(("127.0.0.1", 0), backlog=4096)
print(server.getsockname()[1], flush=True)
while True:
    conn, _ = server.accept()
    conn.close()
"""


def on_loop(loop_class: type, address: tuple[str, int], connects: int) -> float:
    """CPU seconds a connect, ``connects`` of them on a loop of ``loop_class``."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        start = time.process_time()
        for _ in range(connects):
            with socket.socket() as sock:
                sock.setblocking(False)
                await loop.sock_connect(sock, address)
        return (time.process_time() - start) / connects

    with asyncio.Runner(loop_factory=loop_class) as runner:
        return runner.run(main())


def bare(address: tuple[str, int], connects: int) -> float:
    start = time.process_time()
    for _ in range(connects):
        with socket.socket() as sock:
            sock.setblocking(False)
            sock.connect_ex(address)
    return (time.process_time() - start) / connects


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--connects", type=int, default=3000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    listener = subprocess.Popen([sys.executable, "-c", LISTENER], stdout=subprocess.PIPE, text=True)
    try:
        assert listener.stdout is not None
        address = ("127.0.0.1", int(listener.stdout.readline()))
        candidates: dict[str, Callable[[], float]] = {
            "uvloop": lambda: on_loop(uvloop.Loop, address, args.connects),
            "fetch loop": lambda: on_loop(eventloop.fetch_loop_class(), address, args.connects),
            "asyncio": lambda: on_loop(asyncio.SelectorEventLoop, address, args.connects),
            "connect_ex": lambda: bare(address, args.connects),
        }
        runs: dict[str, list[float]] = {name: [] for name in candidates}
        for _ in range(args.repeat):
            for name, measure in candidates.items():
                runs[name].append(measure())
    finally:
        listener.kill()
        listener.wait()
    base = statistics.median(runs["uvloop"])
    print(f"{args.connects} loopback connects, median of {args.repeat} runs, CPU a connect")
    for name, values in runs.items():
        median = statistics.median(values)
        each = ", ".join(f"{v * 1e6:.0f}" for v in values)
        speed = f"{base / median:4.2f}x as fast as uvloop"
        print(f"  {name:<11} {median * 1e6:7.1f} µs  ({speed}; runs {each})")


if __name__ == "__main__":
    main()
