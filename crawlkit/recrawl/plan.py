"""One run's plan over the whole history: site priors, the budget's multiplier μ, each
URL's interval and due time, and the pick of the URLs to emit.

:func:`replan` solves μ for the budget (:func:`crawlkit.recrawl.policy.solve`, with
the per-host cap) from every URL's estimated rate and importance, and moves the due
time of each URL whose optimal interval changed by more than 1% (so a run that
changes nothing writes nothing). :func:`pick` chooses what a run emits:

* by the budget: the URLs due now, the ones a fetch buys the most freshness for
  first (:func:`crawlkit.recrawl.policy.value`), up to ``max_urls``;
* by count only (``max_urls`` and no budget, what a cron pipeline or a replay
  gives): the ``max_urls`` URLs whose fetch buys the most freshness now, among those
  visited at least ``min`` ago; a URL a sitemap says changed counts at its full
  value, a URL past ``max`` before all others. Fetching a page once its value
  reaches μ is the budget's optimum, so the top ``max_urls`` each run follow it
  without knowing μ.

URLs whose last answer was an error, a deferral or a robots denial wait for their
backoff (their ``due``) either way; a URL emitted and not fetched since waits
max(interval, ``reemit``). At most ``host_max`` URLs of one host are picked per run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from crawlkit.recrawl.estimate import PRIOR_SPREAD
from crawlkit.recrawl.history import History, RecrawlPolicy, Table
from crawlkit.recrawl.policy import expected_value, intervals, select, solve

__all__ = ["Plan", "pick", "prior_rates", "replan", "site_priors"]

#: The prior's spread is shrunk towards PRIOR_SPREAD as if by this many URLs.
SPREAD_SHRINK = 20.0
#: The narrowest prior spread (sd of log λ) the data can set.
SPREAD_MIN = 0.5
#: URLs of a site fetched more than this many times (one revisit: an observation)
#: give the site its prior. 1, not 5: a short or thinly budgeted crawl has few URLs
#: seen five times, and the shrinkage already weighs a site by its URL count
#: (bench_recrawl.py, 200 pages, 30 days, seeds 1-5: tight 94.4% -> 95.4% of the oracle).
PRIOR_VISITS = 1
#: A kept μ is solved again once the tracked URLs, or those updated since, reach this
#: share of the URLs it was solved for (``replan``'s ``hold``).
HOLD_SHARE = 0.1
#: The crawl's prior is shrunk towards ``1/initial``, a site's towards the crawl's,
#: as if by this many URLs.
PRIOR_SHRINK = 2.0


@dataclass
class Plan:
    mu: float
    budget: float  # visits per second the plan spends
    table: Table
    lam: np.ndarray  # each URL's rate (its estimate, else its site's prior)
    weight: np.ndarray


def site_priors(
    rate: np.ndarray, checks: np.ndarray, site: np.ndarray, sites: int, initial: float
) -> tuple[np.ndarray, float, float]:
    """Each site's prior rate (NaN for a site with no URL seen more than
    ``PRIOR_VISITS`` times: it takes the crawl's), the crawl's, and the prior's
    spread (sd of log λ), from every URL's ``rate``, ``checks`` and ``site`` index.

    A site's rate is the geometric mean rate of its URLs seen more than
    ``PRIOR_VISITS`` times; the crawl's is that of all of them, shrunk towards
    ``1/initial`` and each site's towards the crawl's, each as if by
    ``PRIOR_SHRINK`` more URLs. The spread is empirical Bayes: the sd of those URLs'
    log rates around their site's, shrunk towards :data:`PRIOR_SPREAD` as if by
    ``SPREAD_SHRINK`` URLs and kept in [``SPREAD_MIN``, :data:`PRIOR_SPREAD`]: a
    crawl whose sites' pages change alike trusts a site's rate more."""
    known = (checks > PRIOR_VISITS) & np.isfinite(rate) & (rate > 0)
    logs = np.log(rate[known])
    base = math.log(1 / initial)
    base = (float(logs.sum()) + PRIOR_SHRINK * base) / (len(logs) + PRIOR_SHRINK)
    where = site[known]
    total = np.bincount(where, logs, sites)
    number = np.bincount(where, minlength=sites)
    with np.errstate(invalid="ignore"):
        centre = (total + PRIOR_SHRINK * base) / (number + PRIOR_SHRINK)
    squares = float(((logs - centre[where]) ** 2).sum())
    spread = math.sqrt((squares + SPREAD_SHRINK * PRIOR_SPREAD**2) / (len(logs) + SPREAD_SHRINK))
    spread = min(PRIOR_SPREAD, max(SPREAD_MIN, spread))
    return np.where(number > 0, np.exp(centre), np.nan), math.exp(base), spread


def prior_rates(table: Table, initial: float) -> tuple[dict[str, float], float]:
    """Each site's prior and the crawl's (:func:`site_priors`); a site with no URL
    seen often enough is left out (it takes the crawl's)."""
    return _prior_rates(table, initial)[:2]


def _prior_rates(table: Table, initial: float) -> tuple[dict[str, float], float, float]:
    rates, default, spread = _site_rates(table, initial)
    sites = {n: float(r) for n, r in zip(table.sites, rates, strict=True) if np.isfinite(r)}
    return sites, default, spread


def _site_rates(table: Table, initial: float) -> tuple[np.ndarray, float, float]:
    """Each site index's prior (NaN for a site with none: it takes the crawl's), the
    crawl's, and the spread. Sites are grouped by the table's site index: only the
    rows of a site are summed, in row order, so the numbering does not change a prior."""
    return site_priors(table.rate, table.checks, table.site_ix, len(table.sites), initial)


def replan(
    history: History,
    policy: RecrawlPolicy,
    *,
    now: float | None = None,
    hold: float = 0.0,
    updated: int = 0,
) -> Plan:
    """Solve μ for the budget, store it and the site priors, reschedule what moved.

    With ``hold`` > 0 (seconds; ``crawlkit crawl``, which plans every cycle) the μ
    solved last is kept for up to ``hold`` seconds after ``now`` of its solve, while
    the tracked URLs and those ``updated`` since (this run's count is ``updated``)
    each stay within :data:`HOLD_SHARE` of the URLs it was solved for and no host
    cap applies: solving costs 10-20 passes over every URL, the rest of a run one.
    Under a kept μ nothing moves but the URLs whose rate is their site's prior: each
    other URL has the interval μ gives it, set by that solve (within 1%) or by its
    update since (``estimate_entries`` at the stored μ)."""
    table = history.table()
    priors, default, spread = _site_rates(table, policy.initial)
    history.set_site_priors(table.sites, priors)
    by_site = np.where(np.isfinite(priors), priors, default)
    history.set_meta("prior", default)
    history.set_meta("spread", spread)
    site_prior = by_site[table.site_ix]
    lam = np.where(np.isfinite(table.rate), table.rate, site_prior)
    weights = np.asarray(policy.weights)
    weight = weights[np.clip(table.importance, 0, len(weights) - 1)]
    n = len(lam)
    budget = policy.budget if policy.budget is not None else policy.auto_budget * n
    scheduled = table.good & np.isfinite(table.last_fetch) & ~table.pending
    kept = _held_mu(history, policy, n, now, hold, updated)
    if kept is not None:
        mu, tau = kept, table.interval.copy()
        prior = np.flatnonzero(scheduled & ~np.isfinite(table.rate))
        tau[prior] = intervals(lam[prior], weight[prior], mu, policy.min, policy.max)
    else:
        mu, tau = solve(
            lam,
            weight,
            budget,
            tau_min=policy.min,
            tau_max=policy.max,
            hosts=table.host if policy.host_budget is not None else None,
            host_cap=policy.host_budget,
        )
        history.set_meta("mu", mu)
        history.set_meta("solved_n", n)
        history.set_meta("solved_at", now if now is not None else math.nan)
        history.set_meta("updated_since", 0)
    history.set_meta("budget", budget)
    moved = scheduled & (np.abs(tau - table.interval) > 0.01 * table.interval)
    due = table.last_fetch + tau
    history.set_schedule(table.fp[moved], tau[moved], due[moved])
    table.interval = np.where(moved, tau, table.interval)
    table.due = np.where(moved, due, table.due)
    return Plan(mu=mu, budget=budget, table=table, lam=lam, weight=weight)


def _held_mu(
    history: History, policy: RecrawlPolicy, n: int, now: float | None, hold: float, updated: int
) -> float | None:
    """The stored μ if :func:`replan` may keep it (its doc), else None; counts
    ``updated`` towards the next solve."""
    if hold <= 0 or now is None or policy.host_budget is not None:
        return None
    mu, solved_n, at = history.meta("mu"), history.meta("solved_n"), history.meta("solved_at")
    since = (history.meta("updated_since") or 0.0) + updated
    if mu is None or not solved_n or at is None or not math.isfinite(at):
        return None
    if not (at <= now < at + hold) or abs(n - solved_n) > HOLD_SHARE * solved_n:
        return None
    if since > HOLD_SHARE * solved_n:
        return None
    history.set_meta("updated_since", since)
    return mu


def pick(
    plan: Plan,
    policy: RecrawlPolicy,
    now: float,
    *,
    max_urls: int | None,
    host_max: int | None = None,
) -> np.ndarray:
    """Row indices of ``plan.table`` to emit, the most valuable first (module doc)."""
    t = plan.table
    if len(t.fp) == 0:
        return np.zeros(0, np.int64)
    since = np.where(np.isfinite(t.last_fetch), now - t.last_fetch, np.inf)
    recent = np.isfinite(t.emitted) & (t.emitted + np.maximum(t.interval, policy.reemit) > now)
    waiting = ~t.good & ~t.pending  # errors, deferrals, robots denials: their backoff
    if max_urls is not None and policy.budget is None:
        eligible = np.where(waiting | ~np.isfinite(t.last_fetch), t.due <= now, since >= policy.min)
        eligible |= t.pending & (t.due <= now)
    else:
        eligible = t.due <= now
    eligible &= ~recent
    count = max_urls if max_urls is not None else int(eligible.sum())
    # Values only for the eligible rows (the rest are never picked): a crawl's cycle
    # finds a few due among all it tracks.
    rows = np.flatnonzero(eligible)
    since = since[rows]
    # A sitemap read that saw no change since the fetch says the copy was still the
    # live page then: freshness is lost only from that read on (pending URLs, which
    # a read said changed, count at their full value below).
    last_fetch, observed = t.last_fetch[rows], t.observed[rows]
    known = np.where(np.isfinite(observed), np.maximum(observed, last_fetch), last_fetch)
    fresh_since = np.where(np.isfinite(known), now - known, np.inf)
    # The value averaged over each rate's posterior (policy.expected_value): a URL
    # whose rate is unsure is worth more than its point estimate says.
    spread = np.where(np.isfinite(t.spread[rows]), t.spread[rows], PRIOR_SPREAD)
    values = expected_value(
        plan.lam[rows],
        spread,
        plan.weight[rows],
        np.where(t.pending[rows], np.inf, fresh_since),
    )
    values = np.where(since >= policy.max, np.inf, values)
    picked = select(values, np.ones(len(rows), bool), count, hosts=t.host[rows], host_max=host_max)
    return rows[picked].astype(np.int64)
