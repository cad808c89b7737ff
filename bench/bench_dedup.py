"""Benchmark: dedup lookups with 1M pages indexed, and the index's bytes per page.

Run on demand (never in CI):  .venv/bin/python bench/bench_dedup.py [--indexed 1000000]

Builds a dedup state of --indexed pages (random simhashes, distinct digests and URLs,
through DedupStore.add, sealed and committed), then measures in the same run:

* open: loading the page log, the digest index and the table snapshot (CPU seconds);
* index: NearIndex.within for --queries simhashes (the 10-bucket probe plus candidate
  checks), queries per CPU second;
* library: dedup_records over --queries page records as extract writes them (with
  "site"; 80% new pages, 10% exact copies, 10% near copies 1-3 bits away, so new pages
  are also inserted), pages per CPU second;
* baseline: a bare loop that only reads the same page records' fields and hashes the
  digest (the floor of any per-record work);
* command: `crawlkit dedup --state` over the same records as an NDJSON file, wall
  clock including start-up and the state load;
* bytes per page on disk and in memory.
"""

from __future__ import annotations

import argparse
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import orjson
import xxhash

from crawlkit.dedup.store import DedupStore
from crawlkit.stages.dedup import dedup_records
from crawlkit.url import fingerprint_int


def build_state(directory: Path, n: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    sims = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    store = DedupStore(directory)
    t0 = time.process_time()
    for i, sh in enumerate(sims.tolist()):
        url = f"https://site{i % 50000}.example.com/article/{i}"
        digest = xxhash.xxh3_64_intdigest(f"sha1:D{i}".encode()) or 1
        store.add(sh, digest, fingerprint_int(url), url, True)
        if (i + 1) % 100_000 == 0:
            store.seal_batch(i + 1 - 100_000)
    store.seal_batch(n - n % 100_000 if n % 100_000 else n)
    store.commit()
    store.close()
    print(f"built {n:,} pages in {time.process_time() - t0:.1f} CPU s")
    return sims


def queries(sims: np.ndarray, count: int, seed: int = 2) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for q in range(count):
        roll = rng.random()
        if roll < 0.1:
            i = rng.randrange(len(sims))
            out.append(
                {
                    "url": f"https://copy{q}.example.org/x",
                    "site": "example.org",
                    "digest": f"sha1:D{i}",
                    "simhash": f"{int(sims[i]):016x}",
                    "text_bytes": 900,
                }
            )
        elif roll < 0.2:
            i = rng.randrange(len(sims))
            value = int(sims[i])
            for bit in rng.sample(range(64), rng.randint(1, 3)):
                value ^= 1 << bit
            out.append(
                {
                    "url": f"https://near{q}.example.org/x",
                    "site": "example.org",
                    "digest": f"sha1:N{q}",
                    "simhash": f"{value:016x}",
                    "text_bytes": 900,
                }
            )
        else:
            out.append(
                {
                    "url": f"https://new{q}.example.net/p",
                    "site": "example.net",
                    "digest": f"sha1:Q{q}",
                    "simhash": f"{rng.getrandbits(64):016x}",
                    "text_bytes": 900,
                }
            )
    return out


def child_cpu() -> float:
    """CPU seconds used by finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--indexed", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=100_000)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    try:
        state = tmp / "S" / "dedup"
        sims = build_state(state, args.indexed)
        recs = queries(sims, args.queries)

        t0 = time.process_time()
        store = DedupStore(state)
        open_s = time.process_time() - t0
        print(f"open (load + 10 tables) {open_s:.2f} CPU s for {store.n:,} pages")

        q = np.array([int(r["simhash"], 16) for r in recs], dtype=np.uint64)
        t0 = time.process_time()
        qi, _, _ = store.near.within(q, store.simhash, 3)
        rate = len(q) / (time.process_time() - t0)
        print(
            f"index probe (10 buckets + candidates)  {rate:10,.0f} queries/s, "
            f"{len(np.unique(qi)):,} queries with a match"
        )

        t0 = time.process_time()
        for r in recs:
            r.get("url")
            xxhash.xxh3_64_intdigest(r["digest"].encode())
            int(r["simhash"], 16)
        base_rate = len(recs) / (time.process_time() - t0)
        print(f"baseline (read fields, hash digest) {base_rate:10,.0f} pages/s")

        t0 = time.process_time()
        out = list(dedup_records((("b", i, r) for i, r in enumerate(recs)), store))
        lib_rate = len(recs) / (time.process_time() - t0)
        kinds = {k: sum(1 for o in out if o["kind"] == k) for k in ("exact", "near", "unique")}
        print(f"dedup_records (decide, insert, commit) {lib_rate:7,.0f} pages/s  {kinds}")
        sizes = store.index_bytes()
        store.close()
        print(
            f"bytes per stored page: disk {sizes['disk'] / sizes['pages']:.0f} "
            f"(log 40 + URL + table snapshot 40), tables and columns mapped or held "
            f"{sizes['memory'] / sizes['pages']:.0f} "
            f"(10 tables x 4 + directories ~5 + columns 40 + digests 12)"
        )

        inp = tmp / "q.ndjson"
        fresh = queries(sims, args.queries, seed=3)
        inp.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in fresh))
        t0 = time.perf_counter()
        c0 = child_cpu()
        subprocess.run(
            [
                sys.executable,
                "-m",
                "crawlkit",
                "dedup",
                "-q",
                "--state",
                str(tmp / "S"),
                str(inp),
                "--out",
                str(tmp / "out.ndjson"),
            ],
            check=True,
        )
        wall = time.perf_counter() - t0
        cpu = child_cpu() - c0
        print(
            f"command over {len(fresh):,} records: {wall:.1f} s wall, {cpu:.1f} CPU s "
            f"({len(fresh) / cpu:,.0f} pages per CPU s, start-up and load included)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
