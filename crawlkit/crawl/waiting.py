"""The crawl's waiting room: :class:`crawlkit.frontier.waiting.WaitingRoom`, which the
frontier stage shares (``frontier add --deferred``, ``frontier next``); importable here
as before."""

from __future__ import annotations

from crawlkit.frontier.waiting import FETCH_FIELDS, WaitingRoom

__all__ = ["FETCH_FIELDS", "WaitingRoom"]
