"""Times and durations: as records carry them, and as users write them.

Records carry times as unix seconds, ISO 8601, or HTTP-dates. One parser for every
stage, so ``fetched_at``, ``retry_at``, ``due`` and ``lastmod`` mean the same thing
wherever they are read.

A usable time lies between the epoch and the end of year 9999 (what ISO 8601 and
:func:`time.gmtime` can write back). Anything else, ``-1e18``, ``1e308``, ``nan`` or
``"notatime"``, is no time at all: :func:`parse_time` answers None and
:func:`time_problem` says why, so a stage reports the record as bad (``FILE:LINE``)
and skips it instead of taking it as "now", as "never", or crashing on it.

Users write durations and sizes on a command line: ``1s``, ``50m``, ``10MB``
(:func:`parse_duration`, :func:`parse_size`; sizes live here because they are written
and checked the same way).
"""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from crawlkit.errors import UsageError

__all__ = [
    "DAY",
    "HOUR",
    "MAX_TIME",
    "MIN_TIME",
    "format_duration",
    "iso",
    "parse_duration",
    "parse_size",
    "parse_time",
    "time_problem",
]

MIN_TIME = 0.0
"""1970-01-01T00:00:00Z, the earliest usable time."""
MAX_TIME = 253_402_300_799.0
"""9999-12-31T23:59:59Z, the latest usable time."""
HOUR = 3600.0
"""Seconds in an hour."""
DAY = 86400.0
"""Seconds in a day (a UTC day: no leap seconds in unix time)."""


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


def iso(ts: float, digits: int = 0) -> str:
    """UTC ISO 8601: ``2026-11-30T07:31:36Z`` to the second, or with ``digits`` of the
    second's fraction (truncated): 3 for fetch records' ``fetched_at``
    (``...36.123Z``), 6 for WARC/1.1's WARC-Date. The one formatter of times."""
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts))
    if not digits:
        return base + "Z"
    scale = 10**digits
    return f"{base}.{int((ts % 1) * scale):0{digits}d}Z"


# Durations and sizes as users write them on a command line.

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": HOUR, "d": DAY}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d*)?)\s*([kmgt]i?b?|b)?\s*$", re.IGNORECASE)


def parse_duration(text: str) -> float:
    """Seconds in ``text``: a number with an optional unit (ms, s, m, h, d; default s)."""
    match = _DURATION.match(text)
    if not match:
        raise UsageError(f"not a duration: {text!r} (examples: 0.05s, 1s, 50m, 2h, 7d)")
    return float(match.group(1)) * _UNITS[(match.group(2) or "s").lower()]


def parse_size(text: str) -> int:
    """Bytes in ``text``: ``10MB`` and ``10M`` are 10**7, ``10MiB`` is 10 * 2**20."""
    match = _SIZE.match(text)
    if not match:
        raise UsageError(f"not a size: {text!r} (examples: 500KiB, 10MB, 1GB)")
    unit = (match.group(2) or "b").lower()
    base = 1024 if "i" in unit else 1000
    power = {"b": 0, "k": 1, "m": 2, "g": 3, "t": 4}[unit[0]]
    return int(float(match.group(1)) * base**power)


def format_duration(seconds: float) -> str:
    """A duration for people to read: ``50ms``, ``12.5s``, ``3.2m``, ``1.5h``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"


# The wall clock and the monotonic one, read together once: steady_time's anchor.
_WALL_AT_START, _MONO_AT_START = time.time(), time.monotonic()


def steady_time() -> float:
    """Seconds since the epoch that never jump: the wall clock when this process first
    read it, plus the monotonic seconds since.

    A crawl's deadlines and host gaps are kept in it. Kept in ``time.time()``, an NTP
    step of the system clock back by an hour (or a VM's clock set right) froze a
    running crawl: every host's next request an hour away, and ``--for`` past only an
    hour later. Values stay comparable with the wall times of earlier runs (a host's
    saved clock, a retry time), as the two clocks advance at the same rate.
    """
    return _WALL_AT_START + (time.monotonic() - _MONO_AT_START)
