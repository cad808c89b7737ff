"""A simulated year of recrawling: freshness and age of four policies, and how close
the change-rate estimates get to the truth.

The web: ``--pages`` pages on ``--hosts`` hosts (Zipf sizes). Each page changes as a
Poisson process or strictly periodically (``--periodic`` share), at a mean interval
between 1 hour and 1 year: log-uniform for each host's centre, and around it by
``--site-spread`` (sd of the log; 0: log-uniform for every page alike), or never
(``--never`` share). Some pages give a Last-Modified header (``--lm`` share), some
are in a sitemap read once a day (``--sitemap`` share). Changes start a month
before time 0, when every page is fetched.

Each step (``--step``, 1 hour) a policy picks up to budget × step pages, at most
``--host-cap`` per host per step (the fetcher's politeness), and fetches them: the
copy becomes the live page, and the policy learns whether it changed (and, with
Last-Modified, when). Freshness is exact: the share of time each stored copy equals
the live page, over the year and over its second half (after the policies
learned); age is the time since the live page first differed, averaged.

Policies:

* ``today``   the rule of crawlkit 0.x: an interval halved on a change, grown by
              half otherwise, between 1 h and 90 days; due URLs soonest first.
* ``uniform`` every page as often as the budget allows, oldest copy first.
* ``new``     crawlkit.recrawl: rates estimated from the visits (the posterior of
              :mod:`crawlkit.recrawl.estimate`, kept as a running sum of
              ``loglik_grid`` rows; the site priors and the prior's spread from
              :func:`crawlkit.recrawl.plan.site_priors`), and each step the pages
              whose fetch buys the most freshness, the value averaged over the
              rate's posterior (:func:`crawlkit.recrawl.policy.expected_value` and
              ``select``), as ``crawlkit recrawl --max-urls`` does. A value runs
              from the time the copy was last known fresh (a fetch, or a sitemap
              read that saw no change), for the oracle too.
* ``oracle``  the same pick with the true rates.
* ``stage``   (``--stage``) the real stage, ``crawlkit.stages.recrawl.recrawl``, on a
              state directory, as ``crawlkit recrawl --now T --max-urls N`` in a
              replay: fed each step the fetch records of the step before and the
              sitemap. Slow (SQLite each step): use ``--pages 200 --days 30``.

``optimum`` is the analytic freshness of the Lagrangian solution for the true rates
(:func:`crawlkit.recrawl.policy.solve`), the ceiling for a fixed-interval policy.

    nice .venv/bin/python bench/bench_recrawl.py              # 10,000 pages, a year
    nice .venv/bin/python bench/bench_recrawl.py --pages 2000 --hosts 50 --only new
    nice .venv/bin/python bench/bench_recrawl.py --pages 200 --hosts 20 --days 30 \
        --stage --budgets 0.5,0.15                # the stage, as a replay drives it
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path

import numpy as np

from crawlkit.recrawl import estimate, plan
from crawlkit.recrawl.estimate import (
    CHANGED,
    GRID,
    KEEP,
    PRIOR_SPREAD,
    UNCHANGED,
    estimate_rates,
    loglik_grid,
    posterior_summary,
)
from crawlkit.recrawl.plan import site_priors
from crawlkit.recrawl.policy import expected_value, freshness, select, solve, value
from crawlkit.stages.recrawl import recrawl

H = 3600.0
DAY = 86400.0
TAU_MIN = H
TAU_MAX = 90 * DAY
PRIOR = 1 / DAY  # the stage's default prior (its --initial)
BEFORE = 30 * DAY  # changes start this long before the first fetch
EPOCH = 1_780_000_000.0  # simulated time 0 as unix seconds, for the stage
POINT = "mean"  # the estimate the stage uses (estimate_rates' point)
PRIOR_WEIGHT = 1.0  # the stage's (estimate_rates' prior_weight)
SITE_PRIOR = True  # each host's rate as its pages' prior (plan.prior_rates)
SITEMAP_OBS = True  # a sitemap read is an observation (as the stage)
EMPIRICAL_SPREAD = True  # the prior's spread from the sites' (plan.site_priors)
POSTERIOR_VALUE = True  # the value averaged over the posterior of λ
KNOWN_FRESH = True  # value from the time the copy was last known fresh
THOMPSON = False
STEADY = False
args_step = 1.0
SPREAD_SCALE = 1.0  # (an experiment: the posterior taken wider or narrower)


@dataclass
class Web:
    rate: np.ndarray  # true mean changes per second (0 = never)
    host: np.ndarray
    lm: np.ndarray  # gives Last-Modified
    sitemap: np.ndarray  # in a sitemap
    keys: np.ndarray  # change times, page * SPAN + time, sorted
    span: float

    def next_change(self, pages: np.ndarray, after: np.ndarray) -> np.ndarray:
        """The first change strictly after ``after`` (inf if none)."""
        pos = np.searchsorted(self.keys, pages * self.span + BEFORE + after, side="right")
        found = np.full(len(pages), np.inf)
        ok = pos < len(self.keys)
        hit = np.zeros(len(pages), bool)
        hit[ok] = (self.keys[pos[ok]] // self.span).astype(np.int64) == pages[ok]
        found[hit] = self.keys[pos[hit]] - pages[hit] * self.span - BEFORE
        return found

    def last_change(self, pages: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The newest change at or before ``at`` (-inf if none)."""
        pos = np.searchsorted(self.keys, pages * self.span + BEFORE + at, side="right") - 1
        found = np.full(len(pages), -np.inf)
        ok = pos >= 0
        hit = np.zeros(len(pages), bool)
        hit[ok] = (self.keys[pos[ok]] // self.span).astype(np.int64) == pages[ok]
        found[hit] = self.keys[pos[hit]] - pages[hit] * self.span - BEFORE
        return found


def make_web(args: argparse.Namespace, rng: np.random.Generator) -> Web:
    n, horizon = args.pages, args.days * DAY
    sizes = 1 / np.arange(1, args.hosts + 1)
    host = rng.choice(args.hosts, n, p=sizes / sizes.sum())
    lo, hi = math.log(H), math.log(365 * DAY)
    if args.site_spread > 0:  # each host's pages around a centre of its own
        centre = rng.uniform(lo, hi, args.hosts)[host]
        log_interval = np.clip(centre + rng.normal(0, args.site_spread, n), lo, hi)
    else:
        log_interval = rng.uniform(lo, hi, n)
    rate = np.exp(-log_interval)
    rate[rng.random(n) < args.never] = 0.0
    periodic = rng.random(n) < args.periodic
    span = 4 * horizon + 2 * BEFORE
    # From a month before the first fetch, so a first Last-Modified has a date.
    # All pages' change times at once: a count per page, then the times in one array.
    length = horizon + BEFORE
    changing = rate > 0
    period = np.where(changing, 1 / np.where(changing, rate, 1.0), np.inf)
    phase = rng.uniform(0, 1, n) * np.where(changing, period, 0.0)
    regular = periodic & changing
    count = np.where(
        regular,
        np.ceil((length - phase) / np.where(regular, period, 1.0)),
        rng.poisson(np.where(changing, rate, 0.0) * length),
    ).astype(np.int64)
    count = np.where(changing, np.maximum(count, 0), 0)
    page = np.repeat(np.arange(n), count)
    rank = np.arange(len(page)) - np.repeat(np.cumsum(count) - count, count)
    at = np.where(
        regular[page],
        phase[page] + rank * np.where(regular, period, 0.0)[page],
        rng.uniform(0, length, len(page)),
    )
    keep = at < length
    keys = np.sort(page[keep] * span + at[keep])  # time + BEFORE, page by page
    return Web(rate, host, rng.random(n) < args.lm, rng.random(n) < args.sitemap, keys, span)


class Policy:
    name = ""

    def __init__(self, web: Web) -> None:
        self.web = web
        n = len(web.rate)
        self.last = np.zeros(n)  # time of the fetch that made the stored copy
        self.pending = np.zeros(n, bool)  # a sitemap said it changed since
        self.known = np.zeros(n)  # the copy known fresh then (a fetch, or a sitemap read)

    def choose(self, now: float, count: int, host_cap: int) -> np.ndarray:
        raise NotImplementedError

    def observe(
        self, pages: np.ndarray, now: float, changed: np.ndarray, dated: np.ndarray
    ) -> None:
        """``dated``: seconds from the newest change to the visit, NaN when unknown."""


class Today(Policy):
    name = "today"

    def __init__(self, web: Web) -> None:
        super().__init__(web)
        self.interval = np.full(len(web.rate), DAY)
        self.due = self.interval.copy()

    def choose(self, now: float, count: int, host_cap: int) -> np.ndarray:
        due = np.where(self.pending, np.minimum(self.due, now), self.due)
        eligible = due <= now
        return select(-due, eligible, count, hosts=self.web.host, host_max=host_cap)

    def observe(
        self, pages: np.ndarray, now: float, changed: np.ndarray, dated: np.ndarray
    ) -> None:
        counted = self.pending[pages]  # the sitemap already halved it
        factor = np.where(counted, 1.0, np.where(changed, 0.5, 1.5))
        self.interval[pages] = np.clip(self.interval[pages] * factor, TAU_MIN, TAU_MAX)
        self.due[pages] = now + self.interval[pages]

    def sitemap_change(self, pages: np.ndarray) -> None:
        fresh = pages[~self.pending[pages]]
        self.interval[fresh] = np.clip(self.interval[fresh] * 0.5, TAU_MIN, TAU_MAX)


class Uniform(Policy):
    name = "uniform"

    def choose(self, now: float, count: int, host_cap: int) -> np.ndarray:
        eligible = now - self.last >= TAU_MIN
        return select(now - self.last, eligible, count, hosts=self.web.host, host_max=host_cap)


class ValuePolicy(Policy):
    """Pick by :func:`value` of the time since the last fetch; known-stale pages (a
    sitemap said so) at their full value ``w/λ``; past the longest interval first."""

    def rates(self) -> np.ndarray:
        raise NotImplementedError

    def choose(self, now: float, count: int, host_cap: int) -> np.ndarray:
        tau = now - (np.maximum(self.last, self.known) if KNOWN_FRESH else self.last)
        lam = np.maximum(self.rates(), 1e-12)
        since = np.where(self.pending, np.inf, tau)
        if STEADY and isinstance(self, New):
            # The steady-state optimum for this rate of fetches: each page's interval
            # at the budget's μ (policy.solve), the most overdue first.
            _, opt = solve(lam, 1.0, count / (args_step * H), tau_min=TAU_MIN, tau_max=TAU_MAX)
            v = np.where(self.pending, np.inf, tau / opt)
            return select(v, tau >= TAU_MIN, count, hosts=self.web.host, host_max=host_cap)
        if THOMPSON and isinstance(self, New):
            v = value(lam * np.exp(self.spread * self.z), 1.0, since)
        elif POSTERIOR_VALUE and isinstance(self, New):
            v = expected_value(lam, SPREAD_SCALE * self.spread, 1.0, since)
        else:
            v = value(lam, 1.0, since)
        v = np.where(tau >= TAU_MAX, np.inf, v)
        return select(v, tau >= TAU_MIN, count, hosts=self.web.host, host_max=host_cap)


class Oracle(ValuePolicy):
    name = "oracle"

    def rates(self) -> np.ndarray:
        return self.web.rate


class New(ValuePolicy):
    name = "new"

    def __init__(self, web: Web) -> None:
        super().__init__(web)
        n = len(web.rate)
        self.t = np.zeros((n, KEEP))
        self.c = np.full((n, KEEP), UNCHANGED)
        self.count = np.zeros(n, np.int64)  # observations
        self.visits = np.zeros(n, np.int64)
        self.observed = np.zeros(n)  # the newest fetch or sitemap read
        self.est = np.full(n, PRIOR)
        self.prior = np.full(n, PRIOR)
        self.spread = np.full(n, PRIOR_SPREAD)  # sd of log λ: the prior's at first
        self.prior_weight = PRIOR_WEIGHT
        self.rng = np.random.default_rng(7)
        self.z = self.rng.standard_normal(n)  # a Thompson draw per page, new each visit
        self.snapshots: dict[int, list[tuple[float, float]]] = {5: [], 10: [], 20: []}
        # The first fetch's Last-Modified: a dated change over its age (as the stage).
        pages = np.flatnonzero(web.lm)
        age = -web.last_change(pages, np.zeros(len(pages)))
        dated = pages[np.isfinite(age) & (age > 0)]
        age = -web.last_change(dated, np.zeros(len(dated)))
        self.t[dated, 0] = age
        self.c[dated, 0] = age
        self.count[dated] = 1
        # The log-likelihood on the estimator's grid, summed over the kept observations
        # (loglik_grid is additive): one new row per observation, not all 64 again.
        self.loglik = np.zeros((n, len(GRID)))
        self.loglik[dated] = loglik_grid(self.t[dated, 0], self.c[dated, 0])
        self.est[dated] = self._estimate(dated)

    def rates(self) -> np.ndarray:
        return self.est

    def _estimate(self, pages: np.ndarray) -> np.ndarray:
        if POINT == "mean":
            self.z[pages] = self.rng.standard_normal(len(pages))
            rate, self.spread[pages] = posterior_summary(
                self.loglik[pages], self.prior[pages], self.prior_weight
            )
            return rate
        k = int(min(self.count[pages].max(), KEEP))
        return estimate_rates(
            self.t[pages, :k],
            self.c[pages, :k],
            self.prior[pages],
            point=POINT,
            prior_weight=self.prior_weight,
        )

    def observe(
        self, pages: np.ndarray, now: float, changed: np.ndarray, dated: np.ndarray
    ) -> None:
        # A change a sitemap read announced is counted already (sitemap_read).
        counted = self.pending[pages]
        self._record(pages[~counted], now, changed[~counted], dated[~counted])
        self.observed[pages] = now
        self.visits[pages] += 1
        for visits, seen in self.snapshots.items():
            hit = pages[self.visits[pages] == visits]
            seen.extend(zip(self.est[hit], self.web.rate[hit], strict=True))

    def sitemap_read(self, pages: np.ndarray, now: float, lastmod: np.ndarray) -> None:
        """A sitemap read is a visit without a fetch: its lastmod dates a change since
        the last observation, or says there was none (as the stage does)."""
        if not SITEMAP_OBS:
            return
        fresh = ~self.pending[pages]  # a change announced and not fetched: nothing new
        pages, lastmod = pages[fresh], lastmod[fresh]
        changed = lastmod > self.observed[pages]
        self._record(pages, now, changed, np.where(changed, now - lastmod, np.nan))
        self.observed[pages] = now

    def _record(
        self, pages: np.ndarray, now: float, changed: np.ndarray, dated: np.ndarray
    ) -> None:
        if len(pages) == 0:
            return
        slot = self.count[pages] % KEEP
        full = self.count[pages] >= KEEP  # the oldest observation leaves the window
        if full.any():
            gone = pages[full]
            self.loglik[gone] -= loglik_grid(self.t[gone, slot[full]], self.c[gone, slot[full]])
        self.t[pages, slot] = now - self.observed[pages]
        code = np.where(changed, np.where(np.isnan(dated), CHANGED, dated), UNCHANGED)
        self.c[pages, slot] = code
        self.loglik[pages] += loglik_grid(self.t[pages, slot], code)
        self.count[pages] += 1
        self.est[pages] = self._estimate(pages)

    def refresh_priors(self) -> None:
        """Each host's prior and the prior's spread, as the stage's
        (:func:`crawlkit.recrawl.plan.site_priors`, the same function)."""
        hosts = self.web.host.astype(np.int64)
        checks = self.visits + 1  # the stage counts the first fetch
        site, default, spread = site_priors(
            self.est, checks, hosts, int(hosts.max()) + 1, 1 / PRIOR
        )
        self.prior = np.where(np.isfinite(site), site, default)[hosts]
        if EMPIRICAL_SPREAD:
            self.prior_weight = PRIOR_WEIGHT * (PRIOR_SPREAD / spread) ** 2


class Stage(Policy):
    """The real stage, ``crawlkit.stages.recrawl.recrawl`` (what ``crawlkit recrawl
    --now T --max-urls N`` runs) on a state directory, fed each step the fetch
    records of the step before: digest, fetched_at, Last-Modified where the page
    gives one, and the sitemap's lastmod records."""

    name = "stage"

    def __init__(self, web: Web, state: Path) -> None:
        super().__init__(web)
        self.state = state
        self.urls = [f"https://h{h}.test/p{i}" for i, h in enumerate(web.host)]
        self.index = {u: i for i, u in enumerate(self.urls)}
        self.records: list[dict[str, object]] = [
            self._record(i, 0.0) for i in range(len(self.urls))
        ]

    def _record(self, i: int, now: float) -> dict[str, object]:
        newest = float(self.web.last_change(np.array([i]), np.array([now]))[0])
        rec: dict[str, object] = {
            "url": self.urls[i],
            "status": 200,
            "outcome": "fetched",
            "fetched_at": EPOCH + now,
            "digest": f"sha1:{newest!r}",
        }
        if self.web.lm[i] and np.isfinite(newest):
            rec["last_modified"] = formatdate(EPOCH + newest, usegmt=True)
        return rec

    def lastmods(self, pages: np.ndarray, lastmod: np.ndarray) -> None:
        for i, t in zip(pages, lastmod, strict=True):
            self.records.append({"url": self.urls[i], "lastmod": EPOCH + float(t)})

    def choose(self, now: float, count: int, host_cap: int) -> np.ndarray:
        out: list[dict[str, object]] = []
        lines = [("sim", k + 1, r) for k, r in enumerate(self.records)]
        recrawl(
            self.state,
            lines,
            write=out.extend,
            now=EPOCH + now,
            max_urls=count,
            host_max=host_cap,
        )
        pages = np.array([self.index[str(r["url"])] for r in out], np.int64)
        self.records = [self._record(int(i), now) for i in pages]
        return pages


def run(policy: Policy, web: Web, args: argparse.Namespace, per_day: float) -> dict[str, float]:
    n = len(web.rate)
    horizon = args.days * DAY
    step = args.step * H
    fresh = np.zeros(n)
    late = np.zeros(n)  # fresh time in the second half (after the policies learned)
    half = horizon / 2
    age = np.zeros(n)
    fetches = 0
    carry = 0.0
    steps = int(horizon // step)
    for s in range(1, steps + 1):
        now = s * step
        if s % max(1, int(DAY // step)) == 0:
            on_map = np.flatnonzero(web.sitemap)
            lastmod = web.last_change(on_map, np.full(len(on_map), now))
            if isinstance(policy, New):
                policy.sitemap_read(on_map, now, lastmod)
            newer = on_map[lastmod > policy.last[on_map]]
            newer = newer[~policy.pending[newer]]
            if isinstance(policy, Stage):  # the whole sitemap, as read
                known = np.isfinite(lastmod)
                policy.lastmods(on_map[known], lastmod[known])
            if isinstance(policy, Today):
                policy.sitemap_change(newer)
            if not isinstance(policy, Uniform):
                policy.pending[newer] = True
            same = on_map[lastmod <= policy.last[on_map]]
            policy.known[same] = now  # the sitemap says the copy is still the live page
            if isinstance(policy, New) and SITE_PRIOR:
                policy.refresh_priors()
        carry += per_day * step / DAY
        count = int(carry)
        carry -= count
        pages = policy.choose(now, count, args.host_cap)
        if len(pages) == 0:
            continue
        fetches += len(pages)
        prev = policy.last[pages]
        first = web.next_change(pages, prev)
        fresh[pages] += np.minimum(first, now) - prev
        late[pages] += np.maximum(0.0, np.minimum(first, now) - np.maximum(prev, half))
        stale = first < now
        age[pages] += np.where(stale, (now - np.where(stale, first, now)) ** 2 / 2, 0.0)
        newest = web.last_change(pages, np.full(len(pages), now))
        dated = np.where(web.lm[pages] & stale, now - newest, np.nan)
        policy.observe(pages, now, stale, dated)
        policy.last[pages] = now
        policy.pending[pages] = False
    pages = np.arange(n)
    first = web.next_change(pages, policy.last)
    fresh += np.minimum(first, horizon) - policy.last
    late += np.maximum(0.0, np.minimum(first, horizon) - np.maximum(policy.last, half))
    stale = first < horizon
    age += np.where(stale, (horizon - np.where(stale, first, horizon)) ** 2 / 2, 0.0)
    return {
        "freshness": float(fresh.mean() / horizon),
        "late": float(late.mean() / (horizon - half)),
        "age_h": float(age.mean() / horizon / H),
        "fetches_day": fetches / args.days,
    }


def accuracy(snapshots: dict[object, list[tuple[float, float]]]) -> list[str]:
    lines = []
    for visits, seen in snapshots.items():
        pairs = np.array([(e, t) for e, t in seen if t > 0]) if seen else np.zeros((0, 2))
        if len(pairs) == 0:
            lines.append(f"  after {visits!s:>8} visits: no page got there")
            continue
        ratio = pairs[:, 0] / pairs[:, 1]
        err = np.abs(ratio - 1)
        lines.append(
            f"  after {visits!s:>8} visits: {len(pairs):>5} pages, median estimate/true "
            f"{np.median(ratio):.3f}, median |error| {np.median(err):.1%}, "
            f"within ±25%: {np.mean(err <= 0.25):.1%}"
        )
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pages", type=int, default=10_000)
    ap.add_argument("--hosts", type=int, default=200)
    ap.add_argument("--days", type=float, default=365)
    ap.add_argument("--step", type=float, default=1.0, help="hours per step")
    ap.add_argument("--never", type=float, default=0.1)
    ap.add_argument("--periodic", type=float, default=0.15)
    ap.add_argument("--lm", type=float, default=0.3)
    ap.add_argument("--sitemap", type=float, default=0.2)
    ap.add_argument("--host-cap", type=int, default=6, help="fetches per host per step")
    ap.add_argument(
        "--budgets", default="0.5,0.05", help="fetches per page per day, comma-separated"
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--site-spread",
        type=float,
        default=1.0,
        help="sd of a page's log change interval around its host's (0: hosts alike)",
    )
    ap.add_argument("--point", choices=["mean", "mode"], default=POINT, help="the estimate")
    ap.add_argument("--only", default="", help="policies to run, comma-separated")
    ap.add_argument("--prior-weight", type=float, default=PRIOR_WEIGHT)
    ap.add_argument("--no-site-prior", action="store_true", help="one prior for all pages")
    ap.add_argument(
        "--fixed-spread", action="store_true", help="the prior's spread fixed at its widest"
    )
    ap.add_argument(
        "--no-sitemap-obs", action="store_true", help="sitemap reads are no observations"
    )
    ap.add_argument("--initial", type=float, default=1.0, help="the prior's centre, days")
    ap.add_argument("--prior-spread", type=float, default=PRIOR_SPREAD, help="sd of log λ")
    ap.add_argument("--spread-scale", type=float, default=1.0, help="experiment")
    ap.add_argument("--thompson", action="store_true", help="experiment")
    ap.add_argument("--prior-visits", type=int, default=plan.PRIOR_VISITS, help="experiment")
    ap.add_argument("--steady", action="store_true", help="experiment: steady-state pick")
    ap.add_argument(
        "--since-fetch", action="store_true", help="value from the fetch, not a sitemap read"
    )
    ap.add_argument(
        "--point-value", action="store_true", help="value at the point estimate, not averaged"
    )
    ap.add_argument(
        "--stage",
        action="store_true",
        help="also run the real stage (slow: use --pages 200 --days 30)",
    )
    args = ap.parse_args()
    globals()["POINT"] = args.point
    globals()["PRIOR_WEIGHT"] = args.prior_weight
    globals()["SITE_PRIOR"] = not args.no_site_prior
    globals()["SITEMAP_OBS"] = not args.no_sitemap_obs
    globals()["EMPIRICAL_SPREAD"] = not args.fixed_spread
    globals()["POSTERIOR_VALUE"] = not args.point_value
    globals()["SPREAD_SCALE"] = args.spread_scale
    globals()["THOMPSON"] = args.thompson
    plan.PRIOR_VISITS = args.prior_visits
    globals()["STEADY"] = args.steady
    globals()["args_step"] = args.step
    globals()["KNOWN_FRESH"] = not args.since_fetch
    if args.point_value:  # the stage too: its pick at the point estimate
        plan.expected_value = lambda lam, spread, w, tau: value(lam, w, tau)
    globals()["PRIOR"] = 1 / (args.initial * DAY)
    estimate.PRIOR_SPREAD = args.prior_spread
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    web = make_web(args, rng)
    print(
        f"web: {args.pages} pages on {args.hosts} hosts, {len(web.keys)} changes in "
        f"{args.days:g} days; {args.never:.0%} never change, {args.periodic:.0%} periodic, "
        f"{args.lm:.0%} Last-Modified, {args.sitemap:.0%} in a sitemap; page rates spread "
        f"{args.site_spread:g} (sd of log) around their host's; step {args.step:g} h, "
        f"at most {args.host_cap} fetches per host per step"
    )
    for share in (float(b) for b in args.budgets.split(",")):
        per_day = share * args.pages
        hosts = web.host.astype(np.int64)
        _, tau = solve(
            web.rate,
            np.ones(args.pages),
            per_day / DAY,
            tau_min=TAU_MIN,
            tau_max=TAU_MAX,
            hosts=hosts,
            host_cap=args.host_cap / (args.step * H),
        )
        optimum = float(freshness(web.rate, tau).mean())
        print(f"\nbudget {per_day:,.0f} fetches a day ({share:g} per page); optimum {optimum:.4f}")
        results = {}
        snapshots: dict[object, list[tuple[float, float]]] = {}
        classes: list[type[Policy]] = [Today, Uniform, New, Oracle]
        if args.stage:
            classes.insert(3, Stage)
        for cls in classes:
            if args.only and cls.name not in [*args.only.split(","), "oracle"]:
                continue
            t0 = time.perf_counter()
            c0 = time.process_time()
            if cls is Stage:
                tmp = tempfile.TemporaryDirectory()
                policy: Policy = Stage(web, Path(tmp.name))
            else:
                policy = cls(web)
            results[cls.name] = run(policy, web, args, per_day)
            r = results[cls.name]
            print(
                f"  {cls.name:<8} freshness {r['freshness']:.4f} (2nd half {r['late']:.4f})  "
                f"age {r['age_h']:9.1f} h  "
                f"{r['fetches_day']:8.0f} fetches/day  ({time.perf_counter() - t0:.1f} s, "
                f"{time.process_time() - c0:.1f} s CPU)"
            )
            if isinstance(policy, New):
                snapshots = dict(policy.snapshots)
                done = (policy.visits >= 20) & (web.rate > 0)
                snapshots["end, 20+"] = list(zip(policy.est[done], web.rate[done], strict=True))
        oracle = results["oracle"]["freshness"]
        for name in ("today", "uniform", "new", "stage"):
            if name not in results:
                continue
            f = results[name]["freshness"]
            late = results[name]["late"] / results["oracle"]["late"]
            print(
                f"  {name:<8} / oracle {f / oracle:.1%}   / optimum {f / optimum:.1%}   "
                f"2nd half / oracle {late:.1%}"
            )
        if snapshots:
            print("  estimates (new policy), pages that change:")
            print("\n".join(accuracy(snapshots)))
    print(f"\n{time.perf_counter() - started:.1f} s in all, {time.process_time():.1f} s CPU")


if __name__ == "__main__":
    main()
