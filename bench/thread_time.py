"""Where a running process's threads spend their wall time: on a CPU, waiting for one, or asleep.

Reads ``/proc/PID/task/*/stat`` (CPU time) and ``schedstat`` (time runnable but
waiting on a run queue) twice, ``--for`` seconds apart, and prints for the busiest
threads the share of wall time each spent running, waiting for a CPU (the machine is
short of cores), and asleep (I/O, ``epoll``, a lock, or the GIL: CPython's GIL waiter
sleeps on a condition variable). A thread of a GIL-bound process shows CPU + waiting
near 1 for the GIL holder and the others asleep; a starved one shows a large wait.

    .venv/bin/python bench/thread_time.py --match=--hosts-file --match=--concurrency --for 40

``--match`` picks the process whose command line contains every given string
(waiting for it to appear), e.g. while ``bench/bench_crawl.py`` runs a crawl; with
``--tree`` its child processes count too (a crawl's extract and step processes).
Linux only.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return int(stat[stat.rindex(")") + 2 :].split()[1])
    except (OSError, ValueError, IndexError):
        return 0


def find(needles: list[str]) -> int:
    """The process whose command line holds every needle (waits for one); of several,
    the innermost: a wrapper (``unshare``, ``bash -c``) whose command line holds the
    tool's is the parent of the tool, not the tool."""
    me = os.getpid()
    while True:
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == me:
                continue
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if all(n in cmd for n in needles):
                found.append(int(entry.name))
        parents = {_parent(pid) for pid in found}
        innermost = [pid for pid in found if pid not in parents]
        if innermost:
            return innermost[0]
        time.sleep(0.2)


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (a crawl's extract and step processes)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            children.setdefault(_parent(int(entry.name)), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def sample(pids: list[int]) -> dict[tuple[int, int], tuple[float, float]]:
    """Per (process, thread): (CPU seconds, seconds runnable but waiting for a CPU)."""
    out = {}
    for pid in pids:
        try:
            out.update(_sample(pid))
        except OSError:
            continue  # the process ended between the listing and the read
    return out


def _sample(pid: int) -> dict[tuple[int, int], tuple[float, float]]:
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            stat = (task / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            cpu = (int(fields[11]) + int(fields[12])) / TICK
            wait = int((task / "schedstat").read_text().split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            continue  # the thread ended between the listing and the read
        out[(pid, int(task.name))] = (cpu, wait)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("pid", nargs="?", type=int, help="the process (or use --match)")
    ap.add_argument("--match", action="append", default=[], help="a command-line substring")
    ap.add_argument("--for", dest="duration", type=float, default=30.0, help="seconds")
    ap.add_argument("--after", type=float, default=5.0, help="seconds to skip first")
    ap.add_argument("--top", type=int, default=5, help="threads shown")
    ap.add_argument(
        "--tree",
        action="store_true",
        help="the process's children too (a crawl's extract and step processes)",
    )
    args = ap.parse_args()
    if args.pid is None and not args.match:
        ap.error("give a PID or --match")
    pid = args.pid if args.pid is not None else find(args.match)
    time.sleep(args.after)
    pids = descendants(pid) if args.tree else [pid]
    before, t0 = sample(pids), time.monotonic()
    time.sleep(args.duration)
    after, wall = sample(pids), time.monotonic() - t0
    rows = []
    for key, (cpu, wait) in after.items():
        cpu0, wait0 = before.get(key, (0.0, 0.0))
        rows.append(((cpu - cpu0) / wall, (wait - wait0) / wall, key))
    rows.sort(reverse=True)
    print(f"pid {pid}, {wall:.1f} s, load average {os.getloadavg()[0]:.1f}")
    print(f"  {'thread':>14}  {'on CPU':>7}  {'wait CPU':>8}  {'asleep':>7}")
    for cpu, wait, (proc, tid) in rows[: args.top]:
        name = "main" if tid == proc else str(tid)
        if proc != pid:
            name = f"{proc}:{name}"  # a child process's thread
        print(f"  {name:>14}  {cpu:7.2f}  {wait:8.2f}  {max(0.0, 1 - cpu - wait):7.2f}")
    print(f"  {'all threads':>14}  {sum(r[0] for r in rows):7.2f}  {sum(r[1] for r in rows):8.2f}")


if __name__ == "__main__":
    main()
