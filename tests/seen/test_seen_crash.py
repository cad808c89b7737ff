"""Crash tests for the seen set: SIGKILL at every kind of commit step, and at random times.

After any number of kills the store must open, a clean rerun must finish the job, and
the URLs emitted over all the runs together must be exactly the distinct inputs: a
kill may repeat a URL, never lose one (docs/design.md invariants 4 and 5).
"""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

from crawlkit.seen import SeenStore
from crawlkit.stages.seen_merge import SeenMerge
from crawlkit.url import Canonicalizer

# Runs the seen-merge command (only it is imported, so other commands cannot get in
# the way) with a commit hook that kills the process at the Nth step.
DRIVER = """
import os, signal, sys
import typer
from crawlkit.seen import SeenStore
from crawlkit_cli import seen_merge
from crawlkit_cli.app import app

kill_at = int(sys.argv[1])
steps = []

def hook(step):
    steps.append(step)
    if len(steps) == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    if kill_at == 0:
        sys.stderr.write(f"step {step}\\n")

SeenStore.commit_hook = hook
typer.main.get_command(app).main(args=sys.argv[2:], prog_name="crawlkit")
"""

CANON = Canonicalizer()


def make_input(n_distinct: int, n_total: int, seed: int) -> tuple[bytes, set[str]]:
    rng = random.Random(seed)
    urls = [f"https://h{i % 13}.example.com/p/{i}?b=1&a=2" for i in range(n_distinct)]
    picked = [rng.choice(urls) for _ in range(n_total)]
    data = b"".join(orjson.dumps({"url": u, "n": i}) + b"\n" for i, u in enumerate(picked))
    return data, {CANON.canonicalize(u) for u in picked}


def emitted_urls(output: bytes) -> set[str]:
    """URLs of the complete lines (a kill can cut the last line short)."""
    urls = set()
    for line in output.split(b"\n"):
        with contextlib.suppress(orjson.JSONDecodeError, KeyError):
            urls.add(orjson.loads(line)["url"])
    return urls


def finish_in_process(state: Path, data: bytes) -> set[str]:
    """A clean rerun (the library, like the command with stdout)."""
    out: list[bytes] = []
    with SeenStore.open(state) as store:
        merger = SeenMerge(store, canonicalizer=CANON, chunk_size=9)
        merger.run([("in", i, line) for i, line in enumerate(data.splitlines())], out.append)
    return emitted_urls(b"".join(out))


def stored_urls(state: Path, candidates: set[str]) -> set[str]:
    """Which of ``candidates`` the store (opened read-only, as after a crash) holds."""
    urls = sorted(candidates)
    fps = np.array([int(CANON.parse(u).fp, 16) for u in urls], dtype=np.uint64)
    with SeenStore.open(state, writable=False) as store:
        held = store.contains(fps)
        assert store.stored == int(held.sum())  # and nothing that is not a candidate
    return {u for u, h in zip(urls, held, strict=True) if h}


def check_final_state(state: Path, expected: set[str]) -> None:
    with SeenStore.open(state) as store:
        fps = np.array([int(CANON.parse(u).fp, 16) for u in sorted(expected)], dtype=np.uint64)
        assert store.contains(fps).all()
        assert store.stored == len(expected)
        manifest = store.manifest
        assert manifest is not None
        live = {"manifest.json", manifest.filter, *(r.file for r in manifest.runs)}
    left = {p.name for p in (state / "seen").iterdir()} - live
    assert not left, f"leftovers after reopen: {left}"


def test_kill_at_random_commit_steps(tmp_path: Path):
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    data, expected = make_input(90, 130, seed=1)
    # Small batches, a filter that must grow, and compaction (fan-in 4) all happen.
    args = ["seen-merge", "--batch-size", "9", "--capacity", "30"]

    def run(state: Path, kill_at: int) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(
            [sys.executable, str(driver), str(kill_at), *args, "--state", str(state)],
            input=data,
            capture_output=True,
            timeout=60,
        )

    clean = run(tmp_path / "clean", 0)
    assert clean.returncode == 0, clean.stderr
    steps = clean.stderr.decode().count("step ")
    kinds = {line.split()[1] for line in clean.stderr.decode().splitlines() if "step " in line}
    assert {"manifest-written", "filter-built", "compaction-run-written"} <= kinds
    assert emitted_urls(clean.stdout) == expected

    rng = random.Random(7)
    killed = 0
    for iteration in range(20):
        state = tmp_path / f"s{iteration}"
        emitted: set[str] = set()
        for _ in range(rng.randint(1, 2)):
            result = run(state, rng.randint(1, steps))
            assert result.returncode in (0, -signal.SIGKILL), result.stderr
            killed += result.returncode == -signal.SIGKILL
            emitted |= emitted_urls(result.stdout)
            assert emitted <= expected
            assert stored_urls(state, expected) <= emitted  # invariant 4, also when killed
        emitted |= finish_in_process(state, data)
        assert emitted == expected
        check_final_state(state, expected)
        assert finish_in_process(state, data) == set()  # done means done
    assert killed >= 20


def test_kill_the_command_at_random_times(tmp_path: Path):
    data, expected = make_input(3000, 4000, seed=2)
    source = tmp_path / "links.ndjson"
    source.write_bytes(data)
    rng = random.Random(11)
    kills = partial = 0
    for iteration in range(4):
        state = tmp_path / f"s{iteration}"
        emitted: set[str] = set()
        for attempt in range(3):
            out = tmp_path / f"out{iteration}-{attempt}"
            with open(out, "wb") as sink:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "crawlkit",
                        "seen-merge",
                        "--state",
                        str(state),
                        "--batch-size",
                        "100",
                        "--capacity",
                        "1000",
                        str(source),
                    ],
                    stdout=sink,
                    stderr=subprocess.DEVNULL,
                )
                if attempt < 2:
                    # Kill after a random share of the remaining output has appeared,
                    # so the kill lands in the middle of the work however fast it runs.
                    remaining = len(expected) - len(emitted)
                    target = rng.randint(1, max(1, remaining * 9 // 10))
                    deadline = time.monotonic() + 60
                    while proc.poll() is None and time.monotonic() < deadline:
                        if out.read_bytes().count(b"\n") >= target:
                            os.kill(proc.pid, signal.SIGKILL)
                            kills += 1
                            break
                        time.sleep(0.002)
                proc.wait(timeout=120)
            emitted |= emitted_urls(out.read_bytes())
            assert emitted <= expected
            assert stored_urls(state, expected) <= emitted
            partial += proc.returncode != 0 and 0 < len(emitted) < len(expected)
            if proc.returncode == 0:
                break
        assert proc.returncode == 0
        assert emitted == expected
        check_final_state(state, expected)
    assert kills >= 4 and partial >= 3  # the kills did land in the middle of the work
