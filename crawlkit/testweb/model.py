"""The shared vocabulary of the test web: requests, responses, deterministic randomness.

Everything a page handler needs is here, so handlers stay pure functions of
(web, host, request) plus, for a few deliberately changing pages, the clock.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import formatdate, parsedate_to_datetime
from typing import Protocol

import xxhash


def rng_for(*parts: object) -> random.Random:
    """A random generator that depends only on ``parts`` (never on the process).

    Python's ``hash()`` of a string changes per process, so the seed is an xxh64 of the
    parts' text: the same seed, host and page give the same bytes in every run.
    """
    return random.Random(stable_hash(*parts))


def stable_hash(*parts: object) -> int:
    """A 64-bit hash of ``parts`` that is the same in every process (bytes hash as is)."""
    if len(parts) == 1 and isinstance(parts[0], bytes):
        return xxhash.xxh64_intdigest(parts[0])
    return xxhash.xxh64_intdigest(":".join(str(p) for p in parts).encode("utf-8"))


def http_date(ts: float) -> str:
    """RFC 9110 IMF-fixdate, e.g. ``Sun, 06 Nov 1994 08:49:37 GMT``."""
    return formatdate(ts, usegmt=True)


def parse_http_date(text: str) -> float | None:
    """Unix seconds of an HTTP date, or None when it is not one."""
    try:
        return parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(slots=True)
class Request:
    """One parsed request as a handler sees it.

    ``path`` is the request target as sent (path and query, never the fragment);
    ``route`` is the path without the query; ``query`` the raw query (no ``?``).
    """

    method: str
    path: str
    route: str
    query: str
    host: str
    headers: dict[str, str]
    addr: str
    port: int
    conn: int
    t_start: float

    def header(self, name: str, default: str = "") -> str:
        return self.headers.get(name, default)

    def query_params(self) -> dict[str, str]:
        params: dict[str, str] = {}
        for part in self.query.split("&"):
            if part:
                key, _, value = part.partition("=")
                params.setdefault(key, value)
        return params


class BodyWriter(Protocol):
    """What a streaming body callback writes to (flow-controlled)."""

    async def write(self, data: bytes) -> None: ...

    async def write_raw(self, data: bytes) -> None: ...

    def abort(self) -> None: ...


Stream = Callable[[BodyWriter], Awaitable[None]]


@dataclass(slots=True)
class Response:
    """A response, either complete (``body``) or streamed (``stream``).

    ``etag`` / ``last_modified`` (unix seconds) enable conditional GET: the server
    answers 304 when the request's validators match, for any 200 response that has
    them. ``delay`` postpones the status line (slow hosts). ``length`` is the
    Content-Length announced for a streamed body (None: chunked unless
    ``close_delimited``). ``raw`` replaces the whole response with these bytes
    (malformed protocol on purpose). ``log`` adds fields to the request log line
    (``retry_after``, ``depth``...).
    """

    status: int
    body: bytes = b""
    content_type: str | None = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    etag: str | None = None
    last_modified: float | None = None
    delay: float = 0.0
    stream: Stream | None = None
    length: int | None = None
    close_delimited: bool = False
    close: bool = False
    raw: bytes | None = None
    gzip_ok: bool = False
    log: dict[str, object] = field(default_factory=dict)

    @property
    def is_simple(self) -> bool:
        return self.stream is None and self.delay <= 0 and self.raw is None


class HostContext(Protocol):
    """What handlers may ask of the running server."""

    port: int

    def url(self, host: str, path: str) -> str: ...

    def now(self) -> float: ...

    def state(self, host: str) -> dict[str, float]: ...


def now() -> float:
    return time.time()


REASONS = {
    200: "OK",
    206: "Partial Content",
    301: "Moved Permanently",
    302: "Found",
    303: "See Other",
    304: "Not Modified",
    307: "Temporary Redirect",
    308: "Permanent Redirect",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    410: "Gone",
    421: "Misdirected Request",
    429: "Too Many Requests",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    501: "Not Implemented",
    503: "Service Unavailable",
}


def redirect(status: int, location: str, *, log: dict[str, object] | None = None) -> Response:
    body = f'<html><body><a href="{location}">moved</a></body></html>'.encode()
    return Response(status, body, headers=[("Location", location)], log=log or {})


def not_found() -> Response:
    return Response(404, b"<html><body><h1>Not found</h1></body></html>")


def text(status: int, body: str, content_type: str = "text/plain; charset=utf-8") -> Response:
    return Response(status, body.encode("utf-8"), content_type=content_type)
