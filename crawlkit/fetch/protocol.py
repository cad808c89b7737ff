"""The protocol each of the client's connections gets: aiohttp's, read as browsers read.

**A second look at a response llhttp refuses.** aiohttp parses responses with llhttp
(C), which reads whatever follows a complete message in the same read as the next
response. A 301 or 204 that sends a body with ``Content-Length: 0``, or a body a byte
longer than its ``Content-Length``, so ended in "Bad status line", and the error lost
the first response whole although every byte of it had arrived: the page, or the
redirect to it, was an error record. Browsers and curl take the message and drop the
extra bytes; so does aiohttp's pure-Python parser (the one ``AIOHTTP_NO_EXTENSIONS=1``
selects, lax on responses as browsers are). Parsing every response in Python cost ~0.1
CPU s per 1,000 pages more in ``bench/bench_fetch.py`` (0.88 against ~1.0), so llhttp
keeps the first look: the bytes it is fed are kept only until it hands over a response
(a response's head is one read, as a rule), and when it refuses them, the Python parser
reads the same bytes again. A response so read closes its connection after it: what the
server sent past it is nobody's, and must not become the head of the next response on
that connection. A head both refuse for a fault browsers forgive (a space before a
colon, ``Content-Length: 5, 5``, a length beside a Transfer-Encoding:
:func:`repaired_head`) is read once more mended; anything else is refused with llhttp's
words.

**Nothing read while idle is a response.** A server may write to a kept-alive
connection between requests: a ``408 Request Timeout`` before it closes an idle one
(nginx, Apache), a stray copy of a response. aiohttp parsed it then and handed it to
the next request on that connection as its answer: a page archived with a 408, or with
another URL's body, that the server was never asked for. Bytes that arrive while the
connection waits in the pool close it, and so does a response parsed between the end
of one request and the next (bytes that came just before the connection went back to
the pool); the next request goes on a new connection.

**Reset or closed?** A body with neither a Content-Length nor chunked framing ends
when the connection does, and aiohttp ends it whether the server closed the connection
(FIN) or it was reset (RST): a page cut by a reset was archived as whole. The protocol
notes a connection lost by an error while a body was still open
(``reset_in_body``), and the client marks such a body truncated.

**A broken body ends at once.** A parse error inside a body (a chunk size that is no
number, in a read after the head's) was put on the connection, not on the body: the
read of the body waited for the whole timeout. The body now ends there
(``body_error``), what was parsed before kept, and the client marks it truncated.

**When did it go out?** :data:`ON_SENT` is called as a request goes out, after its
connection was made (the per-IP gap counts from then). **Was the connection reused?**
:data:`REUSED` tells the request whether it went on a connection that had carried one
before (see :mod:`crawlkit.fetch.client`: such a
connection the server closed while idle is the one failure resent at once).

This reaches into aiohttp's connector (``_factory``, the protocol each connection gets)
and protocol (``_parser``, set per request): private names, so
``tests/fetch/test_connection_protocol.py`` tells when an aiohttp release moves them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, cast

__all__ = [
    "MAX_HEAD",
    "ON_SENT",
    "REUSED",
    "after_interim",
    "crawl_protocol_factory",
    "interim_end",
    "mark_idle",
    "repaired_head",
]

#: Set for each request when its connection is made ready for it: True when that
#: connection carried a request before (it came from the pool).
REUSED: ContextVar[bool] = ContextVar("crawlkit_connection_reused", default=False)
#: What to call when the request goes out (its connection is ready, it is written
#: next): set by the client for each request (``FetchRequest.on_sent``).
ON_SENT: ContextVar[Callable[[], None] | None] = ContextVar("crawlkit_on_sent", default=None)
#: Bytes a response's head may take (status line, headers, interim responses): what
#: Chrome allows. A header line may be 64 KiB and a head 512 lines (client.py), but
#: never both: 512 lines of 64 KiB were 32 MiB a connection held while a hostile
#: server sent them. Counted a read at a time: a head is refused once the reads that
#: did not complete it pass this (so a connection holds at most one read more).
MAX_HEAD = 256 * 1024


class _SecondLook:
    """One response's parser: llhttp first; on its refusal of a response not yet handed
    over, the Python parser over the same bytes.

    Interim responses (1xx but 101: ``100 Continue``, ``103 Early Hints``) are handed
    over as they come but are not the response: the bytes after them are kept for a
    second look, and they count towards :data:`MAX_HEAD`. Ended by the first 1xx, the
    second look lost a final response llhttp refuses and browsers take (a server
    sending Early Hints before ``Content-Type : text/html`` got an error with no
    status, "Server disconnected"), and the cap let a head of megabytes through."""

    def __init__(
        self,
        strict: Any,
        make_lenient: Callable[[], Any],
        errors: type[Exception],
        close_after: Callable[[], None],
        too_big: Callable[[], Exception],
    ) -> None:
        self._active = strict
        self._make_lenient = make_lenient
        self._close_after = close_after
        self._errors = errors
        self._too_big = too_big
        self._fed: list[bytes] | None = []  # None once a response was handed over
        self._fed_bytes = 0

    def feed_data(self, data: bytes) -> Any:
        fed = self._fed
        try:
            messages, upgraded, tail = self._active.feed_data(data)
        except self._errors as refused:
            if fed is None:
                raise
            fed.append(data)
            self._fed = None
            return self._read_again(b"".join(fed), refused)
        if fed is not None and data:
            fed.append(data)
            self._fed_bytes += len(data)
            if messages:
                self._fed = after_interim(b"".join(fed), [m for m, _ in messages])
            if self._fed is not None and self._fed_bytes > MAX_HEAD:
                raise self._too_big()
        return messages, upgraded, tail

    def _read_again(self, data: bytes, refused: Exception) -> Any:
        # Interim responses before the one refused are left out: the client skips them
        # anyway (it never sends Expect: 100-continue), repaired_head mends the first
        # head only, and a fault in a 103's Link header must not cost the page.
        data = data[interim_end(data) :]
        try:
            lenient, parsed = self._read_lenient(data, refused)
        except self._errors:
            repaired = repaired_head(data)
            if repaired is None:
                raise refused from None  # in llhttp's words, as before
            try:
                # (llhttp's words were about the head: a fault in the body is told in
                # the parser's own)
                lenient, parsed = self._read_lenient(repaired, None)
            except self._errors:
                raise refused from None
        self._active = lenient
        self._close_after()
        return parsed

    def _read_lenient(self, data: bytes, refused: Exception | None) -> tuple[Any, Any]:
        """A new Python parser and what it made of ``data``. A refusal inside the body
        (a chunk size that is no number) took the head with it: the whole response was
        an error with no status, archived nowhere, when the same fault a read later
        keeps the head (a truncated body). So the head is then read alone and the rest
        after it; a fault in the rest ends the body with an error (llhttp's
        ``refused``, as a later read would tell it, else the parser's), and only a
        refused head raises."""
        lenient = self._make_lenient()
        try:
            return lenient, lenient.feed_data(data)
        except self._errors:
            end = head_end(data)
            if end < 0 or end >= len(data):
                raise
        lenient = self._make_lenient()
        messages, upgraded, tail = lenient.feed_data(data[:end])
        if not messages:
            raise refused if refused is not None else self._errors()  # (a whole head)
        try:
            more, upgraded, tail = lenient.feed_data(data[end:])
        except self._errors as fault:
            payload = messages[-1][1]
            if not payload.is_eof():  # (what the parser put there said "400")
                payload.set_exception(refused if refused is not None else fault)
            return lenient, (messages, False, b"")
        return lenient, (messages + more, upgraded, tail)

    def __getattr__(self, name: str) -> Any:
        # feed_eof, pause_reading and whatever else the protocol asks of its parser
        return getattr(self._active, name)


def after_interim(data: bytes, messages: list[Any]) -> list[bytes] | None:
    """What of ``data`` follows ``messages``, the responses a parser handed over for
    it, when they are all interim (1xx but 101), as the list :class:`_SecondLook`
    keeps; None when one is not (the response was handed over: no second look). An
    interim response has no body (RFC 9112 6.3), so each is one head off the front."""
    if not all(100 <= message.code < 200 and message.code != 101 for message in messages):
        return None
    for _ in messages:
        end = head_end(data)
        if end < 0:  # (not as the parser read it: no second look, to be safe)
            return None
        data = data[end:]
    return [data] if data else []


def interim_end(data: bytes) -> int:
    """Where the whole interim responses (1xx but 101: heads alone, no body) at the
    start of ``data`` end; 0 when it starts with none."""
    start = 0
    while True:
        rest = data[start:]
        line = rest.split(b"\n", 1)[0].rstrip(b"\r")
        version, _, status = line.partition(b" ")
        code = status[:3]
        interim = code[:1] == b"1" and code.isdigit() and code != b"101"
        end = head_end(rest)
        if not (version.startswith(b"HTTP/") and interim and status[3:4] in (b"", b" ")):
            return start
        if end < 0:  # (not whole: a refusal of it is the parser's to tell)
            return start
        start += end


def head_end(data: bytes) -> int:
    """Where the response head at the start of ``data`` ends (after its blank line,
    CRLF or bare LF as the parsers take it), or -1 when the head is not whole."""
    end = data.find(b"\r\n\r\n")
    end = end + 4 if end >= 0 else -1
    bare = data.find(b"\n\n")
    if bare >= 0 and (end < 0 or bare + 2 < end):
        end = bare + 2
    return end


def repaired_head(data: bytes) -> bytes | None:
    """``data`` with its response head mended as browsers read it, or None when it has
    no whole head or nothing to mend. Both parsers refuse these, and each is seen:

    * whitespace between a header's name and its colon (RFC 9112 5.1 has a proxy remove
      it from a response; ``Content-Type : text/html``);
    * a Content-Length list of one value repeated (``5, 5``, or the header twice), as a
      proxy stacking its copy on the server's makes it: that value (RFC 9110 8.6);
    * Content-Length beside any Transfer-Encoding: the transfer coding overrides the
      length, which is dropped (RFC 9112 6.3). With chunked last, the chunks frame the
      body; with another coding last (``gzip`` alone), the body runs to the close.

    A Content-Length list of different values stays refused: no length is the body's.
    """
    end = head_end(data)
    if end < 0:
        return None
    status, *lines = data[:end].rstrip(b"\r\n").split(b"\n")
    headers: list[tuple[bytes, bytes]] = []
    for line in lines:
        name, colon, value = line.rstrip(b"\r").partition(b":")
        if not colon:
            return None
        headers.append((name.rstrip(b" \t"), value.strip(b" \t")))
    lengths = {
        part.strip()
        for name, value in headers
        if name.lower() == b"content-length"
        for part in value.split(b",")
    }
    # Any coding at all, not only chunked: a length beside ``Transfer-Encoding: gzip``
    # was refused whole, where the RFC reads the body to the close.
    coded = any(name.lower() == b"transfer-encoding" and value for name, value in headers)
    kept = [(n, v) for n, v in headers if n.lower() != b"content-length"]
    if lengths and not coded:
        if len(lengths) != 1:
            return None
        kept.append((b"Content-Length", lengths.pop()))
    head = b"\r\n".join([status.rstrip(b"\r"), *(n + b": " + v for n, v in kept)])
    repaired = head + b"\r\n\r\n" + data[end:]
    return None if repaired == data else repaired


@functools.cache
def _handler_class() -> type:
    from aiohttp.client_exceptions import ClientPayloadError
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.http_exceptions import HttpProcessingError
    from aiohttp.http_parser import HttpResponseParserPy

    class CrawlProtocol(ResponseHandler):
        requests = 0  # how many requests this connection has been made ready for
        idle = False  # in the pool, between requests
        reset_in_body = False  # lost by an error (a reset) while a body was being read
        body_error: BaseException | None = None  # the parser's, inside the body being read

        def connection_lost(self, exc: BaseException | None) -> None:
            # A body with neither a length nor chunks ends at the close, and aiohttp
            # ends it at any close: a reset (RST) gave a whole-looking body. Only a
            # clean close (FIN) is the end the server meant; the client asks this
            # flag once the body has ended (see client.py).
            payload = self._payload
            if exc is not None and payload is not None and not payload.is_eof():
                self.reset_in_body = True
            super().connection_lost(exc)

        def set_response_params(self, **params: Any) -> None:
            # a response parsed, or bytes kept, since the last one ended: sent unasked
            stray = self.requests > 0 and (len(self) > 0 or bool(self._tail))
            super().set_response_params(**params)
            sent = ON_SENT.get()
            if sent is not None:
                sent()
            REUSED.set(self.requests > 0)
            self.requests += 1
            self.idle = False
            if stray:
                self._buffer.clear()  # never this request's answer
                self._close_unused()
                return
            if self._parser is None:
                return

            def make_lenient() -> Any:
                return HttpResponseParserPy(
                    self,
                    self._loop,
                    params.get("read_bufsize", 2**16),
                    timer=params.get("timer"),
                    payload_exception=ClientPayloadError,
                    response_with_body=not params.get("skip_payload", False),
                    read_until_eof=params.get("read_until_eof", False),
                    auto_decompress=params.get("auto_decompress", True),
                    max_line_size=params.get("max_line_size", 8190),
                    max_field_size=params.get("max_field_size", 8190),
                    max_headers=params.get("max_headers", 128),
                )

            def close_after() -> None:
                self._should_close = True  # never reused: see the module's docstring

            def too_big() -> Exception:
                return HttpProcessingError(message=f"response head over {MAX_HEAD} bytes")

            second_look = _SecondLook(
                self._parser, make_lenient, HttpProcessingError, close_after, too_big
            )
            self._parser = cast(Any, second_look)  # quacks as the parser it wraps

        def data_received(self, data: bytes) -> None:
            if self.idle and data:
                self._close_unused()
                return
            super().data_received(data)
            self._fail_open_body()

        def _fail_open_body(self) -> None:
            # aiohttp puts an error of the parser (a bad chunk size in a read after the
            # one that held the head) on the connection's queue, not on the body being
            # read: with llhttp that read waited for the whole timeout, and the page
            # was recorded "truncated: time" after 30 s of a server long gone. The body
            # ends here instead, what was parsed before the error still to be read,
            # and the client asks ``body_error`` once it has read it.
            error = self.exception()
            payload = self._payload
            if error is None or payload is None or payload.is_eof():
                return
            if payload.exception() is None:
                self.body_error = error
                payload.feed_eof()

        def _close_unused(self) -> None:
            self._should_close = True
            if self.transport is not None:
                # the pool drops a closing connection; a request on it fails as on
                # one the server closed, and is sent again on a new one
                self.transport.close()

    return CrawlProtocol


def mark_idle(protocol: Any) -> None:
    """``protocol`` waits in the pool (the connector's ``_release`` calls this)."""
    if hasattr(protocol, "idle"):
        protocol.idle = True


def crawl_protocol_factory(loop: Any) -> Callable[[], Any]:
    """What an aiohttp connector's ``_factory`` is set to: a :class:`CrawlProtocol` per
    connection."""
    return functools.partial(_handler_class(), loop=loop)
