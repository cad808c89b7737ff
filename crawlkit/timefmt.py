"""Times as records carry them: unix seconds, ISO 8601, or HTTP-dates.

One parser for every stage, so ``fetched_at``, ``retry_at``, ``due`` and ``lastmod``
mean the same thing wherever they are read.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["iso", "parse_time"]


def parse_time(value: Any) -> float | None:
    """A time as unix seconds: a number, a numeric string, ISO 8601 (Z or offset; no
    zone means UTC) or an HTTP-date; None for anything else."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        try:
            moment = parsedate_to_datetime(text)  # HTTP-date (Last-Modified)
        except (TypeError, ValueError, IndexError):
            return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def iso(ts: float) -> str:
    """UTC ISO 8601 to the second: ``2026-11-30T07:31:36Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
