"""Sitemap and feed dates to one form: :func:`normalize_lastmod`."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from email.utils import parsedate_to_datetime

from crawlkit.times import parse_time

__all__ = ["normalize_lastmod"]

_W3C = re.compile(
    r"(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?"
    r"\s*(Z|z|UTC|GMT|[+-]\d{2}(?::?\d{2})?)?)?)?)?"
)


def normalize_lastmod(text: str) -> str | None:
    """A W3C datetime (any precision, with or without zone) or an RFC 822 date
    (RSS ``pubDate``) as ``YYYY-MM-DDTHH:MM:SSZ`` in UTC; None if it is neither.

    A date without a time is midnight UTC; a time without a zone is taken as UTC.
    """
    text = text.strip()
    if not text:
        return None
    m = _W3C.fullmatch(text)
    try:
        if m is not None:
            year, month, day, hh, mm, ss, _frac, zone = m.groups()
            tz: timezone = UTC
            if zone and zone[0] in "+-":
                digits = zone[1:].replace(":", "")
                minutes = int(digits[:2]) * 60 + int(digits[2:4] or 0)
                if minutes >= 24 * 60:
                    return None
                tz = timezone(timedelta(minutes=minutes if zone[0] == "+" else -minutes))
            when = datetime(
                int(year),
                int(month or 1),
                int(day or 1),
                int(hh or 0),
                int(mm or 0),
                int(ss or 0),
                tzinfo=tz,
            )
        else:
            when = parsedate_to_datetime(text)
            if when.tzinfo is None:
                when = when.replace(tzinfo=UTC)
        if parse_time(when.timestamp()) is None:  # before 1970: no stage could use it
            return None
        return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, TypeError, OverflowError, IndexError):
        return None
