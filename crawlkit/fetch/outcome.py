"""Shaping outcomes: the fetch record of a URL, from its input record and what happened.

Every input URL record gets exactly one fetch record (docs/design.md invariant 1); the
outcomes are listed in :mod:`crawlkit.fetch.engine`. This module knows what each
record says and nothing about when it is made:

* :func:`fetch_record`, :func:`fetch_refusal` — the records of
  :mod:`crawlkit.records` (the input record with every fetch field set, a classified
  failure's ``error_code`` added), as the plain dicts the fetcher edits;
* :func:`shape_response` — the outcome and fields of a response to a page request;
* :func:`redirect_target` — the URL record of a redirect's target (hop limit, target
  canonicalized), or why there is none;
* :class:`Outbox` — fetch records waiting to be handed out, counted by outcome, and
  the URLs accepted and not answered yet.
"""

from __future__ import annotations

import calendar
import email.utils
from collections import deque
from typing import Any, cast

from crawlkit import records
from crawlkit.errors import InvalidURL
from crawlkit.fetch.exchange import FetchResult
from crawlkit.records import Record, error_code
from crawlkit.times import iso
from crawlkit.url import Canonicalizer, whatwg_href

__all__ = [
    "OUTCOMES",
    "SELF_REDIRECT",
    "Outbox",
    "Record",
    "conditional",
    "error_code",
    "fetch_record",
    "fetch_refusal",
    "iso_time",
    "parse_retry_after",
    "redirect_target",
    "resolve_location",
    "shape_response",
    "timing_fields",
]

#: The error of a redirect whose target, canonical, is the URL redirected.
SELF_REDIRECT = (
    "redirect to the URL itself once canonicalized (the Location adds only what the rules strip)"
)

OUTCOMES = ("fetched", "not-modified", "redirect", "robots-denied", "deferred", "refused", "error")


def iso_time(t: float) -> str:
    """UTC ISO 8601 with milliseconds: ``2026-11-30T07:31:36.123Z``."""
    return iso(t, 3)


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from a Retry-After value (delta-seconds or HTTP-date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():  # ("²" is a digit to str.isdigit, not to float)
        return float(value)
    try:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        return max(0.0, calendar.timegm(parsed[:9]) - (parsed[9] or 0) - now)
    except (TypeError, ValueError, OverflowError):  # a year past what a C long holds
        return None


def fetch_record(rec: Record, url: str, outcome: str, **fields: Any) -> Record:
    """:func:`crawlkit.records.fetch_record` as the plain dict the fetcher goes on
    editing. Field order is fixed: the record's lines are compared byte for byte by
    tests and by tools downstream."""
    return cast(Record, records.fetch_record(rec, url, outcome, **fields))


def fetch_refusal(rec: Record, url: str, refused: str, detail: str) -> Record:
    """:func:`crawlkit.records.fetch_refusal` as a plain dict (see :func:`fetch_record`)."""
    return cast(Record, records.fetch_refusal(rec, url, refused, detail))


def timing_fields(res: FetchResult) -> dict[str, Any]:
    """When the request started, how long it took and the address asked."""
    return {
        "fetched_at": iso_time(res.started),
        "elapsed_ms": round(res.elapsed * 1000, 1),
        "ip": res.address,
    }


def shape_response(
    rec: Record, res: FetchResult, *, digest: str, warc: Any, backoff_until: float
) -> tuple[str, dict[str, Any]]:
    """The outcome and fields of a response (``res.status`` set) to a page request.

    ``digest`` and ``warc`` are what the archiver wrote; ``backoff_until`` is the
    host's clock after a 429/503 (the record's ``retry_at``). A 304 keeps the input's
    validators when the server sent none. A redirect's ``location`` is set by
    :func:`redirect_target`.
    """
    status = res.status
    assert status is not None
    fields = timing_fields(res)
    fields.update(
        status=status,
        bytes=len(res.body),
        content_type=res.header("Content-Type"),
        etag=res.header("ETag") or (rec.get("etag") if status == 304 else None),
        last_modified=res.header("Last-Modified")
        or (rec.get("last_modified") if status == 304 else None),
        digest=digest,
        warc=warc,
        error=res.error,
    )
    if res.truncated:
        fields["truncated"] = res.truncated
    if res.tls_unverified:
        fields["tls_unverified"] = res.tls_unverified
    if status == 304 and not conditional(rec):
        # A 304 to a plain GET says nothing about what was had before (there was
        # nothing): counted as "unchanged", its page was never captured.
        outcome = "error"
        fields["error"] = "HTTP 304 to a request that was not conditional"
        fields["etag"] = fields["last_modified"] = None
    elif status == 304:
        outcome = "not-modified"
    elif 300 <= status < 400 and (conflict := res.location_conflict()) is not None:
        # no target the server meant: an error of the response, archived as it came
        outcome = "error"
        fields["error"] = f"HTTP {status} with {conflict}"
    elif status in (429, 503):
        outcome = "deferred"
        fields["retry_at"] = iso_time(backoff_until)
        fields["error"] = f"HTTP {status}: backing off"
        # what the page had, for the next attempt (not the error's: a 503 without
        # validators made the retry a plain GET, and its digest the page's)
        fields["etag"], fields["last_modified"] = rec.get("etag"), rec.get("last_modified")
        fields["digest"] = rec.get("digest")
    elif 300 <= status < 400 and res.location():
        outcome = "redirect"
    else:
        outcome = "fetched"
    return outcome, fields


def conditional(rec: Record) -> bool:
    """Whether the request for ``rec`` asks with validators (If-None-Match or
    If-Modified-Since, from the record's ``etag`` / ``last_modified``)."""
    return any(isinstance(rec.get(k), str) and rec.get(k) for k in ("etag", "last_modified"))


def resolve_location(url: str, location: str) -> str | None:
    """The URL a redirect's ``Location`` names, resolved against ``url`` by the WHATWG
    URL Standard as browsers resolve it (in http(s) ``\\`` is ``/``, ``///host/x``
    names a host, tabs and newlines are dropped), or None when it is no URL
    (``http://[google.com]/``; Python's ``urljoin`` raised on it, and a crawl that met
    one failed, on every run)."""
    try:
        return whatwg_href(location, url)
    except (ValueError, UnicodeError):
        return None


def redirect_target(
    rec: Record,
    url: str,
    location: str,
    fields: dict[str, Any],
    *,
    max_hops: int,
    canon: Canonicalizer,
) -> Record | None:
    """The URL record of the target of ``url``'s redirect to ``location``, or None.

    Sets the fetch record's ``location`` in ``fields`` (canonical when the target
    parses) and, when there is no target record, its ``error``: past ``max_hops``
    (counted from the input's ``hops`` when its ``reason`` is ``redirect``), a
    target that is not a URL crawlkit fetches, or one that is ``url`` itself once
    canonicalized. The target record carries the source's
    ``depth`` and its ``priority`` hint, ``reason: "redirect"``, ``hops`` and ``via``,
    the source's ``requisite_hops`` when it was fetched as a page requisite, and
    ``seed_redirect`` when the source is a seed or a seed's redirect target (a seed
    itself to ``--scope host|site``: frontier/scope.py).
    """
    target = resolve_location(url, location)
    fields["location"] = target if target is not None else location
    if target is None:
        fields["error"] = "redirect target refused: not a URL"
        return None
    hops = rec.get("hops") if rec.get("reason") == "redirect" else 0
    hops = (hops if isinstance(hops, int) else 0) + 1
    if hops > max_hops:
        fields["error"] = f"redirect limit reached ({max_hops} hops)"
        return None
    try:
        parsed = canon.parse(target)
    except InvalidURL as exc:
        fields["error"] = f"redirect target refused: {exc}"
        return None
    fields["location"] = parsed.url
    if parsed.url == _canonical(canon, url):
        # The Location differs from the URL only in what the rules strip (a Java
        # server's "/a" -> "/a;jsessionid=...", a session or tracking parameter): its
        # target is this URL, already fetched, so its record was dropped as seen and
        # the page lost without a word. Said here, as the hop limit is, in one wording
        # for all (the report counts by it; the WARC's response holds the Location).
        fields["error"] = SELF_REDIRECT
        return None
    depth, priority = rec.get("depth"), rec.get("priority")
    # An integer priority is a queue level from an older frontier, not a finder's hint.
    hint = priority if isinstance(priority, float) else None
    out = cast(Record, records.url_record(parsed, depth=depth, reason="redirect", priority=hint))
    out.update(hops=hops, via=url)
    requisite_hops = rec.get("requisite_hops")
    if isinstance(requisite_hops, int) and requisite_hops > 0:
        # a page requisite's target is the requisite: an archive follows it whatever the
        # scope, at the same hop count (crawl/archive.py), and reports it as one
        out["requisite_hops"] = requisite_hops
    if rec.get("reason") == "seed" or rec.get("seed_redirect") is True:
        out["seed_redirect"] = True
    return out


def _canonical(canon: Canonicalizer, url: str) -> str | None:
    """``url`` under ``canon``'s rules (a fetch may be given URLs under other ones)."""
    try:
        return canon.canonicalize(url)
    except InvalidURL:
        return None


class Outbox:
    """Fetch records ready to be handed out, in the order they were made.

    ``counts`` tallies them by outcome. ``accepted`` holds the URLs queued or in
    flight: a URL is asked for once at a time, and may come again once answered.
    """

    def __init__(self) -> None:
        self.counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        self.accepted: set[str] = set()
        self.made = 0  # records emitted in all (the sum of ``counts``)
        self._records: deque[Record] = deque()

    def emit(self, record: Record, *, settles: bool = True) -> None:
        """Queue ``record``; ``settles`` its URL's acceptance (a refusal at intake,
        made before the URL was accepted, settles nothing)."""
        self.counts[record["outcome"]] += 1
        self.made += 1
        self._records.append(record)
        if settles:
            self.accepted.discard(record["url"])

    def __bool__(self) -> bool:
        return bool(self._records)

    def pop(self) -> Record:
        """The oldest record not handed out yet."""
        return self._records.popleft()
