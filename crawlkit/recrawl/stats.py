"""What the recrawl history says about the collection: estimated change rates, the
freshness the schedule should give, and the URLs due each day ahead.

:func:`collect` reads an opened :class:`~crawlkit.recrawl.history.History` (it writes
nothing); :func:`format_lines` renders it for ``crawlkit recrawl --stats``;
:func:`report_section` is the same for the crawl report, opening the history of a
state directory (it returns no lines when there is none). For the HTML report,
:func:`report_data` gives the same as a JSON-able dict (a key of the report dict,
say ``"recrawl"``) and :func:`html_section` renders it, in the shape of the report's
sections (``section(report) -> str``): ``lambda r: html_section(r.get("recrawl"))``.
"""

from __future__ import annotations

import html
import math
import sqlite3
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from crawlkit.errors import StateError
from crawlkit.recrawl.history import History, RecrawlPolicy
from crawlkit.recrawl.plan import prior_rates
from crawlkit.recrawl.policy import freshness
from crawlkit.times import DAY, HOUR

__all__ = [
    "RecrawlStats",
    "collect",
    "format_lines",
    "html_section",
    "merge",
    "report_data",
    "report_section",
]


#: Histogram bins of the mean time between changes (1 / rate), upper bounds.
BINS: list[tuple[str, float]] = [
    ("< 1 h", HOUR),
    ("1-6 h", 6 * HOUR),
    ("6 h-1 d", DAY),
    ("1-7 d", 7 * DAY),
    ("7-30 d", 30 * DAY),
    ("30-90 d", 90 * DAY),
    ("90 d-1 y", 365 * DAY),
    ("> 1 y", math.inf),
]


@dataclass
class RecrawlStats:
    tracked: int = 0
    estimated: int = 0  # URLs with a rate from their own visits
    histogram: list[tuple[str, int]] = field(default_factory=list)  # by mean change interval
    freshness: float = 1.0  # expected share of time a stored copy is current
    mu: float | None = None
    budget_per_day: float | None = None  # visits a day the schedule spends
    due_per_day: list[int] = field(default_factory=list)  # day 0 includes overdue URLs


def collect(history: History, policy: RecrawlPolicy, now: float, days: int = 7) -> RecrawlStats:
    """The statistics of ``history`` at ``now``, with ``days`` days of due counts."""
    t = history.table()
    stats = RecrawlStats(tracked=len(t.fp), mu=history.meta("mu"))
    budget = history.meta("budget")
    stats.budget_per_day = None if budget is None else budget * DAY
    if not len(t.fp):
        stats.histogram = [(label, 0) for label, _ in BINS]
        stats.due_per_day = [0] * days
        return stats
    own = np.isfinite(t.rate) & (t.checks > 1)
    stats.estimated = int(own.sum())
    priors, default = prior_rates(t, policy.initial)
    site_prior = np.array([priors.get(s, default) for s in t.sites], np.float64)
    lam = np.where(np.isfinite(t.rate), t.rate, site_prior[t.site_ix])
    mean_gap = 1 / np.maximum(lam[own], 1e-300)
    lower = 0.0
    for label, upper in BINS:
        stats.histogram.append((label, int(((mean_gap >= lower) & (mean_gap < upper)).sum())))
        lower = upper
    stats.freshness = float(np.mean(freshness(lam, t.interval)))
    # Visits in day d: the due time, then every interval after it.
    due = np.where(np.isfinite(t.due), t.due, now)
    step = np.maximum(t.interval, 1.0)
    for d in range(days):
        start, end = now + d * DAY, now + (d + 1) * DAY
        first = np.where(due < start, due + np.ceil((start - due) / step) * step, due)
        visits = np.where(first < end, np.floor((end - 1e-9 - first) / step) + 1, 0)
        if d == 0:
            visits += (due < start).astype(float)  # overdue now: one visit today
        stats.due_per_day.append(int(visits.sum()))
    return stats


def merge(parts: Sequence[RecrawlStats]) -> RecrawlStats:
    """One set of figures of several histories (the workers of a crawl): counts and
    budgets summed, freshness weighted by URLs tracked, the multiplier of the first
    that has one."""
    if len(parts) == 1:
        return parts[0]
    tracked = sum(p.tracked for p in parts)
    histogram: dict[str, int] = {}
    for p in parts:
        for label, count in p.histogram:
            histogram[label] = histogram.get(label, 0) + int(count)
    days = max((len(p.due_per_day) for p in parts), default=0)
    budgets = [p.budget_per_day for p in parts if p.budget_per_day is not None]
    return RecrawlStats(
        tracked=tracked,
        estimated=sum(p.estimated for p in parts),
        histogram=list(histogram.items()),
        freshness=sum(p.freshness * p.tracked for p in parts) / tracked if tracked else 1.0,
        mu=next((p.mu for p in parts if p.mu is not None), None),
        budget_per_day=sum(budgets) if budgets else None,
        due_per_day=[
            sum(p.due_per_day[d] for p in parts if d < len(p.due_per_day)) for d in range(days)
        ],
    )


def _duration(seconds: float) -> str:
    for unit, size in (("d", DAY), ("h", HOUR), ("min", 60.0)):
        if seconds >= size:
            return f"{seconds / size:.3g} {unit}"
    return f"{seconds:.3g} s"


def format_lines(stats: RecrawlStats) -> list[str]:
    """``stats`` as text lines (no trailing newlines)."""
    lines = [
        f"URLs tracked: {stats.tracked}, with a rate from their own visits: {stats.estimated}",
        f"expected freshness: {stats.freshness:.1%} (share of time a stored copy is current)",
    ]
    if stats.budget_per_day is not None:
        mu = "" if stats.mu is None else f", multiplier {_duration(stats.mu)}"
        lines.append(f"budget: {stats.budget_per_day:,.0f} visits a day{mu}")
    lines.append("estimated time between changes (URLs with 2+ visits):")
    width = max([count for _, count in stats.histogram] + [1])
    for label, count in stats.histogram:
        bar = "#" * round(40 * count / width)
        lines.append(f"  {label:>9} {count:>9}  {bar}")
    lines.append("URLs due per day ahead (day 0 includes overdue):")
    lines.append("  " + "  ".join(f"d{d}: {n}" for d, n in enumerate(stats.due_per_day)))
    return lines


def report_section(state: Path, now: float, policy: RecrawlPolicy | None = None) -> list[str]:
    """The recrawl lines of a crawl report for the state directory ``state``; no
    lines when it has no recrawl history. Reads only (SQLite WAL: a running crawl
    may write meanwhile), except that a version 1 history is migrated on opening."""
    history = _open_history(state)
    if history is None:
        return []
    try:
        return format_lines(collect(history, policy or RecrawlPolicy(), now))
    finally:
        history.close(save=False)  # a report reads only


def _open_history(state: Path) -> History | None:
    path = state / "recrawl" / "history.sqlite"
    if not path.exists():
        return None
    try:
        return History(path.parent)
    except (sqlite3.Error, StateError):
        return None


def report_data(
    state: Path, now: float, policy: RecrawlPolicy | None = None
) -> dict[str, object] | None:
    """:func:`collect` of the history of ``state`` as a JSON-able dict; None when it
    has none. Reads only, as :func:`report_section`."""
    history = _open_history(state)
    if history is None:
        return None
    try:
        return asdict(collect(history, policy or RecrawlPolicy(), now))
    finally:
        history.close(save=False)  # a report reads only


def html_section(data: dict[str, object] | None) -> str:
    """A report section (HTML, no scripts) of :func:`report_data`; empty without it."""
    if not data:
        return ""
    stats = RecrawlStats(**data)  # type: ignore[arg-type]
    rows = "".join(
        f"<tr><td>{html.escape(label)}</td><td>{count}</td></tr>"
        for label, count in stats.histogram
    )
    days = "".join(
        f"<tr><td>day {d}</td><td>{n}</td></tr>" for d, n in enumerate(stats.due_per_day)
    )
    budget = f" Budget: {stats.budget_per_day:,.0f} visits a day." if stats.budget_per_day else ""
    return (
        "<h2>Recrawl</h2>\n"
        f"<p>{stats.tracked} URLs tracked, {stats.estimated} with a change rate from their "
        f"own visits. Expected freshness {stats.freshness:.1%} (share of time a stored "
        f"copy is current).{html.escape(budget)}</p>\n"
        "<table><tr><th>Estimated time between changes</th><th>URLs</th></tr>"
        f"{rows}</table>\n"
        "<table><tr><th>Due (day 0 includes overdue)</th><th>URLs</th></tr>"
        f"{days}</table>\n"
    )
