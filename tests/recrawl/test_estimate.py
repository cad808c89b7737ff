"""The change-rate estimator against closed forms (Cho & Garcia-Molina 2003)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crawlkit.recrawl.estimate import (
    CHANGED,
    KEEP,
    PRIOR_SPREAD,
    UNCHANGED,
    estimate_rates,
    lm_estimate,
    loglik_grid,
    pack,
    posterior_rate,
    rate,
    regular_estimate,
    summarize,
    unpack,
)

H = 3600.0
DAY = 86400.0


@pytest.mark.parametrize(("n", "changes"), [(10, 0), (10, 3), (20, 19), (20, 20), (5, 5)])
def test_regular_visits_give_the_bias_reduced_estimator(n: int, changes: int) -> None:
    obs = [(H, CHANGED)] * changes + [(H, UNCHANGED)] * (n - changes)
    got = rate(obs, 1 / DAY, prior_weight=0)
    want = regular_estimate(n, changes, H)
    if changes == 0:
        assert got < 1e-9  # no change seen, no prior: "never"
    else:
        assert math.isclose(got, want, rel_tol=1e-6)


def test_irregular_visits_solve_the_maximum_likelihood_equation() -> None:
    """One change seen in 1 h, none in 2 h: t1 / (e^{λ t1} - 1) = t2, so
    λ = log(1 + t1/t2) / t1 (the uncorrected estimator of section 4.3)."""
    got = rate([(H, CHANGED), (2 * H, UNCHANGED)], 1.0, prior_weight=0, bias_correction=False)
    assert math.isclose(got, math.log(1.5) / H, rel_tol=1e-6)


@pytest.mark.parametrize(("ages", "unchanged"), [([500.0, 1200.0], 3), ([500.0, 700.0], 0)])
def test_dated_changes_give_the_last_modified_estimator(ages: list[float], unchanged: int) -> None:
    obs = [(H, a) for a in ages] + [(H, UNCHANGED)] * unchanged
    exposure = sum(ages) + unchanged * H
    want = lm_estimate(len(obs), len(ages), exposure)
    assert math.isclose(rate(obs, 1.0, prior_weight=0), want, rel_tol=1e-6)


def test_the_prior_holds_a_url_with_few_visits_and_lets_go_with_many() -> None:
    site = 1 / DAY
    assert math.isclose(rate([], site), site, rel_tol=1e-6)
    few = rate([(6 * H, UNCHANGED)], site)
    assert site / 3 < few < site  # one quiet visit moves it a little
    rng = np.random.default_rng(3)
    true = 1 / (6 * H)
    gaps = rng.uniform(2 * H, 10 * H, 60)
    seen = rng.random(60) < -np.expm1(-true * gaps)
    obs = [(float(g), CHANGED if s else UNCHANGED) for g, s in zip(gaps, seen, strict=True)]
    assert 0.7 * true < rate(obs, 1 / (30 * DAY)) < 1.4 * true  # far prior, data wins


def test_rows_are_estimated_independently() -> None:
    t = np.array([[H, H, 0.0], [H, 0.0, 0.0]])
    c = np.array([[CHANGED, UNCHANGED, UNCHANGED], [CHANGED, UNCHANGED, UNCHANGED]])
    both = estimate_rates(t, c, 1 / DAY)
    assert both[0] == estimate_rates(t[:1], c[:1], 1 / DAY)[0]
    assert both[1] == estimate_rates(t[1:, :1], c[1:, :1], 1 / DAY)[0]


def test_pack_keeps_the_newest_observations() -> None:
    obs = [(float(i), UNCHANGED) for i in range(1, KEEP + 11)]
    assert unpack(pack(obs)) == obs[-KEEP:]
    assert unpack(None) == []


def test_grid_loglik_is_additive_and_gives_the_posterior_mean() -> None:
    """The simulator keeps a running sum of loglik_grid rows: the sum of the rows of
    single observations equals the rows of all of them, and gives estimate_rates."""
    rng = np.random.default_rng(3)
    t = rng.exponential(DAY, (20, 12))
    c = rng.choice([UNCHANGED, CHANGED, 0.3 * H], (20, 12))
    whole = loglik_grid(t, c)
    parts = sum(loglik_grid(t[:, i], c[:, i]) for i in range(t.shape[1]))
    assert np.allclose(whole, parts)
    prior = np.full(20, 1 / DAY)
    assert np.allclose(posterior_rate(parts, prior), estimate_rates(t, c, prior, point="mean"))


def test_posterior_spread_narrows_with_visits() -> None:
    few = [(DAY, CHANGED), (DAY, UNCHANGED)]
    many = few * 20
    _, spreads = summarize(*_rows([few, many]), 1 / DAY)
    assert spreads[1] < spreads[0] < PRIOR_SPREAD
    # no observation: the prior itself (log-normal, sd PRIOR_SPREAD, on the grid)
    rate0, spread0 = summarize(np.zeros((1, 1)), np.full((1, 1), UNCHANGED), 1 / DAY)
    assert math.isclose(float(rate0[0]), 1 / DAY, rel_tol=0.01)
    assert math.isclose(float(spread0[0]), PRIOR_SPREAD, rel_tol=0.01)


def _rows(observations: list[list[tuple[float, float]]]) -> tuple[np.ndarray, np.ndarray]:
    k = max(len(o) for o in observations)
    t = np.zeros((len(observations), k))
    c = np.full((len(observations), k), UNCHANGED)
    for i, obs in enumerate(observations):
        t[i, : len(obs)] = [o[0] for o in obs]
        c[i, : len(obs)] = [o[1] for o in obs]
    return t, c
