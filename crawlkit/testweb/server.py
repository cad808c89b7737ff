"""The test web server: binds every host's loopback address, routes by Host, logs.

``TestWebServer`` is usable in-process (``async with TestWebServer(...) as web``, or
``await start()`` / ``await stop()``) and by ``crawlkit testweb``. It writes, under its
directory: ``hosts`` (/etc/hosts format), ``seeds.txt`` (one URL a line),
``manifest.json`` (every host, its address, kind, robots rules and expected pages;
see ``manifest.py``) and ``requests.ndjson`` (the request log, one line a request,
flushed every event-loop turn and on stop).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import gzip
import os
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from crawlkit.errors import CrawlkitError
from crawlkit.io import atomic_write_bytes, atomic_write_json
from crawlkit.testweb import pages, specials
from crawlkit.testweb.graph import PRIVATE_NET, PUBLIC_NET, Host, Web, WebConfig, build_web
from crawlkit.testweb.http import HttpProtocol, RequestLog
from crawlkit.testweb.manifest import build_manifest
from crawlkit.testweb.model import Request, Response, not_found, stable_hash

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
        self.web: Web = build_web(config)
        self.port = 0
        self.conns: set[HttpProtocol] = set()
        self.log: RequestLog = None  # type: ignore[assignment]
        self.info: dict[str, Any] = {}
        self.manifest: dict[str, Any] = {}
        self._servers: list[asyncio.AbstractServer] = []
        self._conn_ids = 0
        self._cache: OrderedDict[tuple[int, int], _Page] = OrderedDict()
        self._cached = 0
        self._state: dict[str, dict[str, object]] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self.started_at = 0.0

    # -- HostContext -------------------------------------------------------------
    def url(self, host: str, path: str) -> str:
        return f"http://{host}:{self.port}{path}"

    def now(self) -> float:
        return time.time()

    def state(self, host: str) -> dict[str, object]:
        return self._state.setdefault(host, {})

    # -- Dispatcher --------------------------------------------------------------
    def new_conn_id(self) -> int:
        self._conn_ids += 1
        return self._conn_ids

    def respond(self, req: Request) -> tuple[Response, str | None]:
        host = self.web.by_name.get(req.host)
        if host is None:
            return not_found(), None
        if req.addr != host.addr:
            # The resolver sent the client to another address than the hosts file
            # says: a real virtual host would not be there either.
            return Response(421, b"misdirected request\n", content_type="text/plain"), host.kind
        if host.kind == "ordinary":
            return self._ordinary(host, req), "ordinary"
        return specials.handle(self, self.web, host, req), host.kind

    # -- ordinary pages ----------------------------------------------------------
    def page(self, host: Host, p: int) -> _Page:
        key = (host.index, p)
        entry = self._cache.get(key)
        if entry is not None:
            self._cache.move_to_end(key)
            return entry
        body = pages.render_page(self.web, host, p, self.port)
        etag = f'"{stable_hash(body):016x}"'
        entry = _Page(body, etag, pages.last_modified(self.web, host, p))
        self._cache[key] = entry
        self._cached += len(body)
        while self._cached > self.cache_bytes and len(self._cache) > 1:
            _, old = self._cache.popitem(last=False)
            self._cached -= len(old.body) + len(old.gz or b"")
        return entry

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
            return Response(200, entry.gz, headers=headers, etag=entry.etag[:-1] + '-gz"',
                            last_modified=entry.last_modified)  # fmt: skip
        return Response(200, entry.body, headers=headers, etag=entry.etag,
                        last_modified=entry.last_modified)  # fmt: skip

    # -- lifecycle ---------------------------------------------------------------
    async def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        addrs = sorted({h.addr for h in self.web.hosts})
        attempts = 1 if self.requested_port else 30
        last: OSError | None = None
        for _ in range(attempts):
            port = self.requested_port
            servers: list[asyncio.AbstractServer] = []
            try:
                for addr in addrs:
                    srv = await loop.create_server(
                        lambda: HttpProtocol(self), host=addr, port=port, backlog=1024
                    )
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
            self._servers = servers
            self.port = port
            return
        raise CrawlkitError(f"cannot listen on port {self.requested_port or 'any'}: {last}")

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
        self.manifest = build_manifest(self.web, self.port, self.dir)
        atomic_write_json(self.manifest_file, self.manifest)
        lines = ["# crawlkit testweb: /etc/hosts format; pass with --hosts-file"]
        lines += [f"{h.addr} {h.name}" for h in self.web.hosts]
        atomic_write_bytes(self.hosts_file, ("\n".join(lines) + "\n").encode())
        seeds = self.manifest["seeds"]
        atomic_write_bytes(self.seeds_file, ("\n".join(seeds) + "\n").encode())
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
            "pid": os.getpid(),
        }
        return self.info

    async def _sweep(self) -> None:
        """Close keep-alive connections idle longer than the timeout."""
        while True:
            await asyncio.sleep(min(5.0, self.keepalive_timeout))
            cutoff = time.monotonic() - self.keepalive_timeout
            for conn in list(self.conns):
                if not conn.busy and conn.last_active < cutoff:
                    conn._close()

    async def stop(self) -> None:
        """Stop listening, drop every connection, flush and close the log."""
        if self._sweeper is not None:
            self._sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sweeper
            self._sweeper = None
        for srv in self._servers:
            srv.close()
        for conn in list(self.conns):
            conn.transport.abort()
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
