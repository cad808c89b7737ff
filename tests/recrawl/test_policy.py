"""The freshness-optimal policy: its closed forms, the budget, host politeness."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.recrawl.estimate import PRIOR_SPREAD
from crawlkit.recrawl.plan import site_priors
from crawlkit.recrawl.policy import (
    _bisect_mu,
    age,
    expected_value,
    freshness,
    intervals,
    select,
    solve,
    value,
)

H = 3600.0
DAY = 86400.0


def test_freshness_and_age_closed_forms() -> None:
    # F = (1 - e^{-x}) / x with x = λτ; λ = 0 is always fresh
    assert math.isclose(float(freshness(1 / DAY, DAY)), 1 - math.exp(-1), rel_tol=1e-12)
    assert float(freshness(0.0, DAY)) == 1.0
    # A = τ/2 - 1/λ + (1 - e^{-λτ}) / (λ² τ)
    lam, tau = 1 / DAY, 2 * DAY
    want = tau / 2 - 1 / lam + (1 - math.exp(-lam * tau)) / (lam * lam * tau)
    assert math.isclose(float(age(lam, tau)), want, rel_tol=1e-9)
    assert math.isclose(float(age(1e-12, DAY)), 1e-12 * DAY * DAY / 6, rel_tol=1e-6)  # λτ²/6


def test_interval_makes_the_value_equal_the_multiplier() -> None:
    lam = np.array([1 / H, 1 / DAY, 1 / (30 * DAY)])
    mu = 0.3 * H
    tau = intervals(lam, 1.0, mu, 1.0, 1e12)
    # each page chased is visited when its value reaches μ
    assert np.allclose(value(lam, 1.0, tau), mu, rtol=1e-6)
    # a page with w/λ <= μ is not chased: the longest interval
    assert intervals(np.array([1 / (0.2 * H)]), 1.0, mu, H, 90 * DAY)[0] == 90 * DAY
    assert intervals(np.array([0.0]), 1.0, mu, H, 90 * DAY)[0] == 90 * DAY


def test_solution_is_the_lagrangian_optimum() -> None:
    """Moving a little budget between two pages never raises the weighted freshness."""
    rng = np.random.default_rng(1)
    lam = np.exp(rng.uniform(math.log(1 / (30 * DAY)), math.log(1 / H), 50))
    w = rng.uniform(0.5, 2, 50)
    budget = 20 / DAY
    _, tau = solve(lam, w, budget, tau_min=1.0, tau_max=1e9)
    f = 1 / tau
    assert math.isclose(f.sum(), budget, rel_tol=1e-6)
    best = float((w * freshness(lam, tau)).sum())
    inside = np.flatnonzero((tau > 1.0) & (tau < 1e9))  # pages at a clamp may not move
    assert len(inside) >= 10
    for i, j in zip(inside[:5], inside[5:10], strict=True):
        for d in (1e-2, -1e-2):
            g = f.copy()
            step = d * min(g[i], g[j])
            g[i] += step
            g[j] -= step
            assert (w * freshness(lam, 1 / g)).sum() <= best * (1 + 1e-9)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.floats(-16, -6), min_size=1, max_size=60),
    st.integers(1, 5),
    st.floats(0.1, 50),
    st.floats(0.05, 20),
)
def test_never_exceeds_the_budget_or_a_hosts_cap(
    log_rates: list[float], n_hosts: int, per_url: float, cap: float
) -> None:
    lam = np.exp(np.array(log_rates))
    n = len(lam)
    hosts = np.arange(n, dtype=np.int64) % n_hosts
    budget = per_url * n / DAY
    host_cap = cap / DAY
    tau_min, tau_max = H, 90 * DAY
    _, tau = solve(
        lam, 1.0, budget, tau_min=tau_min, tau_max=tau_max, hosts=hosts, host_cap=host_cap
    )
    assert np.all((tau >= tau_min) & (tau <= tau_max))
    floor = n / tau_max  # the longest interval spends this much whatever the budget
    assert (1 / tau).sum() <= max(budget, floor) * (1 + 1e-6)
    per_host = np.bincount(hosts, 1 / tau)
    floor_host = np.bincount(hosts) / tau_max
    assert np.all(per_host <= np.maximum(host_cap, floor_host) * (1 + 1e-6))


def test_select_takes_the_best_within_the_host_cap() -> None:
    values = np.array([9.0, 8, 7, 6, 5, 4])
    hosts = np.array([0, 0, 0, 1, 1, 2])
    eligible = np.array([True, True, True, True, False, True])
    got = select(values, eligible, 4, hosts=hosts, host_max=2)
    assert list(got) == [0, 1, 3, 5]
    assert list(select(values, eligible, 2)) == [0, 1]


def test_expected_value_is_the_value_averaged_over_the_posterior() -> None:
    lam = np.array([1 / DAY, 1 / (30 * DAY)])
    tau = np.array([5 * DAY, 5 * DAY])
    # plain numbers work too: (1 - 2/e) days for λτ = 1
    assert math.isclose(float(value(1 / DAY, 1.0, DAY)), (1 - 2 / math.e) * DAY, rel_tol=1e-12)
    # a page that never changes is worth nothing, however long since its visit
    assert value(np.array([0.0]), 1.0, np.array([np.inf]))[0] == 0.0
    # no spread: the value itself
    assert np.allclose(expected_value(lam, np.zeros(2), 1.0, tau), value(lam, 1.0, tau))
    # against a brute-force average over the log-normal
    z = np.linspace(-8, 8, 4001)
    density = np.exp(-z * z / 2)
    for i in range(2):
        brute = (value(lam[i] * np.exp(1.5 * z), 1.0, tau[i]) * density).sum() / density.sum()
        got = float(expected_value(lam[i : i + 1], np.array([1.5]), 1.0, tau[i : i + 1])[0])
        assert math.isclose(got, brute, rel_tol=0.02)
    # long past 1/λ the value is 1/λ, convex in λ: uncertainty makes it worth more
    far = np.array([1e9])
    assert expected_value(lam[:1], np.array([1.0]), 1.0, far)[0] > value(lam[:1], 1.0, far)[0]


def test_site_priors_spread_follows_how_alike_a_sites_pages_change() -> None:
    rng = np.random.default_rng(5)
    site = np.repeat(np.arange(40), 25)
    centre = rng.uniform(np.log(1 / (90 * DAY)), np.log(1 / H), 40)[site]
    checks = np.full(len(site), 10)
    for sd in (0.3, 1.0):
        rate = np.exp(centre + rng.normal(0, sd, len(site)))
        rates, _, spread = site_priors(rate, checks, site, 40, DAY)
        assert abs(spread - max(sd, 0.5)) < 0.25
        assert np.allclose(
            np.log(rates), np.log([rate[site == s].mean() for s in range(40)]), atol=3 * sd
        )
    # nothing known yet: the widest prior and the crawl's default
    rates, default, spread = site_priors(rate, np.ones(len(site), np.int64), site, 40, DAY)
    assert np.isnan(rates).all() and math.isclose(default, 1 / DAY)
    assert spread == PRIOR_SPREAD


def _bisect_per_url(
    lam: np.ndarray, w: np.ndarray, groups: np.ndarray, caps: np.ndarray
) -> np.ndarray:
    """The reference μ: 60 halvings of the widest bracket, an interval per URL each
    pass (solve's first version; μ to the last bit)."""
    k = len(caps)
    top = float(np.max(w / np.maximum(lam, 1e-12)))
    lo, hi = np.full(k, math.log(1e-300)), np.full(k, math.log(max(top, 1.0) * 4.0))

    def over(mu: np.ndarray) -> np.ndarray:
        rates = 1.0 / intervals(lam, w, mu[groups], H, 90 * DAY)
        return np.asarray(np.bincount(groups, rates, k) > caps)

    need = over(np.exp(lo))
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        above = over(np.exp(mid))
        lo, hi = np.where(above, mid, lo), np.where(above, hi, mid)
    return np.where(need, np.exp(hi), 0.0)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("share", [0.001, 0.05, 0.5, 5.0])
def test_solve_finds_the_reference_mu_and_never_overspends(seed: int, share: float) -> None:
    """solve's root finder (secant steps, the URLs on one prior sharing each pass)
    gives the μ of the reference bisection to 1e-10 of itself, the rates at that μ
    stay within the budget, and each host's μ_h likewise within its cap."""
    rng = np.random.default_rng(seed)
    n, sites = 3000, 200
    prior = np.exp(rng.uniform(math.log(1 / (30 * DAY)), math.log(1 / H), sites))
    site = rng.integers(0, sites, n)
    lam = prior[site]
    known = rng.random(n) < 0.3
    lam[known] = np.exp(rng.uniform(-16, -6, int(known.sum())))
    lam[:50] = 0.0  # never changes
    w = np.array([1.0, 2.0, 4.0])[rng.integers(0, 3, n)]
    budget = share * n / DAY  # 0.001: below what the longest intervals spend
    mu, tau = solve(lam, w, budget, tau_min=H, tau_max=90 * DAY)
    want = float(_bisect_per_url(lam, w, np.zeros(n, np.int64), np.array([budget]))[0])
    assert math.isclose(mu, want, rel_tol=1e-10)
    assert tau.tobytes() == intervals(lam, w, mu, H, 90 * DAY).tobytes()
    assert (1 / tau).sum() <= max(budget, n / (90 * DAY)) * (1 + 1e-12)
    # per host (politeness caps): each host's μ_h the same way
    caps = np.full(sites, share / H)
    want_h = _bisect_per_url(lam, w, site, caps)
    got_h = _bisect_mu(lam, w, site, caps, np.zeros(sites), H, 90 * DAY)
    assert np.allclose(got_h, want_h, rtol=1e-10, atol=0)
    spent = np.bincount(site, 1 / intervals(lam, w, got_h[site], H, 90 * DAY), sites)
    floor = np.bincount(site, minlength=sites) / (90 * DAY)
    assert np.all(spent <= np.maximum(caps, floor) * (1 + 1e-12))
