"""Fetch throughput: crawlkit fetch (WARC included) against Scrapy, same web, same run.

Starts ``crawlkit testweb`` (2,000 hosts, 20 KB pages, no special hosts), builds a
batch of URL records (``--per-host`` pages from each host), and runs

* ``crawlkit fetch`` with every gap at 0 (``--min-delay 0 --delay-factor 0
  --per-ip-delay 0``), 100 connections, writing WARC files and the fetch log;
* Scrapy (when ``--scrapy-python`` names a Python with Scrapy installed; keep it
  out of the project, e.g. ``python -m venv /tmp/scrapy-venv && /tmp/scrapy-venv/bin/pip
  install scrapy``), 100 concurrent requests, no delay, one request per domain at a
  time, no robots.txt, no output at all (so it does less work than crawlkit: no
  WARC, no log). Scrapy reaches the test web's names through their address with a
  Host header, since it cannot read a hosts file.

Reports for each: pages fetched, wall seconds, pages/s, CPU seconds of the fetching
process per 1,000 pages (the test web's CPU is not counted), median of --repeat runs,
and the ratio crawlkit/Scrapy. robots.txt requests (one per host) are not counted as
pages for crawlkit, but they are part of its time.

    .venv/bin/python bench/bench_fetch.py --per-host 5 --repeat 1 \\
        --scrapy-python /tmp/scrapy-venv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SPIDER = textwrap.dedent(
    """
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess

    targets = [json.loads(line) for line in open(sys.argv[1])]
    count = 0

    class Bench(scrapy.Spider):
        name = "bench"

        async def start(self):
            for t in targets:
                yield scrapy.Request(t["ip_url"], headers={"Host": t["hostport"]},
                                     callback=self.parse, dont_filter=True)

        def parse(self, response):
            global count
            count += 1

    process = CrawlerProcess(settings={
        "CONCURRENT_REQUESTS": 100, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False, "RETRY_ENABLED": False,
        "REACTOR_THREADPOOL_MAXSIZE": 4, "AUTOTHROTTLE_ENABLED": False,
    })
    process.crawl(Bench)
    process.start()
    print(json.dumps({"pages": count}))
    """
)


def start_web(
    directory: Path, hosts: int, pages: int, page_kb: float
) -> tuple[subprocess.Popen[bytes], dict]:
    proc = subprocess.Popen(
        [
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
            "--page-kb",
            str(page_kb),
            "--special",
            "none",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
    )
    assert proc.stdout is not None
    info = json.loads(proc.stdout.readline())
    return proc, info


def child_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def parse_iso(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def proc_cpu(pid: int) -> float:
    """CPU seconds used so far by process ``pid`` (Linux /proc), 0 elsewhere."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(
    cmd: list[str], **kwargs: object
) -> tuple[float, float, subprocess.CompletedProcess[bytes]]:
    c0, t0 = child_cpu(), time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - t0, child_cpu() - c0, res


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--per-host", type=int, default=5)
    ap.add_argument("--page-kb", type=float, default=20)
    ap.add_argument("--concurrency", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--scrapy-python", default=None)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench-fetch-"))
    # As many pages per host as fetched, so the test web's page cache holds them all
    # after the warm-up run (rendering a page costs the server more than serving it).
    proc, info = start_web(tmp / "web", args.hosts, args.per_host, args.page_kb)
    try:
        manifest = json.loads(Path(info["manifest"]).read_text())
        hosts = [h for h in manifest["hosts"] if h["kind"] == "ordinary"]
        batch = tmp / "batch.ndjson"
        targets = tmp / "targets.ndjson"
        n = 0
        with open(batch, "w") as b, open(targets, "w") as t:
            for h in hosts:
                pages = (h["allowed"] * args.per_host)[: args.per_host]
                for i, url in enumerate(pages):
                    url = f"{url}{'&' if '?' in url else '?'}b={i}" if pages.count(url) > 1 else url
                    b.write(json.dumps({"url": url, "depth": 1, "reason": "link"}) + "\n")
                    host = url.split("/")[2]
                    ip_url = url.replace(host, f"{h['addr']}:{info['port']}", 1)
                    t.write(json.dumps({"ip_url": ip_url, "hostport": host}) + "\n")
                    n += 1
        print(
            f"testweb: {len(hosts)} hosts, {n} URLs, {args.page_kb} KB pages, "
            f"{args.concurrency} connections"
        )
        results: dict[str, list[tuple[int, float, float]]] = {"crawlkit": [], "scrapy": []}
        steadies: list[float] = []
        for run in range(args.repeat + 1):  # run 0 warms the test web's page cache
            state = tmp / "state"
            shutil.rmtree(state, ignore_errors=True)
            server0 = proc_cpu(proc.pid)
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
                    "--min-delay",
                    "0",
                    "--delay-factor",
                    "0",
                    "--per-ip-delay",
                    "0",
                    "--concurrency",
                    str(args.concurrency),
                    "--log",
                    str(tmp / "log.ndjson"),
                    "-q",
                    str(batch),
                ],
                cwd=ROOT,
            )
            if res.returncode != 0:
                raise SystemExit(res.stderr.decode())
            recs = [json.loads(line) for line in (tmp / "log.ndjson").read_text().splitlines()]
            pages = sum(1 for r in recs if r["outcome"] == "fetched")
            warc_bytes = sum(f.stat().st_size for f in (state / "warc" / "new").glob("*.warc.gz"))
            server = proc_cpu(proc.pid) - server0
            label = "warm-up:     " if run == 0 else "crawlkit run:"
            # Steady rate: pages over the span of their fetch times (no process start-up,
            # which imports every command of the CLI).
            stamps = sorted(r["fetched_at"] for r in recs if r.get("fetched_at"))
            span = parse_iso(stamps[-1]) - parse_iso(stamps[0]) if len(stamps) > 1 else 0.0
            steady = pages / span if span > 0 else 0.0
            print(
                f"  {label} {pages} pages in {wall:.2f}s, {cpu:.2f} CPU s "
                f"(test web {server:.2f} CPU s), WARC {warc_bytes / 1e6:.1f} MB, "
                f"steady {steady:.0f} pages/s"
            )
            if run == 0:
                continue
            results["crawlkit"].append((pages, wall, cpu))
            steadies.append(steady)
            if args.scrapy_python:
                spider = tmp / "spider.py"
                spider.write_text(SPIDER)
                server0 = proc_cpu(proc.pid)
                wall, cpu, res = timed([args.scrapy_python, str(spider), str(targets)])
                server = proc_cpu(proc.pid) - server0
                if res.returncode != 0:
                    raise SystemExit(res.stderr.decode()[-2000:])
                pages = json.loads(res.stdout.decode().strip().splitlines()[-1])["pages"]
                print(
                    f"  scrapy run:   {pages} pages in {wall:.2f}s, {cpu:.2f} CPU s "
                    f"(test web {server:.2f} CPU s)"
                )
                results["scrapy"].append((pages, wall, cpu))
        summary = {}
        for name, runs in results.items():
            if not runs:
                continue
            rate = statistics.median(p / w for p, w, _ in runs)
            cpu_k = statistics.median(c / p * 1000 for p, _, c in runs)
            summary[name] = (rate, cpu_k)
            print(
                f"{name:9s} {rate:8.0f} pages/s   {cpu_k:6.2f} CPU s per 1,000 pages "
                f"(median of {len(runs)})"
            )
        if steadies:
            print(f"crawlkit steady (after start-up) {statistics.median(steadies):.0f} pages/s")
        if "scrapy" in summary:
            print(
                f"crawlkit/scrapy: {summary['crawlkit'][0] / summary['scrapy'][0]:.1f}x pages/s, "
                f"{summary['scrapy'][1] / summary['crawlkit'][1]:.1f}x less CPU per page"
            )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        shutil.rmtree(tmp, ignore_errors=True)
        os.sys.stdout.flush()


if __name__ == "__main__":
    main()
