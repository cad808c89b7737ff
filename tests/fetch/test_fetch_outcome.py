"""crawlkit.fetch.outcome: the parts of a fetch record read from a response."""

from __future__ import annotations

import time

import pytest

from crawlkit.fetch.outcome import parse_retry_after


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("120", 0) == 120
    now = 1_700_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 90))
    assert parse_retry_after(date, now) == pytest.approx(90, abs=1)
    assert parse_retry_after("soon", now) is None
