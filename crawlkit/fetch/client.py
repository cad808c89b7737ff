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
import socket
import ssl
import time
from dataclasses import replace
from typing import Any
from urllib.request import proxy_bypass  # aiohttp imports urllib.request anyway

from crawlkit.fetch.codings import DecodedCounter, transfer_codings, undo_transfer_codings
from crawlkit.fetch.connector import (
    CONNECTING,
    MAX_PINS,
    PinnedResolver,
    capped_connector,
    connection_budget,
    env_proxies,
    socket_factory,
)
from crawlkit.fetch.exchange import (
    PROXY_CONNECT,
    PROXY_FAILURES,
    PROXY_REFUSED,
    PROXY_UNREACHABLE,
    FetchRequest,
    FetchResult,
    HttpClient,
)
from crawlkit.fetch.failures import (
    RESET_IN_BODY,
    Failures,
    ProxyAnswered,
    UnaskedUpgrade,
    malformed,
)
from crawlkit.fetch.freeze import FreezeWatch
from crawlkit.fetch.protocol import ON_SENT, REUSED
from crawlkit.fetch.tls import insecure_context, verifying_context

# FetchRequest, FetchResult, HttpClient, the PROXY_* codes, connection_budget and
# transfer_codings are re-exported: they were defined here, and callers import them so.
__all__ = [
    "PROXY_CONNECT",
    "PROXY_FAILURES",
    "PROXY_REFUSED",
    "PROXY_UNREACHABLE",
    "AiohttpClient",
    "FetchRequest",
    "FetchResult",
    "HttpClient",
    "connection_budget",
    "transfer_codings",
]

_MAX_UNVERIFIED = 100_000  # origins remembered as failing a TLS check (--insecure)
_MAX_HEADER_LINE = 1 << 16  # bytes of a status or header line (see AiohttpClient)
_MAX_HEADERS = 512
# Failures --insecure fetches anyway (a stalled handshake is not a failed check).
_INSECURE_RETRY = ("tls-expired", "tls-hostname", "tls-untrusted", "tls-protocol")


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

        self._failures = Failures(aiohttp)  # what a request's exception means
        self._resolver = PinnedResolver()
        self._verify: ssl.SSLContext = verifying_context(ca_file)
        self._insecure: ssl.SSLContext | None = insecure_context() if insecure else None
        self._unverified: dict[str, str] = {}  # origin -> the check it failed
        # A proxy is an address the operator named: its name is resolved here, once,
        # and pinned; targets are still checked by the network policy before a fetch.
        self._proxy = proxy
        for url in [proxy] if proxy else env_proxies() if trust_env else []:
            self._resolver.pin_proxy(url)
        # --trust-env: the proxy per scheme, chosen here by the URL's *name* (NO_PROXY
        # names hosts), since the session is given the address (see _attempt).
        self.env_proxies: dict[str, Any] = {}
        if trust_env and not proxy:
            from aiohttp.helpers import proxies_from_env

            for scheme, info in proxies_from_env().items():
                env_proxy = info.proxy
                if info.proxy_auth is not None:
                    env_proxy = env_proxy.with_user(info.proxy_auth.login).with_password(
                        info.proxy_auth.password
                    )
                self.env_proxies[scheme] = env_proxy
        self._bypass: dict[str, bool] = {}  # host -> NO_PROXY says so
        # In use and idle connections share connection_budget(), half each, so the
        # pool never takes the process past its open-file limit.
        budget = connection_budget()
        self._connector = capped_connector(
            aiohttp,
            budget - budget // 2,
            limit=budget // 2,
            limit_per_host=1,  # belt and braces: the scheduler already serializes a host
            resolver=self._resolver,
            use_dns_cache=False,
            keepalive_timeout=keepalive,
            ssl=self._verify,
            socket_factory=socket_factory,
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
            if len(pins) >= MAX_PINS:  # a long run: forget the oldest half
                for name in list(pins)[: MAX_PINS // 2]:
                    if name not in self._resolver.proxies:
                        del pins[name]
            name = url.raw_host.lower().rstrip(".")
            pins.pop(name, None)  # re-insert: the dict's order is least recently used first
            pins[name] = address

    def _proxy_for(self, url: Any) -> Any:
        """The proxy for ``url`` (--proxy, or with --trust-env the environment's, unless
        NO_PROXY names the host), or None."""
        if self._proxy is not None or not self.env_proxies:
            return self._proxy
        proxy = self.env_proxies.get(url.scheme)
        if proxy is None:
            return None
        host = url.raw_host or ""
        bypass = self._bypass.get(host)
        if bypass is None:
            bypass = bool(proxy_bypass(host))
            if len(self._bypass) >= MAX_PINS:
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
        token = CONNECTING.set(watch if url.scheme == "https" else None)
        resp = None
        protocol: Any = None
        chunks: list[bytes] = []
        counter: DecodedCounter | None = None
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
                    raise ProxyAnswered(f"answered {resp.status} {resp.reason or ''}".strip())
                if resp.status == 101:
                    # aiohttp takes a 101 as the final answer (a websocket's); unasked,
                    # it was "fetched 101" and the connection, switched to whatever the
                    # server speaks next, was left to the pool's care
                    upgrade = resp.headers.get("Upgrade")
                    named = f" (Upgrade: {upgrade})" if upgrade else ""
                    raise UnaskedUpgrade(
                        f"101 Switching Protocols to a request that asked for no upgrade{named}"
                    )
                result.status = resp.status
                result.headers = [
                    (k.decode("latin-1"), v.decode("latin-1")) for k, v in resp.raw_headers
                ]
                result.response_head = _response_head(resp)
                result.request_head = _request_head(resp, url)
                # (the connection is let go when the body ends: asked for it now)
                protocol = resp.connection.protocol if resp.connection is not None else None
                counter = DecodedCounter(
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
                    result.error = RESET_IN_BODY
                body_error = getattr(protocol, "body_error", None)
                if result.truncated is None and body_error is not None:
                    result.truncated = "disconnect"
                    result.error = malformed(body_error)
        except self._failures.caught as exc:
            stale = self._failures.record(result, exc, url, proxy, request.timeout, watch)
        finally:
            self._freeze.unwatch(deadline)
            CONNECTING.reset(token)
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
            undo_transfer_codings(result, request.max_decoded)
        result.decoded_bytes = counter.total if counter is not None else 0
        # (less the time the process did not run: no measure of the server)
        frozen = self._freeze.frozen - frozen_before
        result.elapsed = max(0.0, time.perf_counter() - t0 - frozen)
        return result, stale


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
