"""What one request and its result are: :class:`FetchRequest`, :class:`FetchResult`,
the :class:`HttpClient` interface the engine fetches through, and the ``error_code``
values of a proxy's failure (:data:`PROXY_FAILURES`).

Plain data, no I/O: the engine, the host table, the archiver and the outcome shaping
read these without importing the HTTP client (:mod:`crawlkit.fetch.client`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "PROXY_CONNECT",
    "PROXY_FAILURES",
    "PROXY_REFUSED",
    "PROXY_UNREACHABLE",
    "FetchRequest",
    "FetchResult",
    "HttpClient",
]

#: ``error_code`` of a request the proxy failed (never reached the site): the proxy
#: asked for credentials (407), or could not be reached. Every request would fail so.
PROXY_REFUSED = "proxy-refused"
PROXY_UNREACHABLE = "proxy-unreachable"
PROXY_FAILURES = frozenset({PROXY_REFUSED, PROXY_UNREACHABLE})
#: ``error_code`` of a CONNECT the proxy answered with another status (502: it could
#: not reach the site): a failure of that site, as a refused connection would be.
PROXY_CONNECT = "proxy-connect"


@dataclass
class FetchRequest:
    url: str
    address: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 30.0
    max_body: int = 10_000_000
    max_decoded: int = 10_000_000
    # called when the request goes out on its connection (after the connect, as it is
    # written): the per-IP gap counts from then (crawlkit.fetch.scheduler)
    on_sent: Callable[[], None] | None = field(default=None, compare=False)


@dataclass
class FetchResult:
    """What came back. ``status`` is None when no response head was received."""

    status: int | None = None
    headers: list[tuple[str, str]] = field(default_factory=list)
    response_head: bytes = b""
    request_head: bytes = b""
    body: bytes = b""
    truncated: str | None = None
    decoded_bytes: int = 0
    error: str | None = None
    started: float = 0.0  # wall clock when the request was sent
    elapsed: float = 0.0  # seconds until the body ended (or the failure)
    address: str | None = None
    error_code: str | None = None  # e.g. "tls-expired" (see crawlkit.fetch.tls)
    tls_unverified: str | None = None  # --insecure: the check that failed

    @property
    def proxy_failed(self) -> bool:
        """The proxy failed the request (it never reached the site): see
        :data:`PROXY_FAILURES`. Not the site's fault, and every request through
        that proxy is likely to fail the same way."""
        return self.error_code in PROXY_FAILURES

    def header(self, name: str) -> str | None:
        lname = name.lower()
        for k, v in self.headers:
            if k.lower() == lname:
                return v
        return None

    def location(self) -> str | None:
        """The Location header with each byte over 0x7F percent-encoded, as curl and
        browsers follow it: header values are read as latin-1, and a raw UTF-8 target
        (``/café/``, as Apache and IIS send it) went to the URL parser as ``cafÃ©``
        and came out ``/caf%C3%83%C2%A9/``, a URL the server never named."""
        value = self.header("Location")
        if value is None or self.location_conflict() is not None:
            return None
        if value.isascii():
            return value
        return "".join(c if c < "\x80" else f"%{ord(c):02X}" for c in value)

    def location_conflict(self) -> str | None:
        """Why this response names no redirect target, when it has Location header
        lines of different values; else None (one line, or the same value repeated).
        Location is one URI (RFC 9110 10.2.2; a field that is no list is sent once,
        5.3): Chrome refuses such a response (ERR_RESPONSE_HEADERS_MULTIPLE_LOCATION)
        and Firefox too, so following the first (as curl does) is a guess."""
        values = [v for k, v in self.headers if k.lower() == "location"]
        if len(set(values)) < 2:
            return None
        named = ", ".join(repr(v) for v in values)
        return f"{len(values)} Location headers of different values ({named}): not followed"[:300]


class HttpClient(Protocol):
    async def fetch(self, request: FetchRequest) -> FetchResult: ...

    async def close(self) -> None: ...
