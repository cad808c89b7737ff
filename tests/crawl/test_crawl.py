"""`crawlkit crawl` end to end against `crawlkit testweb`, judged from the server's log."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest
from conftest import (
    RAW,
    ROOT,
    crawl_loopback,
    crawlkit,
    poll_until,
    serve_routes,
    start_crawlkit,
    start_testweb,
    wait_until_locked,
)
from warcio.archiveiterator import ArchiveIterator

from crawlkit import streams

GAP = "0.05s"


def _crawl_args(web, state: Path, *extra: str) -> list[str]:
    return [
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--min-delay",
        GAP,
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "3s",
        *extra,
    ]


def _fetch_records(state: Path) -> list[dict]:
    return [
        r
        for log in sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
        for r in streams.read_records([log])
    ]


def _refused(state: Path) -> list[dict]:
    return [
        r
        for p in sorted(state.glob("crawl/**/*refused.ndjson.zst"))
        for r in streams.read_records([p])
    ]


def _audit(web, *extra: str) -> dict:
    web.flush()  # every request answered so far is in the log
    res = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", GAP, "--json", *extra)
    report = orjson.loads(res.stdout)
    assert res.code == (0 if report["ok"] else 1)
    return report


def _strip_port(url: str) -> str:
    head, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    return f"{head}://{host.split(':')[0]}/{path}"


def test_crawl_end_to_end(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "15") as web:
        state = tmp_path / "state"
        res = crawlkit(*_crawl_args(web, state, "--for", "30s", "--json"), timeout=120)
        assert res.code == 0, res.stderr
        summary = orjson.loads(res.stdout)
        report = _audit(web)
        fetches = _fetch_records(state)
        refused = _refused(state)

    # Politeness from the server's view: no violation of any kind.
    assert report["ok"], report["violations"][:5]
    by_url: dict[str, dict] = {}
    for rec in fetches:
        by_url.setdefault(rec["url"], rec)
    # Every page of every ordinary host was fetched.
    for host in web.hosts_of_kind("ordinary"):
        missing = [u for u in host["pages"] if by_url.get(u, {}).get("outcome") != "fetched"]
        assert not missing, (host["name"], missing[:3])
    # Disallowed pages were not requested (robots-denied records, nothing in the log).
    assert any(r["outcome"] == "robots-denied" for r in fetches)
    # The private-network host behind a redirect was refused, never connected to.
    private = [r for r in fetches if "private-0.test" in r["url"]]
    assert private and all(r["outcome"] == "refused" for r in private)
    assert not [q for q in web.requests() if q["host"].startswith("private-0.test")]
    # Traps are bounded: the session-id trap is refused by the frontier's limits and
    # the calendar does not run away.
    assert any(r.get("refused") == "session-id" for r in refused)
    calendar = [r for r in fetches if "calendar-0.test" in r["url"]]
    assert len(calendar) < 80
    # Duplicates are recorded, and the WARC keeps revisit records for them.
    dedup = [
        r for p in state.glob("crawl/cycles/*/dedup.ndjson.zst") for r in streams.read_records([p])
    ]
    assert any(r["kind"] == "exact" for r in dedup)
    types = []
    for warc in sorted((state / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            types += [rec.rec_type for rec in ArchiveIterator(f)]
    assert types.count("revisit") >= 1 and types.count("response") >= 40
    # Nothing lost: every fetch outcome is accounted for in the summary.
    assert sum(summary["outcomes"].values()) == len(fetches)
    # The report renders from the state directory.
    res = crawlkit("report", "--state", str(state), "--html", str(tmp_path / "r.html"))
    assert res.code == 0, res.stderr
    assert orjson.loads(res.stdout)["fetches"] == len(fetches)
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def _fetched_pages(state: Path) -> set[str]:
    return {_strip_port(r["url"]) for r in _fetch_records(state) if r["outcome"] == "fetched"}


def test_kill9_ten_times_then_finish_equals_uninterrupted(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "60", "--special", "none", "--seed", "7")
    # a 0.15 s gap makes the crawl last long enough for ten kills to land mid-crawl
    slow = ("--batch", "40", "--per-host", "5", "--min-delay", "0.15s")
    with start_testweb(tmp_path, *web_args) as web:
        clean = tmp_path / "clean"
        res = crawlkit(*_crawl_args(web, clean, *slow), timeout=180)
        assert res.code == 0, res.stderr
        expected = _fetched_pages(clean)
    assert len(expected) >= 60

    rng = random.Random(42)
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "killed"
        args = [sys.executable, "-m", "crawlkit", *_crawl_args(web, state, *slow)]
        kills = 0
        for _ in range(10):
            proc = subprocess.Popen(
                args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            # once this run's requests flow (start-up time varies with the load), kill
            # it at a random moment of its crawl
            served = len(web.requests(settle=0))
            deadline = time.monotonic() + 60
            while proc.poll() is None and len(web.requests(settle=0)) == served:
                assert time.monotonic() < deadline, "the crawl made no request in 60 s"
                time.sleep(0.02)
            time.sleep(rng.uniform(0.2, 1.5))
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait(timeout=30)
        res = crawlkit(*_crawl_args(web, state, *slow, "--json"), timeout=180)
        assert res.code == 0, res.stderr
        report = _audit(web)
    assert kills >= 5  # most runs really were killed mid-crawl
    assert report["ok"], report["violations"][:5]
    assert _fetched_pages(state) == expected
    totals = streams.read_json(state / "crawl" / "totals.json")
    # Refetches after crashes are counted and bounded by what can be in flight.
    assert 0 <= totals["refetched"] <= kills * 40


def test_report_names_the_warc_files_a_stop_left_in_new(tmp_path: Path) -> None:
    """After a kill -9 the WARC file being written stays in ``warc/new``, open: the
    report says so (it listed no WARC file at all), and the next run moves it in."""
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "30", "--special", "none") as web:
        state = tmp_path / "state"
        # a 0.2 s gap keeps the crawl going for seconds after its first pages
        args = [*_crawl_args(web, state, "--batch", "10"), "--min-delay", "0.2s"]
        proc = start_crawlkit(*args)
        try:
            poll_until(lambda: len(_fetched_pages(state)) >= 3, proc, "three pages fetched", 120)
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=30)
        opened = sorted(p.name for p in (state / "warc" / "new").glob("*.warc.gz.open"))
        assert opened
        report = orjson.loads(crawlkit("report", "--state", str(state)).stdout)["collection"]
        assert report["warc_files"] == []
        assert [w["name"] for w in report["warc_new_files"] if w["open"]] == opened
        crawlkit("report", "--state", str(state), "--html", str(tmp_path / "r.html"))
        assert opened[0] in (tmp_path / "r.html").read_text()
        res = crawlkit(*args)
        assert res.code == 0, res.stderr
        report = orjson.loads(crawlkit("report", "--state", str(state)).stdout)["collection"]
    assert report["warc_new_files"] == []
    closed = {w["name"] for w in report["warc_files"]}
    assert {name.removesuffix(".open") for name in opened} <= closed


def test_report_lists_the_responses_kept_cut(tmp_path: Path) -> None:
    """A body past --max-body and one the server broke off are kept, cut (WARC-
    Truncated): the report lists both among the problems, where it counted them as
    plain 200s."""
    head = b"HTTP/1.0 200 OK\r\nContent-Type: text/html\r\nContent-Length: 100000\r\n\r\n"
    routes = {
        "/": ("text/html", b'<a href="/big.html">b</a> <a href="/cut.html">c</a>'),
        "/big.html": ("text/html", b"<p>" + b"x" * 200_000),
        "/cut.html": (RAW, head + b"<p>" + b"y" * 5_000),  # then the connection closes
    }
    with serve_routes(routes) as (root, log):
        state = tmp_path / "state"
        res = crawl_loopback(f"{root}/", state, "--timeout", "5s", "--max-body", "50KB")
        assert res.code == 0, res.stderr
    assert {"/big.html", "/cut.html"} <= set(log)
    problems = orjson.loads(crawlkit("report", "--state", str(state)).stdout)["collection"][
        "problems"
    ]
    assert problems["truncated: length"]["examples"] == [f"{root}/big.html"]
    assert problems["truncated: disconnect"]["examples"] == [f"{root}/cut.html"]


def test_second_crawl_on_one_state_is_refused(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "10", "--special", "none") as web:
        state = tmp_path / "state"
        # a 1 s gap keeps the first crawl busy for the whole test
        args = [
            sys.executable,
            "-m",
            "crawlkit",
            *_crawl_args(web, state, "--for", "20s"),
            "--min-delay",
            "1s",
        ]
        first = subprocess.Popen(
            args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            wait_until_locked(state / "LOCK", first)
            second = crawlkit(*_crawl_args(web, state, "--for", "5s"))
            assert second.code == 1
            assert "in use by another process" in second.stderr
            assert len(second.stderr.strip().splitlines()) == 1
        finally:
            first.kill()
            first.wait(timeout=30)


def test_explain_prints_the_stage_pipeline() -> None:
    res = crawlkit("crawl", "--state", "S", "--explain", "--min-delay", "2s")
    assert res.code == 0
    lines = [line for line in res.lines if line.startswith("crawlkit ")]
    commands = [line.split()[1] for line in lines]
    # extracted files join the rest (a cycle that wrote none moves none, without error)
    assert "find S/warc/new -maxdepth 1 -name '*.warc.gz' -exec mv {} S/warc/ ';'" in res.lines
    assert commands == [
        "frontier",
        "fetch",
        "extract",
        "dedup",
        "frontier",
        "seen-merge",
        "frontier",  # add --deferred: the waiting room
        "recrawl",
    ]
    assert "--min-delay 2s" in res.text


@pytest.mark.parametrize("scope", ["nonsense[("])
def test_bad_scope_is_a_usage_error(scope: str, tmp_path: Path) -> None:
    res = crawlkit("crawl", "http://a.test/", "--state", str(tmp_path / "s"), "--scope", scope)
    assert res.code == 2
    assert res.stderr.startswith("crawlkit crawl: --scope")


@pytest.mark.parametrize(
    ("flag", "value", "said"),
    [("--for", "0s", "--for 0s: must be more than 0"), ("--max-pages", "-5", "'--max-pages'")],
)
def test_a_limit_of_nothing_is_a_usage_error(
    flag: str, value: str, said: str, tmp_path: Path
) -> None:
    """--for 0s was read as no limit (the crawl ran until killed) and --max-pages -5
    stopped at once with exit 0: both are refused before the state is made."""
    res = crawlkit("crawl", "http://a.test/", "--state", str(tmp_path / "s"), flag, value)
    assert res.code == 2 and said in res.stderr
    assert not (tmp_path / "s").exists()


def test_a_new_batch_never_takes_the_name_of_one_still_in_flight(tmp_path: Path) -> None:
    # Batches are named per cycle. The first is fetched and deleted while the second is
    # still in flight; the third must not be written over the second (its URLs would be
    # lost to a crash: invariant 4).
    from crawlkit.crawl import Crawl, CrawlOptions
    from crawlkit.diag import NullReporter
    from crawlkit.state import open_state

    seeds = [f"http://h{i}.test/p" for i in range(6)]
    with open_state(tmp_path / "state") as state:
        run = Crawl(
            state, CrawlOptions(scope="any", batch_size=2, budgets=False), reporter=NullReporter()
        )
        assert run.admission.add_seeds(seeds) == 6
        cycle = run.dir.new_cycle()
        batches: list[list[str]] = []

        def take() -> Path:
            before = set(run.dir.batch_files())
            urls = [r["url"] for r in run.feed.next_batch(cycle, lambda path, recs: None)]
            batches.append(urls)
            (path,) = set(run.dir.batch_files()) - before
            return path

        first = take()
        second = take()
        first.unlink()  # every URL of the first batch has its fetch record
        third = take()
        run.close()
    assert third != second
    assert [r["url"] for r in streams.read_records([second])] == batches[1]
    assert sorted(u for b in batches for u in b) == sorted(seeds)


def _page_lines(state: Path) -> set[tuple]:
    return {
        (_strip_port(r["url"]), r["simhash"], r["title"], r["links"])
        for p in state.glob("crawl/cycles/*/pages.ndjson.zst")
        for r in streams.read_records([p])
    }


def test_kept_extract_workers_find_what_the_crawl_process_finds(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "40", "--special", "none", "--seed", "9")
    pages = {}
    for jobs in ("1", "2"):
        with start_testweb(tmp_path, *web_args) as web:
            state = tmp_path / f"j{jobs}"
            res = crawlkit(*_crawl_args(web, state, "-j", jobs, "--json"), timeout=180)
            assert res.code == 0, res.stderr
            report = _audit(web)
            manifest = {_strip_port(u) for h in web.hosts_of_kind("ordinary") for u in h["pages"]}
        assert report["ok"], report["violations"][:5]
        assert manifest <= _fetched_pages(state)  # every page reached through extracted links
        assert orjson.loads(res.stdout)["cycles"] >= 2
        pages[jobs] = _page_lines(state)
    assert pages["1"] == pages["2"]
    assert len(pages["2"]) >= len(manifest)


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")])
def test_a_signal_stops_the_crawl_gracefully_and_a_rerun_finishes_it(
    tmp_path: Path, sig: int, name: str
) -> None:
    # A job runner's SIGTERM (Kubernetes, Slurm) or a Ctrl-C: requests in flight
    # finish, the rest is saved, the crawl stops (it does not start another fetch run)
    # and says why; the next run finishes the crawl with nothing lost.
    web_args = ("--hosts", "4", "--pages", "40", "--special", "none", "--seed", "4")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        args = _crawl_args(web, state, "--min-delay", "0.2s", "-j", "2", "--no-budgets", "--json")
        proc = subprocess.Popen(
            [sys.executable, "-m", "crawlkit", *args],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(web.requests(settle=0.0)) < 20:
            time.sleep(0.05)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        summary = orjson.loads(out)
        assert summary["stopped"] == f"interrupted ({name})"
        first = _fetched_pages(state)
        manifest = {_strip_port(u) for h in web.hosts_of_kind("ordinary") for u in h["pages"]}
        assert first < manifest  # stopped early
        res = crawlkit(
            *_crawl_args(web, state, "--min-delay", GAP, "--no-budgets", "--json"), timeout=180
        )
        assert res.code == 0, res.stderr
        report = _audit(web)
    assert orjson.loads(res.stdout)["stopped"] == "frontier empty"
    assert manifest <= _fetched_pages(state)
    assert report["ok"], report["violations"][:5]


def test_crawl_over_https_end_to_end(tmp_path: Path) -> None:
    """The same crawl over HTTPS: seeds and links are https, certificates checked
    against the run's CA, redirects across schemes followed. (The failing tls-* hosts
    would keep the crawl waiting on their deferred URLs until --for: their records are
    tested in test_fetch_tls.py.)"""
    pytest.importorskip("cryptography", reason="testweb --tls needs crawlkit[testweb]")
    args = (
        "--hosts",
        "3",
        "--pages",
        "10",
        "--special",
        "none,redirects,private,tls-upgrade,tls-mixed",
        "--tls",
    )
    with start_testweb(tmp_path, *args) as web:
        state = tmp_path / "state"
        res = crawlkit(
            *_crawl_args(web, state, "--for", "30s", "--ca-file", web.info["ca_file"]), timeout=120
        )
        assert res.code == 0, res.stderr
        report = _audit(web)
        fetches = _fetch_records(state)
        served = web.requests()
    assert report["ok"], report["violations"][:5]
    by_url: dict[str, dict] = {}
    for rec in fetches:
        by_url.setdefault(rec["url"], rec)
    for host in web.hosts_of_kind("ordinary"):
        assert host["pages"] and all(u.startswith("https://") for u in host["pages"])
        missing = [u for u in host["pages"] if by_url.get(u, {}).get("outcome") != "fetched"]
        assert not missing, (host["name"], missing[:3])
    # every ordinary page went over TLS (plain HTTP only for the cross-scheme hop)
    tls_port = web.info["tls_port"]
    plain = {(q["host"], q["path"]) for q in served if q["port"] != tls_port}
    assert plain <= {("tls-mixed-0.test", "/robots.txt"), ("tls-mixed-0.test", "/chain/1")}
    assert by_url[web.host("tls-mixed-0.test")["pages"][1]]["outcome"] == "fetched"
    private = [r for r in fetches if "private-0.test" in r["url"]]
    assert private and all(r["outcome"] == "refused" for r in private)
    uris = []
    for warc in sorted((state / "warc").glob("*.warc.gz")):
        with open(warc, "rb") as f:
            uris += [
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(f)
                if r.rec_type == "response"
            ]
    assert sum(u.startswith("https://") for u in uris) >= 30


def test_max_pages_counts_the_requests_that_got_no_status(tmp_path: Path) -> None:
    """--max-pages counts every request for a page: a request the server answered with
    garbage (no status) was not counted, so the crawl made more page requests than
    the limit, and its summary said fewer requests than the server's log."""
    pages = {f"/ok{i}.html": ("text/html", b"<p>ok</p>") for i in range(4)}
    broken = {f"/bad{i}.html": (RAW, b"garbage\r\n\r\n") for i in range(4)}
    links = "".join(f'<a href="{path}">x</a>' for path in [*broken, *pages])
    home = {"/": ("text/html", f"<html><body>{links}</body></html>".encode())}
    with serve_routes({**home, **broken, **pages}) as (root, log):
        res = crawl_loopback(f"{root}/", tmp_path / "s", "--max-pages", "6", "--json")
    assert res.code == 0, res.stderr
    asked = [path for path in log if path != "/robots.txt"]
    assert len(asked) == 6 and sum(p.startswith("/bad") for p in asked) >= 1
    assert orjson.loads(res.stdout)["requests"] == 6


def test_max_pages_does_not_count_urls_never_requested(tmp_path: Path) -> None:
    """A robots-denied URL (or one deferred, or not started before a stop) has a null
    fetched_at: counted as a request, it used up --max-pages with nothing asked, and
    a cron crawl stopped on 'page limit' with pages still to fetch."""
    denied = {f"/d{i}.html": ("text/html", b"<p>no</p>") for i in range(4)}
    pages = {f"/ok{i}.html": ("text/html", b"<p>ok</p>") for i in range(4)}
    links = "".join(f'<a href="{path}">x</a>' for path in [*denied, *pages])
    routes = {
        "/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /d\n"),
        "/": ("text/html", f"<html><body>{links}</body></html>".encode()),
        **denied,
        **pages,
    }
    with serve_routes(routes) as (root, log):
        res = crawl_loopback(f"{root}/", tmp_path / "s", "--json", "--max-pages", "5")
    assert res.code == 0, res.stderr
    summary = orjson.loads(res.stdout)
    assert sorted(p for p in log if p != "/robots.txt") == ["/", *sorted(pages)]
    assert summary["requests"] == 5 and summary["outcomes"]["robots-denied"] == 4


def test_a_copy_of_a_page_at_another_url_has_its_own_links_followed(tmp_path: Path) -> None:
    """Two directories serving the same bytes (a mirror, sites built from one template):
    the second copy of a page is stored as a revisit, and its links were never
    extracted, so its relative links (its own pages) were never fetched."""
    index = b'<html><body><a href="p1.html">one</a></body></html>'
    one = b'<html><body><a href="p2.html">two</a></body></html>'
    two = b"<html><body><p>the end</p></body></html>"
    routes = {"/": ("text/html", b'<a href="/a/">a</a> <a href="/b/">b</a>')}
    for d in ("a", "b"):
        routes[f"/{d}/"] = ("text/html", index)
        routes[f"/{d}/p1.html"] = ("text/html", one)
        routes[f"/{d}/p2.html"] = ("text/html", two)
    with serve_routes(routes) as (root, log):
        res = crawl_loopback(f"{root}/", tmp_path / "s", "--json")
    assert res.code == 0, res.stderr
    assert sorted(p for p in log if p != "/robots.txt") == sorted(routes)  # each once
    # the copies are still revisits in the WARC (stored once), and give no page record
    # of their own (the first capture's is the page: dedup and a site's yield count it)
    warcs = sorted((tmp_path / "s" / "warc").rglob("*.warc.gz"))
    kinds = Counter()
    for warc in warcs:
        with open(warc, "rb") as f:
            kinds.update(r.rec_type for r in ArchiveIterator(f))
    assert kinds["revisit"] == 3
    assert orjson.loads(res.stdout)["pages"] == 4


def test_seeds_still_queued_from_a_stopped_run_are_not_queued_again(tmp_path: Path) -> None:
    """A run stopped before it handed its seeds out leaves them queued; the next run
    queued them again as "seen, never fetched", the second copies came out "refused:
    duplicate", and its summary and report called every seed refused. The state here
    is what such a run leaves: the seeds seen and queued, none fetched."""
    routes = {f"/{name}.html": ("text/html", b"<p>a page</p>") for name in "abc"}
    with serve_routes(routes) as (root, log):
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(f"{root}{path}\n" for path in routes))
        state = tmp_path / "s"
        canon = crawlkit("canon", "--json", str(seeds))
        records = b"".join(
            orjson.dumps({**orjson.loads(line), "depth": 0, "reason": "seed"}) + b"\n"
            for line in canon.stdout.splitlines()
        )
        fresh = crawlkit("seen-merge", "--state", str(state), "-", input=records)
        queued = crawlkit("frontier", "add", "--state", str(state), "-", input=fresh.stdout)
        assert queued.code == 0 and "3 queued" in queued.stderr, queued.stderr
        res = crawl_loopback(str(seeds), state, "--json")
    assert res.code == 0, res.stderr
    summary = orjson.loads(res.stdout)
    assert summary["outcomes"] == {"fetched": 3} and summary["refused"] == {}
    assert sorted(p for p in log if p != "/robots.txt") == sorted(routes)


def test_max_pages_holds_over_runs_killed_with_sigkill(tmp_path: Path) -> None:
    """A killed run's requests were never added to the totals (they are saved when a
    run ends): five kill -9s let --max-pages 300 fetch 600 pages. Each request is
    counted on disk as it is sent; the server's log holds the limit."""
    pages = {f"/p{i}.html": ("text/html", b"<p>page</p>") for i in range(80)}
    links = "".join(f'<a href="{path}">x</a>' for path in pages)
    routes = {"/": ("text/html", f"<html><body>{links}</body></html>".encode()), **pages}
    state = tmp_path / "s"
    with serve_routes(routes) as (root, log):
        args = ("crawl", f"{root}/", "--state", str(state), "--allow-net", "127.0.0.0/8")
        args += ("--min-delay", "0.05s", "--max-pages", "30")
        for _ in range(3):
            before = len(log)
            proc = start_crawlkit(*args)
            try:
                poll_until(lambda b=before: len(log) >= b + 6, proc, "6 more requests")
            finally:
                proc.kill()
                proc.wait(timeout=60)
        res = crawlkit(*args, "--json")
    assert res.code == 0, res.stderr
    asked = [path for path in log if path != "/robots.txt"]
    assert len(asked) <= 30 and len(asked) >= 20, len(asked)
    assert orjson.loads(res.stdout)["stopped"] == "page limit (--max-pages)"


def test_a_seed_handed_out_before_a_kill_is_fetched_once(tmp_path: Path) -> None:
    # A seed the killed run had handed to its fetcher goes again with what the recovery
    # leaves; it was also queued again as a seed never fetched: a second copy, "refused:
    # duplicate" when both were in flight, fetched twice when a --max-pages share (a
    # worker's) sent it after the first was answered.
    from crawlkit.crawl import Crawl, CrawlOptions
    from crawlkit.diag import NullReporter
    from crawlkit.state import open_state

    routes = {f"/p{i}": ("text/html", b"<title>p</title>") for i in range(4)}
    with serve_routes(routes) as (root, log):
        seeds = [root + path for path in routes]
        state = tmp_path / "state"
        with open_state(state) as opened:
            killed = Crawl(
                opened,
                CrawlOptions(scope="host", batch_size=2, budgets=False),
                reporter=NullReporter(),
            )
            assert killed.admission.add_seeds(seeds) == 4
            batch = killed.feed.next_batch(killed.dir.new_cycle(), lambda path, recs: None)
            handed = [r["url"] for r in batch]
            killed.close()  # as a kill leaves it: the batch file, no fetch record
        assert len(handed) == 2
        seeds_file = tmp_path / "seeds.txt"
        seeds_file.write_text("".join(f"{s}\n" for s in seeds))
        result = crawl_loopback(str(seeds_file), state, "--scope", "host", "--json")
    assert result.code == 0, result.stderr
    assert "2 URLs handed to the fetcher before the stop go again" in result.stderr
    assert sorted(log) == sorted(["/robots.txt", *routes]), log
    outcomes = Counter(
        r["outcome"]
        for path in state.glob("crawl/cycles/*/fetch.ndjson")
        for r in streams.read_records([path])
    )
    assert outcomes == {"fetched": 4}, outcomes
