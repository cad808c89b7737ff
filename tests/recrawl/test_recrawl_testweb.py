"""crawlkit recrawl on testweb, in real time: the clock page changes every second and
settles at an interval of that order; the stable page answers 304 to conditional GETs
built from the due records and drifts to the maximum interval."""

from __future__ import annotations

import hashlib
import statistics
import time
from pathlib import Path

from conftest import start_testweb

from crawlkit.recrawl import History, RecrawlPolicy
from crawlkit.stages.recrawl import recrawl
from crawlkit.url import fingerprint_int

PERIOD = 1.0
RUN_FOR = 12.0


def _fetch(web, due: dict) -> dict:
    headers = {}
    if due.get("etag"):
        headers["If-None-Match"] = due["etag"]
    if due.get("last_modified"):
        headers["If-Modified-Since"] = due["last_modified"]
    at = time.time()
    status, hdrs, body = web.get(due["url"], headers=headers)
    return {
        "url": due["url"],
        "status": status,
        "outcome": "not-modified" if status == 304 else "fetched",
        "fetched_at": at,
        "etag": hdrs.get("etag"),
        "last_modified": hdrs.get("last-modified"),
        "digest": None if status == 304 else "sha1:" + hashlib.sha1(body).hexdigest(),
    }


def test_intervals_follow_the_page_on_testweb(tmp_path: Path) -> None:
    args = ["--hosts", "1", "--pages", "3", "--special", "changing", "--change-every", "1s"]
    with start_testweb(tmp_path, *args) as web:
        host = web.hosts_of_kind("changing")[0]["name"]
        urls = [web.url(host, "/clock.html"), web.url(host, "/stable.html")]
        policy = RecrawlPolicy(initial=PERIOD, min=0.05, max=4.0)
        state = tmp_path / "state"
        log = [_fetch(web, {"url": u}) for u in urls]
        intervals: dict[str, list[float]] = {u: [] for u in urls}
        statuses: dict[str, list[int]] = {u: [] for u in urls}
        deadline = time.monotonic() + RUN_FOR
        while time.monotonic() < deadline:
            due: list[dict] = []
            lines = [("log", i + 1, rec) for i, rec in enumerate(log)]
            recrawl(state, lines, write=due.extend, policy=policy, now=time.time())
            log = [_fetch(web, d) for d in due]
            for d, rec in zip(due, log, strict=True):
                intervals[d["url"]].append(d["interval"])
                statuses[d["url"]].append(rec["status"])
            time.sleep(0.01)
        recrawl(
            state,
            [("log", i + 1, r) for i, r in enumerate(log)],
            write=lambda r: None,
            policy=policy,
            now=time.time(),
        )
    history = History(state / "recrawl")
    final = {u: history.get(fingerprint_int(u)) for u in urls}
    history.close()
    clock, stable = urls
    assert set(statuses[stable]) == {304}  # the conditional GET came from the due records
    assert final[stable] is not None and final[stable].interval == policy.max
    assert final[stable].changes == 0 and final[stable].checks >= 5
    settled = intervals[clock][len(intervals[clock]) // 2 :]
    assert len(settled) >= 5
    assert 0.15 * PERIOD <= statistics.geometric_mean(settled) <= 1.0 * PERIOD
    assert {200, 304} <= set(statuses[clock])  # changes seen, and no-change seen
