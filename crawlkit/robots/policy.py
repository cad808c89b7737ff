"""The fetch policy: what an answer to GET /robots.txt means (RFC 9309 2.3, 2.4).

:class:`RobotsPolicy` turns a status and body (or a network error) into a
:class:`RobotsEntry`, the per-host cache record the fetcher keeps and persists
(docs/design.md invariant 3).
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from crawlkit.errors import UsageError
from crawlkit.robots._parse import MAX_ROBOTS_BYTES, RobotsTxt

#: The longest a reachable file's rules may be trusted (RFC 9309 section 2.4).
MAX_CACHE_AGE = 24 * 3600.0


@dataclass
class RobotsEntry:
    """What a cache keeps per host (``scheme://host:port``).

    ``status`` is the final HTTP status robots.txt was fetched with (after redirects),
    None for a network error. ``body`` is the good file whose rules apply: fetched now
    with 2xx, or an older 2xx copy standing in during a server error (then ``good_at``
    says when it was fetched). ``expires_at`` is when to fetch again; it is never more
    than 24 h after ``fetched_at``. Build entries with :class:`RobotsPolicy`.
    """

    status: int | None
    fetched_at: float
    expires_at: float
    body: bytes | None
    good_at: float | None
    error: str | None
    _rules: RobotsTxt | None = field(default=None, init=False, repr=False, compare=False)

    def rules(self) -> RobotsTxt:
        """The effective rules (computed once, then cached on the entry).

        2xx: the parsed body. 3xx (redirects beyond the limit) and 4xx other than 429:
        allow all. 5xx, 429, other statuses and network errors: the stand-in good copy
        if the entry carries one, else disallow all.
        """
        if self._rules is None:
            status = self.status
            if status is not None and 200 <= status < 300:
                self._rules = RobotsTxt.parse(self.body or b"")
            elif status is not None and 300 <= status < 500 and status != 429:
                self._rules = RobotsTxt.allow_all()
            elif self.body is not None:
                self._rules = RobotsTxt.parse(self.body)
            else:
                self._rules = RobotsTxt.disallow_all()
        return self._rules

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe form; ``body`` is base64."""
        return {
            "status": self.status,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "body": None if self.body is None else base64.b64encode(self.body).decode("ascii"),
            "good_at": self.good_at,
            "error": self.error,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobotsEntry:
        """Inverse of :meth:`to_dict`. Raises ValueError/KeyError/TypeError on junk."""
        body = d.get("body")
        return cls(
            status=None if d.get("status") is None else int(d["status"]),
            fetched_at=float(d["fetched_at"]),
            expires_at=float(d["expires_at"]),
            body=None if body is None else base64.b64decode(body, validate=True),
            good_at=None if d.get("good_at") is None else float(d["good_at"]),
            error=d.get("error"),
        )


class RobotsPolicy:
    """RFC 9309 section 2.3-2.4 and docs/design.md invariant 3, as one small object.

    * 2xx: the body's rules, trusted for ``max_age`` (at most 24 h).
    * 3xx: the fetcher follows up to ``max_redirects`` hops itself (RFC: at least
      five); a 3xx reaching this object means more hops than that, and the file is
      treated as unavailable: allow all, asked again after ``error_retry``.
    * 4xx except 429: no robots.txt, allow all, trusted for ``max_age``.
    * 5xx, 429, any other status and network errors: disallow all, asked again after
      ``error_retry`` (the failure is cached, so a sick server is not asked on every
      URL), unless the previous entry holds a good copy at most ``stale_ok`` old: then
      that copy's rules stand in (never past ``stale_ok``).

    Bodies are stored truncated to the parsed length (plus one byte, so the parser
    still sees that a line was cut).
    """

    def __init__(
        self,
        *,
        max_age: float = 24 * 3600,
        stale_ok: float = 30 * 86400,
        error_retry: float = 3600,
        max_redirects: int = 5,
    ):
        if max_age <= 0 or error_retry <= 0 or stale_ok < 0 or max_redirects < 0:
            raise UsageError("robots policy times must be positive and max_redirects >= 0")
        # RFC 9309 2.4: a reachable file's copy is not used for more than 24 hours.
        self.max_age = min(float(max_age), MAX_CACHE_AGE)
        self.error_retry = min(float(error_retry), MAX_CACHE_AGE)
        self.stale_ok = float(stale_ok)
        self.max_redirects = max_redirects

    def on_response(
        self, status: int, body: bytes, now: float, previous: RobotsEntry | None = None
    ) -> RobotsEntry:
        """The entry for a robots.txt answered with ``status`` (after redirects)."""
        if 200 <= status < 300:
            kept = body[: MAX_ROBOTS_BYTES + 1]
            return RobotsEntry(status, now, now + self.max_age, kept, now, None)
        if 300 <= status < 400:
            return RobotsEntry(
                status,
                now,
                now + self.error_retry,
                None,
                None,
                f"more than {self.max_redirects} redirects: treated as unavailable, all allowed",
            )
        if 400 <= status < 500 and status != 429:
            return RobotsEntry(status, now, now + self.max_age, None, None, None)
        return self._unreachable(status, f"HTTP {status}", now, previous)

    def on_error(self, error: str, now: float, previous: RobotsEntry | None = None) -> RobotsEntry:
        """The entry for a robots.txt fetch that failed below HTTP (like a 5xx)."""
        return self._unreachable(None, error, now, previous)

    def _unreachable(
        self, status: int | None, error: str, now: float, previous: RobotsEntry | None
    ) -> RobotsEntry:
        if (
            previous is not None
            and previous.body is not None
            and previous.good_at is not None
            and 0 <= now - previous.good_at <= self.stale_ok
        ):
            expires = min(now + self.error_retry, previous.good_at + self.stale_ok)
            return RobotsEntry(
                status,
                now,
                max(expires, now),
                previous.body,
                previous.good_at,
                f"{error}: using the good copy fetched at {previous.good_at:.0f}",
            )
        return RobotsEntry(
            status,
            now,
            now + self.error_retry,
            None,
            None,
            f"{error}: all disallowed until it can be fetched",
        )

    def is_fresh(self, entry: RobotsEntry, now: float) -> bool:
        """True while ``entry`` may be used without fetching robots.txt again.

        Never longer than 24 h after the fetch, whatever ``expires_at`` says (an entry
        read back from disk may come from another configuration), and not when the
        clock runs more than a minute behind the fetch time.
        """
        limit = min(entry.expires_at, entry.fetched_at + MAX_CACHE_AGE)
        return entry.fetched_at - 60 <= now < limit


def rules_for_status(status: int, body: bytes, policy: RobotsPolicy | None = None) -> RobotsTxt:
    """The rules in force when robots.txt was answered with ``status`` and ``body``
    (no earlier copy known), by :class:`RobotsPolicy`."""
    if not 100 <= status <= 599:
        raise UsageError(f"HTTP status must be 100-599, not {status}")
    return (policy or RobotsPolicy()).on_response(status, body, 0.0).rules()
