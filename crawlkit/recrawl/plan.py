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

from crawlkit.recrawl.history import History, RecrawlPolicy, Table
from crawlkit.recrawl.policy import select, solve, value

__all__ = ["Plan", "pick", "prior_rates", "replan"]

#: URLs of a site seen this many times give the site its prior.
PRIOR_VISITS = 5
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


def prior_rates(table: Table, initial: float) -> tuple[dict[str, float], float]:
    """Each site's prior and the crawl's: the geometric mean rate of the URLs seen
    more than ``PRIOR_VISITS`` times, the crawl's shrunk towards ``1/initial`` and each
    site's towards the crawl's, each as if by ``PRIOR_SHRINK`` more URLs. A site with
    no such URL is left out (it takes the crawl's)."""
    sums: dict[str, tuple[float, int]] = {}
    known = (table.checks > PRIOR_VISITS) & np.isfinite(table.rate) & (table.rate > 0)
    logs = np.log(table.rate[known])
    base = math.log(1 / initial)
    base = (float(logs.sum()) + PRIOR_SHRINK * base) / (len(logs) + PRIOR_SHRINK)
    for i, log_rate in zip(np.flatnonzero(known), logs, strict=True):
        total, number = sums.get(table.site[i], (0.0, 0))
        sums[table.site[i]] = (total + float(log_rate), number + 1)
    sites = {
        site: math.exp((total + PRIOR_SHRINK * base) / (number + PRIOR_SHRINK))
        for site, (total, number) in sums.items()
    }
    return sites, math.exp(base)


def replan(history: History, policy: RecrawlPolicy) -> Plan:
    """Solve μ for the budget, store it and the site priors, reschedule what moved."""
    table = history.table()
    priors, default = prior_rates(table, policy.initial)
    history.set_site_rates(priors)
    history.set_meta("prior", default)
    site_prior = np.array([priors.get(s, default) for s in table.site])
    lam = np.where(np.isfinite(table.rate), table.rate, site_prior)
    weights = np.asarray(policy.weights)
    weight = weights[np.clip(table.importance, 0, len(weights) - 1)]
    n = len(lam)
    budget = policy.budget if policy.budget is not None else policy.auto_budget * n
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
    history.set_meta("budget", budget)
    scheduled = table.good & np.isfinite(table.last_fetch) & ~table.pending
    moved = scheduled & (np.abs(tau - table.interval) > 0.01 * table.interval)
    due = table.last_fetch + tau
    history.set_schedule(table.fp[moved], tau[moved], due[moved])
    table.interval = np.where(moved, tau, table.interval)
    table.due = np.where(moved, due, table.due)
    return Plan(mu=mu, budget=budget, table=table, lam=lam, weight=weight)


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
    values = value(plan.lam, plan.weight, np.where(t.pending, np.inf, since))
    values = np.where(since >= policy.max, np.inf, values)
    recent = np.isfinite(t.emitted) & (t.emitted + np.maximum(t.interval, policy.reemit) > now)
    waiting = ~t.good & ~t.pending  # errors, deferrals, robots denials: their backoff
    if max_urls is not None and policy.budget is None:
        eligible = np.where(waiting | ~np.isfinite(t.last_fetch), t.due <= now, since >= policy.min)
        eligible |= t.pending & (t.due <= now)
    else:
        eligible = t.due <= now
    eligible &= ~recent
    count = max_urls if max_urls is not None else int(eligible.sum())
    return select(values, eligible, count, hosts=t.host, host_max=host_max)
