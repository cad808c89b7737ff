"""The HTTP client behind one small interface: :class:`HttpClient`.

The fetch engine needs exactly one operation: GET one URL, from one already-checked
address, with caps, and hand back the response *as received* (status line, original
headers, body with its Content-Encoding intact and its transfer codings undone:
de-chunked, and a gzip or deflate transfer coding decoded). :class:`AiohttpClient`
is the implementation; see ``bench/bench_http_clients.py`` for why aiohttp and not
httpx (on this machine, 100 concurrent loopback requests cost ~120 µs of client CPU
each with aiohttp, ~4 ms with httpx's own transport, ~370 µs with httpx on the
aiohttp transport). Tests may substitute any object with the same two methods.

Guarantees of :meth:`AiohttpClient.fetch`:

* It connects only to ``request.address`` (a resolver that answers from pins set by
  the caller; a name without a pin fails, it never falls back to DNS), while the Host
  header and TLS SNI stay the URL's name (docs/design.md invariant 7). Through a proxy
  the same holds: the proxy is sent the checked address, never the name (an http
  request as ``GET http://ADDRESS:PORT/path`` with ``Host: name``, an https one as
  ``CONNECT ADDRESS:PORT`` with SNI and certificate check for the name), so a proxy
  whose resolver answers differently (split-horizon DNS, a rebinding answer) cannot
  take a request elsewhere. A proxy that replaces ``Host`` by the request-target's
  host (RFC 9112 3.2.2 allows it) then sends the address as Host over plain http.
  A ``Proxy-Authorization`` header is not part of ``request_head`` (it went to the
  proxy, not the site), and error texts have URL userinfo masked.
* One total deadline (``timeout``) covers connect, headers, and every read of the
  body, so a server that goes silent mid-body costs at most ``timeout`` seconds.
* At most ``max_body`` bytes are read off the wire and at most ``max_decoded`` bytes
  of gzip/deflate output are produced (only counted, never kept), so a gzip bomb ends
  at the cap; the response is then marked ``truncated="length"`` and its connection
  closed instead of drained.
* It never raises for network trouble: failures come back in ``FetchResult.error``;
  classified ones (TLS, see :mod:`crawlkit.fetch.tls`) also in ``error_code``, and
  ``error`` then starts with the code. A proxy's failure is told from the site's:
  ``proxy-unreachable`` (no connection to the proxy) and ``proxy-refused`` (a 407, to
  a CONNECT or a plain http request: a proxy's; an https response through the tunnel
  is the site's, 407 or not), their errors naming the
  proxy (:attr:`FetchResult.proxy_failed`); ``proxy-connect`` (a CONNECT answered
  with another status, a 502 when the proxy could not reach the site) is the site's
  failure as the proxy saw it.
* Redirects are not followed. TLS certificates are verified against the system store
  plus ``ca_file``, for the URL's host name; with ``insecure`` a failed check is
  retried once without verification on a new connection (the request is sent once)
  and named in ``tls_unverified``, and the host is remembered so its next requests go
  straight to the unverified connection.
"""

from __future__ import annotations

import asyncio
import os
import resource
import socket
import ssl
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Protocol
from urllib.parse import urlsplit
from urllib.request import proxy_bypass  # aiohttp imports urllib.request anyway

from crawlkit import deflate
from crawlkit.fetch.freeze import FreezeWatch
from crawlkit.fetch.protocol import ON_SENT, REUSED, crawl_protocol_factory, mark_idle
from crawlkit.fetch.tls import classify_certificate_error, insecure_context, verifying_context
from crawlkit.masking import mask_url

__all__ = [
    "PROXY_FAILURES",
    "AiohttpClient",
    "FetchRequest",
    "FetchResult",
    "HttpClient",
    "connection_budget",
]


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


class _PinnedResolver:
    """aiohttp resolver that only answers with addresses the caller pinned."""

    def __init__(self) -> None:
        self.pins: dict[str, str] = {}
        self.proxies: set[str] = set()

    async def resolve(
        self, host: str, port: int = 0, family: int = socket.AF_INET
    ) -> list[dict[str, Any]]:
        address = self.pins.get(host.lower().rstrip("."))
        if address is None:
            raise OSError(f"no checked address for {host}")
        fam = socket.AF_INET6 if ":" in address else socket.AF_INET
        return [
            {
                "hostname": host,
                "host": address,
                "port": port,
                "family": fam,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
        ]

    async def close(self) -> None:
        pass

    def pin_proxy(self, url: str) -> None:
        """Pin the address of a proxy's host (looked up now), so connections to it work."""
        host = urlsplit(url).hostname
        if not host:
            return
        try:
            infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except OSError:
            return  # the fetch then fails with "no checked address", reported per URL
        if infos:
            self.proxies.add(host.lower())
            self.pins[host.lower().rstrip(".")] = str(infos[0][4][0])


def connection_budget() -> int:
    """How many connections, in use and idle together, a client keeps open at most:
    half the soft RLIMIT_NOFILE as it is when the client is made (the CLI raised it to
    the hard limit at start), the other half left for WARC files, state, logs, DNS
    sockets and the duplicates kept while a TLS handshake runs."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = _NO_FILE_LIMIT
    return max(8, soft // 2)


def _capped_connector(aiohttp: Any, idle_cap: int, **kwargs: Any) -> Any:
    """An aiohttp TCPConnector that closes idle connections, the longest idle first,
    past ``idle_cap``. aiohttp's own ``limit`` counts connections in use only, and with
    a keep-alive connection per host a crawl of thousands of hosts ran out of files
    on idle ones (issue 25). With ``limit_per_host=1`` a pool key holds at most one
    connection, so the number of keys with idle connections is the idle count."""

    class CappedConnector(aiohttp.TCPConnector):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            # each connection's protocol: crawlkit/fetch/protocol.py
            self._factory = crawl_protocol_factory(self._loop)

        def _release(self, key: Any, protocol: Any, *, should_close: bool = False) -> None:
            mark_idle(protocol)
            super()._release(key, protocol, should_close=should_close)
            idle = self._conns
            while len(idle) > idle_cap:
                oldest = next(iter(idle))  # keys are added when a connection goes idle
                for proto, _ in idle.pop(oldest):
                    transport = proto.transport
                    proto.close()
                    if oldest.is_ssl and not self._cleanup_closed_disabled:
                        self._cleanup_closed_transports.append(transport)

    return CappedConnector(**kwargs)


def _env_proxies() -> list[str]:
    """The proxies named by HTTP_PROXY / HTTPS_PROXY (either case)."""
    names = ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")
    return [os.environ[n] for n in names if os.environ.get(n)]


_MAX_DEFLATE_RATIO = 1032
_MAX_PINS = 100_000  # names with a pinned address kept by the resolver
_NO_FILE_LIMIT = 1 << 20  # what an unlimited RLIMIT_NOFILE counts as
_MAX_UNVERIFIED = 100_000  # origins remembered as failing a TLS check (--insecure)
_MAX_HEADER_LINE = 1 << 16  # bytes of a status or header line (see AiohttpClient)
_MAX_HEADERS = 512
# A body framed by the close (no Content-Length, not chunked) that a reset ended: no
# end the server meant (crawlkit/fetch/protocol.py), as a chunked body cut short.
_RESET_IN_BODY = (
    "ConnectionResetError: the connection was reset before the end of a body "
    "that only the close delimits"
)
# Failures --insecure fetches anyway (a stalled handshake is not a failed check).
_INSECURE_RETRY = ("tls-expired", "tls-hostname", "tls-untrusted", "tls-protocol")

# The sockets a fetch creates while connecting (duplicates of them, so they outlive the
# transport): a timeout then tells "TCP connected, TLS handshake stalled" from "TCP
# connect stalled". Set per fetch; aiohttp calls the factory inside the fetch's task.
_connecting: ContextVar[list[socket.socket] | None] = ContextVar("_connecting", default=None)


def _socket_factory(addr_info: Any) -> socket.socket:
    family, type_, proto, _, _ = addr_info
    sock = socket.socket(family=family, type=type_, proto=proto)
    watch = _connecting.get()
    if watch is not None:
        watch.append(sock.dup())
    return sock


def _tcp_connected(sockets: list[socket.socket]) -> bool:
    for sock in sockets:
        try:
            sock.getpeername()
        except OSError:
            continue
        return True
    return False


class _DecodedCounter:
    """Counts gzip/deflate output without keeping it; stops past ``cap``."""

    def __init__(self, encoding: str, cap: int):
        self.cap = cap
        self._total = 0
        self.broken = False
        enc = encoding.strip().lower()
        if enc in ("gzip", "x-gzip"):
            self._d: Any = deflate.decompressobj(47)
        elif enc == "deflate":
            self._d = deflate.decompressobj(47)  # zlib-wrapped; raw deflate retried below
            self._raw_retry = True
        else:
            self._d = None
        self._raw_retry = enc == "deflate"
        self._first = True
        self._held: list[bytes] | None = []
        self._held_size = 0

    @property
    def total(self) -> int:
        """Decoded bytes counted so far (0 while decoding is put off)."""
        return self._total

    @total.setter
    def total(self, value: int) -> None:
        self._total = value

    def feed(self, chunk: bytes) -> bool:
        """Feed raw body bytes; False once the decoded size passed the cap.

        Deflate expands at most 1032:1, so while the raw bytes seen are below
        ``cap / 1032`` the cap cannot be reached and decoding is put off (most pages
        are never decoded here at all).
        """
        if self._d is None or self.broken:
            return True
        if self._held is not None:
            self._held.append(chunk)
            self._held_size += len(chunk)
            if self._held_size * _MAX_DEFLATE_RATIO <= self.cap:
                return True
            chunk = b"".join(self._held)
            self._held = None
        return self._feed(chunk)

    def _feed(self, chunk: bytes) -> bool:
        data = chunk
        try:
            while data:
                out = self._d.decompress(data, self.cap - self.total + 1)
                self.total += len(out)
                if self.total > self.cap:
                    return False
                data = self._d.unconsumed_tail
                if self._d.eof:
                    data = self._d.unused_data
                    if data:  # concatenated gzip members
                        self._d = deflate.decompressobj(47)
        except deflate.Error:
            if self._first and self._raw_retry:
                self._d, self._raw_retry = deflate.decompressobj(-15), False
                return self._feed(chunk)
            self.broken = True  # undecodable: the raw body cap still holds
        self._first = False
        return True


def transfer_codings(headers: list[tuple[str, str]]) -> list[str]:
    """The transfer codings of a response besides its chunked framing (which the
    parser undoes), in the order the server applied them: ``Transfer-Encoding: gzip,
    chunked`` is ``["gzip"]``. Names are lowercased, ``identity`` is none."""
    codings = [
        coding.split(";", 1)[0].strip().lower()
        for name, value in headers
        if name.lower() == "transfer-encoding"
        for coding in value.split(",")
    ]
    codings = [c for c in codings if c and c != "identity"]
    if codings and codings[-1] == "chunked":
        codings.pop()
    return codings


def _undo_transfer_codings(result: FetchResult, cap: int) -> None:
    """Undo the gzip or deflate transfer codings of ``result.body`` (last applied
    first), at most ``cap`` bytes of output (past it the body is cut, ``truncated:
    length``, as a gzip bomb in a Content-Encoding is).

    A transfer coding is the message's, not the page's (RFC 9112 7): the recipient
    removes it, as it removes chunked framing, and what is left is the payload a WARC
    stores and digests (WARC 1.1 5.9: the entity-body, which excludes transfer
    codings). Kept, the WARC held gzip bytes under no Content-Encoding (the writer
    renames Transfer-Encoding so no reader de-chunks the body again), and a replay
    showed them as the page. A coding crawlkit cannot undo (or a body that is not
    what it says) leaves the body as it came, and the record's error says so."""
    codings = transfer_codings(result.headers)
    if not codings:
        return
    body = result.body
    for coding in reversed(codings):
        try:
            body, cut = _inflate(body, coding, cap)
        except (deflate.Error, ValueError) as exc:
            note = f"transfer coding {coding!r} not undone ({exc}): the body is stored as sent"
            result.error = result.error or note[:300]
            return
        if cut:
            result.truncated = result.truncated or "length"
            break
    result.body = body


def _inflate(data: bytes, coding: str, cap: int) -> tuple[bytes, bool]:
    """``data`` decoded from ``coding`` (gzip, x-gzip or deflate: zlib-wrapped or raw,
    as browsers take it) and whether ``cap`` cut the output; ValueError for any other
    coding, ``deflate.Error`` for data that is not in it. A stream cut short gives what
    it holds."""
    if coding in ("gzip", "x-gzip"):
        return _inflate_members(data, 47, cap)
    if coding != "deflate":
        raise ValueError("a coding crawlkit does not decode")
    try:
        return _inflate_members(data, 15, cap)
    except deflate.Error:
        return _inflate_members(data, -15, cap)  # raw deflate, as some servers send it


def _inflate_members(data: bytes, wbits: int, cap: int) -> tuple[bytes, bool]:
    """Inflate ``data`` member after member (gzip members back to back are one body),
    at most ``cap`` bytes, and whether the cap cut it. Bytes after a member that start
    no gzip member, or a damaged member after the first, end the body there (as
    :func:`crawlkit.warc.read.decode_body` reads it); a damaged first one raises."""
    out: list[bytes] = []
    room = cap + 1
    while data and room > 0:
        d = deflate.decompressobj(wbits)
        try:
            piece = d.decompress(data, room)
        except deflate.Error:
            if not out:
                raise
            break
        out.append(piece)
        room -= len(piece)
        if not d.eof or not d.unused_data.startswith(b"\x1f\x8b"):
            break
        data = d.unused_data
    body = b"".join(out)
    return body[:cap], len(body) > cap


def _body_complete(resp: Any, size: int) -> bool:
    """Whether the ``size`` bytes read are the whole body of ``resp``: its
    Content-Length, or the end of the stream already received."""
    length = resp.content_length
    return (length is not None and size >= length) or resp.content.at_eof()


class AiohttpClient:
    """The production client (one aiohttp session, keep-alive, one connection per host).

    ``ca_file`` adds CAs to the system store; ``insecure`` fetches anyway when a TLS
    check fails (see the module docstring). ``proxy`` (or, with ``trust_env``, the
    HTTP(S)_PROXY and NO_PROXY variables) sends requests through a forward proxy.
    """

    def __init__(
        self,
        *,
        keepalive: float = 4.0,
        ca_file: str | os.PathLike[str] | None = None,
        insecure: bool = False,
        proxy: str | None = None,
        trust_env: bool = False,
    ):
        # keepalive stays under common server idle timeouts (Apache: 5 s), so a reused
        # connection is rarely one the server is closing (no silent resend, see below).
        import aiohttp

        self._aiohttp = aiohttp
        from aiohttp.http_exceptions import HttpProcessingError

        # what a parser raises for a response it cannot read: aiohttp wraps most of it
        # in ClientResponseError, not an error inside a body the Python parser reads
        # (protocol.py's second look), which escaped fetch and ended the run
        self._malformed = (aiohttp.ClientResponseError, HttpProcessingError)
        # how a kept-alive connection the server closed fails a request sent on it
        self._closed_under_us = (
            aiohttp.ServerDisconnectedError,
            aiohttp.ClientOSError,
            ConnectionResetError,
            BrokenPipeError,
        )
        self._resolver = _PinnedResolver()
        self._verify: ssl.SSLContext = verifying_context(ca_file)
        self._insecure: ssl.SSLContext | None = insecure_context() if insecure else None
        self._unverified: dict[str, str] = {}  # origin -> the check it failed
        # A proxy is an address the operator named: its name is resolved here, once,
        # and pinned; targets are still checked by the network policy before a fetch.
        self._proxy = proxy
        for url in [proxy] if proxy else _env_proxies() if trust_env else []:
            self._resolver.pin_proxy(url)
        # --trust-env: the proxy per scheme, chosen here by the URL's *name* (NO_PROXY
        # names hosts), since the session is given the address (see _attempt).
        self._env_proxies: dict[str, Any] = {}
        if trust_env and not proxy:
            from aiohttp.helpers import proxies_from_env

            for scheme, info in proxies_from_env().items():
                env_proxy = info.proxy
                if info.proxy_auth is not None:
                    env_proxy = env_proxy.with_user(info.proxy_auth.login).with_password(
                        info.proxy_auth.password
                    )
                self._env_proxies[scheme] = env_proxy
        self._bypass: dict[str, bool] = {}  # host -> NO_PROXY says so
        # In use and idle connections share connection_budget(), half each, so the
        # pool never takes the process past its open-file limit.
        budget = connection_budget()
        self._connector = _capped_connector(
            aiohttp,
            budget - budget // 2,
            limit=budget // 2,
            limit_per_host=1,  # belt and braces: the scheduler already serializes a host
            resolver=self._resolver,
            use_dns_cache=False,
            keepalive_timeout=keepalive,
            ssl=self._verify,
            socket_factory=_socket_factory,
        )
        self._session = aiohttp.ClientSession(
            connector=self._connector,
            auto_decompress=False,  # the WARC keeps the body as received
            timeout=aiohttp.ClientTimeout(total=None),
            cookie_jar=aiohttp.DummyCookieJar(),
            trust_env=False,  # HTTP(S)_PROXY and NO_PROXY: see _proxy_for
            skip_auto_headers=("User-Agent",),
            read_bufsize=1 << 16,
            # aiohttp's limits (8,190 bytes a header line, 128 headers) refused real
            # responses whole: a WAF's Set-Cookie of 10-20 KB, a CDN's long header
            # list (robots.txt so answered made its host "unavailable"). Browsers take
            # 256 KB of headers; these bound a response's head at 64 KiB a line.
            max_line_size=_MAX_HEADER_LINE,
            max_field_size=_MAX_HEADER_LINE,
            max_headers=_MAX_HEADERS,
        )
        # aiohttp silently resends an idempotent request once when the connection drops
        # before the response: a second request inside the host's gap. The scheduler
        # decides about retries, so turn it off (a private switch; checked by a test).
        if hasattr(self._session, "_retry_connection"):
            self._session._retry_connection = False
        self._freeze = FreezeWatch()  # a pause of the process is no server's slowness

    async def close(self) -> None:
        self._freeze.stop()
        await self._session.close()

    async def fetch(self, request: FetchRequest) -> FetchResult:
        import yarl

        url = yarl.URL(request.url, encoded=True)
        self._freeze.start()
        self._pin(url, request.address)
        if url.scheme != "https" or self._insecure is None:
            return await self._attempt(request, url, None)
        origin = f"{url.host}:{url.port}"
        known = self._unverified.get(origin)
        if known is not None:
            result = await self._attempt(request, url, self._insecure)
            result.tls_unverified = known
            return result
        result = await self._attempt(request, url, None)
        if result.status is not None or result.error_code not in _INSECURE_RETRY:
            return result
        code = result.error_code
        if len(self._unverified) >= _MAX_UNVERIFIED:
            self._unverified.clear()
        self._unverified[origin] = code
        retry = await self._attempt(request, url, self._insecure)
        retry.started = result.started
        retry.elapsed += result.elapsed  # the host's gap counts both handshakes
        retry.tls_unverified = code
        return retry

    def _pin(self, url: Any, address: str) -> None:
        # By the name aiohttp resolves, raw_host: the ASCII (punycode) form. yarl's
        # host is the Unicode one (bücher.test), which no lookup asked for: an IDN
        # host's pin was never found and its robots.txt never fetched.
        if url.raw_host:
            pins = self._resolver.pins
            if len(pins) >= _MAX_PINS:  # a long run: forget the oldest half
                for name in list(pins)[: _MAX_PINS // 2]:
                    if name not in self._resolver.proxies:
                        del pins[name]
            name = url.raw_host.lower().rstrip(".")
            pins.pop(name, None)  # re-insert: the dict's order is least recently used first
            pins[name] = address

    def _proxy_for(self, url: Any) -> Any:
        """The proxy for ``url`` (--proxy, or with --trust-env the environment's, unless
        NO_PROXY names the host), or None."""
        if self._proxy is not None or not self._env_proxies:
            return self._proxy
        proxy = self._env_proxies.get(url.scheme)
        if proxy is None:
            return None
        host = url.raw_host or ""
        bypass = self._bypass.get(host)
        if bypass is None:
            bypass = bool(proxy_bypass(host))
            if len(self._bypass) >= _MAX_PINS:
                self._bypass.clear()
            self._bypass[host] = bypass
        return None if bypass else proxy

    async def _attempt(
        self, request: FetchRequest, url: Any, ssl_context: ssl.SSLContext | None
    ) -> FetchResult:
        """One GET (``ssl_context``: None is the verifying one), sent again at once on a
        new connection when the kept-alive one it went on turns out closed by the server
        before any byte of an answer. That is a server closing an idle connection (its
        keep-alive timeout: gunicorn's is 2 s) as the request was sent, which the server
        never read; browsers and curl resend it (RFC 9112 9.3.1). Not resent, such a page
        was an error record, and in a crawl waited an hour's backoff. A new connection
        that fails so is not resent: that server read the request and dropped it."""
        result, stale = await self._send(request, url, ssl_context)
        if not stale:
            return result
        left = max(1.0, request.timeout - result.elapsed)
        again, _ = await self._send(replace(request, timeout=left), url, ssl_context)
        again.started = result.started
        again.elapsed += result.elapsed
        return again

    async def _send(
        self, request: FetchRequest, url: Any, ssl_context: ssl.SSLContext | None
    ) -> tuple[FetchResult, bool]:
        """One GET on one connection, and whether it failed as a stale connection does
        (see :meth:`_attempt`)."""
        aiohttp = self._aiohttp
        stale = False
        REUSED.set(False)  # set when a connection is made ready for this request
        ON_SENT.set(request.on_sent)
        proxy = self._proxy_for(url)
        target, headers, server_hostname = url, request.headers, None
        if proxy is not None and (url.raw_host or "").strip("[]") != request.address:
            # The proxy gets the checked address, the name goes in Host and SNI: the
            # proxy's own resolver may answer differently (invariant 7).
            target = url.with_host(request.address)
            headers = {"Host": url.host_port_subcomponent, **request.headers}
            server_hostname = url.raw_host if url.scheme == "https" else None
        result = FetchResult(started=time.time(), address=request.address)
        t0 = time.perf_counter()
        watch: list[socket.socket] = []
        token = _connecting.set(watch if url.scheme == "https" else None)
        resp = None
        protocol: Any = None
        chunks: list[bytes] = []
        counter: _DecodedCounter | None = None
        frozen_before = self._freeze.frozen
        deadline: asyncio.Timeout | None = None
        try:
            async with asyncio.timeout(request.timeout) as deadline:
                self._freeze.watch(deadline)
                resp = await self._session.get(
                    target,
                    headers=headers,
                    allow_redirects=False,
                    max_redirects=0,
                    ssl=ssl_context or self._verify,
                    proxy=proxy,
                    server_hostname=server_hostname,
                )
                if resp.status == 407 and proxy is not None and url.scheme == "http":
                    # A 407 is a proxy's (RFC 9110 15.5.8): not the site's page. Not
                    # through a CONNECT tunnel (https), where the proxy relays bytes it
                    # cannot read and only the site (or its own gateway) answers: one
                    # such site stopped every crawl behind a proxy.
                    raise _ProxyAnswered(f"answered {resp.status} {resp.reason or ''}".strip())
                result.status = resp.status
                result.headers = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                ]
                result.response_head = _response_head(resp)
                result.request_head = _request_head(resp, url)
                # (the connection is let go when the body ends: asked for it now)
                protocol = resp.connection.protocol if resp.connection is not None else None
                counter = _DecodedCounter(
                    resp.headers.get("Content-Encoding", ""), request.max_decoded
                )
                size = 0
                while True:
                    chunk = await resp.content.read(1 << 16)
                    if not chunk:
                        break
                    room = request.max_body - size
                    if len(chunk) > room:
                        chunks.append(chunk[:room])
                        size += room
                        result.truncated = "length"
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if not counter.feed(chunk):
                        # Decoded past --max-decoded: the rest is not read. Stored whole
                        # when nothing was left (a small bomb of 3 KB), it is no
                        # truncated record (WARC-Truncated said so of every such one).
                        if not _body_complete(resp, size):
                            result.truncated = "length"
                        break
                if result.truncated is None and getattr(protocol, "reset_in_body", False):
                    result.truncated = "disconnect"
                    result.error = _RESET_IN_BODY
                body_error = getattr(protocol, "body_error", None)
                if result.truncated is None and body_error is not None:
                    result.truncated = "disconnect"
                    result.error = _malformed(body_error)
        except _ProxyAnswered as exc:  # a plain http request's 407 (above)
            _proxy_failed(result, PROXY_REFUSED, f"the proxy {_shown_proxy(proxy)} {exc}")
        except aiohttp.ClientHttpProxyError as exc:  # CONNECT answered with no 2xx
            answer = f"{exc.status} {_one_line(str(exc.message))}".strip()
            why = f"the proxy {_shown_proxy(proxy)} answered CONNECT with {answer}"
            # A 407 refuses every request; a 502, 503, 504 or 403 is most often about
            # this target (the proxy could not reach or may not reach the site), so it
            # is the site's failure as the proxy saw it, and the run goes on.
            _proxy_failed(result, PROXY_REFUSED if exc.status == 407 else PROXY_CONNECT, why)
        except aiohttp.ClientProxyConnectionError as exc:  # before ClientConnectorError
            why = _describe(exc.os_error)
            shown = _shown_proxy(proxy)
            _proxy_failed(result, PROXY_UNREACHABLE, f"cannot connect to the proxy {shown}: {why}")
        except TimeoutError:
            result.error = f"timeout after {request.timeout:g}s"
            if result.status is not None:
                result.truncated = "time"
            elif url.scheme == "https" and _tcp_connected(watch):
                result.error_code = "tls-handshake-timeout"
                result.error = f"tls-handshake-timeout: no TLS handshake in {request.timeout:g}s"
        except aiohttp.ClientConnectorCertificateError as exc:
            cert_error = exc.certificate_error
            result.error_code = classify_certificate_error(cert_error)
            detail = getattr(cert_error, "verify_message", None) or str(cert_error)
            result.error = f"{result.error_code}: {detail}"[:300]
        except aiohttp.ClientConnectorSSLError as exc:
            result.error_code = "tls-protocol"
            result.error = f"tls-protocol: {_describe(exc.os_error)}"[:300]
        except aiohttp.ClientConnectorError as exc:
            result.error = _describe_connect(exc)
            if url.scheme == "https" and isinstance(exc.os_error, ConnectionResetError):
                # A reset can only follow an established TCP connection, so the server
                # dropped our ClientHello (how many servers answer an unwanted version).
                result.error_code = "tls-protocol"
                result.error = "tls-protocol: the server reset the connection in the handshake"
        except self._malformed as exc:
            # a response aiohttp cannot parse, its head or (Python parser) its body
            result.error = _malformed(exc)
            if result.status is not None:
                result.truncated = "disconnect"
        except (aiohttp.ClientError, OSError, ValueError) as exc:
            result.error = _describe(exc)
            if result.status is not None:
                result.truncated = "disconnect"
            else:
                stale = REUSED.get() and isinstance(exc, self._closed_under_us)
        finally:
            self._freeze.unwatch(deadline)
            _connecting.reset(token)
            for sock in watch:
                sock.close()
            if resp is not None:
                if result.truncated or result.error:
                    resp.close()  # do not drain a capped or broken body into the pool
                else:
                    resp.release()
        # what arrived is kept, also when the body was cut by a cap, a timeout or a reset
        result.body = b"".join(chunks)
        if result.status is not None:
            _undo_transfer_codings(result, request.max_decoded)
        result.decoded_bytes = counter.total if counter is not None else 0
        # (less the time the process did not run: no measure of the server)
        frozen = self._freeze.frozen - frozen_before
        result.elapsed = max(0.0, time.perf_counter() - t0 - frozen)
        return result, stale


#: ``error_code`` of a request the proxy failed (never reached the site): the proxy
#: asked for credentials (407), or could not be reached. Every request would fail so.
PROXY_REFUSED = "proxy-refused"
PROXY_UNREACHABLE = "proxy-unreachable"
PROXY_FAILURES = frozenset({PROXY_REFUSED, PROXY_UNREACHABLE})
#: ``error_code`` of a CONNECT the proxy answered with another status (502: it could
#: not reach the site): a failure of that site, as a refused connection would be.
PROXY_CONNECT = "proxy-connect"


class _ProxyAnswered(Exception):
    """The proxy, not the site, answered a plain http request (407)."""


def _proxy_failed(result: FetchResult, code: str, why: str) -> None:
    result.error_code = code
    result.error = f"{code}: {why}"[:300]


def _shown_proxy(proxy: Any) -> str:
    """The proxy's URL as an error shows it (its password masked)."""
    return mask_url(str(proxy))


def _malformed(exc: Any) -> str:
    """A response aiohttp could not parse, in words (``exc`` is an aiohttp
    ClientResponseError or HttpProcessingError; their text says "400", the status
    aiohttp would answer with as a server: no status of this response). A subclass
    names itself: "TransferEncodingError: zz" says more than "zz"."""
    detail = _one_line(str(exc.message))
    if type(exc).__name__ not in ("ClientResponseError", "HttpProcessingError", "BadHttpMessage"):
        detail = f"{type(exc).__name__}: {detail}"
    return f"malformed response: {detail}"[:300]


def _describe(exc: BaseException) -> str:
    text = _one_line(str(exc)) or type(exc).__name__
    return mask_url(f"{type(exc).__name__}: {text}")[:300]  # a proxy URL's password


def _one_line(text: str) -> str:
    """An error text on one line: its lines joined, a line that only points (``^``)
    left out (aiohttp's parse errors draw the bad byte under the input)."""
    lines = (line.strip() for line in text.splitlines())
    return " ".join(line for line in lines if line and line.strip("^ ") != "")


def _describe_connect(exc: Any) -> str:  # an aiohttp.ClientConnectorError
    """A failed connection in words: aiohttp's own text names its connection key, whose
    ``ssl:`` part is the repr of an SSL context (an address in this process's memory)
    for plain http too."""
    reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
    return mask_url(f"{type(exc).__name__}: cannot connect to {exc.host}:{exc.port}: {reason}")[
        :300
    ]


def _response_head(resp: Any) -> bytes:
    version = f"HTTP/{resp.version.major}.{resp.version.minor}" if resp.version else "HTTP/1.1"
    # aiohttp decodes the reason phrase as UTF-8 with surrogateescape: encoded back so,
    # it is the bytes the server sent (obs-text, RFC 9112 4: "200 Trouv\xe9" and UTF-8
    # phrases are both seen); as latin-1 it raised and the response was lost
    reason = (resp.reason or "").encode("utf-8", "surrogateescape")
    lines = [f"{version} {resp.status} ".encode("ascii") + reason]
    lines[0] = lines[0].rstrip()
    lines.extend(k + b": " + v for k, v in resp.raw_headers)
    return b"\r\n".join(lines) + b"\r\n\r\n"


def _request_head(resp: Any, url: Any) -> bytes:
    info = resp.request_info
    target = url.raw_path_qs or "/"
    lines = [f"GET {target} HTTP/1.1"]
    # Proxy-Authorization went to the proxy, not the site: it is not kept
    lines.extend(f"{k}: {v}" for k, v in info.headers.items() if k.lower() != "proxy-authorization")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1", "replace")
