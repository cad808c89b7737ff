"""crawlkit recrawl on testweb's changing pages, over real HTTP, with a simulated
clock (the ``X-Testweb-Now`` header and ``now=``): a page changing every 6 hours
(with Last-Modified and an ETag) and one that never changes, visited whenever the
stage says, for 5 simulated days in runs about an hour apart. The estimated time between
changes converges to the true period, the revisit interval to the optimal one for
it, and the stable page, answering 304 to the conditional GETs built from the due
records, drifts towards the maximum interval.

(A strictly periodic page visited every τ looks about 1/(1 − τ/2P) times faster
to a Poisson estimator dated by Last-Modified; the budget here keeps τ near P/5.)"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from conftest import start_testweb

from crawlkit.recrawl import History, RecrawlPolicy
from crawlkit.recrawl.policy import solve
from crawlkit.stages.recrawl import recrawl_in
from crawlkit.url import fingerprint_int

H = 3600.0
DAY = 86400.0
PERIOD = 6 * H
T0 = 1_780_000_000.0 - 1_780_000_000.0 % PERIOD + 1  # just after a change


def _fetch(web, due: dict, now: float) -> dict:
    headers = {"X-Testweb-Now": repr(now)}
    if due.get("etag"):
        headers["If-None-Match"] = due["etag"]
    if due.get("last_modified"):
        headers["If-Modified-Since"] = due["last_modified"]
    status, hdrs, body = web.get(due["url"], headers=headers)
    return {
        "url": due["url"],
        "status": status,
        "outcome": "not-modified" if status == 304 else "fetched",
        "fetched_at": now,
        "etag": hdrs.get("etag"),
        "last_modified": hdrs.get("last-modified"),
        "digest": None if status == 304 else "sha1:" + hashlib.sha1(body).hexdigest(),
    }


def test_intervals_converge_to_the_true_period_on_testweb(tmp_path: Path) -> None:
    args = ["--hosts", "1", "--pages", "3", "--special", "changing", "--change-every", "6h"]
    with start_testweb(tmp_path, *args) as web:
        host = web.hosts_of_kind("changing")[0]["name"]
        clock, stable = web.url(host, "/clock.html"), web.url(host, "/stable.html")
        budget = 16 / DAY  # sixteen visits a day for the two pages
        policy = RecrawlPolicy(budget=budget)
        history = History(tmp_path / "state" / "recrawl")
        now = T0
        log = [_fetch(web, {"url": u}, now) for u in (clock, stable)]
        statuses: dict[str, list[int]] = {clock: [], stable: []}
        estimates = []
        run = 0
        while now < T0 + 5 * DAY:
            due: list[dict] = []
            lines = [("log", i + 1, rec) for i, rec in enumerate(log)]
            recrawl_in(history, lines, write=due.extend, policy=policy, now=now)
            log = [_fetch(web, d, now) for d in due]
            for rec in log:
                statuses[rec["url"]].append(rec["status"])
            entry = history.get(fingerprint_int(clock))
            estimates.append(1 / entry.rate)
            # Runs 0.5 to 1.5 h apart (a fixed sequence): on a whole-hour grid every
            # visit would fall at the same phase of the 6-hour period.
            run += 1
            now += H * (0.5 + (run * 0.618034) % 1.0)
        final = {u: history.get(fingerprint_int(u)) for u in (clock, stable)}
        history.close()
    assert set(statuses[stable]) == {304}  # conditional GETs from the due records
    assert {200, 304} <= set(statuses[clock]) or set(statuses[clock]) == {200}
    # the estimate: from the prior (1 day) to the true period, and it stays there
    assert abs(estimates[0] - PERIOD) > 0.5 * PERIOD
    late = estimates[len(estimates) // 2 :]
    assert all(0.75 * PERIOD < e < 1.25 * PERIOD for e in late), late[::10]
    # the interval: the optimum for the true rates at this budget
    _, want = solve(
        np.array([1 / PERIOD, 1e-12]), 1.0, budget, tau_min=policy.min, tau_max=policy.max
    )
    assert 0.75 * want[0] < final[clock].interval < 1.33 * want[0]
    assert final[stable].interval > 3 * final[clock].interval
    assert final[stable].changes == 0 and final[stable].checks >= 5
