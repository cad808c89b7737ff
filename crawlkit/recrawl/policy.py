"""Revisit rates that buy the most freshness for a budget (Cho & Garcia-Molina 2003).

A page changing as a Poisson process of rate λ and visited every ``τ = 1/f`` seconds
is fresh (the stored copy equals the live page) a share of the time

    F(λ, f) = (f/λ) (1 − e^{−λ/f})

The freshness-optimal policy maximises ``Σ w_i F(λ_i, f_i)`` subject to
``Σ f_i = B`` (Cho & Garcia-Molina, "Effective page refresh policies for Web
crawlers", ACM TODS 2003). ``F`` is concave in ``f``; its Lagrangian gives, for each
page, ``w ∂F/∂f = μ``, i.e. with ``x = λτ`` (changes per interval)

    value(λ, w, τ) = w (1 − (1 + x) e^{−x}) / λ = μ

``value`` rises with τ towards ``w/λ``: a page with ``w/λ ≤ μ`` (changing faster
than the budget can follow) is not chased (``f = 0``, here the longest interval).
:func:`solve` finds μ (a safeguarded secant search on log μ, :func:`_find_root`) so
that the rates spend the budget, with the
intervals clamped to [``tau_min``, ``tau_max``] (F is concave, so clamping each page
to its box keeps the solution optimal) and, after Kolobov et al. ("Optimal
freshness crawl under politeness constraints", SIGIR 2019), a politeness cap per
host: a host whose pages would exceed its cap gets its own multiplier
``μ_h > μ``, found by the same search on its pages alone, so each host spends
at most its cap and the rest of the budget goes to the other hosts.

The same index drives a run that has only a number of URLs to spend
(:func:`select`): the URLs whose ``value`` at the time since their last visit is
highest are the ones a fetch now buys the most freshness for; fetching a page when
its value reaches μ is the optimal policy above, so taking the top B each run
follows it without knowing μ.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

__all__ = [
    "age",
    "expected_value",
    "freshness",
    "intervals",
    "select",
    "solve",
    "value",
]

Array = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_TINY = 1e-12


def freshness(lam: Array | float, tau: Array | float) -> Array:
    """Expected share of time fresh for visits every ``tau`` seconds (1 if λ = 0)."""
    lam_a = np.asarray(lam, np.float64)
    x = lam_a * np.asarray(tau, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(x > 1e-9, -np.expm1(-x) / np.where(x > 0, x, 1.0), 1.0 - x / 2)
    result: Array = np.where(np.isinf(x), 0.0, f)
    return result


def age(lam: Array | float, tau: Array | float) -> Array:
    """Expected age (seconds since the live page first differed from the copy, 0 when
    fresh), averaged over time, for visits every ``tau`` seconds."""
    lam_a = np.asarray(lam, np.float64)
    tau_a = np.asarray(tau, np.float64)
    x = lam_a * tau_a
    with np.errstate(divide="ignore", invalid="ignore"):
        exact = tau_a / 2 - 1 / lam_a + (-np.expm1(-x)) / (lam_a * lam_a * tau_a)
        # Small x: the series x τ/6 − x² τ/24 avoids cancelling the terms above.
        series = tau_a * (x / 6 - x * x / 24)
    result: Array = np.where(x < 1e-3, series, exact)
    return result


def value(lam: Array, w: Array | float, tau: Array) -> Array:
    """``w (1 − (1 + λτ) e^{−λτ}) / λ``: the freshness a visit now buys per unit of
    budget (``w ∂F/∂f`` at ``f = 1/τ``). Rises with ``tau`` towards ``w/λ``; 0 for
    λ = 0, ``w/λ`` for τ = inf."""
    lam = np.asarray(lam, np.float64)
    # Few temporaries: a run of the simulator calls this on every page every step.
    # λτ beyond 700 is the limit already (e^{−x} = 0), and clipping keeps inf·0 out.
    # For small x, −expm1(−x) − x e^{−x} loses only ~eps·x against its x²/2: fine.
    with np.errstate(invalid="ignore"):
        x = np.multiply(lam, tau)  # 0 × inf: a page that never changes, value 0
    shape = np.shape(x)
    x = np.array(x, dtype=np.float64, ndmin=1)  # in-place steps need an array
    np.minimum(x, 700.0, out=x)
    x[np.isnan(x)] = 0.0
    g = np.exp(-x)
    g *= x
    g += np.expm1(-x)
    np.negative(g, out=g)
    g /= np.maximum(lam, _TINY)
    result: Array = g.reshape(shape) * np.asarray(w, np.float64)
    return result


# Gauss-Hermite nodes and weights for E[f(Z)], Z standard normal (probabilists').
_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(7)
_GH_W = _GH_W / _GH_W.sum()


def expected_value(lam: Array, spread: Array, w: Array | float, tau: Array) -> Array:
    """:func:`value` averaged over a log-normal posterior of the rate: log λ normal
    around ``log lam`` with standard deviation ``spread`` (0: :func:`value` itself).

    The marginal freshness of a visit under uncertainty is the posterior mean of the
    marginal freshness (∂E[F]/∂f = E[∂F/∂f]). ``value`` tends to ``w/λ``, convex in
    λ, so a page whose rate is uncertain is worth more than its point estimate says:
    a page seen changed once after a long interval might change slowly."""
    lam = np.asarray(lam, np.float64)
    spread = np.asarray(spread, np.float64)
    tau = np.asarray(tau, np.float64)
    total = np.zeros(np.broadcast_shapes(lam.shape, spread.shape, tau.shape))
    for x, weight in zip(_GH_X, _GH_W, strict=True):
        total += weight * value(lam * np.exp(spread * x), w, tau)
    return total


def _g(x: Array) -> Array:
    result: Array = -np.expm1(-x) - x * np.exp(-x)
    return result


# g(x) = 1 - (1 + x) e^{-x} on a log grid, for a first guess by interpolation.
_X_GRID = np.exp(np.linspace(math.log(1e-8), math.log(60.0), 1024))
_G_GRID = np.maximum.accumulate(_g(_X_GRID))
_LOG_X_GRID = np.log(_X_GRID)


def _inverse_g(y: Array) -> Array:
    """x with ``1 − (1 + x) e^{−x} = y`` for y in (0, 1); inf at y >= 1, 0 at y <= 0.

    Interpolation on a log grid, then three Newton steps (g'(x) = x e^{−x})."""
    y = np.asarray(y, np.float64)
    # Only the y strictly between (and NaN, which takes y = 0.5's x) are solved: the
    # search in solve calls this 10-20 times over every URL a cycle, and a pass whose
    # μ is far off has most of them at a bound. Each one's steps are the same.
    solved = ~((y >= 1.0) | (y <= 0.0))
    result: Array = np.where(y >= 1.0, np.inf, 0.0)
    ys = y[solved]
    yy = np.where((ys > 0) & (ys < 1), ys, 0.5)
    logx = np.interp(yy, _G_GRID, _LOG_X_GRID)
    x = np.exp(logx)
    for _ in range(3):
        # x e^{−x} once for the slope and for g(x) (the product _g forms)
        slope = x * np.exp(-x)
        step = (-np.expm1(-x) - slope - yy) / np.maximum(slope, 1e-300)
        x = np.clip(x - step, x / 4, x * 4)
    result[solved] = x
    return result


def intervals(
    lam: Array, w: Array | float, mu: Array | float, tau_min: float, tau_max: float
) -> Array:
    """The optimal revisit interval of each page at multiplier ``mu``, clamped.

    ``value(λ, w, τ) = μ`` solved for τ; a page that never changes (λ ≈ 0) or changes
    too fast to be worth chasing (``w/λ ≤ μ``) gets ``tau_max``.
    """
    lam = np.asarray(lam, np.float64)
    w = np.broadcast_to(np.asarray(w, np.float64), lam.shape)
    mu_a = np.broadcast_to(np.asarray(mu, np.float64), lam.shape)
    with np.errstate(divide="ignore", invalid="ignore"):
        y = np.where(w > 0, mu_a * lam / np.where(w > 0, w, 1.0), np.inf)
    x = _inverse_g(y)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = np.where(lam > 0, x / np.maximum(lam, _TINY), np.inf)
    result: Array = np.clip(np.nan_to_num(tau, nan=tau_max, posinf=tau_max), tau_min, tau_max)
    return result


def _spend(lam: Array, w: Array, mu: Array, tau_min: float, tau_max: float) -> Array:
    return 1.0 / intervals(lam, w, mu, tau_min, tau_max)


#: log μ is found to this width: μ to ~1e-12 of itself, far below the 1% an interval
#: must move by before a plan writes it.
_LOG_MU_TOLERANCE = 1e-12
#: A bound on root-finding passes; the safeguard below needs ~15-25 from the widest
#: bracket, so this is reached only by a spend that is not monotone (a bug).
_MAX_PASSES = 200


def _bisect_mu(
    lam: Array,
    w: Array,
    groups: IntArray,
    caps: Array,
    floor: Array,
    tau_min: float,
    tau_max: float,
) -> Array:
    """Per group g, the smallest μ_g >= floor_g whose rates sum to at most caps[g]
    (to :data:`_LOG_MU_TOLERANCE` in log μ; the sum at the μ returned is never above
    the cap)."""
    k = len(caps)
    # Each pass solves the interval of every distinct (λ, w, group) once: the URLs on
    # their site's prior at one importance share one, and each counts as many times
    # as it occurs.
    lam_u, w_u, groups_u, back = _distinct(lam, w, groups)
    lo, hi = _bracket(lam_u, w_u, groups_u, floor, tau_min, tau_max)
    counts = np.bincount(back, minlength=len(lam_u)).astype(np.float64)
    log_caps = np.log(np.maximum(caps, 1e-300))

    def excess(log_mu: Array) -> Array:
        """log(spend / cap) per group: > 0 where μ = e^log_mu spends too much."""
        rates = counts / intervals(lam_u, w_u, np.exp(log_mu)[groups_u], tau_min, tau_max)
        result: Array = np.log(np.bincount(groups_u, rates, k)) - log_caps
        return result

    f_lo = excess(lo)
    need = f_lo > 0
    f_hi = excess(hi)
    _find_root(excess, lo, f_lo, hi, f_hi, need & (f_hi <= 0))
    # A group over its cap even with every page at the longest interval gets a μ
    # above any page's value (4 x the largest w/λ): nothing there is chased.
    top = float(np.max(w / np.maximum(lam, _TINY))) if len(lam) else 1.0
    beyond = np.maximum(hi, math.log(max(top, 1.0) * 4.0))
    result: Array = np.where(need, np.exp(np.where(f_hi > 0, beyond, hi)), floor)
    return result


def _bracket(
    lam: Array, w: Array, groups: IntArray, floor: Array, tau_min: float, tau_max: float
) -> tuple[Array, Array]:
    """Per group, log μ below which every page is at ``tau_min`` (or log floor, if
    higher) and above which every page is at ``tau_max``: outside it the spend is
    flat, and a secant step from a flat end lands far from the root."""
    k = len(floor)
    chased = (lam > 0) & (w > 0)  # the others are at tau_max whatever μ is
    fastest = np.full(k, np.inf)
    np.minimum.at(fastest, groups[chased], value(lam[chased], w[chased], np.array(tau_min)))
    slowest = np.zeros(k)
    np.maximum.at(slowest, groups[chased], value(lam[chased], w[chased], np.array(tau_max)))
    low = np.where(np.isfinite(fastest), fastest * (1 - 1e-9), 0.0)
    lo = np.log(np.maximum(np.maximum(floor, low), 1e-300))
    hi = np.maximum(np.log(np.maximum(slowest * (1 + 1e-9), 1e-300)), lo)
    return lo, hi


def _find_root(
    excess: Callable[[Array], Array],
    lo: Array,
    f_lo: Array,
    hi: Array,
    f_hi: Array,
    active: npt.NDArray[np.bool_],
) -> None:
    """Shrink each active bracket ``[lo, hi]`` (``excess`` > 0 at lo, <= 0 at hi;
    decreasing in between) around the root to :data:`_LOG_MU_TOLERANCE`; ``hi`` is
    updated in place (the answer: its spend is within the cap).

    The spend is smooth in log μ between the clamps, so a secant step (regula falsi,
    Illinois variant: an end kept twice has its value halved) converges in a few
    passes; two passes that did not halve the bracket are followed by a bisection,
    so the passes are at most about twice bisection's. Bisection alone took 60 passes
    over every distinct URL each cycle (126 ms a cycle at 14k tracked URLs).
    """
    kept_lo = np.zeros(len(lo), np.int8)  # +1: lo kept last pass, -1: hi kept
    bisect = ~np.isfinite(f_lo) | ~np.isfinite(f_hi)
    before = hi - lo  # the width two passes ago
    for _ in range(_MAX_PASSES):
        width = hi - lo
        tolerance = _LOG_MU_TOLERANCE * np.maximum(1.0, np.abs(hi))
        active &= width > tolerance
        if not active.any():
            return
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            secant = hi - f_hi * width / (f_hi - f_lo)
        mid = lo + 0.5 * width
        inside = (secant > lo) & (secant < hi)
        # A step at least half the tolerance from either end: once one end sits on
        # the root, the next step lands just past it and closes the bracket.
        x = np.clip(np.where(bisect | ~inside, mid, secant), lo + tolerance / 2, hi - tolerance / 2)
        f_x = excess(x)
        over = f_x > 0
        move_lo = active & over
        move_hi = active & ~over
        # Illinois: the end not replaced has its value halved when it was also kept
        # last time, so the next secant step lands past the root.
        f_hi = np.where(move_lo & (kept_lo == -1), 0.5 * f_hi, f_hi)
        f_lo = np.where(move_hi & (kept_lo == 1), 0.5 * f_lo, f_lo)
        lo = np.where(move_lo, x, lo)
        f_lo = np.where(move_lo, f_x, f_lo)
        hi[...] = np.where(move_hi, x, hi)
        f_hi = np.where(move_hi, f_x, f_hi)
        kept_lo = np.where(move_lo, -1, np.where(move_hi, 1, 0)).astype(np.int8)
        bisect = (hi - lo) > 0.5 * before
        before = width


def _distinct(lam: Array, w: Array, groups: IntArray) -> tuple[Array, Array, IntArray, IntArray]:
    """The distinct (λ, w, group) triples (by their bits) and each row's index into them."""
    rows = np.empty((len(lam), 3), np.float64)
    rows[:, 0] = lam
    rows[:, 1] = w
    rows[:, 2] = groups  # (exact: a group index is far below 2**53)
    keys = rows.view(np.dtype((np.void, 24))).ravel()
    _, first, back = np.unique(keys, return_index=True, return_inverse=True)
    return lam[first], w[first], groups[first], back.ravel().astype(np.int64)


def solve(
    lam: Array,
    w: Array,
    budget: float,
    *,
    tau_min: float,
    tau_max: float,
    hosts: IntArray | None = None,
    host_cap: float | Array | None = None,
) -> tuple[float, Array]:
    """The multiplier μ and each page's interval for ``budget`` visits per second.

    ``hosts`` gives each page's host index (0..h-1) and ``host_cap`` the visits per
    second each host allows (one number or one per host). The intervals never spend
    more than ``budget`` overall, nor a host more than its cap, unless the longest
    interval alone already does (then every page of it waits ``tau_max``).
    """
    lam = np.asarray(lam, np.float64)
    w = np.broadcast_to(np.asarray(w, np.float64), lam.shape).copy()
    n = len(lam)
    if n == 0:
        return 0.0, np.zeros(0)
    host_mu = np.zeros(n)
    if hosts is not None and host_cap is not None:
        k = int(hosts.max()) + 1
        caps = np.broadcast_to(np.asarray(host_cap, np.float64), (k,)).copy()
        host_mu = _bisect_mu(lam, w, hosts, caps, np.zeros(k), tau_min, tau_max)[hosts]
    one = np.zeros(n, np.int64)
    mu = float(_bisect_mu(lam, w, one, np.array([budget]), np.zeros(1), tau_min, tau_max)[0])
    if hosts is not None and host_cap is not None:
        # μ so that Σ f(max(μ, μ_h)) = B: the capped hosts spend less, so μ falls.
        lo, hi = math.log(1e-300), math.log(max(mu, 1e-300))
        if _spend(lam, w, np.maximum(math.exp(hi), host_mu), tau_min, tau_max).sum() <= budget:
            for _ in range(80):
                mid = 0.5 * (lo + hi)
                if (
                    _spend(lam, w, np.maximum(math.exp(mid), host_mu), tau_min, tau_max).sum()
                    > budget
                ):
                    lo = mid
                else:
                    hi = mid
            mu = math.exp(hi) if hi > math.log(1e-299) else 0.0
    tau = intervals(lam, w, np.maximum(mu, host_mu), tau_min, tau_max)
    return mu, tau


def select(
    values: Array,
    eligible: npt.NDArray[np.bool_],
    count: int,
    *,
    hosts: IntArray | None = None,
    host_max: int | None = None,
) -> IntArray:
    """Indices of at most ``count`` eligible pages with the highest ``values``, at most
    ``host_max`` from one host; highest value first."""
    idx = np.flatnonzero(eligible)
    if len(idx) == 0 or count <= 0:
        return np.zeros(0, np.int64)
    if hosts is None or host_max is None:
        top = idx[np.argpartition(-values[idx], count - 1)[:count]] if count < len(idx) else idx
        return top[np.argsort(-values[top], kind="stable")].astype(np.int64)
    # The best few first (cheap), four times as many each time the host cap leaves
    # too few: a full sort of every eligible page only when the caps bite hard.
    pool = min(len(idx), 4 * count + 64)
    while True:
        cand = idx[np.argpartition(-values[idx], pool - 1)[:pool]] if pool < len(idx) else idx
        cand = cand[np.argsort(-values[cand], kind="stable")]
        h = hosts[cand]
        order = np.argsort(h, kind="stable")  # by host, best first within a host
        sorted_h = h[order]
        rank = np.empty(len(cand), np.int64)
        rank[order] = np.arange(len(order)) - np.searchsorted(sorted_h, sorted_h, side="left")
        kept = cand[rank < host_max][:count]
        if len(kept) == count or pool == len(idx):
            return kept.astype(np.int64)
        pool = min(len(idx), 4 * pool)
