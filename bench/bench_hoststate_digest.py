"""Benchmark ``HostState.digest``: the revisit lookup the fetcher makes for every capture.

Run on demand (never in CI), against this checkout or another copy of the library:

    .venv/bin/python bench/bench_hoststate_digest.py
    PYTHONPATH=/tmp/base .venv/bin/python bench/bench_hoststate_digest.py  # an older copy

A state directory under /tmp holds ``--known`` digests (committed); then, as the WARC
thread does for each 2xx capture, ``digest()`` is asked for ``--captures`` payloads
(``--hit-share`` of them seen before) and each new one is ``put_digest``-ed, with a
commit every 100 captures (the background commits of a crawl). Prints the CPU
microseconds per capture (``time.process_time``, the median of ``--repeat`` runs),
lookup and put included, commits excluded.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import statistics
import tempfile
import time
from pathlib import Path

import crawlkit
from crawlkit.fetch.hoststate import HostState


def digest_of(i: int) -> str:
    return "sha1:" + hashlib.sha1(str(i).encode()).hexdigest().upper()[:32]


def run(directory: Path, known: int, captures: int, hit_share: float, seed: int) -> float:
    state = HostState(directory)
    state.begin_run()
    for i in range(known):
        state.put_digest(digest_of(i), f"http://h{i % 100}.test/{i}", "2026-01-01T00:00:00Z")
    state.commit()
    state.close()
    state = HostState(directory)  # a new process: nothing in memory yet
    rng = random.Random(seed)
    work = []
    for n in range(captures):
        seen = known + n  # digests known before this capture
        i = rng.randrange(seen) if seen and rng.random() < hit_share else known + n
        work.append((digest_of(i), f"http://h{i % 100}.test/{i}"))
    committing = 0.0
    start = time.process_time()
    for n, (d, uri) in enumerate(work):
        if state.digest(d) is None:
            state.put_digest(d, uri, "2026-01-02T00:00:00Z")
        if n % 100 == 99:
            t = time.process_time()
            state.commit()
            committing += time.process_time() - t
    spent = time.process_time() - start - committing
    state.close()
    return spent / captures * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--known", type=int, default=20_000)
    parser.add_argument("--captures", type=int, default=20_000)
    parser.add_argument("--hit-share", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp:
            runs.append(run(Path(tmp), args.known, args.captures, args.hit_share, r))
    print(f"library: {Path(crawlkit.__file__).parent}")
    print(
        f"{args.captures} captures on a state of {args.known} digests, "
        f"{args.hit_share:.0%} seen before: "
        f"{statistics.median(runs):.1f} CPU us a capture (median of {args.repeat}; "
        + ", ".join(f"{r:.1f}" for r in runs)
        + ")"
    )


if __name__ == "__main__":
    main()
