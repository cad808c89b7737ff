"""One deferral path: a URL deferred by 429/503 is fetched once after its retry time."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import orjson
from conftest import RAW, crawl_loopback, crawlkit, serve_routes, start_testweb


def test_a_deferred_url_is_fetched_exactly_once_after_its_retry_time(tmp_path: Path) -> None:
    # The throttled hosts answer every 4th request 429 (or 503) with Retry-After 1 s.
    web_args = (
        "--hosts",
        "2",
        "--pages",
        "10",
        "--special",
        "none,status-429,status-503",
        "--retry-after",
        "1s",
        "--seed",
        "2",
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
            "--backoff",
            "1s",
            "--max-backoff",
            "2s",
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--timeout",
            "3s",
            "--json",
            timeout=300,
        )
        assert res.code == 0, res.stderr
        requests = web.requests()
        throttled = {
            h["name"] for h in web.manifest["hosts"] if h["kind"] in ("status-429", "status-503")
        }
    summary = orjson.loads(res.stdout)
    assert summary["stopped"] == "frontier empty"
    by_path: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for q in requests:
        host = q["host"].split(":")[0]
        if host in throttled and q["path"] != "/robots.txt":
            by_path[(host, q["path"])].append(q)
    deferred = [k for k, qs in by_path.items() if any(q["status"] in (429, 503) for q in qs)]
    assert len(deferred) >= 4  # the crawl really met backoffs on both hosts
    for key, qs in by_path.items():
        statuses = [q["status"] for q in sorted(qs, key=lambda q: q["t_start"])]
        # every answer before the last one was a throttle; the last one the page; so
        # a deferred URL is asked again once its backoff is over, and never after that
        assert statuses[-1] == 200, (key, statuses)
        assert all(s in (429, 503) for s in statuses[:-1]), (key, statuses)
    # and never inside a Retry-After window (the server marks such a request early)
    assert not [q for q in requests if q.get("early")]


def test_max_wait_ends_a_run_that_would_sleep_on_a_backoff(tmp_path: Path) -> None:
    """A 503 with Retry-After 3600 defers the host an hour. Without --for a run slept
    that hour (``crawlkit archive`` of a site one of whose hosts was down sat there);
    with --max-wait it ends as soon as only that wait is left, exit 0, the summary
    saying when the URL is due, and the next run does not ask for it early."""
    unavailable = (
        b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 3600\r\nContent-Length: 0\r\n\r\n"
    )
    routes = {
        "/": ("text/html", b'<a href="/later">later</a>'),
        "/later": (RAW, unavailable),
    }
    with serve_routes(routes) as (root, log):
        seed = root + "/"
        res = crawl_loopback(seed, tmp_path / "s", "--max-wait", "1m", "--json")
        assert res.code == 0, res.stderr
        summary = orjson.loads(res.stdout)
        assert summary["stopped"] == "nothing due within --max-wait"
        assert summary["waiting"] == 1 and summary["next_retry_at"]
        asked = list(log)
        again = crawl_loopback(seed, tmp_path / "s", "--max-wait", "1m")
        assert again.code == 0, again.stderr
        assert "the first waiting URL is due at" in again.stderr
        assert list(log) == asked  # nothing asked before its time
    assert asked.count("/later") == 1 and asked.count("/") == 1
