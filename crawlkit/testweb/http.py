"""A small, fast HTTP/1.1 server protocol for the test web (asyncio, uvloop-friendly).

Why our own protocol: the test web must not be the bottleneck (5,000+ requests/s on
one core), and it must misbehave on purpose (drip bodies, broken chunking, dropped
connections), which general servers make hard.

Contract:

* Keep-alive (HTTP/1.1 default, HTTP/1.0 with ``Connection: keep-alive``), pipelined
  requests answered in order, GET and HEAD (other methods: 405), Host routing done by
  the dispatcher, conditional GET via ``Response.etag`` / ``last_modified``.
* One log record per request, written when the response is fully handed to the
  kernel or the connection died first (``"aborted": true``). ``t_end`` is the moment
  just before the response's last bytes were handed to the kernel: the client cannot
  have them earlier, so a gap the audit measures from ``t_end`` to the next
  ``t_start`` is never shorter than the gap the client kept. (Stamped when the
  buffer drained instead, a busy machine delays the stamp by a scheduler slice and
  a polite crawler shows gaps tens of milliseconds short.) Each record
  names its connection (``conn``, unique per TCP connection) and when that connection
  was accepted (``conn_opened``).
* A connection is idle-closed after ``keepalive_timeout`` seconds.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any, Protocol

import orjson

from crawlkit.testweb.model import REASONS, Request, Response, http_date, parse_http_date

MAX_HEAD = 64 * 1024


class _Lost(Exception):
    """The peer went away while we were writing."""


class Dispatcher(Protocol):
    """What the protocol needs from the server object."""

    conns: set[HttpProtocol]
    log: RequestLog

    def new_conn_id(self) -> int: ...

    def respond(self, req: Request) -> tuple[Response, str | None]: ...


class RequestLog:
    """NDJSON request log; lines are flushed once per event-loop turn, and on close.

    A log whose reader went away (``--log /dev/stdout | head``: a write raises
    BrokenPipeError) takes no more lines and calls ``on_gone`` once; the server stops
    then, as on SIGTERM (:func:`crawlkit.testweb.run.serve`), and :meth:`end` raises
    the error, so the command ends as any other whose reader went away. Before, each
    turn's flush raised again into the event loop: a traceback per turn on stderr,
    the lines heaped up unwritten, and the web served on for its whole --for.
    """

    def __init__(self, path: str, loop: asyncio.AbstractEventLoop):
        self._file = open(path, "ab")  # noqa: SIM115 (lives as long as the server)
        self._buf: list[bytes] = []
        self._loop = loop
        self._scheduled = False
        self.count = 0
        self.gone: BrokenPipeError | None = None
        self.on_gone: Callable[[], object] = lambda: None

    def add(self, record: dict[str, Any]) -> None:
        self.count += 1
        if self.gone is not None:
            return  # nobody reads the log any more
        self._buf.append(orjson.dumps(record, option=orjson.OPT_APPEND_NEWLINE))
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        self._scheduled = False
        if self._buf and not self._file.closed and self.gone is None:
            try:
                self._file.write(b"".join(self._buf))
                self._file.flush()
            except BrokenPipeError as exc:
                self.gone = exc
                self.on_gone()
            self._buf.clear()

    def close(self) -> None:
        self.flush()
        # (what a gone reader left in the file's buffer cannot be written: the file
        # is closed all the same)
        with contextlib.suppress(BrokenPipeError):
            self._file.close()

    def end(self) -> None:
        """Raise the BrokenPipeError that ended the log, if one did."""
        if self.gone is not None:
            raise self.gone


_date_cache: list[Any] = [0, ""]


def _date() -> str:
    now = int(time.time())
    if _date_cache[0] != now:
        _date_cache[0] = now
        _date_cache[1] = http_date(now)
    return str(_date_cache[1])


def _etag_matches(header: str, etag: str) -> bool:
    """Weak comparison (RFC 9110 13.1.2): If-None-Match ignores the W/ prefix."""
    if header.strip() == "*":
        return True
    bare = etag[2:] if etag.startswith("W/") else etag
    for tag in header.split(","):
        tag = tag.strip()
        if tag.startswith("W/"):
            tag = tag[2:]
        if tag == bare:
            return True
    return False


def conditional(req: Request, resp: Response) -> Response:
    """304 when the request's validators match ``resp`` (If-None-Match wins)."""
    if resp.status != 200 or (resp.etag is None and resp.last_modified is None):
        return resp
    inm = req.headers.get("if-none-match")
    hit = False
    if inm is not None:
        hit = resp.etag is not None and _etag_matches(inm, resp.etag)
    else:
        ims = req.headers.get("if-modified-since")
        if ims is not None and resp.last_modified is not None:
            t = parse_http_date(ims)
            hit = t is not None and int(resp.last_modified) <= t
    if not hit:
        return resp
    headers = [h for h in resp.headers if h[0].lower() in ("cache-control", "vary")]
    return Response(
        304,
        b"",
        content_type=None,
        headers=headers,
        etag=resp.etag,
        last_modified=resp.last_modified,
        log=resp.log,
    )


def build_head(resp: Response, keep: bool, length: int | None, chunked: bool) -> bytes:
    parts = [
        f"HTTP/1.1 {resp.status} {REASONS.get(resp.status, 'Unknown')}\r\n"
        f"Server: crawlkit-testweb\r\nDate: {_date()}\r\n"
    ]
    if resp.content_type:
        parts.append(f"Content-Type: {resp.content_type}\r\n")
    if length is not None:
        parts.append(f"Content-Length: {length}\r\n")
    elif chunked:
        parts.append("Transfer-Encoding: chunked\r\n")
    if resp.etag:
        parts.append(f"ETag: {resp.etag}\r\n")
    if resp.last_modified is not None:
        parts.append(f"Last-Modified: {http_date(resp.last_modified)}\r\n")
    for name, value in resp.headers:
        parts.append(f"{name}: {value}\r\n")
    parts.append("Connection: keep-alive\r\n\r\n" if keep else "Connection: close\r\n\r\n")
    return "".join(parts).encode("latin-1")


class _Writer:
    """Flow-controlled body writer handed to streaming responses."""

    def __init__(self, proto: HttpProtocol, chunked: bool):
        self.proto = proto
        self.chunked = chunked
        self.sent = 0

    async def write(self, data: bytes) -> None:
        if not data:
            return
        if self.chunked:
            await self.write_raw(b"%x\r\n%s\r\n" % (len(data), data), count=len(data))
        else:
            await self.write_raw(data)

    async def write_raw(self, data: bytes, count: int | None = None) -> None:
        proto = self.proto
        # is_closing(): a failed send closes the transport at once but reports
        # connection_lost only later, and later writes are silently dropped.
        if proto.closed or proto.transport.is_closing():
            raise _Lost()
        proto.send(data)
        self.sent += len(data) if count is None else count
        await proto.drain()

    def abort(self) -> None:
        self.proto.transport.abort()
        self.proto.closed = True
        raise _Lost()


class HttpProtocol(asyncio.Protocol):
    """One TCP connection. Requests are handled strictly one after another."""

    def __init__(self, server: Dispatcher):
        self.server = server
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.buf = bytearray()
        self.busy = False
        self.closed = False
        self.paused = False
        self.pending: dict[str, Any] | None = None
        self.waiter: asyncio.Future[None] | None = None
        self.task: asyncio.Task[None] | None = None
        self.last_active = time.monotonic()
        self.addr = ""
        self.lport = 0
        self.conn = 0
        self.opened = 0.0
        self.sent_at = 0.0  # time.time() just before the latest send()

    def send(self, data: bytes) -> None:
        """Hand ``data`` to the transport, noting when (the log's ``t_end``)."""
        self.sent_at = time.time()
        self.transport.write(data)

    # -- asyncio callbacks -------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        sock = transport.get_extra_info("sockname")
        self.addr, self.lport = sock[0], sock[1]
        self.conn = self.server.new_conn_id()
        self.opened = time.time()
        self.server.conns.add(self)
        # high=0: pause_writing fires whenever bytes wait in user space, so
        # resume_writing tells us exactly when a response has been fully written.
        # A TLS transport pauses when size >= high (not >), so high=0 would pause it
        # with nothing buffered and resume it only at the next read: high=1 there.
        tls = transport.get_extra_info("ssl_object") is not None
        self.transport.set_write_buffer_limits(high=1 if tls else 0, low=0)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.conns.discard(self)
        if self.pending is not None:
            rec, self.pending = self.pending, None
            rec["t_end"] = time.time()
            rec["aborted"] = True
            self.server.log.add(rec)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(_Lost())
        if self.task is not None and not self.task.done():
            self.task.cancel()

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)
        if self.pending is not None:
            rec, self.pending = self.pending, None
            rec["t_end"] = self.sent_at
            self.server.log.add(rec)
            self.busy = False
            if not rec.get("_close"):
                self._process()
            else:
                self._close()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        self.last_active = time.monotonic()
        if not self.busy:
            self._process()

    async def drain(self) -> None:
        if self.closed or self.transport.is_closing():
            raise _Lost()
        if not self.paused:
            return
        self.waiter = asyncio.get_running_loop().create_future()
        try:
            await self.waiter
        finally:
            self.waiter = None

    # -- request handling --------------------------------------------------------
    def _close(self) -> None:
        self.closed = True
        self.transport.close()

    def _process(self) -> None:
        while not self.busy and not self.closed:
            buf = self.buf
            idx = buf.find(b"\r\n\r\n")
            if idx < 0:
                if len(buf) > MAX_HEAD:
                    self._error(431)
                return
            t_start = time.time()
            lines = bytes(buf[:idx]).split(b"\r\n")
            while lines and not lines[0]:
                lines.pop(0)  # tolerate stray CRLF between requests (RFC 9112 2.2)
            try:
                method_b, target_b, version_b = lines[0].split(b" ")
                method = method_b.decode("ascii")
                target = target_b.decode("latin-1")
                version = version_b.decode("ascii")
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    name, sep, value = line.partition(b":")
                    if not sep:
                        raise ValueError("bad header line")
                    headers[name.strip().lower().decode("latin-1")] = value.strip().decode(
                        "latin-1"
                    )
                clen = int(headers.get("content-length", "0"))
                if clen < 0 or not version.startswith("HTTP/1."):
                    raise ValueError("bad request")
            except (ValueError, IndexError, UnicodeDecodeError):
                self._error(400)
                return
            if "chunked" in headers.get("transfer-encoding", ""):
                self._error(501)
                return
            if len(buf) < idx + 4 + clen:
                return  # wait for the request body (discarded)
            del buf[: idx + 4 + clen]
            conn_hdr = headers.get("connection", "").lower()
            keep = "keep-alive" in conn_hdr if version == "HTTP/1.0" else "close" not in conn_hdr
            self._dispatch(method, target, headers, keep, t_start)

    def _error(self, status: int) -> None:
        resp = Response(
            status, f"{status} {REASONS.get(status, '')}\n".encode(), content_type="text/plain"
        )
        self.transport.write(build_head(resp, False, len(resp.body), False) + resp.body)
        self.server.log.add(
            {
                "t_start": time.time(),
                "t_end": time.time(),
                "host": None,
                "addr": self.addr,
                "port": self.lport,
                "method": None,
                "path": None,
                "status": status,
                "bytes": len(resp.body),
                "if_none_match": None,
                "if_modified_since": None,
                "user_agent": None,
                "conn": self.conn,
                "special": None,
                "error": "bad request",
            }
        )
        self.buf.clear()
        self._close()

    def _dispatch(
        self, method: str, target: str, headers: dict[str, str], keep: bool, t_start: float
    ) -> None:
        if target.startswith(("http://", "https://")):
            # absolute-form (RFC 9112 3.2.2): the authority in the target wins.
            rest = target.split("://", 1)[1]
            slash = rest.find("/")
            headers["host"] = rest if slash < 0 else rest[:slash]
            target = "/" if slash < 0 else rest[slash:]
        target = target.split("#", 1)[0]
        route, _, query = target.partition("?")
        host = headers.get("host", "").lower()
        host = host.split("]", 1)[0] + "]" if host.startswith("[") else host.split(":", 1)[0]
        req = Request(
            method,
            target,
            route,
            query,
            host.rstrip("."),
            headers,
            self.addr,
            self.lport,
            self.conn,
            t_start,
        )
        if method not in ("GET", "HEAD"):
            resp: Response = Response(
                405,
                b"method not allowed\n",
                content_type="text/plain",
                headers=[("Allow", "GET, HEAD")],
            )
            special = None
        else:
            resp, special = self.server.respond(req)
            resp = conditional(req, resp)
        record: dict[str, Any] = {
            "t_start": t_start,
            "t_end": 0.0,
            "host": req.host,
            "addr": self.addr,
            "port": self.lport,
            "method": method,
            "path": target,
            "status": resp.status,
            "bytes": 0,
            "if_none_match": headers.get("if-none-match"),
            "if_modified_since": headers.get("if-modified-since"),
            "user_agent": headers.get("user-agent"),
            # every request header (names lowercased): tests compare what two runs sent
            "headers": dict(headers),
            "conn": self.conn,
            "special": special,
            "conn_opened": self.opened,
        }
        if resp.log:
            record.update(resp.log)
        keep = keep and not resp.close and not resp.close_delimited
        if resp.is_simple:
            body = resp.body if method == "GET" and resp.status != 304 else b""
            length = None if resp.status == 304 else len(resp.body)
            self.send(build_head(resp, keep, length, False) + body)
            record["bytes"] = len(body)
            if self.transport.get_write_buffer_size() == 0:
                record["t_end"] = self.sent_at
                self.server.log.add(record)
                if not keep:
                    self._close()
                return
            if not keep:
                record["_close"] = True
            self.pending = record
            self.busy = True
            return
        self.busy = True
        self.task = asyncio.get_running_loop().create_task(self._run_slow(req, resp, record, keep))

    async def _run_slow(
        self, req: Request, resp: Response, record: dict[str, Any], keep: bool
    ) -> None:
        aborted = False
        try:
            if resp.delay > 0:
                await asyncio.sleep(resp.delay)
            if self.closed:
                raise _Lost()
            if resp.raw is not None:
                self.send(resp.raw)
                record["bytes"] = len(resp.raw)
                await self.drain()
                keep = False
            elif resp.stream is not None:
                chunked = resp.length is None and not resp.close_delimited
                self.send(build_head(resp, keep, resp.length, chunked))
                if req.method == "GET":
                    writer = _Writer(self, chunked)
                    try:
                        await resp.stream(writer)
                    finally:
                        record["bytes"] = writer.sent
                    if chunked and not self.closed:
                        self.send(b"0\r\n\r\n")
                await self.drain()
            else:
                body = resp.body if req.method == "GET" and resp.status != 304 else b""
                length = None if resp.status == 304 else len(resp.body)
                self.send(build_head(resp, keep, length, False) + body)
                record["bytes"] = len(body)
                await self.drain()
        except (_Lost, ConnectionError):
            aborted = True
        except asyncio.CancelledError:
            aborted = True
        finally:
            cut = aborted or (self.closed and resp.stream is not None)
            record["t_end"] = time.time() if cut or not self.sent_at else self.sent_at
            if cut:
                record["aborted"] = True
            self.server.log.add(record)
            self.task = None
        self.busy = False
        if aborted or not keep:
            if not self.closed:
                self._close()
            return
        self._process()


Factory = Callable[[], HttpProtocol]
