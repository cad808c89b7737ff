"""End-to-end crawl: `crawlkit crawl` against Scrapy and wget2, same webs, same run.

Run on demand (never in CI), as root (see "Isolation"); Scrapy comes with the
``bench`` extra (``.venv/bin/pip install -e '.[bench]'``), wget2 from Debian
(``apt-get install -y wget2``):

    .venv/bin/python bench/bench_crawl.py                  # quick: small webs, 20 s each
    .venv/bin/python bench/bench_crawl.py --full --repeat 3     # issue 13's sizes, 60 s
    .venv/bin/python bench/bench_crawl.py --scenario few-seed --hosts 2000 --pages 15 --for 60
    .venv/bin/python bench/bench_crawl.py --tools crawlkit --scenario seeded --for 300 \\
        --rss-log rss.json                              # RSS over a long run
    .venv/bin/python bench/bench_crawl.py --scenario classic --tls --tools crawlkit

Webs (``crawlkit testweb --seed 11``, loopback only, a fresh web for every run):

* ``few-seed`` (issue 13): ``--hosts`` hosts addressed by IP literal, ~``--pages``
  pages each, reached from 5 seeds, ``hosts // 20`` of them with a Crawl-delay of 1 s,
  half answering robots.txt with 404, plus the usual hostile hosts (traps, slow,
  429/503, ...): ``testweb --ip-hosts --seed-hosts 5 --robots-404 0.5
  --crawl-delay-hosts N``. Quick: 200 hosts x 15 pages; ``--full``: 2,000 x 15.
* ``seeded``: ``--hosts`` ordinary named hosts (hN.test), every one a seed,
  ``--special none``. Quick: 400 x 10; ``--full``: 4,000 x 10.
* ``classic``: the old drain benchmark (named hosts, ``--special none``), crawlkit with
  gap 0 (``--delay-factor 0 --no-budgets``); for the README's HTTPS figure (``--tls``,
  crawlkit only).

Tools, each bounded to ``--for`` seconds and stopping itself, ``--concurrency`` (256)
requests at once, one at a time per host, robots.txt obeyed, no per-host delay:

* crawlkit: ``python -m crawlkit crawl SEEDS --state S --scope any --min-delay 0
  --concurrency 256 --for 60s --allow-net 127.0.0.0/9 --hosts-file WEB/hosts -j 1``
  (defaults otherwise, as in issue 13: the gap is still 10 x the last fetch time and
  a Crawl-delay is honoured).
* Scrapy: a plain spider following every link (``LinkExtractor``), Scrapy's
  broad-crawl settings: ``CONCURRENT_REQUESTS=256, CONCURRENT_REQUESTS_PER_DOMAIN=1,
  DOWNLOAD_DELAY=0, ROBOTSTXT_OBEY=True, SCHEDULER_PRIORITY_QUEUE=
  scrapy.pqueues.DownloaderAwarePriorityQueue, COOKIES_ENABLED=False,
  HTTPCACHE_ENABLED=False, LOG_LEVEL=ERROR, TELNETCONSOLE_ENABLED=False,
  CLOSESPIDER_TIMEOUT=60, DOWNLOAD_TIMEOUT=30, DOWNLOAD_MAXSIZE=10_000_000`` (crawlkit's
  --timeout and --max-body); each parsed page's URL is written to a file. Scrapy ignores
  Crawl-delay (crawlkit does not).
* wget2: ``timeout -s TERM 60 wget2 --recursive --level=inf --span-hosts
  --domains=test --robots=on --max-threads=256 --timeout=30 --quiet
  --directory-prefix=OUT --input-file=SEEDS`` (wget2 1.99 has no time limit of its
  own, so ``timeout`` stops it; it has no per-host limit either, and ignores
  Crawl-delay). ``--domains`` keeps it on the web's names (*.test); it does not filter
  IP-literal hosts at all, and a list of the 2,000 addresses makes wget2 1.99 exit 2
  at once (past ~6 KB), so there the loopback-only namespace is the fence.

Figures per tool (median of ``--repeat`` runs; the tools take turns within a repeat so
the machine's load falls on all of them alike):

* new pages/s over the whole run: pages of the web's manifest (those robots.txt allows
  the ``crawlkit`` token) that the tool *processed*, each once, divided by the wall time
  from start to exit. Counted from each tool's output, never its own counters:
  crawlkit's page records (written after parsing), the URLs the spider's parse callback
  wrote, the files wget2 saved. URLs are compared after crawlkit's canonicalisation,
  so a tracking-parameter variant of a page counts as that page, once.
* CPU s per 1,000 pages: user+sys of the whole process tree. The bench is a child
  subreaper (``PR_SET_CHILD_SUBREAPER``), so processes the tool orphans (a fork
  server, extract workers) are reaped by it and counted through ``wait4``.
* peak RSS: the largest sum of the tree's resident sets, sampled every
  ``--sample`` seconds, or the largest single process's peak (``wait4``'s
  ``ru_maxrss``, which a sample can miss), whichever is larger.
* longest stall: the longest run of 5-s windows whose server-side request count
  (testweb's request log) was under 10% of the run's mean, from the first request to
  the end of the run or ``--for``, or to the first request of the last page of the
  ordinary hosts without a Crawl-delay (after it only hosts that set the pace have
  work: Crawl-delay, 429, slow ones; their pace is politeness), whichever came first.
* how far past ``--for`` the run ended (negative: it ran out of work); for Scrapy
  and wget2 past their own bound (CLOSESPIDER_TIMEOUT, ``timeout``).

Ratios crawlkit / Scrapy and crawlkit / wget2 come from the same run. ``--json FILE``
writes every run's figures; ``--rss-log FILE`` the RSS samples, the tree's and each
process's (for flatness). Each run prints its RSS slope after warm-up: least squares
from ``--slope-from`` (180 s) to the end of ``--for``, the tree's and each process's in
MiB a minute, and the tree's per 1,000 server requests (a slope a minute depends on
how fast the run went; memory that grows with the web crawled grows per request).

    nice .venv/bin/python bench/bench_crawl.py --tools crawlkit --scenario few-seed \\
        --hosts 15000 --pages 20 --for 600 --rss-log rss.json   # issue 27's 10 minutes

Isolation: as root with ``unshare`` available, the bench re-executes itself in a new
network and mount namespace whose only interface is loopback, so no tool can reach
anything but the test web (a name outside the hosts file fails at once instead of
asking the system's DNS). Scrapy and wget2 resolve names through the system, so each
runs with the web's hosts file bind-mounted over /etc/hosts in a mount namespace of its
own; the machine's /etc/hosts is never written. Without root only crawlkit runs.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from crawl_timeline import loop_idle, loop_windows, print_loop

from crawlkit import streams
from crawlkit.errors import InvalidURL
from crawlkit.url import Canonicalizer

NETNS_MARK = "CRAWLKIT_BENCH_NETNS"
PR_SET_CHILD_SUBREAPER = 36
CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE_KB = os.sysconf("SC_PAGE_SIZE") / 1024
# crawlkit-b: crawlkit with --b-env set (an A/B within the same run, e.g. an old
# behaviour behind a debug knob read from the environment; crawl/feed.py's
# POST_BACKLOG_MAX and CUT_SCALE_MAX are plain constants now: edit them for an A/B)
# crawlkit-bwN: crawlkit-b with --workers N (an A/B of --workers in one run)
# crawlkit-wN: crawlkit with --workers N (N processes, each a shard of the crawl);
# crawlkit-j2: one crawl process with 2 extract processes (-j 2), the other design
TOOLS = (
    "crawlkit",
    "crawlkit-j2",
    "crawlkit-b",
    "crawlkit-bw2",
    "crawlkit-w2",
    "crawlkit-w3",
    "crawlkit-w4",
    "scrapy",
    "wget2",
)
PY_SPY_RATE = 50  # samples a second: each sample of a busy thread is 1/50 CPU s

# (hosts, pages) per scenario: quick defaults, and issue 13's sizes with --full.
SIZES = {
    "few-seed": ((200, 15), (2000, 15)),
    "seeded": ((400, 10), (4000, 10)),
    "classic": ((200, 10), (1000, 10)),
}


def web_args(scenario: str, hosts: int) -> list[str]:
    """testweb options of a scenario (besides --hosts, --pages, --seed)."""
    if scenario == "few-seed":
        return [
            "--ip-hosts",
            "--seed-hosts",
            "5",
            "--robots-404",
            "0.5",
            "--crawl-delay-hosts",
            str(max(1, hosts // 20)),
        ]
    return ["--special", "none"]


# ---------------------------------------------------------------------------- the web


@contextlib.contextmanager
def testweb(
    tmp: Path, scenario: str, hosts: int, pages: int, tls: bool, *, warm: bool = True
) -> Iterator[dict]:
    """A fresh ``crawlkit testweb`` for one run; yields its ready line plus the pages
    that count (``allowed``: manifest pages robots.txt lets the crawlkit token fetch).
    ``warm=False`` leaves the pages to be made as they are asked for (making 300,000
    ahead takes the server ~12 minutes and ~9 GB): for runs that measure memory, not
    speed."""
    directory = tmp / f"web-{time.time_ns()}"
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
            "--seed",
            "11",
            *web_args(scenario, hosts),
            # Pages made before the run: the server shares the machine with the tool
            # measured, and making a page costs it ~1.5 ms of CPU (testweb --warm).
            *(["--warm"] if warm else []),
            *(["--tls"] if tls else []),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    try:
        info = json.loads(proc.stdout.readline())
        manifest = json.loads(Path(info["manifest"]).read_text())
        info["web_pid"] = proc.pid
        info["wanted"] = {u for h in manifest["hosts"] for u in h["allowed"]}
        # The pages of the ordinary hosts without a Crawl-delay, as the server logs them
        # (host, path): once all are requested, what is left is paced by politeness or
        # by the hosts themselves (Crawl-delay, 429, slow and trap hosts; free_hosts_done).
        info["free_pages"] = {
            host_path(u)
            for h in manifest["hosts"]
            if h["kind"] == "ordinary" and not h["robots"].get("crawl_delay")
            for u in h["allowed"]
        }
        yield info
    finally:
        proc.terminate()
        proc.wait(60)
        proc.stdout.close()


def canonical_set(urls: Iterable[str], wanted: set[str]) -> set[str]:
    """The wanted pages among ``urls``, after crawlkit's canonicalisation."""
    canon = Canonicalizer()
    got = set()
    for url in urls:
        with contextlib.suppress(InvalidURL, ValueError):
            url = canon.canonicalize(url)
        if url in wanted:
            got.add(url)
    return got


def server_requests(log: Path) -> list[tuple[float, tuple[str, str]]]:
    """(start time, (host, path)) of every request in testweb's log."""
    out = []
    with open(log, "rb") as f:
        for line in f:
            if line.strip():
                rec = json.loads(line)
                host = (rec.get("host") or "").lower().rsplit(":", 1)[0]
                out.append((rec["t_start"], (host, rec.get("path") or "")))
    return out


def host_path(url: str) -> tuple[str, str]:
    """A manifest URL as the server's log names it: (host, path with its query)."""
    parts = urlsplit(url)
    return (parts.hostname or "", parts.path + (f"?{parts.query}" if parts.query else ""))


def free_hosts_done(requests: list[tuple[float, tuple[str, str]]], free: set[str]) -> float | None:
    """When the last page of ``free`` (the ordinary hosts without a Crawl-delay) was
    first requested, if every one was: after it the tool can only wait on hosts that
    set its pace (Crawl-delay, 429, slow: politeness, not a stall). None while any
    was never requested."""
    first: dict[tuple[str, str], float] = {}
    for t, key in requests:
        if key in free and key not in first:
            first[key] = t
    return max(first.values()) if free and len(first) == len(free) else None


def per_window(times: list[float], start: float, width: float = 5.0) -> list[int]:
    """Requests the server saw in each ``width``-s window from ``start``."""
    counts = [0] * (int((max(times, default=start) - start) // width) + 1)
    for t in times:
        counts[int((t - start) // width)] += 1
    return counts


def longest_stall(times: list[float], end: float) -> float:
    """Seconds of the longest run of 5-s windows with under 10% of the mean request
    rate, from the first request to ``end`` (start-up and shutdown are not stalls)."""
    start = min(times, default=end)
    counts: dict[int, int] = {}
    for t in times:
        if t <= end:
            slot = int((t - start) // 5)
            counts[slot] = counts.get(slot, 0) + 1
    windows = [counts.get(i, 0) for i in range(int((end - start) // 5))]
    if not windows:
        return 0.0
    mean = sum(windows) / len(windows)
    longest = run = 0
    for n in windows:
        run = run + 1 if n < 0.1 * mean else 0
        longest = max(longest, run)
    return 5.0 * longest


# ------------------------------------------------------------- the process tree


def become_subreaper() -> None:
    """Orphans of a tool's tree become this process's children, so their CPU is had
    through wait4 (a fork server's workers are otherwise reparented to init)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def stat_fields(pid: int | str) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None


def proc_table() -> dict[int, tuple[int, str, int, int]]:
    """pid -> (parent pid, state, resident KiB, CPU clock ticks with reaped children's)
    of every process."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        fields = stat_fields(entry.name)
        if fields is None:
            continue
        ticks = sum(int(x) for x in fields[11:15])
        table[int(entry.name)] = (int(fields[1]), fields[0], int(int(fields[21]) * PAGE_KB), ticks)
    return table


CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def cores_between(samples: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Cores used from ``t0`` to ``t1`` (s from the start) by the (s, CPU s) samples
    nearest inside that window; 0 if it holds fewer than two."""
    inside = [(t, c) for t, c in samples if t0 <= t <= t1]
    if len(inside) < 2 or inside[-1][0] <= inside[0][0]:
        return 0.0
    return max(0.0, inside[-1][1] - inside[0][1]) / (inside[-1][0] - inside[0][0])


def cpu_seconds(pid: int) -> float:
    """CPU seconds ``pid`` has used so far, its reaped children's included."""
    fields = stat_fields(pid)
    return sum(int(x) for x in fields[11:15]) / CLOCK_TICKS if fields else 0.0


def proc_name(pid: int) -> str:
    """``pid`` and the last words of its command line (a label for its RSS samples)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            words = f.read().split(b"\0")
    except OSError:
        return str(pid)
    return f"{pid} " + " ".join(w.decode(errors="replace") for w in words[:4])[:80]


# The per-sample series, written by --rss-log and --timeline rather than --json.
SAMPLE_KEYS = ("rss", "rss_procs", "rss_procs_anon", "per_5s", "loop")


def anon_kib(pid: int) -> int | None:
    """The RssAnon of ``pid`` in KiB, or None when it has gone."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"RssAnon:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def tree_of(table: dict[int, tuple[int, str, int, int]], roots: set[int]) -> set[int]:
    """``roots`` and all their descendants that are in ``table``."""
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [r for r in roots if r in table]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo.extend(children.get(pid, ()))
    return out


@dataclass
class Usage:
    """What one tool run cost, from wait4 and /proc samples."""

    wall_s: float = 0.0
    cpu_s: float = 0.0
    peak_rss_mib: float = 0.0  # largest sampled sum over the tree, or largest process
    max_single_rss_mib: float = 0.0  # largest one process (wait4's ru_maxrss)
    killed: bool = False
    rss: list[tuple[float, float]] = field(default_factory=list)  # (s, MiB) samples
    # (s, CPU s) samples of the live tree: its CPU use over part of the run
    cpu: list[tuple[float, float]] = field(default_factory=list)
    started: float = 0.0  # time.time() at the start
    # Per process of the tree: "pid command" -> (s, MiB) samples (what grows where).
    procs: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    # The same, of anonymous memory only (RssAnon: the heap, not mapped files or the
    # page cache a memmap shows as resident).
    procs_anon: dict[str, list[tuple[float, float]]] = field(default_factory=dict)


def measure(cmd: list[str], keep: set[int], limit: float, sample: float, out: Path) -> Usage:
    """Run ``cmd`` to its end (SIGKILL to its tree after ``limit`` seconds) and measure
    its process tree; ``keep`` are our own children that are not the tool's (the web)."""
    usage = Usage()
    me = os.getpid()
    start = usage.started = time.time()
    with open(out, "wb") as log:
        # From the run's own directory: `python -m crawlkit` puts its working directory
        # first on the import path, so run from a checkout every tool would load that
        # checkout, whatever PYTHONPATH (--b-env) names.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=out.parent)
    root_done = False
    reaped: set[int] = set()

    def reap(pid: int, flags: int) -> bool:
        try:
            got, _, ru = os.wait4(pid, flags)
        except ChildProcessError:
            return True
        if got == 0:
            return False
        usage.cpu_s += ru.ru_utime + ru.ru_stime
        usage.max_single_rss_mib = max(usage.max_single_rss_mib, ru.ru_maxrss / 1024)
        reaped.add(pid)
        return True

    while True:
        table = proc_table()
        orphans = {p for p, (pp, *_) in table.items() if pp == me and p not in keep}
        tree = tree_of(table, orphans | ({proc.pid} if not root_done else set()))
        tree -= {p for p in tree if p in keep}
        rss = sum(table[p][2] for p in tree if table[p][1] != "Z") / 1024
        now = round(time.time() - start, 2)
        usage.rss.append((now, round(rss, 1)))
        ticks = sum(table[p][3] for p in tree if table[p][1] != "Z")
        usage.cpu.append((now, ticks / CLOCK_TICKS))
        for p in tree:
            if table[p][1] != "Z":
                name = proc_name(p)
                usage.procs.setdefault(name, []).append((now, round(table[p][2] / 1024, 1)))
                anon = anon_kib(p)
                if anon is not None:
                    usage.procs_anon.setdefault(name, []).append((now, round(anon / 1024, 1)))
        usage.peak_rss_mib = max(usage.peak_rss_mib, rss)
        if not root_done and reap(proc.pid, os.WNOHANG):
            root_done = True
            usage.wall_s = time.time() - start
        for pid in orphans - {proc.pid}:
            if table[pid][1] == "Z":
                reap(pid, 0)
        if root_done and not (orphans - reaped - {proc.pid}):
            break
        if time.time() - start > limit and not usage.killed:
            usage.killed = True
            for pid in tree:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(sample if not root_done else 0.05)
    proc.returncode = 0  # reaped above; keeps Popen from waiting again
    # A sample each --sample seconds can miss a short peak that wait4 saw.
    usage.peak_rss_mib = max(usage.peak_rss_mib, usage.max_single_rss_mib)
    return usage


def slope(samples: list[tuple[float, float]]) -> float:
    """Least-squares slope of (s, MiB) samples, in MiB a minute (0 with fewer than 2)."""
    n = len(samples)
    if n < 2:
        return 0.0
    mt = sum(t for t, _ in samples) / n
    mv = sum(v for _, v in samples) / n
    stt = sum((t - mt) ** 2 for t, _ in samples)
    return 60 * sum((t - mt) * (v - mv) for t, v in samples) / stt if stt else 0.0


def rss_slopes(usage: Usage, times: list[float], start: float, since: float, end: float) -> dict:
    """RSS slopes after warm-up (from ``since`` s to ``end``, the end of ``--for``; the
    stop's own work left out): the tree's and each process's in MiB a minute, and the
    tree's per 1,000 server requests."""
    window = [(t, v) for t, v in usage.rss if since <= t <= end]
    requests = sum(1 for t in times if since <= t - start <= end)
    tree = slope(window)
    minutes = (end - since) / 60 if end > since else 0.0
    return {
        "from_s": since,
        "tree_mib_min": round(tree, 2),
        "tree_mib_per_1000_requests": round(tree * minutes * 1000 / requests, 3)
        if requests
        else None,
        "requests": requests,
        "procs_mib_min": {
            name: round(slope([(t, v) for t, v in s if since <= t <= end]), 2)
            for name, s in usage.procs.items()
            if sum(1 for t, _ in s if since <= t <= end) >= 5
        },
        "procs_anon_mib_min": {
            name: round(slope([(t, v) for t, v in s if since <= t <= end]), 2)
            for name, s in usage.procs_anon.items()
            if sum(1 for t, _ in s if since <= t <= end) >= 5
        },
    }


# ------------------------------------------------------------------------ tools


def with_hosts(hosts_file: str, cmd: list[str]) -> list[str]:
    """``cmd`` with the web's hosts file over /etc/hosts, in a mount namespace of its
    own (the machine's /etc/hosts stays as it is)."""
    return [
        "unshare",
        "--mount",
        "--",
        "sh",
        "-c",
        'mount --bind "$0" /etc/hosts && exec "$@"',
        hosts_file,
        *cmd,
    ]


def tool_workers(tool: str) -> int:
    """The --workers of a crawlkit tool: N for crawlkit-wN and crawlkit-bwN, else 1."""
    for prefix in ("crawlkit-w", "crawlkit-bw"):
        if tool.startswith(prefix):
            return int(tool[len(prefix) :])
    return 1


def crawlkit_cmd(
    web: dict, state: Path, args: argparse.Namespace, workers: int = 1, jobs: int | None = None
) -> list[str]:
    cmd = [
        sys.executable,
        "-m",
        "crawlkit",
        "crawl",
        web["seeds"],
        "--state",
        str(state),
        "--scope",
        "any",
        "--min-delay",
        "0",
        "--concurrency",
        str(args.concurrency),
        "--for",
        f"{args.duration:g}s",
        "--allow-net",
        web["allow_net"],
        "--hosts-file",
        web["hosts_file"],
        "-j",
        str(args.jobs),
    ]
    if jobs is not None:
        cmd[-1] = str(jobs)
    if workers > 1:
        cmd += ["--workers", str(workers)]
    cmd += shlex.split(args.crawlkit_args)
    if args.scenario == "classic":
        cmd += [
            "--delay-factor",
            "0",
            "--no-budgets",
            "--per-ip",
            "100",
            "--per-host",
            "50",
            "--batch",
            "5000",
        ]
    if "ca_file" in web:
        cmd += ["--ca-file", web["ca_file"]]
    return cmd


def crawlkit_pages(state: Path, wanted: set[str]) -> set[str]:
    """Pages in crawlkit's page records (written once a page is parsed)."""
    files = sorted(state.glob("crawl/**/pages*.ndjson*"))
    files += sorted(state.glob("workers/*/crawl/**/pages*.ndjson*"))  # --workers N
    return canonical_set((str(r["url"]) for r in streams.read_records(files)), wanted)


SPIDER = textwrap.dedent(
    """
    import sys
    import scrapy
    from scrapy.crawler import CrawlerProcess
    from scrapy.linkextractors import LinkExtractor

    seeds, out, concurrency, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    sink = open(out, "w", buffering=1)

    class Bench(scrapy.Spider):
        name = "bench"
        start_urls = open(seeds).read().split()
        # (allow_domains would compare "h1.test:PORT" and refuse every link)
        links = LinkExtractor()

        def parse(self, response):
            sink.write(response.url + "\\n")
            for link in self.links.extract_links(response):
                yield scrapy.Request(link.url, callback=self.parse)

    process = CrawlerProcess({
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0, "ROBOTSTXT_OBEY": True, "LOG_LEVEL": "ERROR",
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
        "TELNETCONSOLE_ENABLED": False, "COOKIES_ENABLED": False,
        "HTTPCACHE_ENABLED": False, "CLOSESPIDER_TIMEOUT": float(seconds),
        "DOWNLOAD_TIMEOUT": 30, "DOWNLOAD_MAXSIZE": 10_000_000,
    })
    process.crawl(Bench)
    process.start()
    sink.close()
    """
)


def wget2_pages(target: Path, wanted: set[str], scheme: str, port: int) -> set[str]:
    """Pages wget2 saved. It saves HOST/PATH[?QUERY] (no port, "index.html" for a
    directory, "&amp;" of an href kept literally)."""
    urls = []
    prefix = str(target) + "/"
    for path in target.rglob("*"):
        if path.is_file():
            host, _, rest = str(path)[len(prefix) :].partition("/")
            rest = rest.replace("&amp;", "&")
            if rest == "index.html" or rest.endswith("/index.html"):
                rest = rest[: -len("index.html")]
            urls.append(f"{scheme}://{host}:{port}/{rest}")
    return canonical_set(urls, wanted)


def loaded_tree(cwd: Path) -> str:
    """The checkouts of the crawlkit and crawlkit_cli packages a tool run from ``cwd``
    loads, in this environment (one path when they agree)."""
    code = "import crawlkit, crawlkit_cli; print(crawlkit.__file__); print(crawlkit_cli.__file__)"
    where = subprocess.run(
        [sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, check=False
    )
    if where.returncode != 0:
        return "?"
    lib, cli = (str(Path(line).resolve().parent.parent) for line in where.stdout.split())
    return lib if lib == cli else f"{lib} (its CLI from {cli})"


def with_its_cli(pythonpath: str, tmp: Path) -> str:
    """``pythonpath`` with each checkout it names given its own CLI: the editable
    install maps ``crawlkit_cli`` to this checkout's ``cli/``, so an older checkout on
    PYTHONPATH alone ran its library under this checkout's CLI (or failed to start
    when the CLI imported what the library did not have yet)."""
    entries = []
    for i, entry in enumerate(pythonpath.split(os.pathsep)):
        cli = Path(entry) / "cli"
        if entry and (Path(entry) / "crawlkit").is_dir() and (cli / "__init__.py").exists():
            holder = tmp / f"cli-path-{i}"
            holder.mkdir(exist_ok=True)
            link = holder / "crawlkit_cli"
            if not link.exists():
                link.symlink_to(cli.resolve())
            entries.append(str(holder))
        entries.append(entry)
    return os.pathsep.join(entries)


def run_tool(tool: str, web: dict, tmp: Path, args: argparse.Namespace) -> dict:
    """One bounded run of ``tool`` on ``web``: the figures of the module docstring."""
    work = tmp / f"{tool}-{time.time_ns()}"
    work.mkdir()
    limit = args.duration + args.hard_grace
    ck = tool.startswith("crawlkit")
    loop_log = work / "timeline.ndjson"
    if ck:
        jobs = 2 if tool == "crawlkit-j2" else None
        cmd = crawlkit_cmd(web, work / "state", args, tool_workers(tool), jobs)
        if args.timeline:
            cmd += ["--timeline", str(loop_log)]  # the crawl loop's states, per second
        if args.py_spy:
            spy = shutil.which("py-spy", path=Path(sys.executable).parent) or "py-spy"
            cmd = [
                spy,
                "record",
                "--subprocesses",
                "--nonblocking",
                "--function",
                "--threads",
                "--format",
                "raw",
                "--rate",
                str(PY_SPY_RATE),
                "--output",
                str(Path(args.py_spy).resolve()),
                "--",
                *cmd,
            ]
    elif tool == "scrapy":
        (work / "spider.py").write_text(SPIDER)
        cmd = with_hosts(
            web["hosts_file"],
            [
                args.scrapy_python,
                str(work / "spider.py"),
                web["seeds"],
                str(work / "urls.txt"),
                str(args.concurrency),
                f"{args.duration:g}",
            ],
        )
    else:
        cmd = with_hosts(
            web["hosts_file"],
            [
                "timeout",
                "-s",
                "TERM",
                f"{args.duration:g}",
                "wget2",
                "--recursive",
                "--level=inf",
                "--span-hosts",
                "--domains=test",
                "--robots=on",
                f"--max-threads={args.concurrency}",
                "--timeout=30",
                "--quiet",
                f"--directory-prefix={work / 'out'}",
                f"--input-file={web['seeds']}",
            ],
        )
    load = os.getloadavg()[0]
    start = time.time()
    env = dict(kv.split("=", 1) for kv in args.b_env) if tool.startswith("crawlkit-b") else {}
    if "PYTHONPATH" in env:
        env["PYTHONPATH"] = with_its_cli(env["PYTHONPATH"], tmp)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        if ck:
            print(f"    {tool} runs {loaded_tree(work)}", flush=True)
        web_cpu = cpu_seconds(web["web_pid"])
        usage = measure(cmd, {web["web_pid"]}, limit, args.sample, work / "output.txt")
        web_cpu = cpu_seconds(web["web_pid"]) - web_cpu
    finally:
        for key, value in saved.items():  # as it was: a PYTHONPATH the bench was given
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    if ck:
        pages = crawlkit_pages(work / "state", web["wanted"])
        if not pages:  # a tool that did not start: say why rather than count zeros
            said = (work / "output.txt").read_text(errors="replace").strip().splitlines()
            print("    no page; its output ends:", *said[-3:], sep="\n      ", flush=True)
    elif tool == "scrapy":
        urls = (work / "urls.txt").read_text().split() if (work / "urls.txt").exists() else []
        pages = canonical_set(urls, web["wanted"])
    else:
        pages = wget2_pages(work / "out", web["wanted"], "http", web["port"])
    os.kill(web["web_pid"], signal.SIGUSR1)  # flush the request log
    time.sleep(1.0)
    requests = [(t, key) for t, key in server_requests(Path(web["log"])) if t >= start]
    times = [t for t, _ in requests]
    # A stall is counted while work is queued: up to --for, the tool's end, or the
    # moment only hosts that set the pace had pages left, whichever came first.
    stall_end = min(start + usage.wall_s, start + args.duration)
    done = free_hosts_done(requests, web["free_pages"])
    if done is not None:
        stall_end = min(stall_end, done)
    n = len(pages)
    if ck and args.py_spy:
        print_profile(args.py_spy, n)
    result = {
        "tool": tool,
        "new_pages": n,
        "pages_per_s": n / usage.wall_s if usage.wall_s else 0.0,
        "cpu_per_1000": 1000 * usage.cpu_s / n if n else float("inf"),
        "cpu_s": usage.cpu_s,
        "cores": usage.cpu_s / usage.wall_s if usage.wall_s else 0.0,
        # Issue 27 asks for the cores used while work is queued: from 5 s after the
        # first request (start-up, imports, robots.txt) to --for (then the run winds
        # down: post-processing finishes what was fetched).
        "cores_mid": cores_between(
            usage.cpu, (min(times) - usage.started + 5.0) if times else 0.0, args.duration
        ),
        # the test web's server shares the machine: what it used is not the tool's
        "web_cores": web_cpu / usage.wall_s if usage.wall_s else 0.0,
        "wall_s": usage.wall_s,
        "peak_rss_mib": usage.peak_rss_mib,
        "max_single_rss_mib": usage.max_single_rss_mib,
        "stall_s": longest_stall(times, stall_end),
        "free_hosts_done_s": None if done is None else round(done - start, 1),
        "requests": len(times),
        "overshoot_s": usage.wall_s - args.duration,
        "killed": usage.killed,
        "load_before": load,
        "rss": usage.rss,
        "rss_procs": usage.procs,
        "rss_procs_anon": usage.procs_anon,
        "per_5s": per_window(times, start),
        "rss_slope": rss_slopes(usage, times, start, args.slope_from, args.duration),
    }
    if loop_log.exists():
        result["loop"] = loop_windows(loop_log)
        result["loop_idle"] = loop_idle(result["loop"])
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return result


# ----------------------------------------------------------------------- report


def print_profile(collapsed: Path, pages: int, top: int = 25) -> None:
    """The functions that cost most CPU per 1,000 pages, from py-spy's collapsed stacks
    (``frame;frame;... count`` a line, idle threads left out): self time (the function's
    own frame on top, C calls it makes included) and inclusive time."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    threads: dict[str, Counter[str]] = {}  # thread -> its first crawlkit frames
    total = 0
    for line in collapsed.read_text("utf-8", "replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        n = int(count)
        total += n
        frames = stack.split(";")
        # py-spy --threads: "process ...;thread (0x...);frames": per thread, and
        # named by the first crawlkit frame (asyncio's loop, the post thread, ...)
        head = [f for f in frames if f.startswith(("process ", "thread ("))]
        frames = [f for f in frames if f not in head]
        if not frames:
            continue
        where = next((f for f in frames if "crawlkit/" in f), frames[0] if frames else "?")
        threads.setdefault(";".join(head), Counter())[where.split(" (")[0]] += n
        own[frames[-1]] = own.get(frames[-1], 0) + n
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + n
    if not pages or not total:
        return
    per_k = 1000 / pages / PY_SPY_RATE
    print(
        f"  py-spy: {total / PY_SPY_RATE:.1f} busy thread-seconds sampled = "
        f"{total * per_k:.2f} s per 1,000 pages ({pages} pages)"
    )
    print("  -- per thread (busy share of the run's wall time, its top entry points)")
    busiest = sorted(threads.items(), key=lambda kv: -sum(kv[1].values()))
    for name, entries in busiest[:8]:
        n = sum(entries.values())
        tops = ", ".join(f"{w} {100 * c / n:.0f}%" for w, c in entries.most_common(3))
        print(f"    {n / PY_SPY_RATE:7.1f} s  {name[-40:]}: {tops}")
    for title, table in (("self", own), ("inclusive", inclusive)):
        print(f"  -- {title} (s per 1,000 pages, share of samples)")
        for frame, n in sorted(table.items(), key=lambda kv: -kv[1])[:top]:
            print(f"    {n * per_k:6.3f}  {100 * n / total:5.1f}%  {frame[:110]}")


FIGURES = (
    ("new_pages", "new pages processed", "{:.0f}"),
    ("pages_per_s", "new pages/s (whole run)", "{:.1f}"),
    ("cpu_per_1000", "CPU s per 1,000 pages", "{:.2f}"),
    ("cores", "CPU cores used (tree CPU s / wall s)", "{:.2f}"),
    ("cores_mid", "CPU cores used from 5 s after the first request to --for", "{:.2f}"),
    ("web_cores", "cores the test web's server used meanwhile", "{:.2f}"),
    ("peak_rss_mib", "peak RSS MiB (tree)", "{:.0f}"),
    ("stall_s", "longest stall s (5-s windows < 10% mean)", "{:.0f}"),
    ("requests", "server-side requests", "{:.0f}"),
    ("overshoot_s", "ended past --for, s", "{:+.1f}"),  # Scrapy, wget2: their bound
)


def median(runs: list[dict], key: str) -> float:
    return statistics.median(r[key] for r in runs)


def report(
    scenario: str, hosts: int, pages: int, runs: dict[str, list[dict]], args: argparse.Namespace
) -> None:
    names = [t for t in TOOLS if runs.get(t)]
    loads = [r["load_before"] for rs in runs.values() for r in rs]
    print(
        f"\n{scenario} web: {hosts} hosts x ~{pages} pages; --for {args.duration:g}s, "
        f"--concurrency {args.concurrency}; {args.repeat} run(s) per tool, medians; "
        f"{os.cpu_count()} cores, load average {min(loads):.1f}-{max(loads):.1f} "
        f"before the runs"
    )
    print(f"  {'':42s}" + "".join(f"{n:>12s}" for n in names))
    for key, label, fmt in FIGURES:
        cells = [fmt.format(median(runs[n], key)) for n in names]
        print(f"  {label:42s}" + "".join(f"{c:>12s}" for c in cells))
    if "crawlkit" in names:
        ck_rate = median(runs["crawlkit"], "pages_per_s")
        ck_cpu = median(runs["crawlkit"], "cpu_per_1000")
        for other in names[1:]:
            rate = median(runs[other], "pages_per_s")
            cpu = median(runs[other], "cpu_per_1000")
            print(
                f"  crawlkit / {other}: {ck_rate / rate if rate else float('inf'):.2f}x the "
                f"new pages/s, {ck_cpu / cpu if cpu else float('inf'):.2f}x the CPU per "
                f"page"
            )
    for name in names:
        all_runs = ", ".join(
            f"{r['pages_per_s']:.0f}/s {r['cpu_per_1000']:.2f}cpu stall {r['stall_s']:.0f}s"
            + (f" loop-idle {r['loop_idle']}" if "loop_idle" in r else "")
            + (" KILLED" if r["killed"] else "")
            for r in runs[name]
        )
        print(f"  {name} runs: {all_runs}")


def isolate() -> None:
    """Re-execute in a network namespace of loopback only (see the module docstring)."""
    if os.environ.get(NETNS_MARK) or os.geteuid() != 0 or not shutil.which("unshare"):
        return
    env = dict(os.environ, **{NETNS_MARK: "1"})
    cmd = [
        "unshare",
        "--net",
        "--mount",
        "--",
        "sh",
        "-c",
        'ip link set lo up && exec "$@"',
        "sh",
        sys.executable,
        *sys.argv,
    ]
    sys.stdout.flush()
    os.execvpe("unshare", cmd, env)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument(
        "--scenario",
        choices=["both", "few-seed", "seeded", "classic"],
        default="both",
        help="both: few-seed, then seeded",
    )
    ap.add_argument("--full", action="store_true", help="issue 13's sizes (and --for 60)")
    ap.add_argument("--hosts", type=int, default=None)
    ap.add_argument("--pages", type=int, default=None, help="mean pages per host")
    ap.add_argument(
        "--for",
        dest="duration",
        type=float,
        default=None,
        help="seconds each tool may crawl (default 20, 60 with --full)",
    )
    ap.add_argument("--tools", default=",".join(TOOLS), help="comma list of " + ", ".join(TOOLS))
    ap.add_argument("--repeat", type=int, default=1, help="runs per tool (median reported)")
    ap.add_argument("--concurrency", type=int, default=256)
    ap.add_argument("--jobs", type=int, default=1, help="crawlkit extract workers (-j)")
    ap.add_argument("--tls", action="store_true", help="over HTTPS (crawlkit only)")
    ap.add_argument("--scrapy-python", default=sys.executable, help="a Python with Scrapy")
    ap.add_argument("--sample", type=float, default=1.0, help="seconds between RSS samples")
    ap.add_argument(
        "--hard-grace", type=float, default=120.0, help="SIGKILL a tool this long after --for"
    )
    ap.add_argument("--json", type=Path, default=None, help="write every run's figures here")
    ap.add_argument("--rss-log", type=Path, default=None, help="write the RSS samples here")
    ap.add_argument(
        "--slope-from",
        type=float,
        default=180.0,
        help="RSS slope (least squares) from this second of a run to its end: warm-up left out",
    )
    ap.add_argument("--keep", action="store_true", help="keep the tools' output in /tmp")
    ap.add_argument(
        "--py-spy",
        dest="py_spy",
        type=Path,
        default=None,
        help="profile crawlkit's runs with py-spy into FILE (collapsed stacks) "
        "and print the top CPU costs per 1,000 pages",
    )
    ap.add_argument(
        "--crawlkit-args",
        default="",
        help="more options for crawlkit crawl (an experiment, e.g. '--delay-factor 0')",
    )
    ap.add_argument(
        "--timeline",
        action="store_true",
        help="print server-side requests per 5 s of each run, and crawlkit's loop states "
        "(crawl --timeline) per 5 s with its idle windows",
    )
    ap.add_argument(
        "--b-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the environment of the crawlkit-b tool (repeatable), e.g. a debug knob",
    )
    ap.add_argument("--no-isolate", action="store_true", help="no loopback-only namespace")
    ap.add_argument(
        "--no-warm",
        action="store_true",
        help="the web makes its pages as they are asked for, not all before the run (a "
        "large web starts at once, its server takes more CPU): for memory runs",
    )
    args = ap.parse_args()
    if not args.no_isolate:
        isolate()
    isolated = bool(os.environ.get(NETNS_MARK))
    become_subreaper()
    tools = [t for t in args.tools.split(",") if t]
    if args.tls or not isolated:
        dropped = [t for t in tools if not t.startswith("crawlkit")]
        if dropped:
            why = "--tls" if args.tls else "no loopback-only namespace (run as root)"
            print(f"skipping {', '.join(dropped)}: {why}")
        tools = [t for t in tools if t.startswith("crawlkit")]
    if "wget2" in tools and not shutil.which("wget2"):
        print("skipping wget2: not installed (apt-get install -y wget2)")
        tools.remove("wget2")
    if args.duration is None:
        args.duration = 60.0 if args.full else 20.0
    scenarios = ["few-seed", "seeded"] if args.scenario == "both" else [args.scenario]
    tmp = Path(tempfile.mkdtemp(prefix="bench-crawl-"))
    everything: list[dict] = []
    try:
        for scenario in scenarios:
            hosts, pages = SIZES[scenario][1 if args.full else 0]
            hosts, pages = args.hosts or hosts, args.pages or pages
            args.scenario = scenario
            runs: dict[str, list[dict]] = {t: [] for t in tools}
            for i in range(args.repeat):
                for tool in tools:
                    with testweb(
                        tmp, scenario, hosts, pages, args.tls, warm=not args.no_warm
                    ) as web:
                        result = run_tool(tool, web, tmp, args)
                    result.update(scenario=scenario, hosts=hosts, pages=pages, repeat=i)
                    runs[tool].append(result)
                    everything.append(result)
                    print(
                        f"  [{scenario} #{i + 1}] {tool}: {result['new_pages']} pages in "
                        f"{result['wall_s']:.1f} s, {result['cpu_per_1000']:.2f} CPU s/1000, "
                        f"RSS {result['peak_rss_mib']:.0f} MiB, load "
                        f"{result['load_before']:.1f}",
                        flush=True,
                    )
                    sl = result["rss_slope"]
                    print(
                        f"    RSS slope from {sl['from_s']:g} s: {sl['tree_mib_min']:+.2f} MiB/min "
                        f"(tree), {sl['tree_mib_per_1000_requests']} MiB per 1,000 requests; "
                        + ", ".join(
                            f"{name.split()[0]} {v:+.2f}" for name, v in sl["procs_mib_min"].items()
                        ),
                        flush=True,
                    )
                    print(
                        "    of it anonymous (RssAnon): "
                        + ", ".join(
                            f"{name.split()[0]} {v:+.2f}"
                            for name, v in sl["procs_anon_mib_min"].items()
                        ),
                        flush=True,
                    )
                    if args.timeline:
                        print(f"    server requests per 5 s: {result['per_5s']}", flush=True)
                        print_loop(result.get("loop", []))
            report(scenario, hosts, pages, runs, args)
    finally:
        if args.keep:
            print(f"kept: {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"load average at the end: {os.getloadavg()}")
    if args.json:
        args.json.write_text(
            json.dumps(
                [{k: v for k, v in r.items() if k not in SAMPLE_KEYS} for r in everything],
                indent=1,
            )
        )
    if args.rss_log:
        args.rss_log.write_text(
            json.dumps(
                [
                    {
                        "tool": r["tool"],
                        "scenario": r["scenario"],
                        "rss": r["rss"],
                        "procs": r["rss_procs"],
                        "procs_anon": r["rss_procs_anon"],
                    }
                    for r in everything
                ]
            )
        )


if __name__ == "__main__":
    main()
