"""TLS and DNS costs: the same fetch over HTTP and HTTPS, and the resolver per lookup.

Starts ``crawlkit testweb --tls --dns 0`` (``--hosts`` hosts, 20 KB pages, no special
hosts) and measures, with every politeness gap at 0 and 100 connections:

* ``crawlkit fetch`` of the same batch (``--per-host`` pages from each host, plus one
  robots.txt per host) over HTTP and over HTTPS: a host's requests share one
  kept-alive connection, so HTTPS pays one handshake per host;
* the same over HTTPS with ``--per-host 1``: a new connection (and handshake) for
  every page (robots.txt rides on it);

reporting pages/s of the whole process and CPU seconds of the fetching process per
1,000 pages (the test web's CPU not counted), median of ``--repeat`` runs after a
warm-up run per mode (it fills the test web's page and certificate caches).

Then the resolver (:class:`crawlkit.fetch.resolver.Resolver` with the ``--dns-server``
client) against the test web's DNS server, in this process: microseconds of wall and
CPU time per lookup, uncached (``--lookups`` distinct names, A and AAAA each) and
cached (the same names again).

    .venv/bin/python bench/bench_tls_dns.py --hosts 500 --per-host 4 --repeat 3
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_fetch import ROOT, proc_cpu, timed


def start_web(directory: Path, hosts: int, pages: int) -> tuple[subprocess.Popen[bytes], dict]:
    cmd = [
        sys.executable,
        "-m",
        "crawlkit",
        "testweb",
        "--dir",
        str(directory),
        "--hosts",
        str(hosts),
        "--pages",
        str(pages),
        "--special",
        "none",
        "--tls",
        "--dns",
        "0",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=ROOT)
    assert proc.stdout is not None
    return proc, json.loads(proc.stdout.readline())


def batch_file(path: Path, manifest: dict, info: dict, per_host: int, scheme: str) -> int:
    n = 0
    with open(path, "w") as out:
        for host in (h for h in manifest["hosts"] if h["kind"] == "ordinary"):
            for url in host["pages"][:per_host]:
                if scheme == "http":
                    url = url.replace("https://", "http://", 1).replace(
                        f":{info['tls_port']}/", f":{info['port']}/", 1
                    )
                out.write(json.dumps({"url": url, "reason": "link"}) + "\n")
                n += 1
    return n


def fetch_run(tmp: Path, info: dict, batch: Path) -> tuple[int, float, float]:
    state = tmp / "state"
    shutil.rmtree(state, ignore_errors=True)
    log = tmp / "log.ndjson"
    wall, cpu, res = timed(
        [
            sys.executable,
            "-m",
            "crawlkit",
            "fetch",
            "--state",
            str(state),
            "--hosts-file",
            info["hosts_file"],
            "--allow-net",
            info["allow_net"],
            "--ca-file",
            info["ca_file"],
            "--min-delay",
            "0",
            "--delay-factor",
            "0",
            "--per-ip-delay",
            "0",
            "--concurrency",
            "100",
            "--log",
            str(log),
            "-q",
            str(batch),
        ],
        cwd=ROOT,
    )
    if res.returncode != 0:
        raise SystemExit(res.stderr.decode())
    recs = [json.loads(line) for line in log.read_text().splitlines()]
    bad = [r for r in recs if r["outcome"] != "fetched"]
    if bad:
        raise SystemExit(f"not fetched: {bad[0]}")
    return len(recs), wall, cpu


def resolver_costs(info: dict, names: list[str]) -> dict[str, float]:
    from crawlkit.fetch.dns import DnsClient, parse_server
    from crawlkit.fetch.resolver import Resolver

    async def go() -> dict[str, float]:
        resolver = Resolver(dns=DnsClient(parse_server(info["dns"])), concurrency=32)
        out: dict[str, float] = {}
        for label in ("uncached", "cached"):
            w0, c0 = time.perf_counter(), time.process_time()
            results = await asyncio.gather(*(resolver.resolve(n) for n in names))
            w, c = time.perf_counter() - w0, time.process_time() - c0
            if any(r.error for r in results):
                raise SystemExit(f"lookup failed: {next(r for r in results if r.error)}")
            out[f"{label}_wall_us"] = w / len(names) * 1e6
            out[f"{label}_cpu_us"] = c / len(names) * 1e6
        return out

    return asyncio.run(go())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=500)
    ap.add_argument("--per-host", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--lookups", type=int, default=500)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-tls-"))
    proc, info = start_web(tmp / "web", args.hosts, args.per_host)
    try:
        manifest = json.loads(Path(info["manifest"]).read_text())
        modes = {
            "http, kept alive": ("http", args.per_host),
            "https, kept alive": ("https", args.per_host),
            "https, new connection per page": ("https", 1),
        }
        summary: dict[str, tuple[float, float]] = {}
        for label, (scheme, per_host) in modes.items():
            batch = tmp / f"batch-{scheme}-{per_host}.ndjson"
            n = batch_file(batch, manifest, info, per_host, scheme)
            runs = []
            for run in range(args.repeat + 1):  # run 0 warms the caches
                server0 = proc_cpu(proc.pid)
                pages, wall, cpu = fetch_run(tmp, info, batch)
                server = proc_cpu(proc.pid) - server0
                warm = " [warm-up]" if run == 0 else ""
                print(
                    f"  {label}: {pages} pages ({n} asked) in {wall:.2f}s, {cpu:.2f} CPU s "
                    f"(test web {server:.2f} CPU s){warm}"
                )
                if run:
                    runs.append((pages, wall, cpu))
            rate = statistics.median(p / w for p, w, _ in runs)
            cpu_k = statistics.median(c / p * 1000 for p, _, c in runs)
            summary[label] = (rate, cpu_k)
        print()
        for label, (rate, cpu_k) in summary.items():
            print(
                f"{label:32s} {rate:7.0f} pages/s  {cpu_k:5.2f} CPU s per 1,000 pages "
                f"(median of {args.repeat})"
            )
        base = summary["http, kept alive"][0]
        for label in ("https, kept alive", "https, new connection per page"):
            print(f"{label}: {summary[label][0] / base:.0%} of the HTTP throughput")
        names = [h["name"] for h in manifest["hosts"]][: args.lookups]
        costs = resolver_costs(info, names)
        print(f"\nresolver over --dns-server, {len(names)} names (A and AAAA each):")
        print(
            f"  uncached: {costs['uncached_wall_us']:.0f} us wall, "
            f"{costs['uncached_cpu_us']:.0f} us CPU per lookup"
        )
        print(
            f"  cached:   {costs['cached_wall_us']:.1f} us wall, "
            f"{costs['cached_cpu_us']:.1f} us CPU per lookup"
        )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
