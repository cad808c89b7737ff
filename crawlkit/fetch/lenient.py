"""A second look at a response llhttp refuses: aiohttp's own Python parser.

aiohttp parses responses with llhttp (C), which reads whatever follows a complete
message in the same read as the next response. A 301 or 204 that sends a body with
``Content-Length: 0``, or a body a byte longer than its ``Content-Length``, so ended in
"Bad status line", and the error lost the first response whole although every byte of
it had arrived: the page, or the redirect to it, was an error record. Browsers and
curl take the message and drop the extra bytes; so does aiohttp's pure-Python parser
(the one ``AIOHTTP_NO_EXTENSIONS=1`` selects, lax on responses as browsers are).

Parsing every response in Python cost ~0.1 CPU s per 1,000 pages more in
``bench/bench_fetch.py`` (0.88 against ~1.0), so llhttp keeps the first look: the
bytes it is fed are kept only until it hands over a response (a response's head is
one read, as a rule), and when it refuses them, the Python parser reads the same
bytes again. A response so read closes its connection after it: what the server sent
past it is nobody's, and must not become the head of the next response on that
connection. A response both parsers refuse is refused with llhttp's words, as before.

This reaches into aiohttp's connector (``_factory``, the protocol each connection
gets) and protocol (``_parser``, set per request): private names, so
``tests/fetch/test_lenient_responses.py`` tells when an aiohttp release moves them.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, cast

__all__ = ["lenient_protocol_factory"]


class _SecondLook:
    """One response's parser: llhttp first; on its refusal of a response not yet handed
    over, the Python parser over the same bytes."""

    def __init__(
        self,
        strict: Any,
        make_lenient: Callable[[], Any],
        errors: type[Exception],
        close_after: Callable[[], None],
    ) -> None:
        self._active = strict
        self._make_lenient = make_lenient
        self._close_after = close_after
        self._errors = errors
        self._fed: list[bytes] | None = []  # None once a response was handed over

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
        if fed is not None:
            if messages:
                self._fed = None
            elif data:
                fed.append(data)
        return messages, upgraded, tail

    def _read_again(self, data: bytes, refused: Exception) -> Any:
        lenient = self._make_lenient()
        try:
            messages, upgraded, tail = lenient.feed_data(data)
        except self._errors:
            raise refused from None  # in llhttp's words, as before
        self._active = lenient
        self._close_after()
        return messages, upgraded, tail

    def __getattr__(self, name: str) -> Any:
        # feed_eof, pause_reading and whatever else the protocol asks of its parser
        return getattr(self._active, name)


@functools.cache
def _handler_class() -> type:
    from aiohttp.client_exceptions import ClientPayloadError
    from aiohttp.client_proto import ResponseHandler
    from aiohttp.http_exceptions import HttpProcessingError
    from aiohttp.http_parser import HttpResponseParserPy

    class LenientResponseHandler(ResponseHandler):
        def set_response_params(self, **params: Any) -> None:
            super().set_response_params(**params)
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

            second_look = _SecondLook(self._parser, make_lenient, HttpProcessingError, close_after)
            self._parser = cast(Any, second_look)  # quacks as the parser it wraps

    return LenientResponseHandler


def lenient_protocol_factory(loop: Any) -> Callable[[], Any]:
    """What an aiohttp connector's ``_factory`` is set to: a protocol per connection
    whose responses get the second look above."""
    return functools.partial(_handler_class(), loop=loop)
