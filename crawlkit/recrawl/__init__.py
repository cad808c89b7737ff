"""Recrawl: each URL's change history, its estimated change rate, and revisit times
that spend a budget where it buys the most freshness.

* :mod:`crawlkit.recrawl.estimate` — the change rate from a URL's visits (Cho &
  Garcia-Molina's estimators, bias-corrected, with a prior from the URL's site).
* :mod:`crawlkit.recrawl.policy` — freshness-optimal revisit intervals under a budget
  and per-host politeness (the Lagrangian solution), and the pick of the URLs a
  fetch now buys the most freshness for.
* :mod:`crawlkit.recrawl.history` — the history table on disk and the pure update of
  one URL's entry by one observation.
* :mod:`crawlkit.recrawl.stats` — what ``crawlkit recrawl --stats`` and the crawl
  report show: rates, expected freshness, URLs due per day ahead.
"""

from crawlkit.recrawl.history import (
    Entry,
    Event,
    History,
    RecrawlPolicy,
    apply_event,
    hamming,
)

__all__ = ["Entry", "Event", "History", "RecrawlPolicy", "apply_event", "hamming"]
