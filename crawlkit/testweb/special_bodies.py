"""Hostile bodies: a gzip bomb, huge and endless bodies, drips and stalls, broken HTTP.

Each hostile response logs ``hostile`` (which trick it played), so a test can match
a crawler's outcome with what the server did. Big bodies are streamed, never held.
"""

from __future__ import annotations

import asyncio
import zlib
from functools import lru_cache

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import BodyWriter, HostContext, Request, Response, not_found
from crawlkit.testweb.special_site import (
    ALLOW_ALL,
    Describer,
    Facts,
    Handler,
    Site,
    html_page,
    page,
    robots_file,
)

__all__ = [
    "BOMB_DECODED",
    "DESCRIBERS",
    "DRIP_PIECE",
    "DRIP_SIZE",
    "ENDLESS_CAP",
    "HANDLERS",
    "HUGE_SIZE",
    "MALFORMED_HTML",
    "STALL_SECONDS",
    "gzip_bomb",
]

BOMB_DECODED = 64 * 1024 * 1024


@lru_cache(maxsize=1)
def gzip_bomb() -> bytes:
    """64 MiB of HTML-prefixed zeros, gzip-compressed (about 64 KiB)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    out = [comp.compress(b"<!DOCTYPE html><html><body><p>")]
    zeros = bytes(1 << 20)
    for _ in range(BOMB_DECODED >> 20):
        out.append(comp.compress(zeros))
    out.append(comp.flush())
    return b"".join(out)


def _gzip_bomb(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route == "/":
        return html_page(page("Free stuff", [("/bomb.html", "open me")], host.name))
    if req.route == "/bomb.html":
        body = gzip_bomb()
        return Response(
            200,
            body,
            headers=[("Content-Encoding", "gzip")],
            log={"hostile": "gzip-bomb", "decoded": BOMB_DECODED},
        )
    return not_found()


HUGE_SIZE = 64 * 1024 * 1024
ENDLESS_CAP = 4 * 1024 * 1024 * 1024


def _filler_chunk() -> bytes:
    line = b"<p>" + b"all work and no play makes a crawler dull " * 20 + b"</p>\n"
    return (line * (65536 // len(line) + 1))[:65536]


async def _stream_bytes(w: BodyWriter, total: int) -> None:
    chunk = _filler_chunk()
    left = total
    while left > 0:
        piece = chunk if left >= len(chunk) else chunk[:left]
        await w.write(piece)
        left -= len(piece)


def _huge(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route == "/":
        links = [("/huge.html", "64 MiB"), ("/endless.html", "endless")]
        return html_page(page("Big things", links, host.name))
    if req.route == "/huge.html":
        return Response(
            200,
            stream=lambda w: _stream_bytes(w, HUGE_SIZE),
            length=HUGE_SIZE,
            log={"hostile": "huge"},
        )
    if req.route == "/endless.html":
        return Response(
            200, stream=lambda w: _stream_bytes(w, ENDLESS_CAP), log={"hostile": "endless"}
        )
    return not_found()


DRIP_SIZE = 2000
DRIP_PIECE = 10
STALL_SECONDS = 600.0


def _slow_drip(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    interval = web.config.drip_interval
    if req.route == "/":
        links = [("/drip.html", "drip"), ("/stall.html", "stall"), ("/slow-headers.html", "wait")]
        return html_page(page("Patience", links, host.name))
    if req.route == "/drip.html":

        async def drip(w: BodyWriter) -> None:
            body = (b"<html><body>" + b"." * DRIP_SIZE)[:DRIP_SIZE]
            for i in range(0, DRIP_SIZE, DRIP_PIECE):
                await w.write(body[i : i + DRIP_PIECE])
                await asyncio.sleep(interval)

        return Response(200, stream=drip, length=DRIP_SIZE, log={"hostile": "drip"})
    if req.route == "/stall.html":

        async def stall(w: BodyWriter) -> None:
            await w.write(b"<html><body><p>wait for it")
            await asyncio.sleep(STALL_SECONDS)

        return Response(200, stream=stall, length=1000, log={"hostile": "stall"})
    if req.route == "/slow-headers.html":
        return Response(
            200, b"<html>late</html>", delay=STALL_SECONDS, log={"hostile": "slow-headers"}
        )
    return not_found()


MALFORMED_HTML = (
    b"<html><head><title>Broken <b>markup</title><meta charset=utf-8>\n"
    b"<body><div><p>Unclosed paragraph <a href=page-1.html>unquoted link</a>\n"
    b"<a href='/page-2.html'>single quoted <a href=\"/page-3.html\">nested anchor</a>\n"
    b'<table><tr><td>cell<td><a HREF = "/bad-charset.html" >spaced attr</a></table>\n'
    b'<!-- <a href="/in-comment.html">commented out</a> -->\n'
    b"<script>document.write('<a href=\"/in-script.html\">x</a>')</script>\n"
    b"<p>NUL here: \x00 and invalid UTF-8: \xff\xfe and a lone \xc3.\n"
    b'<a href="/no-length.html">no length</a> <a href="/broken-chunk.html">chunk</a>\n'
    b'<a href="/drop.html">drop</a> <a href="/garbage">garbage</a>\n'
    b'<a href="  /page-1.html?x=1  ">whitespace href</a> <a href="javascript:void(0)">js</a>\n'
    b'<a href="mailto:someone@example.test">mail</a> <a href="http://[bad">bad url</a>\n'
    b'<a href="#">hash</a> <a>no href</a> <a href="">empty</a>\n'
    b"</div></div></div><p>stray closers</span></i>\n"
)


def _malformed(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if r == "/":
        return html_page(MALFORMED_HTML)
    if r in ("/page-1.html", "/page-2.html", "/page-3.html"):
        return html_page(b"<html><body><p>fine page<a href=/>home</a>")
    if r == "/bad-charset.html":
        return html_page("<html><body><p>caf\u00e9 na\u00efve</p></body></html>".encode("latin-1"))
    if r == "/no-length.html":

        async def body(w: BodyWriter) -> None:
            await w.write(b"<html><body><p>length unknown: read until close</p></body></html>")

        return Response(200, stream=body, close_delimited=True)
    if r == "/broken-chunk.html":
        raw = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n10\r\n<html><body>ok..\r\nzz\r\nnot hex\r\n"
        )
        return Response(200, raw=raw, log={"hostile": "broken-chunk"})
    if r == "/drop.html":

        async def drop(w: BodyWriter) -> None:
            await w.write(b"<html><body>" + b"x" * 988)
            w.abort()

        return Response(200, stream=drop, length=10000, log={"hostile": "drop"})
    if r == "/garbage":
        return Response(
            200, raw=b"\x00\x01SSH-2.0-not-http\r\n\xff\xfe garbage\r\n", log={"hostile": "garbage"}
        )
    return not_found()


HANDLERS: dict[str, Handler] = {
    "gzip-bomb": _gzip_bomb,
    "huge": _huge,
    "slow-drip": _slow_drip,
    "malformed": _malformed,
}


# -- manifest facts: hostile paths are not pages ------------------------------------------
def _describe_gzip_bomb(site: Site) -> Facts:
    return Facts(["/"], hostile=["/bomb.html"], notes={"decoded_bytes": BOMB_DECODED})


def _describe_huge(site: Site) -> Facts:
    return Facts(["/"], hostile=["/huge.html", "/endless.html"], notes={"huge_bytes": HUGE_SIZE})


def _describe_slow_drip(site: Site) -> Facts:
    drip = {"bytes": DRIP_SIZE, "piece": DRIP_PIECE, "interval": site.web.config.drip_interval}
    hostile = ["/drip.html", "/stall.html", "/slow-headers.html"]
    return Facts(["/"], hostile=hostile, notes={"drip": drip})


def _describe_malformed(site: Site) -> Facts:
    pages = [
        "/",
        "/page-1.html",
        "/page-2.html",
        "/page-3.html",
        "/bad-charset.html",
        "/no-length.html",
    ]
    not_links = [site.base + "/in-comment.html", site.base + "/in-script.html"]
    return Facts(
        pages,
        hostile=["/broken-chunk.html", "/drop.html", "/garbage"],
        notes={"not_links": not_links},
    )


DESCRIBERS: dict[str, Describer] = {
    "gzip-bomb": _describe_gzip_bomb,
    "huge": _describe_huge,
    "slow-drip": _describe_slow_drip,
    "malformed": _describe_malformed,
}
