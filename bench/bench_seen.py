"""Benchmark of the seen set (``crawlkit seen-merge``); run on demand, not in tests.

    .venv/bin/python bench/bench_seen.py            # 10M, 30M, 100M stored (~4 min)
    .venv/bin/python bench/bench_seen.py --quick    # 1M, 3M, 10M stored (~1 min)

Reports medians, each against a baseline measured in the same run:

* fingerprint checks per second in 1M batches (dedup + Bloom probe + exact
  confirmation; canonicalization excluded), half seen and half new, and all new;
  baseline: ``x in set`` over a Python set of the same fingerprints;
* end to end from NDJSON with canonicalization (URLs per second through the stage);
  baseline: canonicalization alone over the same URLs, and records that carry ``fp``;
* RAM per stored URL: the filter (memory-mapped, kept resident by probing), the
  anonymous memory of the process (batch buffers) and the page cache of the runs;
  baseline: the same fingerprints in a Python set;
* disk per stored URL (file sizes of runs, filter and manifest);
* the growth curve: all of the above at three sizes, plus the time of one 1M-URL
  batch (check, then commit of its new half) against the full store.

Stores are built from synthetic fingerprints (sorted, distinct, spread evenly over
64 bits) so the bench stays quick; each size runs in a child process so its memory
figures are its own. Files go to a temporary directory that is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from crawlkit.seen import SeenStore
from crawlkit.stages.seen_merge import SeenMerge, read_lines
from crawlkit.url import Canonicalizer

MB = 1 << 20


def proc_status() -> dict[str, int]:
    """Memory figures of this process in bytes (Linux /proc)."""
    out = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmHWM", "VmRSS", "RssAnon", "RssFile"):
            out[key] = int(value.split()[0]) * 1024
    return out


def synthetic_keys(n: int, seed: int) -> np.ndarray:
    """``n`` distinct ascending fingerprints spread evenly over the 64-bit space."""
    rng = np.random.default_rng(seed)
    mean_gap = int(0.9 * 2**64 / n)
    gaps = rng.integers(1, 2 * mean_gap, size=n, dtype=np.uint64)
    return np.cumsum(gaps, dtype=np.uint64)


def check_batch(store: SeenStore, batch: np.ndarray) -> np.ndarray:
    """What the stage does with a batch: first occurrences, then the store's answer."""
    order = np.argsort(batch, kind="stable")
    ordered = batch[order]
    starts = np.ones(len(ordered), dtype=bool)
    np.not_equal(ordered[1:], ordered[:-1], out=starts[1:])
    keys = ordered[starts]
    answer = store.lookup(keys)
    return keys[~answer.seen]


def timed(fn: Any, repeats: int) -> tuple[float, float]:
    """Median wall seconds and median CPU seconds of ``fn()`` over ``repeats`` runs.

    On a shared machine CPU time is the steadier figure: wall time also counts the
    time other processes held the core.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return statistics.median(walls), statistics.median(cpus)


def child_size(n: int, batch: int, repeats: int, with_set: bool, workdir: Path) -> dict[str, Any]:
    """Build a store of ``n`` fingerprints and measure it (runs in its own process)."""
    result: dict[str, Any] = {"stored": n, "batch": batch}
    base = proc_status()
    keys = synthetic_keys(n, seed=n)
    rng = np.random.default_rng(1)
    t = time.perf_counter()
    # Sized so the store is exactly at its design count after the one batch committed
    # below (RAM per URL is quoted at the design count, as in docs/design.md).
    with SeenStore.open(workdir / f"s{n}", capacity=n + batch // 2, fp_rate=0.001) as store:
        store.commit(keys)
        result["build_s"] = time.perf_counter() - t
        seen_part = keys[rng.integers(0, n, batch // 2)]
        new_part = rng.integers(0, 2**64 - 1, batch - batch // 2, dtype=np.uint64, endpoint=True)
        mixed = np.concatenate([seen_part, new_part])
        rng.shuffle(mixed)
        all_new = rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True)
        del keys
        before = proc_status()
        Path("/proc/self/clear_refs").write_text("5")  # restart the peak-RSS counter
        check_batch(store, mixed)  # warm the mapping once
        result["check_mixed_s"], cpu_mixed = timed(lambda: check_batch(store, mixed), repeats)
        result["check_new_s"], cpu_new = timed(lambda: check_batch(store, all_new), repeats)
        result["checks_per_s_mixed"] = batch / result["check_mixed_s"]
        result["checks_per_s_new"] = batch / result["check_new_s"]
        result["checks_per_cpu_s_mixed"] = batch / cpu_mixed
        result["checks_per_cpu_s_new"] = batch / cpu_new
        # One batch end to end against the full store: check, then commit the new half.
        t = time.perf_counter()
        fresh = check_batch(store, mixed)
        store.commit(fresh)
        result["batch_check_and_commit_s"] = time.perf_counter() - t
        # False positives at the design count: fresh random keys against the full filter.
        probe = np.unique(rng.integers(0, 2**64 - 1, batch, dtype=np.uint64, endpoint=True))
        answer = store.lookup(probe)
        result["measured_fp_rate"] = answer.false_positives / (len(probe) - answer.confirmed)
        after = proc_status()
        stored = store.stored
        filter_bytes = store.filter.nbytes if store.filter else 0
        disk = store.disk_bytes()
        blocks = sum(p.stat().st_blocks * 512 for p in store.directory.iterdir())
    # Batch buffers: the peak since the counter restart, less the mapped files and the
    # anonymous memory the process already had (interpreter, numpy).
    buffers = max(0, after["VmHWM"] - after["RssFile"] - before["RssAnon"])
    result.update(
        filter_bytes_per_url=filter_bytes / stored,
        buffer_bytes_per_url=buffers / stored,
        ram_bytes_per_url=(filter_bytes + buffers) / stored,
        buffers_mb=buffers / MB,
        process_baseline_mb=base["RssAnon"] / MB,
        peak_rss_mb=after["VmHWM"] / MB,
        mapped_files_resident_mb=after["RssFile"] / MB,
        disk_bytes_per_url=disk / stored,
        disk_allocated_bytes_per_url=blocks / stored,
    )
    if with_set:
        keys = synthetic_keys(n, seed=n)
        mark = proc_status()["RssAnon"]
        as_list = keys.tolist()
        del keys
        t = time.perf_counter()
        pyset = set(as_list)
        result["set_build_s"] = time.perf_counter() - t
        result["set_bytes_per_url"] = (proc_status()["RssAnon"] - mark) / n
        del as_list
        result["set_bytes_per_url_without_list"] = (proc_status()["RssAnon"] - mark) / n
        queries = mixed.tolist()

        def set_check() -> None:
            seen: set[int] = set()
            fresh = []
            for x in queries:
                if x not in seen and x not in pyset:
                    fresh.append(x)
                seen.add(x)

        result["set_check_s"], set_cpu = timed(set_check, repeats)
        result["set_checks_per_s"] = batch / result["set_check_s"]
        result["set_checks_per_cpu_s"] = batch / set_cpu
    return result


def make_links(n: int, seed: int, with_fp: bool, path: Path) -> int:
    """``n`` link records (about 15 % repeats) as NDJSON; returns the distinct count."""
    rng = random.Random(seed)
    canon = Canonicalizer()
    urls = []
    for i in range(n):
        if i and rng.random() < 0.15:
            urls.append(urls[rng.randrange(len(urls))])
            continue
        host = rng.randrange(5000)
        urls.append(
            f"https://www.site{host}.example.com/section/{rng.randrange(10**6)}/"
            f"item-{i}.html?utm_source=feed&id={i}&page={rng.randrange(9)}"
        )
    with open(path, "wb") as f:
        for i, url in enumerate(urls):
            record = {
                "url": url,
                "from": f"https://www.site{i % 5000}.example.com/",
                "nofollow": False,
                "depth": 3,
                "reason": "link",
            }
            if with_fp:
                parsed = canon.parse(url)
                record.update(url=parsed.url, host=parsed.host, site=parsed.site, fp=parsed.fp)
            f.write(orjson.dumps(record) + b"\n")
    return len(set(urls))


def child_e2e(n: int, repeats: int, workdir: Path) -> dict[str, Any]:
    raw, with_fp = workdir / "links.ndjson", workdir / "links-fp.ndjson"
    distinct = make_links(n, 5, False, raw)
    make_links(n, 5, True, with_fp)
    urls = [orjson.loads(line)["url"] for line in raw.read_bytes().splitlines()]
    canon = Canonicalizer()

    def canon_only() -> None:
        for url in urls:
            canon.parse(url)

    def stage(path: Path) -> tuple[float, float]:
        with (
            tempfile.TemporaryDirectory(dir=workdir) as tmp,
            SeenStore.open(tmp, capacity=10_000_000) as store,
            open(os.devnull, "wb") as sink,
        ):
            merger = SeenMerge(store, canonicalizer=Canonicalizer())  # the default chunk
            t, c = time.perf_counter(), time.process_time()
            merger.run(read_lines([path]), sink.write, sink.flush)
            elapsed, cpu = time.perf_counter() - t, time.process_time() - c
            assert merger.stats.new == distinct, (merger.stats, distinct)
        return elapsed, cpu

    def median_pair(runs: list[tuple[float, float]]) -> tuple[float, float]:
        return statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)

    t_canon, c_canon = timed(canon_only, repeats)
    t_stage, c_stage = median_pair([stage(raw) for _ in range(repeats)])
    t_fp, c_fp = median_pair([stage(with_fp) for _ in range(repeats)])
    return {
        "records": n,
        "canon_only_urls_per_s": n / t_canon,
        "e2e_urls_per_s": n / t_stage,
        "e2e_with_fp_urls_per_s": n / t_fp,
        "canon_only_urls_per_cpu_s": n / c_canon,
        "e2e_urls_per_cpu_s": n / c_stage,
        "e2e_with_fp_urls_per_cpu_s": n / c_fp,
    }


def run_child(args: list[str]) -> dict[str, Any]:
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, check=False)
    if out.returncode != 0:
        sys.exit(f"child {args} failed:\n{out.stderr.decode()}")
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="1M/3M/10M instead of 10M/30M/100M")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    repeats = 3 if args.quick else 5
    if args.child:
        kind, _, value = args.child.partition(":")
        workdir = Path(args.workdir)
        if kind == "e2e":
            figures = child_e2e(int(value), repeats, workdir)
        else:
            n = int(value)
            figures = child_size(n, 1_000_000, repeats, kind == "size+set", workdir)
        print(json.dumps(figures))
        return
    sizes = (
        [1_000_000, 3_000_000, 10_000_000] if args.quick else [10_000_000, 30_000_000, 100_000_000]
    )
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="bench-seen-") as tmp:
        base = ["--workdir", tmp] + (["--quick"] if args.quick else [])
        e2e = run_child(["--child", f"e2e:{100_000 if args.quick else 300_000}", *base])
        growth = [
            run_child(["--child", f"{'size+set' if i == 0 else 'size'}:{n}", *base])
            for i, n in enumerate(sizes)
        ]
    if args.json:
        print(json.dumps({"e2e": e2e, "growth": growth}, indent=2))
    first = growth[0]
    load = os.getloadavg()[0]
    print(
        f"seen-merge benchmark ({'quick' if args.quick else 'full'}; medians of {repeats}; "
        f"load average {load_before:.1f} before, {load:.1f} after, {os.cpu_count()} CPUs)"
    )
    print("  rates are per wall second (per CPU second in brackets: steadier on a busy machine)")
    print(
        f"  end to end, NDJSON with canonicalization: {e2e['e2e_urls_per_s']:,.0f} URLs/s "
        f"({e2e['e2e_urls_per_cpu_s']:,.0f}); canonicalization alone "
        f"{e2e['canon_only_urls_per_s']:,.0f} ({e2e['canon_only_urls_per_cpu_s']:,.0f}); "
        f"records that carry fp {e2e['e2e_with_fp_urls_per_s']:,.0f} "
        f"({e2e['e2e_with_fp_urls_per_cpu_s']:,.0f})"
    )
    print(
        f"  Python set of {first['stored']:,} fingerprints: {first['set_checks_per_s']:,.0f} "
        f"checks/s ({first['set_checks_per_cpu_s']:,.0f}), "
        f"{first['set_bytes_per_url_without_list']:.1f} bytes/URL"
    )
    print(
        "  stored  checks/s mixed (cpu)   checks/s new (cpu)  vs-set(cpu)  1M batch+commit  "
        "RAM B/URL (filter+buffers)  disk B/URL  fp-rate  build"
    )
    for g in growth:
        print(
            f"  {g['stored'] / 1e6:5.0f}M  {g['checks_per_s_mixed'] / 1e6:5.2f}M "
            f"({g['checks_per_cpu_s_mixed'] / 1e6:5.2f}M)   "
            f"{g['checks_per_s_new'] / 1e6:5.2f}M ({g['checks_per_cpu_s_new'] / 1e6:5.2f}M)  "
            f"{g['checks_per_cpu_s_mixed'] / first['set_checks_per_cpu_s']:7.1f}x    "
            f"{g['batch_check_and_commit_s']:14.2f}s  {g['ram_bytes_per_url']:5.2f} "
            f"({g['filter_bytes_per_url']:.2f}+{g['buffer_bytes_per_url']:.2f})    "
            f"{g['disk_bytes_per_url']:10.2f}  "
            f"{g['measured_fp_rate']:.5f}  {g['build_s']:5.1f}s"
        )
    set_bytes = first["set_bytes_per_url_without_list"]
    print(
        f"  memory vs the Python set at {first['stored'] / 1e6:.0f}M stored: the set takes "
        f"{set_bytes / first['ram_bytes_per_url']:.1f}x the RAM of filter+buffers, "
        f"{set_bytes / first['filter_bytes_per_url']:.0f}x that of the filter alone; "
        f"at {growth[-1]['stored'] / 1e6:.0f}M "
        f"{set_bytes / growth[-1]['ram_bytes_per_url']:.0f}x"
    )
    print(f"  wall time {time.perf_counter() - started:.0f}s")


if __name__ == "__main__":
    main()
