"""Queue levels and the weighted split of a batch between queues.

Levels run from 0 (most urgent) to 3. A level is not a record's ``priority`` (a
finder's 0.0-1.0 hint, higher sooner) nor a recrawl's ``importance`` (0..3, which a
recrawl's level starts from); see :mod:`crawlkit.records`. A URL's level is decided
once, when it is queued, from what the frontier knows then:

* new URLs start at level 2; seeds are level 0. A site linked from 3 or more other
  sites is one level more urgent, from 30 or more two levels (the importance
  signal: distinct linking sites, not links, so one chatty site cannot promote
  another). A URL 5 or more hops from its seed is one level less urgent. A sitemap
  entry whose ``lastmod`` is less than 30 days old is one level more urgent.
* recrawls start at the ``importance`` the recrawl stage gave them (default 2) and
  are one level more urgent when overdue by more than one interval.

:func:`split` divides a batch between non-empty queues by weight (8:4:2:1 across
levels), so level 3 still gets about one URL in fifteen: the lowest level trickles,
it never starves.

Each level has a queue of new URLs (``new-0`` .. ``new-3``) and one of recrawls
(``recrawl-0`` .. ``recrawl-3``); ``new-d`` (discovery) holds the first URL of a site
never handed out yet.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

__all__ = [
    "DISCOVERY",
    "LEVELS",
    "LEVEL_WEIGHTS",
    "NEW_QUEUES",
    "QUEUES",
    "RECRAWL_QUEUES",
    "new_url_level",
    "recrawl_level",
    "split",
]

LEVELS = 4
LEVEL_WEIGHTS = (8, 4, 2, 1)
NEW_QUEUES = tuple(f"new-{level}" for level in range(LEVELS))
RECRAWL_QUEUES = tuple(f"recrawl-{level}" for level in range(LEVELS))
DISCOVERY = "new-d"
QUEUES = (*RECRAWL_QUEUES, *NEW_QUEUES, DISCOVERY)
_FRESH_LASTMOD = 30 * 86400.0


def _clamp(level: int) -> int:
    return 0 if level < 0 else (LEVELS - 1 if level >= LEVELS else level)


def new_url_level(
    reason: str, depth: int, linking_sites: int, lastmod_age: float | None = None
) -> int:
    """The level of a URL never fetched: seed 0; otherwise 2, adjusted as above."""
    if reason == "seed":
        return 0
    level = 2
    if linking_sites >= 30:
        level -= 2
    elif linking_sites >= 3:
        level -= 1
    if depth >= 5:
        level += 1
    if lastmod_age is not None and lastmod_age < _FRESH_LASTMOD:
        level -= 1
    return _clamp(level)


def recrawl_level(importance: int, overdue: float, interval: float | None) -> int:
    """The level of a recrawl: its page's importance, one better when overdue > interval."""
    level = importance
    if interval and interval > 0 and overdue > interval:
        level -= 1
    return _clamp(level)


def split(total: int, weights: Mapping[str, float]) -> dict[str, int]:
    """Divide ``total`` between the keys by weight (largest remainder; sums to ``total``).

    A key with a positive weight gets at least one when ``total`` allows, so the
    lowest level is never rounded away.
    """
    keys = [k for k, w in weights.items() if w > 0]
    if total <= 0 or not keys:
        return dict.fromkeys(weights, 0)
    wsum = sum(weights[k] for k in keys)
    exact = {k: total * weights[k] / wsum for k in keys}
    out = {k: math.floor(v) for k, v in exact.items()}
    if total >= len(keys):
        for k in keys:
            if out[k] == 0:
                out[k] = 1
    while sum(out.values()) > total:
        k = max((k for k in keys if out[k] > 1), key=lambda k: out[k] - exact[k])
        out[k] -= 1
    rest = total - sum(out.values())
    for k in sorted(keys, key=lambda k: exact[k] - out[k], reverse=True)[:rest]:
        out[k] += 1
    for k in weights:
        out.setdefault(k, 0)
    return out
