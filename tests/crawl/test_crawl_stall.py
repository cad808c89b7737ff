"""Never idle while work is due: a web found by discovery, with slow Crawl-delay hosts.

The web is addressed by IP literal and reached from two seeds; some hosts ask for a
long Crawl-delay, half answer robots.txt with 404. A crawler whose fetcher waits for
the Crawl-delay hosts while other hosts could be fetched now shows, in the server's
log, long windows without a request to any fast host although one of them still had
pages to give. Judged by counts from the log, never by speed.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import orjson
from conftest import crawlkit, start_testweb

WINDOW = 10.0  # seconds without a request to a fast host that count as a stall
LAG = 8.0  # seconds a crawler may take from fetching a home page to queueing its links


def _stalls(requests: list[dict], fast: set[str]) -> list[tuple[float, float, str]]:
    """(start, end, host) of pauses in the requests to fast hosts during which a fast
    host had work due for at least WINDOW seconds: its home page (which links to all
    its pages) was fetched LAG seconds before, and it was asked for more after."""
    times: dict[str, list[float]] = {}
    root_done: dict[str, float] = {}
    for q in requests:
        host = q["host"]
        if host not in fast or q["path"] == "/robots.txt":
            continue
        times.setdefault(host, []).append(q["t_start"])
        if q["path"] == "/":
            root_done[host] = min(root_done.get(host, q["t_end"]), q["t_end"])
    starts = sorted(t for ts in times.values() for t in ts)
    found = []
    for a, b in itertools.pairwise(starts):
        for host, ts in times.items():
            due_from = max(a, root_done.get(host, float("inf")) + LAG)
            if b - due_from >= WINDOW and max(ts) >= b:
                found.append((a, b, host))
                break
    return found


def test_slow_hosts_never_keep_the_fetcher_from_hosts_due_now(tmp_path: Path) -> None:
    web_args = (
        "--hosts",
        "120",
        "--pages",
        "4",
        "--ip-hosts",
        "--seed-hosts",
        "2",
        "--robots-404",
        "0.5",
        "--crawl-delay-hosts",
        "30",
        "--crawl-delay",
        "30s",
        "--special",
        "none",
        "--seed",
        "11",
    )
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            "--min-delay",
            "0.05s",
            "--concurrency",
            "2",
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "3s",
            "--for",
            "45s",
            "--json",
            timeout=300,
        )
        assert res.code == 0, res.stderr
        requests = web.requests()
        hosts = web.manifest["hosts"]
    fast = {
        h["name"]
        for h in hosts
        if h["kind"] == "ordinary" and not h["robots"]["crawl_delay"] and len(h["pages"]) <= 7
    }
    slow = {h["name"] for h in hosts if h["robots"]["crawl_delay"]}
    assert len(slow) == 30 and len(fast) >= 60
    # the slow hosts were found and really held their URLs back (the trap was there)
    assert len({q["host"] for q in requests if q["host"] in slow}) >= 10
    stalls = _stalls(requests, fast)
    assert not stalls, stalls[:3]
    # and the crawl got on with the fast hosts: most of them are done
    done = {q["host"] for q in requests if q["host"] in fast and q["path"] != "/robots.txt"}
    assert len(done) >= len(fast) // 2
    # (what is left may be only Crawl-delay hosts due after the deadline: then the
    # crawl ends early, freeing the slice, instead of sleeping to the deadline)
    assert orjson.loads(res.stdout)["stopped"] in (
        "time limit (--for)",
        "frontier empty",
        "nothing due before the time limit (--for)",
    )


def test_a_fast_host_is_not_fed_by_the_second_while_slow_hosts_hold_urls(
    tmp_path: Path,
) -> None:
    """The tail of a crawl: one fast host with 100 pages left, five Crawl-delay hosts
    holding their URLs. A refill waits for answers to amortise its batch; counted
    over every URL held, it waited its whole second for answers the Crawl-delay hosts
    would not give, and the fast host got its 4 URLs (``--per-host``) a second, idle in
    between (issue 27: the last big hosts of a few-seed crawl). An idle fetcher asks
    at once, so the fast host's bursts follow each other at the politeness gap."""
    web_args = ("--hosts", "8", "--pages", "40", "--special", "none", "--seed", "7")
    web_args += ("--crawl-delay-hosts", "5", "--crawl-delay", "60s")
    with start_testweb(tmp_path, *web_args) as web:
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(tmp_path / "state"),
            "--min-delay",
            "0.05s",
            "--delay-factor",
            "0",
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--for",
            "20s",
            timeout=300,
        )
        assert res.code == 0, res.stderr
        requests = web.requests()
        hosts = web.manifest["hosts"]
    slow = {h["name"] for h in hosts if h["robots"]["crawl_delay"]}
    big = max((h for h in hosts if h["name"] not in slow), key=lambda h: len(h["pages"]))
    assert len(slow) == 5 and len(big["pages"]) >= 80
    pages = sorted(
        q["t_start"] for q in requests if q["host"] == big["name"] and q["path"] != "/robots.txt"
    )
    gaps = [b - a for a, b in itertools.pairwise(pages)]
    assert min(gaps) >= 0.05 - 0.005  # the politeness gap configured
    # The slow hosts really held URLs all along: each was asked for a page at most
    # once or twice in the run (robots.txt, the home page, one more after 60 s at most).
    assert all(sum(q["host"] == name for q in requests) <= 3 for name in slow)
    # Before: after each burst of 4-10 pages the refill waited out the rest of its
    # second: 16 gaps of 0.80-0.85 s (92 of the 100 pages in 19 s); after, the
    # longest gap was 0.57 s, once (100 pages in 6 s).
    bursts = len(pages) // 10
    waits = [g for g in gaps if g >= 0.7]
    assert len(waits) <= bursts // 4, (len(waits), bursts, sorted(gaps)[-5:])
    assert len(pages) == len(big["pages"])  # all of them, well within --for
