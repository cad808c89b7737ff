"""End-to-end crawl throughput: `crawlkit crawl` against Scrapy and wget2, same web, same run.

Run on demand (never in CI):

    .venv/bin/python bench/bench_crawl.py --hosts 2000 --pages 10
    .venv/bin/python bench/bench_crawl.py --scrapy-python /tmp/scrapy-venv/bin/python --wget2
    .venv/bin/python bench/bench_crawl.py --scenario few-seed --hosts 2000 --pages 15 --for 60
    .venv/bin/python bench/bench_crawl.py --scenario seeded --hosts 4000 --pages 10 --for 60

Starts `crawlkit testweb` (ordinary hosts only, 20 KB pages; with --tls over HTTPS,
crawlkit trusting the run's CA with --ca-file) in its own process, then
crawls it unthrottled (gap 0: --min-delay 0 --delay-factor 0, budgets off, one request
at a time per host still) with each crawler in turn, against a fresh copy of the web
each time. Reports, per crawler: new pages per second (only pages of the web's
manifest count, each once), CPU seconds per 1,000 pages (the machine's busy time minus
the web's, so keep the machine otherwise quiet), peak RSS, and the ratios to crawlkit.

Scenarios with a deadline (``--scenario few-seed|seeded --for 60``), crawlkit only:

* ``few-seed``: ``--hosts`` hosts addressed by IP literal, reached from 5 seeds, 1 in 20
  with a Crawl-delay, half answering robots.txt with 404, plus the usual hostile hosts;
  ``crawl --min-delay 0 --concurrency 256 --scope any``, defaults otherwise.
* ``seeded``: ``--hosts`` ordinary hosts, every one a seed, same crawl options.

Each reports (median of ``--repeat`` runs, each on a fresh web): new pages per second
over the whole run (pages *processed*: in the page records, not merely fetched), CPU
seconds per 1,000 of them (the crawl process and its extract workers, from wait4),
peak RSS, the longest stretch of 5-s windows whose server-side request count was
under 10% of the run's mean (a stall), and how far past ``--for`` the run ended.

Scrapy and wget2 resolve names through the system, so with --scrapy-python or --wget2
the test web's hosts are appended to /etc/hosts for the run and removed after (needs
root; loopback addresses only). Scrapy is kept out of the project: make a venv for it
(`python -m venv /tmp/scrapy-venv && /tmp/scrapy-venv/bin/pip install scrapy`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTS_MARK = "# crawlkit bench_crawl"


SCENARIO_WEB = {
    "classic": lambda hosts: ["--special", "none"],
    "few-seed": lambda hosts: ["--ip-hosts", "--seed-hosts", "5", "--robots-404", "0.5",
                               "--crawl-delay-hosts", str(max(1, hosts // 20))],
    "seeded": lambda hosts: ["--special", "none"],
}  # fmt: skip


@contextlib.contextmanager
def testweb(
    tmp: Path, hosts: int, pages: int, scenario: str = "classic", tls: bool = False
) -> Iterator[dict]:
    directory = tmp / f"web-{time.time_ns()}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", "testweb", "--dir", str(directory), "--hosts",
         str(hosts), "--pages", str(pages), "--seed", "11", *SCENARIO_WEB[scenario](hosts),
         *(["--tls"] if tls else [])],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdout is not None
    info = json.loads(proc.stdout.readline())
    info["web_pid"] = proc.pid
    info["pages_set"] = {
        p for h in json.loads(Path(info["manifest"]).read_text())["hosts"] for p in h["pages"]
    }
    try:
        yield info
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stdout.close()


def machine_busy() -> float:
    """CPU seconds this machine spent not idle, over all processes (/proc/stat)."""
    with open("/proc/stat") as f:
        ticks = [int(v) for v in f.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def process_cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(cmd: list[str], web_pid: int) -> tuple[float, float]:
    """Wall time and the crawler's CPU seconds.

    The CPU is the machine's busy time minus the test web's: getrusage(CHILDREN) misses
    processes a crawler starts through a fork server (crawlkit's extract workers), and
    this counts them. Anything else running on the machine counts too: run it quiet.
    """
    busy0, web0 = machine_busy(), process_cpu(web_pid)
    start = time.perf_counter()
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    busy1, web1 = machine_busy(), process_cpu(web_pid)
    return wall, (busy1 - busy0) - (web1 - web0)


def crawlkit_pages(state: Path, pages: set[str]) -> int:
    from crawlkit import io

    got = set()
    for log in state.glob("crawl/cycles/*/fetch.ndjson"):
        for r in io.read_records([log]):
            if r.get("outcome") == "fetched" and r.get("status") == 200:
                got.add(r["url"])
    return len(got & pages)


def bench_crawlkit(web: dict, tmp: Path, jobs: int) -> tuple[int, float, float]:
    state = tmp / f"ck-{time.time_ns()}"
    wall, cpu = run(
        [sys.executable, "-m", "crawlkit", "crawl", web["seeds"], "--state", str(state),
         "--scope", "any", "--min-delay", "0", "--delay-factor", "0", "--no-budgets",
         "--concurrency", "100", "--per-ip", "100", "--batch", "5000", "--per-host", "50",
         "--allow-net", web["allow_net"], "--hosts-file", web["hosts_file"], "-j", str(jobs),
         *(["--ca-file", web["ca_file"]] if "ca_file" in web else [])],
        web["web_pid"],
    )  # fmt: skip
    return crawlkit_pages(state, web["pages_set"]), wall, cpu


SPIDER = textwrap.dedent(
    """
    import json, sys
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    seeds = open(sys.argv[1]).read().split()
    out = sys.argv[2]
    seen = set()

    class Bench(scrapy.Spider):
        name = "bench"
        start_urls = seeds
        # (allow_domains would compare "h1.test:PORT" and refuse every link)
        links = LinkExtractor()

        def parse(self, response):
            seen.add(response.url)
            for link in self.links.extract_links(response):
                yield scrapy.Request(link.url, callback=self.parse)

    process = CrawlerProcess({
        "CONCURRENT_REQUESTS": 100, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": True, "LOG_LEVEL": "ERROR",
        "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False,
    })
    process.crawl(Bench)
    process.start()
    json.dump(sorted(seen), open(out, "w"))
    """
)


@contextlib.contextmanager
def system_hosts(hosts_file: str) -> Iterator[None]:
    lines = [ln for ln in Path(hosts_file).read_text().splitlines() if ln.startswith("127.")]
    original = Path("/etc/hosts").read_text()
    Path("/etc/hosts").write_text(original + f"\n{HOSTS_MARK}\n" + "\n".join(lines) + "\n")
    try:
        yield
    finally:
        Path("/etc/hosts").write_text(original)


def bench_scrapy(web: dict, tmp: Path, python: str) -> tuple[int, float, float]:
    spider = tmp / "spider.py"
    spider.write_text(SPIDER)
    out = tmp / f"scrapy-{time.time_ns()}.json"
    with system_hosts(web["hosts_file"]):
        wall, cpu = run([python, str(spider), web["seeds"], str(out)], web["web_pid"])
    got = set(json.loads(out.read_text())) if out.exists() else set()
    return len(got & web["pages_set"]), wall, cpu


def bench_wget2(web: dict, tmp: Path) -> tuple[int, float, float]:
    target = tmp / f"wget2-{time.time_ns()}"
    with system_hosts(web["hosts_file"]):
        wall, cpu = run(
            ["wget2", "--recursive", "--level=inf", "--span-hosts", "--domains=test",
             "--max-threads=100", "--robots=on", "--no-verbose", "--quiet",
             f"--directory-prefix={target}", f"--input-file={web['seeds']}"],
            web["web_pid"],
        )  # fmt: skip
    # wget2 saves HOST/PATH[?QUERY] (no port; "index.html" for "/"; it also keeps
    # "&amp;" from hrefs literally). Count manifest pages it saved, each once.
    prefix = str(target) + "/"
    got = set()
    for path in target.rglob("*"):
        if path.is_file():
            host, _, rest = str(path)[len(prefix) :].partition("/")
            rest = rest.replace("&amp;", "&")
            got.add(f"{host}/{rest}")
            if rest == "index.html":
                got.add(f"{host}/")
    wanted = set()
    for url in web["pages_set"]:
        host, _, rest = url.split("://", 1)[1].partition("/")
        wanted.add(f"{host.split(':')[0]}/{rest}")
    return len(got & wanted), wall, cpu


def longest_stall(log: Path, end: float) -> float:
    """Seconds of the longest run of 5-s windows with under 10% of the mean request rate,
    from the first request to ``end`` (the deadline: start-up is not a stall)."""
    with open(log, "rb") as f:
        times = [json.loads(line)["t_start"] for line in f]
    start = min(times, default=end)
    counts: dict[int, int] = {}
    for t in times:
        if t <= end:
            counts[int((t - start) // 5)] = counts.get(int((t - start) // 5), 0) + 1
    windows = [counts.get(i, 0) for i in range(int((end - start) // 5))]
    if not windows:
        return 0.0
    mean = sum(windows) / len(windows)
    longest = run = 0
    for n in windows:
        run = run + 1 if n < 0.1 * mean else 0
        longest = max(longest, run)
    return 5.0 * longest


def bench_deadline(web: dict, tmp: Path, seconds: float, jobs: int) -> dict[str, float]:
    """One ``crawl --for`` run: the figures listed in the module docstring."""
    from crawlkit import io

    state = tmp / f"ck-{time.time_ns()}"
    cmd = [sys.executable, "-m", "crawlkit", "crawl", web["seeds"], "--state", str(state),
           "--scope", "any", "--min-delay", "0", "--concurrency", "256", "--for",
           f"{seconds:g}s", "--allow-net", web["allow_net"], "--hosts-file",
           web["hosts_file"], "-j", str(jobs)]  # fmt: skip
    start = time.time()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    end = time.time()
    pages = {r["url"] for p in state.glob("crawl/cycles/*/pages.ndjson.zst")
             for r in io.read_records([p])}  # fmt: skip
    new = len(pages & web["pages_set"])
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "new_pages": new,
        "pages_per_s": new / (end - start),
        "cpu_per_1000": 1000 * cpu / new if new else float("inf"),
        "rss_mib": usage.ru_maxrss / 1024,
        "stall_s": longest_stall(Path(web["log"]), start + seconds),
        "overshoot_s": (end - start) - seconds,
    }


def main_deadline(args: argparse.Namespace) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    runs = []
    try:
        for _ in range(args.repeat):
            with testweb(tmp, args.hosts, args.pages, args.scenario, args.tls) as web:
                runs.append(bench_deadline(web, tmp, args.duration, args.jobs))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"{args.scenario} web: {args.hosts} hosts, ~{args.pages} pages each; crawl --for "
          f"{args.duration:g}s, {args.repeat} run(s), medians; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f} at the end (a shared machine slows it)")  # fmt: skip
    for key, label in (("new_pages", "new pages processed"), ("pages_per_s", "new pages/s"),
                       ("cpu_per_1000", "CPU s per 1,000 pages"), ("rss_mib", "peak RSS MiB"),
                       ("stall_s", "longest stall (5-s windows < 10% of mean), s"),
                       ("overshoot_s", "ended past --for, s")):  # fmt: skip
        values = sorted(r[key] for r in runs)
        print(
            f"  {label:48s} {values[len(values) // 2]:9.1f}   (all: "
            + ", ".join(f"{v:.1f}" for v in values)
            + ")"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=2000)
    ap.add_argument("--pages", type=int, default=10, help="mean pages per host")
    ap.add_argument("--jobs", type=int, default=1, help="crawlkit extract workers (-j)")
    ap.add_argument("--scrapy-python", default=None)
    ap.add_argument("--wget2", action="store_true")
    ap.add_argument("--repeat", type=int, default=1, help="crawlkit runs (median reported)")
    ap.add_argument("--tls", action="store_true", help="crawlkit over HTTPS (testweb --tls)")
    ap.add_argument("--scenario", choices=["classic", "few-seed", "seeded"], default="classic")
    ap.add_argument("--for", dest="duration", type=float, default=60.0,
                    help="seconds of crawl (few-seed and seeded)")  # fmt: skip
    args = ap.parse_args()
    if args.scenario != "classic":
        main_deadline(args)
        return
    tmp = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    results: dict[str, tuple[int, float, float]] = {}
    try:
        runs = []
        for _ in range(args.repeat):  # a fresh web each time; the median run is kept
            with testweb(tmp, args.hosts, args.pages, tls=args.tls) as web:
                total = len(web["pages_set"])
                runs.append(bench_crawlkit(web, tmp, args.jobs))
        runs.sort(key=lambda r: r[0] / r[1] if r[1] else 0.0)
        results["crawlkit"] = runs[len(runs) // 2]
        if args.repeat > 1:
            rates = ", ".join(f"{p / w:.0f}" for p, w, _ in runs)
            print(f"crawlkit runs (new pages/s): {rates}; the median is reported")
        if args.scrapy_python:
            with testweb(tmp, args.hosts, args.pages) as web:
                results["scrapy"] = bench_scrapy(web, tmp, args.scrapy_python)
        if args.wget2 and shutil.which("wget2"):
            with testweb(tmp, args.hosts, args.pages) as web:
                results["wget2"] = bench_wget2(web, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"test web: {args.hosts} hosts, {total} pages of ~20 KB; gap 0; this machine: "
          f"{os.cpu_count()} cores")  # fmt: skip
    base = results["crawlkit"]
    for name, (pages, wall, cpu) in results.items():
        rate = pages / wall if wall else 0.0
        per_k = 1000 * cpu / pages if pages else float("inf")
        line = (f"  {name:9s} {pages:6d} pages in {wall:6.1f} s = {rate:7.1f} new pages/s, "
                f"{per_k:5.2f} CPU s per 1,000 pages")  # fmt: skip
        if name != "crawlkit" and pages:
            line += f"; crawlkit is {(base[0] / base[1]) / rate:.1f}x faster"
        print(line)
    print(f"  peak RSS of the largest child: {peak_kb / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
