"""Crash safety of the frontier: SIGKILL ``frontier add`` and ``frontier next`` at random
moments, many times, and check that no URL is lost and that a URL comes out twice only
as an at-least-once repeat of a batch (or an add) whose process was killed."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from crawlkit.stages.frontier import frontier_stats

KILLS = 20
CHUNKS = 4
PER_CHUNK = 3000


def _run(args: list[str], kill_after: float | None) -> tuple[int, float]:
    """Run crawlkit; SIGKILL it after ``kill_after`` seconds. Returns (status, seconds)."""
    began = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    try:
        if kill_after is not None:
            deadline = began + kill_after
            while time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.002)
            if proc.poll() is None:
                proc.kill()
        return proc.wait(timeout=120), time.monotonic() - began
    finally:
        if proc.poll() is None:  # never leave a process behind, whatever failed
            proc.kill()
            proc.wait()


def _batch(path: Path) -> list[str]:
    if not path.exists():
        return []
    return [json.loads(line)["url"] for line in path.read_text().splitlines() if line]


def test_sigkill_during_add_and_next_loses_nothing(tmp_path: Path) -> None:
    rng = random.Random(20261130)
    state = tmp_path / "state"
    chunks = []
    for c in range(CHUNKS):
        path = tmp_path / f"chunk{c}.ndjson"
        urls = [f"https://h{(c * 7 + i) % 250}.test/c{c}/p{i}" for i in range(PER_CHUNK)]
        path.write_text("".join(json.dumps({"url": u, "reason": "link"}) + "\n" for u in urls))
        chunks.append((path, urls))

    kills = 0
    attempt = 0
    took = {"add": 0.8, "next": 0.8}  # last clean run of each command, to aim the kills
    batches: list[tuple[Path, bool]] = []  # (file, written by a killed process)
    readded: set[str] = set()  # URLs of chunks whose add was killed (maybe after commit)

    def run(op: str, args: list[str], kill: bool) -> bool:
        """One attempt; True if it completed, False if it was killed."""
        nonlocal kills
        delay = rng.uniform(0.4, 1.05) * took[op] if kill else None
        code, seconds = _run(args, delay)
        if code == -9:
            kills += 1
            took[op] *= 1.25  # a slow machine: aim later, so runs also complete
            return False
        assert code == 0, code
        took[op] = seconds
        return True

    def next_once(kill: bool) -> bool:
        """One next attempt; True if it completed with an empty batch."""
        nonlocal attempt
        attempt += 1
        out = tmp_path / f"batch{attempt:04d}.ndjson"
        args = ["frontier", "next", "--state", str(state), "--max", "1500", "--per-host", "8"]
        args.append("--no-budgets")  # budgets would park URLs for a day; not the subject here
        done = run("next", [*args, "-o", str(out)], kill)
        batches.append((out, not done))
        return done and not _batch(out)

    for path, urls in chunks:
        add = ["frontier", "add", "--state", str(state), str(path)]
        while not run("add", add, kills < KILLS):
            readded.update(urls)  # rerun until it completes, as a pipeline retry would
        for _ in range(2):
            next_once(kill=True)
    for _ in range(3 * KILLS):
        if kills >= KILLS:
            break
        next_once(kill=True)
    for _ in range(200):  # drain
        if next_once(kill=False):
            break
    assert kills >= 20

    seen: Counter[str] = Counter()
    from_killed: set[str] = set()
    for path, killed in batches:
        urls = _batch(path)
        seen.update(urls)
        if killed:
            from_killed.update(urls)
    every = {u for _, urls in chunks for u in urls}
    assert set(seen) == every  # no URL lost
    repeats = {u for u, n in seen.items() if n > 1}
    assert repeats <= from_killed | readded  # repeats only after a kill
    stats = frontier_stats(state)
    assert stats["queued"] == 0 and stats["parked"] == 0
    leftovers = [p.name for p in (state / "frontier").iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
