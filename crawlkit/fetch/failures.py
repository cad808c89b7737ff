"""Why a request failed, in an ``error_code`` and one line of ``error``: the
exceptions a request through aiohttp can end with, classified (a proxy's failure told
from the site's, TLS failures by their ``tls-*`` code, a timeout in the TLS handshake
told from one in the TCP connect), and their texts made one line with passwords
masked. :class:`Failures` is what :class:`crawlkit.fetch.client.AiohttpClient` calls
when a request raises; the rest is the wording.
"""

from __future__ import annotations

import socket
from typing import Any

from crawlkit.fetch.connector import tcp_connected
from crawlkit.fetch.exchange import (
    PROXY_CONNECT,
    PROXY_REFUSED,
    PROXY_UNREACHABLE,
    FetchResult,
)
from crawlkit.fetch.protocol import REUSED
from crawlkit.fetch.tls import classify_certificate_error
from crawlkit.masking import mask_url

__all__ = ["RESET_IN_BODY", "Failures", "ProxyAnswered", "UnaskedUpgrade", "malformed"]

# A body framed by the close (no Content-Length, not chunked) that a reset ended: no
# end the server meant (crawlkit/fetch/protocol.py), as a chunked body cut short.
RESET_IN_BODY = (
    "ConnectionResetError: the connection was reset before the end of a body "
    "that only the close delimits"
)


class Failures:
    """Classifies the exception a request ended with into its ``FetchResult``.

    ``caught`` is what a request may raise for network trouble or a response that
    cannot be read: the client catches exactly that (anything else, a cancellation,
    is no failure of the request and goes on up) and hands it to :meth:`record`.
    The aiohttp module is passed in, as the client imports it only when made.
    """

    def __init__(self, aiohttp: Any) -> None:
        from aiohttp.http_exceptions import HttpProcessingError

        self._aiohttp = aiohttp
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
        self.caught: tuple[type[BaseException], ...] = (
            ProxyAnswered,
            UnaskedUpgrade,
            TimeoutError,
            *self._malformed,
            aiohttp.ClientError,
            OSError,
            ValueError,
        )

    def record(
        self,
        result: FetchResult,
        exc: BaseException,
        url: Any,
        proxy: Any,
        timeout: float,
        connecting: list[socket.socket],
    ) -> bool:
        """Set ``result``'s error (and ``error_code``, ``truncated``) for ``exc``, one of
        :attr:`caught`, raised by a GET of ``url`` (a yarl URL) through ``proxy`` (or
        None) with ``timeout`` seconds; ``connecting`` are the sockets its connection
        attempt opened. True when it failed as a request sent on a kept-alive
        connection the server had closed does (the client then sends it again).
        The checks run in the order of aiohttp's class tree: a subclass first."""
        aiohttp = self._aiohttp
        if isinstance(exc, ProxyAnswered):  # a plain http request's 407
            proxy_failed(result, PROXY_REFUSED, f"the proxy {shown_proxy(proxy)} {exc}")
        elif isinstance(exc, UnaskedUpgrade):  # a head read whole, of no HTTP answer
            result.error = f"malformed response: {one_line(str(exc))}"[:300]
        elif isinstance(exc, aiohttp.ClientHttpProxyError):  # CONNECT answered with no 2xx
            answer = f"{exc.status} {one_line(str(exc.message))}".strip()
            why = f"the proxy {shown_proxy(proxy)} answered CONNECT with {answer}"
            # A 407 refuses every request; a 502, 503, 504 or 403 is most often about
            # this target (the proxy could not reach or may not reach the site), so it
            # is the site's failure as the proxy saw it, and the run goes on.
            proxy_failed(result, PROXY_REFUSED if exc.status == 407 else PROXY_CONNECT, why)
        elif isinstance(exc, aiohttp.ClientProxyConnectionError):  # a ClientConnectorError
            why = describe(exc.os_error)
            shown = shown_proxy(proxy)
            proxy_failed(result, PROXY_UNREACHABLE, f"cannot connect to the proxy {shown}: {why}")
        elif isinstance(exc, TimeoutError):
            result.error = f"timeout after {timeout:g}s"
            if result.status is not None:
                result.truncated = "time"
            elif url.scheme == "https" and tcp_connected(connecting):
                result.error_code = "tls-handshake-timeout"
                result.error = f"tls-handshake-timeout: no TLS handshake in {timeout:g}s"
        elif isinstance(exc, aiohttp.ClientConnectorCertificateError):
            cert_error = exc.certificate_error
            result.error_code = classify_certificate_error(cert_error)
            detail = getattr(cert_error, "verify_message", None) or str(cert_error)
            result.error = f"{result.error_code}: {detail}"[:300]
        elif isinstance(exc, aiohttp.ClientConnectorSSLError):
            result.error_code = "tls-protocol"
            result.error = f"tls-protocol: {describe(exc.os_error)}"[:300]
        elif isinstance(exc, aiohttp.ClientConnectorError):
            result.error = describe_connect(exc)
            if url.scheme == "https" and isinstance(exc.os_error, ConnectionResetError):
                # A reset can only follow an established TCP connection, so the server
                # dropped our ClientHello (how many servers answer an unwanted version).
                result.error_code = "tls-protocol"
                result.error = "tls-protocol: the server reset the connection in the handshake"
        elif isinstance(exc, self._malformed):
            # a response aiohttp cannot parse, its head or (Python parser) its body
            result.error = malformed(exc)
            if result.status is not None:
                result.truncated = "disconnect"
        else:  # aiohttp.ClientError, OSError, ValueError
            result.error = describe(exc)
            if result.status is not None:
                result.truncated = "disconnect"
            else:
                return REUSED.get() and isinstance(exc, self._closed_under_us)
        return False


class ProxyAnswered(Exception):
    """The proxy, not the site, answered a plain http request (407)."""


class UnaskedUpgrade(Exception):
    """A ``101 Switching Protocols`` to a request that asked for no upgrade.

    The crawler never sends ``Upgrade``, and a server may switch only to a protocol
    the client named (RFC 9110 15.2.2): what follows the 101 is in no protocol
    crawlkit reads, so it is a malformed response (no status, nothing archived, the
    connection closed), not a page "fetched 101" with an empty body."""


def proxy_failed(result: FetchResult, code: str, why: str) -> None:
    result.error_code = code
    result.error = f"{code}: {why}"[:300]


def shown_proxy(proxy: Any) -> str:
    """The proxy's URL as an error shows it (its password masked)."""
    return mask_url(str(proxy))


def malformed(exc: Any) -> str:
    """A response aiohttp could not parse, in words (``exc`` is an aiohttp
    ClientResponseError or HttpProcessingError; their text says "400", the status
    aiohttp would answer with as a server: no status of this response). A subclass
    names itself: "TransferEncodingError: zz" says more than "zz"."""
    detail = one_line(str(exc.message))
    if type(exc).__name__ not in ("ClientResponseError", "HttpProcessingError", "BadHttpMessage"):
        detail = f"{type(exc).__name__}: {detail}"
    return f"malformed response: {detail}"[:300]


def describe(exc: BaseException) -> str:
    text = one_line(str(exc)) or type(exc).__name__
    return mask_url(f"{type(exc).__name__}: {text}")[:300]  # a proxy URL's password


def one_line(text: str) -> str:
    """An error text on one line: its lines joined, a line that only points (``^``)
    left out (aiohttp's parse errors draw the bad byte under the input)."""
    lines = (line.strip() for line in text.splitlines())
    return " ".join(line for line in lines if line and line.strip("^ ") != "")


def describe_connect(exc: Any) -> str:  # an aiohttp.ClientConnectorError
    """A failed connection in words: aiohttp's own text names its connection key, whose
    ``ssl:`` part is the repr of an SSL context (an address in this process's memory)
    for plain http too."""
    reason = exc.os_error.strerror or str(exc.os_error) or type(exc.os_error).__name__
    return mask_url(f"{type(exc).__name__}: cannot connect to {exc.host}:{exc.port}: {reason}")[
        :300
    ]
