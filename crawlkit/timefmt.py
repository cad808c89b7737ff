"""Times as records carry them: unix seconds, ISO 8601, or HTTP-dates.

One parser for every stage, so ``fetched_at``, ``retry_at``, ``due`` and ``lastmod``
mean the same thing wherever they are read.

A usable time lies between the epoch and the end of year 9999 (what ISO 8601 and
:func:`time.gmtime` can write back). Anything else, ``-1e18``, ``1e308``, ``nan`` or
``"notatime"``, is no time at all: :func:`parse_time` answers None and
:func:`time_problem` says why, so a stage reports the record as bad (``FILE:LINE``)
and skips it instead of taking it as "now", as "never", or crashing on it.
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["MAX_TIME", "MIN_TIME", "iso", "parse_time", "time_problem"]

MIN_TIME = 0.0
"""1970-01-01T00:00:00Z, the earliest usable time."""
MAX_TIME = 253_402_300_799.0
"""9999-12-31T23:59:59Z, the latest usable time."""


def parse_time(value: Any) -> float | None:
    """A time as unix seconds: a number, a numeric string, ISO 8601 (Z or offset; no
    zone means UTC) or an HTTP-date, between :data:`MIN_TIME` and :data:`MAX_TIME`;
    None for anything else (unparseable, not finite, or out of that range)."""
    moment = _parse(value)
    if moment is None or not MIN_TIME <= moment <= MAX_TIME:  # also drops nan
        return None
    return moment


def time_problem(record: dict[str, Any], field: str) -> str | None:
    """Why ``record[field]`` is not a usable time, or None when it is one or is absent
    (missing or null). The message names the field and quotes the value."""
    value = record.get(field)
    if value is None or parse_time(value) is not None:
        return None
    shown = repr(value) if not isinstance(value, str) else repr(value[:80])
    moment = _parse(value)
    if moment is not None and math.isfinite(moment):
        return f"{field} {shown} is out of range (1970 to 9999)"
    return f"{field} {shown} is not a time (ISO 8601, HTTP-date or unix seconds)"


def _parse(value: Any) -> float | None:
    """:func:`parse_time` without the range check."""
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
    try:
        return moment.timestamp()
    except (OverflowError, ValueError):  # e.g. year 1 with a positive offset
        return None


def iso(ts: float) -> str:
    """UTC ISO 8601 to the second: ``2026-11-30T07:31:36Z``."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))
