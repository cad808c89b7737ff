"""Durations and sizes as users write them on a command line: ``1s``, ``50m``, ``10MB``."""

from __future__ import annotations

import re

from crawlkit.errors import UsageError

_DURATION = re.compile(r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*(ms|s|m|h|d)?\s*$", re.IGNORECASE)
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
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
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 120:
        return f"{seconds:.1f}s"
    if seconds < 7200:
        return f"{seconds / 60:.1f}m"
    return f"{seconds / 3600:.1f}h"
