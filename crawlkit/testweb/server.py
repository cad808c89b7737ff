"""The test web server: binds every host's loopback address, routes by Host, logs.

``TestWebServer`` is usable in-process (``async with TestWebServer(...) as web``, or
``await start()`` / ``await stop()``) and by ``crawlkit testweb``. It writes, under its
directory: ``hosts`` (/etc/hosts format), ``seeds.txt`` (one URL a line),
``manifest.json`` (every host, its address, kind, robots rules and expected pages;
see ``manifest.py``) and ``requests.ndjson`` (the request log, one line a request,
flushed every event-loop turn and on stop). With ``tls=True`` every host is also
served over HTTPS on a second port (``tls_port``), ``ca.pem`` and ``tls/`` are written
too, and every absolute link, seed and manifest URL is https (see ``tls.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import os
import resource
import sys
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from crawlkit.errors import CrawlkitError
from crawlkit.streams import atomic_write_bytes, atomic_write_json
from crawlkit.testweb import dns as dnsweb
from crawlkit.testweb import files, pages, specials
from crawlkit.testweb import tls as tlsweb
from crawlkit.testweb.graph import (
    IPV6_ADDR,
    PRIVATE_NET,
    PUBLIC_NET,
    Host,
    Web,
    WebConfig,
    build_web,
)
from crawlkit.testweb.http import HttpProtocol, RequestLog
from crawlkit.testweb.manifest import build_manifest
from crawlkit.testweb.model import Request, Response, not_found, stable_hash

# Open files a web keeps beside its listening sockets, at least: the request log, the
# manifest, a crawler's connections at its usual concurrency.
OPEN_FILES_SPARE = 300

ORDINARY_ROBOTS = pages.ORDINARY_ROBOTS


class _Page:
    __slots__ = ("body", "etag", "gz", "last_modified")

    def __init__(self, body: bytes, etag: str, last_modified: float):
        self.body = body
        self.etag = etag
        self.last_modified = last_modified
        self.gz: bytes | None = None


class TestWebServer:
    """A running synthetic web (see module docstring for the files it writes)."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        config: WebConfig,
        directory: str | os.PathLike[str],
        *,
        port: int = 0,
        hosts_file: str | os.PathLike[str] | None = None,
        seeds_file: str | os.PathLike[str] | None = None,
        log_file: str | os.PathLike[str] | None = None,
        manifest_file: str | os.PathLike[str] | None = None,
        keepalive_timeout: float = 30.0,
        cache_bytes: int = 256 * 1024 * 1024,
        tls: bool = False,
        tls_port: int = 0,
        dns_port: int | None = None,
        warm: bool = False,
    ):
        self.config = config
        self.dir = Path(directory)
        self.requested_port = port
        self.hosts_file = Path(hosts_file) if hosts_file else self.dir / "hosts"
        self.seeds_file = Path(seeds_file) if seeds_file else self.dir / "seeds.txt"
        self.log_file = Path(log_file) if log_file else self.dir / "requests.ndjson"
        self.manifest_file = Path(manifest_file) if manifest_file else self.dir / "manifest.json"
        self.keepalive_timeout = keepalive_timeout
        self.cache_bytes = cache_bytes
        self.warm = warm
        self.web: Web = build_web(config)
        self._by_addr: dict[str, Host] = {}
        for h in self.web.hosts:
            self._by_addr.setdefault(h.addr, h)
        self.port = 0
        self.use_tls = tls
        self.requested_tls_port = tls_port
        self.tls_port = 0
        self.tls: tlsweb.TlsSite | None = None
        self._stalled: set[tlsweb.StallProtocol] = set()
        self.dns_port = dns_port
        self.dns: dnsweb.DnsServer | None = None
        self.conns: set[HttpProtocol] = set()
        self.log: RequestLog = None  # type: ignore[assignment]
        self.info: dict[str, Any] = {}
        self.manifest: dict[str, Any] = {}
        self._servers: list[asyncio.Server] = []
        self._conn_ids = 0
        self._cache: OrderedDict[tuple[int, int], _Page] = OrderedDict()
        self._cached = 0
        self._state: dict[str, dict[str, float]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._flushes = 0  # SIGUSR1 flushes of the request log (flush_mark)
        self.started_at = 0.0

    # -- HostContext -------------------------------------------------------------
    def url(self, host: str, path: str, scheme: str | None = None) -> str:
        """An absolute URL on this web: https on the TLS port when serving TLS."""
        scheme = scheme or ("https" if self.use_tls else "http")
        port = self.tls_port if scheme == "https" else self.port
        return f"{scheme}://{host}:{port}{path}"

    def now(self) -> float:
        return time.time()

    def state(self, host: str) -> dict[str, float]:
        return self._state.setdefault(host, {})

    # -- Dispatcher --------------------------------------------------------------
    def new_conn_id(self) -> int:
        self._conn_ids += 1
        return self._conn_ids

    def respond(self, req: Request) -> tuple[Response, str | None]:
        name = req.host
        if self.dns is not None:
            name = dnsweb.served_as(name) or name
        host = self.web.by_name.get(name)
        if host is None and name[:1] in "[0123456789":
            host = self._by_addr.get(name.strip("[]"))  # a URL with an IP literal
        if host is None:
            return not_found(), None
        if req.addr != host.addr:
            # The resolver sent the client to another address than the hosts file
            # says: a real virtual host would not be there either.
            return Response(421, b"misdirected request\n", content_type="text/plain"), host.kind
        if host.kind == "ordinary":
            return self._ordinary(host, req), "ordinary"
        if host.kind == "files" and self.web.config.files is not None:
            return files.respond(Path(self.web.config.files), req), "files"
        return specials.handle(self, self.web, host, req), host.kind

    # -- ordinary pages ----------------------------------------------------------
    def page(self, host: Host, p: int) -> _Page:
        key = (host.index, p)
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            return entry
        if self.use_tls:
            body = pages.render_page(self.web, host, p, self.tls_port, "https")
        else:
            body = pages.render_page(self.web, host, p, self.port)
        etag = f'"{stable_hash(body):016x}"'
        entry = _Page(body, etag, pages.last_modified(self.web, host, p))
        self._cache[key] = entry
        self._cached += len(body)
        while self._cached > self.cache_bytes and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old.body) + len(old.gz or b"")
        return entry

    def warm_pages(self) -> int:
        """Render every ordinary page and its gzip form now, into a cache whose bound
        is lifted, before the server says it is ready; returns the pages rendered.

        A benchmark runs the crawler and this server on one machine: rendered on
        demand, a page costs the server ~1.5 ms of CPU (filler text, gzip) taken
        from the crawler being measured, and a crawl fetches each page once, so the
        cache never helps. Warmed, a request costs parsing, the log and a write.
        """
        self.cache_bytes = sys.maxsize  # every page stays: the web is the bench's size
        rendered = 0
        for host in self.web.hosts:
            if host.kind != "ordinary":
                continue
            for p in range(host.pages):
                entry = self.page(host, p)
                if entry.gz is None:
                    entry.gz = gzip.compress(entry.body, compresslevel=6, mtime=0)
                    self._cached += len(entry.gz)
                rendered += 1
        return rendered

    def _ordinary(self, host: Host, req: Request) -> Response:
        if req.route == "/robots.txt":
            return pages.robots_response(self.web, host)
        p = pages.page_number(req.route, req.query, host.pages)
        if p is None:
            return not_found()
        entry = self.page(host, p)
        headers = [("Vary", "Accept-Encoding"), ("Cache-Control", "max-age=3600")]
        if "gzip" in req.headers.get("accept-encoding", ""):
            if entry.gz is None:
                entry.gz = gzip.compress(entry.body, compresslevel=6, mtime=0)
                self._cached += len(entry.gz)
            headers.append(("Content-Encoding", "gzip"))
            return Response(
                200,
                entry.gz,
                headers=headers,
                etag=entry.etag[:-1] + '-gz"',
                last_modified=entry.last_modified,
            )
        return Response(
            200, entry.body, headers=headers, etag=entry.etag, last_modified=entry.last_modified
        )

    # -- lifecycle ---------------------------------------------------------------
    async def _listen(
        self, loop: asyncio.AbstractEventLoop, requested: int, secure: bool
    ) -> tuple[list[asyncio.Server], int]:
        """Listen on every host address at one port (``requested``, or a free one)."""
        addrs = self._addresses()
        attempts = 1 if requested else 30
        last: OSError | None = None
        for _ in range(attempts):
            port = requested
            servers: list[asyncio.Server] = []
            try:
                for addr in addrs:
                    srv = await self._listen_one(loop, addr, port, secure)
                    servers.append(srv)
                    if port == 0:
                        port = srv.sockets[0].getsockname()[1]
            except OSError as exc:
                last = exc
                for srv in servers:
                    srv.close()
                if exc.errno != errno.EADDRINUSE:
                    break
                continue
            return servers, port
        flag = "--tls-port" if secure else "--port"
        raise CrawlkitError(f"cannot listen on {flag} {requested or 'any'}: {last}")

    def _addresses(self) -> list[str]:
        """The addresses the web listens on: every host's, and with the DNS server the
        one a rebound client would land on."""
        addrs = sorted({h.addr for h in self.web.hosts})
        if self.dns_port is not None:
            addrs.append(dnsweb.REBIND_DISALLOWED)
        return addrs

    async def _listen_one(
        self, loop: asyncio.AbstractEventLoop, addr: str, port: int, secure: bool
    ) -> asyncio.Server:
        if not secure:
            return await loop.create_server(
                lambda: HttpProtocol(self), host=addr, port=port, backlog=1024
            )
        assert self.tls is not None
        kinds = {h.kind for h in self.web.hosts if h.addr == addr}
        if "tls-stall" in kinds:
            return await loop.create_server(
                lambda: tlsweb.StallProtocol(self._stalled),  # type: ignore[arg-type,return-value]
                host=addr,
                port=port,
                backlog=1024,
            )
        ctx = self.tls.default
        if "tls-1-0" in kinds:
            ctx = self.tls.legacy_context(next(h.name for h in self.web.hosts if h.addr == addr))
        return await loop.create_server(
            lambda: HttpProtocol(self),
            host=addr,
            port=port,
            backlog=1024,
            ssl=ctx,
            ssl_handshake_timeout=10.0,
        )

    async def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._check_open_files()
        self._servers, self.port = await self._listen(loop, self.requested_port, False)
        if self.use_tls:
            self.tls = tlsweb.TlsSite(self.dir, self._kind_of)
            try:
                tls_servers, self.tls_port = await self._listen(loop, self.requested_tls_port, True)
            except CrawlkitError:
                for srv in self._servers:
                    srv.close()
                raise
            self._servers += tls_servers

    def _check_open_files(self) -> None:
        """Refuse a web whose listening sockets alone pass the open-file limit, in
        one line that says so (it failed later as "requests.ndjson: too many open
        files", with every socket bound and nothing said of why)."""
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        addresses = len(self._addresses())
        sockets = addresses * (2 if self.use_tls else 1)
        if soft == resource.RLIM_INFINITY or sockets + OPEN_FILES_SPARE <= soft:
            return
        hard_text = "unlimited" if hard == resource.RLIM_INFINITY else f"{hard:,}"
        raise CrawlkitError(
            f"{addresses:,} host addresses need {sockets:,} listening sockets, and the "
            f"open-file limit is {soft:,} (hard limit {hard_text}; {OPEN_FILES_SPARE} kept "
            "for the log and connections): use fewer --hosts or raise the limit (ulimit -n)"
        )

    def _kind_of(self, name: str) -> str | None:
        host = self.web.by_name.get(name)
        return host.kind if host is not None else None

    async def start(self) -> dict[str, Any]:
        """Bind, write the hosts/seeds/manifest files, and return the ready record."""
        loop = asyncio.get_running_loop()
        self.dir.mkdir(parents=True, exist_ok=True)
        await self._bind(loop)
        self.started_at = time.time()
        self.log_file.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_file, "wb"):
            pass  # a fresh log for every run
        self.log = RequestLog(str(self.log_file), loop)
        if self.dns_port is not None:
            self.dns = dnsweb.DnsServer(self.web, self.dir / "dns.ndjson")
            await self.dns.start(self.dns_port)
        self.manifest = build_manifest(
            self.web, self.port, self.dir, self.tls_port if self.use_tls else None
        )
        atomic_write_json(self.manifest_file, self.manifest)
        lines = ["# crawlkit testweb: /etc/hosts format; pass with --hosts-file"]
        lines += [f"{h.addr} {h.name}" for h in self.web.hosts]
        atomic_write_bytes(self.hosts_file, ("\n".join(lines) + "\n").encode())
        seeds = self.manifest["seeds"]
        atomic_write_bytes(self.seeds_file, ("\n".join(seeds) + "\n").encode())
        if self.warm:
            self.warm_pages()
        self._sweeper = loop.create_task(self._sweep())
        self.info = {
            "ready": True,
            "seeds": str(self.seeds_file),
            "hosts_file": str(self.hosts_file),
            "hosts": len(self.web.hosts),
            "reachable_pages": self.manifest["reachable_pages"],
            "log": str(self.log_file),
            "port": self.port,
            "manifest": str(self.manifest_file),
            "allowed_pages": self.manifest["allowed_pages"],
            "allow_net": PUBLIC_NET,
            "private_net": PRIVATE_NET,
            "addresses": len({h.addr for h in self.web.hosts}),
            **({"allow_net_v6": f"{IPV6_ADDR}/128"} if IPV6_ADDR in self._by_addr else {}),
            "pid": os.getpid(),
        }
        if self.dns is not None:
            self.info.update(
                dns=f"127.0.0.1:{self.dns.port}",
                dns_log=str(self.dns.log_path),
                dns_names=dnsweb.DNS_NAMES,
            )
        if self.tls is not None:
            self.info.update(
                tls_port=self.tls_port,
                ca_file=str(self.tls.ca_file),
                tls_legacy=self.tls.served_legacy,
            )
        return self.info

    async def _sweep(self) -> None:
        """Close keep-alive connections idle longer than the timeout."""
        while True:
            await asyncio.sleep(min(5.0, self.keepalive_timeout))
            cutoff = time.monotonic() - self.keepalive_timeout
            for conn in list(self.conns):
                if not conn.busy and conn.last_active < cutoff:
                    conn._close()

    async def flush_mark(self) -> None:
        """Write every request answered so far to the log, then count one more in
        ``DIR/log-flushed`` (a number, replaced atomically).

        A client that has read a whole response and then sends SIGUSR1 finds its
        request in the log once the number goes up: a response is logged right after
        its last bytes are handed to the kernel, in the same or the next turn of the
        event loop, so three turns after the signal every such response is logged.
        """
        for _ in range(3):
            await asyncio.sleep(0)
        if self.log is not None:
            self.log.flush()
        self._flushes += 1
        atomic_write_bytes(self.dir / "log-flushed", f"{self._flushes}\n".encode())

    async def stop(self) -> None:
        """Stop listening, drop every connection, flush and close the log."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for srv in self._servers:
            srv.close()
        if self.dns is not None:
            self.dns.close()
        for conn in list(self.conns):
            conn.transport.abort()
        for stalled in list(self._stalled):
            stalled.transport.abort()
        tasks = [c.task for c in list(self.conns) if c.task is not None]
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        for srv in self._servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(srv.wait_closed(), 1.0)
        self._servers = []
        await asyncio.sleep(0)
        if self.log is not None:
            self.log.close()

    async def __aenter__(self) -> TestWebServer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
