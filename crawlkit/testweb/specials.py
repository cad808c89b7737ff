"""Special hosts: the hostile and tricky parts of the web, one small handler each.

Every kind is switchable (``--special``); ``KINDS`` (:mod:`crawlkit.testweb.kinds`)
lists them with their default counts. A handler is a pure function of (server
context, web, host, request) except where a kind is *about* time or state (rate
limits, changing pages, near-duplicate timestamps). ``describe(web, host, port)``
gives the host's manifest entry: the pages a polite crawler can reach, which of them
robots.txt allows for the agent token ``crawlkit``, and kind-specific facts tests
need (redirect targets, trap patterns, duplicate groups, sitemap-only pages...).
"""

from __future__ import annotations

import asyncio
import gzip
import html
import math
import zlib
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from crawlkit.testweb import requisites, textgen, tls
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import (
    BodyWriter,
    HostContext,
    Request,
    Response,
    http_date,
    not_found,
    redirect,
    rng_for,
    stable_hash,
)

ALLOW_ALL = b"User-agent: *\nDisallow:\n"
AGENT = "crawlkit"


# -- small HTML helpers ----------------------------------------------------------------
def _page(title: str, links: list[tuple[str, str]], seed: object, paras: int = 3) -> bytes:
    rng = rng_for("special-text", seed)
    body = "".join(f"<p>{textgen.paragraph(rng)}</p>\n" for _ in range(paras))
    items = "".join(f'<li><a href="{html.escape(h)}">{html.escape(t)}</a></li>\n' for h, t in links)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
        f"{body}<ul>\n{items}</ul>\n</body></html>\n"
    ).encode()


def _html(body: bytes, **kw: Any) -> Response:
    return Response(200, body, **kw)


def _robots(body: bytes) -> Response:
    return Response(200, body, content_type="text/plain; charset=utf-8")


def _simple_site(
    ctx: HostContext, host: Host, req: Request, paths: list[str], robots: bytes | None
) -> Response:
    """Serve ``paths`` (each a small page linking to all the others)."""
    if req.route == "/robots.txt" and robots is not None:
        return _robots(robots)
    if req.path not in paths and req.route not in paths:
        return not_found()
    links = [(p, f"page {p}") for p in paths if p != req.path]
    return _html(_page(f"{host.name} {req.path}", links, (host.name, req.path)))


# -- robots kinds ---------------------------------------------------------------------
def robots_rules_text(crawl_delay: float) -> bytes:
    cd = f"{crawl_delay:g}"
    return (
        "# crawlkit testweb: robots rules (RFC 9309)\n"
        "User-agent: otherbot\nDisallow: /\n\n"
        "User-agent: crawlkit\nUser-agent: crawlkit-test\n"
        "Disallow: /private/\nAllow: /private/public-\nDisallow: /*.pdf$\n"
        "Disallow: /search?\nDisallow: /nocrawlkit/\nDisallow: /*/draft-\n"
        f"Crawl-delay: {cd}\n\n"
        "User-agent: *\nDisallow: /private/\nDisallow: /nostar/\n"
        f"Crawl-delay: {cd}\n"
    ).encode()


# (path, allowed for "crawlkit", allowed for "*")
ROBOTS_RULES_PAGES: list[tuple[str, bool, bool]] = [
    ("/", True, True),
    ("/private/secret.html", False, False),
    ("/private/public-info.html", True, False),
    ("/docs/report.pdf", False, True),
    ("/docs/report.pdf?download=1", True, True),
    ("/docs/report.pdfx.html", True, True),
    ("/search?q=crawler", False, True),
    ("/searchable.html", True, True),
    ("/nocrawlkit/page.html", False, True),
    ("/nostar/page.html", True, False),
    ("/Private/upper.html", True, True),
    ("/blog/draft-1.html", False, True),
    ("/blog/post-1.html", True, True),
]


def _robots_rules(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(robots_rules_text(web.config.crawl_delay))
    paths = [p for p, _, _ in ROBOTS_RULES_PAGES]
    if req.path not in paths:
        return not_found()
    if req.path.startswith("/docs/report.pdf"):
        return Response(200, _PDF, content_type="application/pdf")
    links = [(p, f"page {p}") for p in paths if p != req.path]
    return _html(_page(f"robots rules {req.path}", links, (host.name, req.path)))


def _robots_404(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return not_found()
    return _simple_site(ctx, host, req, ["/", "/a.html", "/b.html"], None)


def _robots_503(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return Response(503, b"robots temporarily unavailable\n", content_type="text/plain")
    return _simple_site(ctx, host, req, ["/", "/a.html", "/b.html"], None)


ROBOTS_REDIRECT_FINAL = b"User-agent: *\nDisallow: /blocked/\n"


def _robots_redirect(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    hops = {
        "/robots.txt": (301, "/robots-moved.txt"),
        "/robots-moved.txt": (302, "/r/robots-2.txt"),
        "/r/robots-2.txt": (307, ctx.url(host.name, "/final-robots.txt")),
    }
    if req.route in hops:
        status, location = hops[req.route]
        return redirect(status, location)
    if req.route == "/final-robots.txt":
        return _robots(ROBOTS_REDIRECT_FINAL)
    return _simple_site(ctx, host, req, ["/", "/blocked/x.html", "/open.html"], None)


ROBOTS_BIG_SIZE = 600 * 1024


@lru_cache(maxsize=1)
def robots_big_text() -> bytes:
    """600 KiB: ``/deep-rule/`` at about 300 KiB, ``/beyond-limit/`` past 590 KiB."""
    parts = [b"# crawlkit testweb: a 600 KiB robots.txt\nUser-agent: *\n"]
    size = len(parts[0])
    i = 0
    placed = False
    while size < 590 * 1024:
        line = b"Disallow: /junk-%06d/\n" % i
        if not placed and size > 300 * 1024:
            line = b"Disallow: /deep-rule/\n"
            placed = True
        parts.append(line)
        size += len(line)
        i += 1
    tail = b"Disallow: /beyond-limit/\n"
    parts.append(tail)
    size += len(tail)
    pad = ROBOTS_BIG_SIZE - size
    comment = b"#" + b"x" * 70 + b"\n"
    while pad > len(comment):
        parts.append(comment)
        pad -= len(comment)
    parts.append(b"#" * (pad - 1) + b"\n")
    return b"".join(parts)


def _robots_big(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(robots_big_text())
    paths = ["/", "/deep-rule/x.html", "/beyond-limit/x.html", "/fine.html"]
    return _simple_site(ctx, host, req, paths, None)


# -- slow, rate limits ----------------------------------------------------------------
SLOW_PAGES = ["/", "/p1.html", "/p2.html", "/p3.html", "/p4.html", "/p5.html"]


def _slow(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    resp = _simple_site(ctx, host, req, SLOW_PAGES, ALLOW_ALL)
    resp.delay = web.config.slow_delay
    return resp


THROTTLE_EVERY = 4


def _throttled(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """Every THROTTLE_EVERY-th request (and any request before Retry-After expired)
    is answered 429 (seconds) or 503 (HTTP-date). robots.txt is never throttled."""
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    st = ctx.state(host.name)
    now = ctx.now()
    until = float(st.get("until", 0.0))
    early = now < until
    if not early:
        n = int(st.get("n", 0)) + 1
        st["n"] = n
        if n % THROTTLE_EVERY != 1:
            return _simple_site(ctx, host, req, SLOW_PAGES, None)
        wait = math.ceil(web.config.retry_after)
        # An HTTP-date has whole seconds, so the 503 window ends on a second boundary.
        until = now + wait if host.kind == "status-429" else float(math.ceil(now + wait))
        st["until"] = until
    if host.kind == "status-429":
        status, value = 429, str(max(1, math.ceil(until - now)))
    else:
        status, value = 503, http_date(until)
    return Response(
        status, b"slow down\n", content_type="text/plain",
        headers=[("Retry-After", value)],
        log={"retry_after": value, "retry_until": until, "early": early},
    )  # fmt: skip


# -- traps ----------------------------------------------------------------------------
CAL_START = (2026, 11)


def _month_path(y: int, m: int) -> str:
    return f"/calendar/{y:04d}/{m:02d}/"


def _calendar(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.route == "/":
        return _html(_page("Events", [(_month_path(*CAL_START), "this month")], host.name))
    parts = req.route.strip("/").split("/")
    if parts[0] != "calendar" or len(parts) not in (3, 4) or not req.route.endswith("/"):
        return not_found()
    try:
        y, m = int(parts[1]), int(parts[2])
        d = int(parts[3]) if len(parts) == 4 else None
    except ValueError:
        return not_found()
    if not (1 <= y <= 9999 and 1 <= m <= 12) or (d is not None and not 1 <= d <= 28):
        return not_found()
    depth = abs((y * 12 + m) - (CAL_START[0] * 12 + CAL_START[1]))
    prev_y, prev_m = (y, m - 1) if m > 1 else (y - 1, 12)
    next_y, next_m = (y, m + 1) if m < 12 else (y + 1, 1)
    links = [
        (_month_path(prev_y, prev_m), "previous month"),
        (_month_path(next_y, next_m), "next month"),
    ]
    if d is None:
        links += [(f"/calendar/{y:04d}/{m:02d}/{day:02d}/", f"day {day}") for day in (1, 15)]
    else:
        links.append((_month_path(y, m), "month"))
        if d < 28:
            links.append((f"/calendar/{y:04d}/{m:02d}/{d + 1:02d}/", "next day"))
    title = f"Events {y:04d}-{m:02d}" + (f"-{d:02d}" if d else "")
    return _html(_page(title, links, host.name, paras=1), log={"depth": depth})


SESSION_ITEMS = 10


def _session_trap(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    route = req.route
    depth = 0
    if route.startswith("/s/"):
        token, _, rest = route[3:].partition("/")
        route = "/" + rest
        depth = _token_depth(token)
    sid = req.query_params().get("sid")
    if sid:
        depth = max(depth, _token_depth(sid))
    if route != "/" and not (
        route.startswith("/catalog/item-") and route.endswith(".html")
        and route[14:-5].isdigit() and int(route[14:-5]) < SESSION_ITEMS
    ):  # fmt: skip
        return not_found()
    token = f"{depth + 1}x{stable_hash('sid', req.path) % 10**8:08d}"
    links = []
    for k in range(SESSION_ITEMS):
        if k % 2:
            links.append((f"/catalog/item-{k}.html?sid={token}", f"item {k}"))
        else:
            links.append((f"/s/{token}/catalog/item-{k}.html", f"item {k}"))
    links.append((f"/?sid={token}", "home"))
    return _html(_page(f"Catalog {route}", links, (host.name, route)), log={"depth": depth})


def _token_depth(token: str) -> int:
    head = token.split("x", 1)[0]
    return int(head) if head.isdigit() else 0


DUP_DOCS = 8


def dup_variants(k: int) -> list[str]:
    return [f"/doc/{k}", f"/doc/{k}/", f"/doc/{k}/index.html", f"/doc/{k}?print=1",
            f"/DOC/{k}", f"/doc/{k}?ref=home", f"/mirror/doc-{k}.html"]  # fmt: skip


def _duplicates(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.path == "/":
        links = [(v, f"doc {k}") for k in range(DUP_DOCS) for v in dup_variants(k)]
        return _html(_page("Documents", links, host.name))
    for k in range(DUP_DOCS):
        if req.path in dup_variants(k):
            return _html(_page(f"Document {k}", [("/", "home")], (host.name, "doc", k), 6))
    return not_found()


_ADS = ["Buy shoes", "Cheap flights", "New phone", "Learn piano", "Fresh coffee"]
NEAR_DUP_PAGES = 10


def _near_duplicates(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.path == "/":
        links = [(f"/news/{k}.html", f"edition {k}") for k in range(NEAR_DUP_PAGES)]
        return _html(_page("Wire stories", links, host.name))
    if not (req.route.startswith("/news/") and req.route.endswith(".html")):
        return not_found()
    ident = req.route[6:-5]
    if not ident.isdigit() or int(ident) >= NEAR_DUP_PAGES:
        return not_found()
    st = ctx.state(host.name)
    n = int(st.get("served", 0))
    st["served"] = n + 1
    rng = rng_for("article", web.config.seed, host.name)
    article = "".join(f"<p>{textgen.paragraph(rng)}</p>\n" for _ in range(12))
    stamp = http_date(ctx.now())
    body = (
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Wire story</title></head>'
        f"<body>\n<p class=edition>Edition {ident}</p>\n<p class=stamp>Updated {stamp}</p>\n"
        f'<div class="ad">{_ADS[n % len(_ADS)]}</div>\n{article}<a href="/">home</a>\n'
        "</body></html>\n"
    ).encode()
    return _html(body, headers=[("Cache-Control", "no-cache")])


# -- redirects ------------------------------------------------------------------------
CHAIN_STATUSES = (301, 302, 303, 307, 308)
LONG_HOPS = 9


def _redirects(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return _robots(ALLOW_ALL)
    if r == "/":
        links = [("/chain/0", "5-hop chain"), ("/long/0", "9-hop chain"),
                 ("/loop/a", "loop"), ("/self", "self"), ("/rel", "relative"),
                 ("/to-h0", "cross-host"), ("/final.html", "final")]  # fmt: skip
        return _html(_page("Redirects", links, host.name))
    if r in ("/final.html", "/final-long.html"):
        return _html(_page(f"Landed on {r}", [("/", "home")], (host.name, r)))
    if r.startswith("/chain/") and r[7:].isdigit() and int(r[7:]) < len(CHAIN_STATUSES):
        i = int(r[7:])
        nxt = f"/chain/{i + 1}" if i + 1 < len(CHAIN_STATUSES) else "/final.html"
        return redirect(CHAIN_STATUSES[i], nxt)
    if r.startswith("/long/") and r[6:].isdigit() and int(r[6:]) < LONG_HOPS:
        i = int(r[6:])
        return redirect(302, f"/long/{i + 1}" if i + 1 < LONG_HOPS else "/final-long.html")
    if r == "/loop/a":
        return redirect(302, "/loop/b")
    if r == "/loop/b":
        return redirect(302, "/loop/a")
    if r == "/self":
        return redirect(302, "/self")
    if r == "/rel":
        return redirect(301, "final.html")
    if r == "/to-h0":
        return redirect(302, ctx.url("h0.test", "/"))
    return not_found()


# -- hostile bodies -------------------------------------------------------------------
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
        return _robots(ALLOW_ALL)
    if req.route == "/":
        return _html(_page("Free stuff", [("/bomb.html", "open me")], host.name))
    if req.route == "/bomb.html":
        body = gzip_bomb()
        return Response(200, body, headers=[("Content-Encoding", "gzip")],
                        log={"hostile": "gzip-bomb", "decoded": BOMB_DECODED})  # fmt: skip
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
        return _robots(ALLOW_ALL)
    if req.route == "/":
        links = [("/huge.html", "64 MiB"), ("/endless.html", "endless")]
        return _html(_page("Big things", links, host.name))
    if req.route == "/huge.html":
        return Response(200, stream=lambda w: _stream_bytes(w, HUGE_SIZE), length=HUGE_SIZE,
                        log={"hostile": "huge"})  # fmt: skip
    if req.route == "/endless.html":
        return Response(200, stream=lambda w: _stream_bytes(w, ENDLESS_CAP),
                        log={"hostile": "endless"})  # fmt: skip
    return not_found()


DRIP_SIZE = 2000
DRIP_PIECE = 10
STALL_SECONDS = 600.0


def _slow_drip(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    interval = web.config.drip_interval
    if req.route == "/":
        links = [("/drip.html", "drip"), ("/stall.html", "stall"), ("/slow-headers.html", "wait")]
        return _html(_page("Patience", links, host.name))
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
        return Response(200, b"<html>late</html>", delay=STALL_SECONDS,
                        log={"hostile": "slow-headers"})  # fmt: skip
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
        return _robots(ALLOW_ALL)
    if r == "/":
        return _html(MALFORMED_HTML)
    if r in ("/page-1.html", "/page-2.html", "/page-3.html"):
        return _html(b"<html><body><p>fine page<a href=/>home</a>")
    if r == "/bad-charset.html":
        return _html("<html><body><p>caf\u00e9 na\u00efve</p></body></html>".encode("latin-1"))
    if r == "/no-length.html":

        async def body(w: BodyWriter) -> None:
            await w.write(b"<html><body><p>length unknown: read until close</p></body></html>")

        return Response(200, stream=body, close_delimited=True)
    if r == "/broken-chunk.html":
        raw = (b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n"
               b"Connection: close\r\n\r\n10\r\n<html><body>ok..\r\nzz\r\nnot hex\r\n")  # fmt: skip
        return Response(200, raw=raw, log={"hostile": "broken-chunk"})
    if r == "/drop.html":

        async def drop(w: BodyWriter) -> None:
            await w.write(b"<html><body>" + b"x" * 988)
            w.abort()

        return Response(200, stream=drop, length=10000, log={"hostile": "drop"})
    if r == "/garbage":
        return Response(200, raw=b"\x00\x01SSH-2.0-not-http\r\n\xff\xfe garbage\r\n",
                        log={"hostile": "garbage"})  # fmt: skip
    return not_found()


# -- types, sitemaps, validators, change ----------------------------------------------
_PDF = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]"
        b"/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")  # fmt: skip
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
TYPES: dict[str, tuple[str | None, bytes]] = {
    "/doc.pdf": ("application/pdf", _PDF),
    "/img.png": ("image/png", _PNG),
    "/data.json": ("application/json", b'{"links": ["/doc.pdf"]}\n'),
    "/notes.txt": ("text/plain; charset=utf-8", b"plain text, http://types-0.test/ not a link\n"),
    "/feed.xml": ("application/rss+xml", b'<?xml version="1.0"?><rss version="2.0"><channel>'
                  b"<title>feed</title><item><link>/doc.pdf</link></item></channel></rss>\n"),
    "/blob": ("application/octet-stream", bytes(range(256)) * 4),
    "/html-as-text": ("text/plain", b"<html><body><a href=\"/doc.pdf\">x</a></body></html>\n"),
    "/no-type": (None, b"<html><body><p>no content type</p></body></html>\n"),
    "/page.xhtml": ("application/xhtml+xml", b'<?xml version="1.0"?><html xmlns='
                    b'"http://www.w3.org/1999/xhtml"><body><a href="/">home</a></body></html>\n'),
}  # fmt: skip


def _types(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.route == "/":
        return _html(_page("Files", [(p, p) for p in TYPES], host.name))
    if req.route in TYPES:
        ctype, body = TYPES[req.route]
        return Response(200, body, content_type=ctype)
    return not_found()


SITEMAP_A = [f"/sm/a-{k}.html" for k in range(5)]
SITEMAP_B = [f"/sm/b-{k}.html" for k in range(5)]
SITEMAP_T = [f"/sm/t-{k}.html" for k in range(3)]
SITEMAP_LINKED = ["/", "/sm/a-0.html"]


def _lastmod(path: str) -> str:
    day = 1 + stable_hash("lastmod", path) % 28
    return f"2026-10-{day:02d}"


def _urlset(ctx: HostContext, host: Host, paths: list[str]) -> bytes:
    items = "".join(
        f"<url><loc>{ctx.url(host.name, p)}</loc><lastmod>{_lastmod(p)}</lastmod>"
        f"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
        for p in paths
    )
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
            f'schemas/sitemap/0.9">\n{items}</urlset>\n').encode()  # fmt: skip


def _sitemaps(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        text = (f"User-agent: *\nDisallow:\n\nSitemap: {ctx.url(host.name, '/sitemap_index.xml')}"
                f"\nSitemap: {ctx.url(host.name, '/sitemap.txt')}\n")  # fmt: skip
        return _robots(text.encode())
    if r == "/sitemap_index.xml":
        items = "".join(
            f"<sitemap><loc>{ctx.url(host.name, p)}</loc><lastmod>2026-10-30</lastmod></sitemap>\n"
            for p in ("/sitemap-a.xml", "/sitemap-b.xml.gz")
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.'
            f'sitemaps.org/schemas/sitemap/0.9">\n{items}</sitemapindex>\n'
        ).encode()
        return Response(200, body, content_type="application/xml")
    if r == "/sitemap-a.xml":
        return Response(200, _urlset(ctx, host, SITEMAP_A), content_type="application/xml")
    if r == "/sitemap-b.xml.gz":
        body = gzip.compress(_urlset(ctx, host, SITEMAP_B), mtime=0)
        return Response(200, body, content_type="application/x-gzip")
    if r == "/sitemap.txt":
        body = "".join(ctx.url(host.name, p) + "\n" for p in SITEMAP_T).encode()
        return Response(200, body, content_type="text/plain; charset=utf-8")
    if r == "/":
        return _html(_page("Sitemapped site", [("/sm/a-0.html", "first")], host.name))
    if r in SITEMAP_A or r in SITEMAP_B or r in SITEMAP_T:
        return _html(_page(f"Listed {r}", [("/", "home")], (host.name, r)))
    return not_found()


CONDITIONAL_PAGES = ["/etag-only.html", "/lm-only.html", "/both.html", "/weak.html",
                     "/no-validators.html"]  # fmt: skip
_FIXED_LM = 1767225600.0  # 2026-01-01T00:00:00Z


def _conditional(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return _robots(ALLOW_ALL)
    if r == "/":
        return _html(_page("Validators", [(p, p) for p in CONDITIONAL_PAGES], host.name))
    if r not in CONDITIONAL_PAGES:
        return not_found()
    body = _page(f"Validators {r}", [("/", "home")], (host.name, r))
    tag = f'"{stable_hash(body):016x}"'
    if r == "/etag-only.html":
        return _html(body, etag=tag)
    if r == "/lm-only.html":
        return _html(body, last_modified=_FIXED_LM)
    if r == "/both.html":
        return _html(body, etag=tag, last_modified=_FIXED_LM)
    if r == "/weak.html":
        return _html(body, etag="W/" + tag)
    return _html(body)


def _changing(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return _robots(ALLOW_ALL)
    if r == "/":
        return _html(_page("Live", [("/clock.html", "clock"), ("/stable.html", "stable")],
                           host.name))  # fmt: skip
    if r == "/stable.html":
        body = _page("Stable", [("/", "home")], (host.name, r))
        return _html(body, etag=f'"{stable_hash(body):016x}"', last_modified=_FIXED_LM)
    if r == "/clock.html":
        period = web.config.change_every
        version = int(ctx.now() // period)
        since = version * period
        rng = rng_for("clock", web.config.seed, version)
        body = (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Version {version}'
                f"</title></head><body><p>Version {version} since {http_date(since)}</p>"
                f"<p>{textgen.paragraph(rng)}</p><a href=\"/\">home</a>"
                "</body></html>\n").encode()  # fmt: skip
        return _html(body, etag=f'"v{version}"', last_modified=since, log={"version": version})
    return not_found()


# -- private network, link farm -------------------------------------------------------
def _private(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    return _simple_site(ctx, host, req, ["/", "/secret.html"], ALLOW_ALL)


def _gateway(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    target = ctx.url(f"private-{host.ordinal}.test", "/secret.html")
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.route == "/":
        links = [(target, "intranet"), ("/go-private", "shortcut")]
        return _html(_page("Gateway", links, host.name))
    if req.route == "/go-private":
        return redirect(302, target)
    return not_found()


FARM_FANOUT = 40


def _farm_depth(n: int) -> int:
    depth = 0
    while n > 0:
        n = (n - 1) // FARM_FANOUT
        depth += 1
    return depth


def _link_farm(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return _robots(ALLOW_ALL)
    if r == "/":
        n = 0
    elif r.startswith("/f/") and r.endswith(".html") and r[3:-5].isdigit():
        n = int(r[3:-5])
        if n > 10**15:
            return not_found()
    else:
        return not_found()
    farm = web.specials_of.get("link-farm", [host])
    links = []
    for j in range(FARM_FANOUT):
        # Only ever to the *other* farm hosts: the farm links to itself, never out.
        target = (
            farm[(host.ordinal + 1 + j % (len(farm) - 1)) % len(farm)] if len(farm) > 1 else host
        )
        links.append((ctx.url(target.name, f"/f/{n * FARM_FANOUT + j + 1}.html"), f"deal {j}"))
    return _html(_page(f"Best deals {n}", links, (host.name, n % 97), paras=1),
                 log={"depth": _farm_depth(n)})  # fmt: skip


def _ipv6(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """Also reached by address (``http://[::1]:PORT/``): pages name the Host they got."""
    if req.route == "/robots.txt":
        return _robots(ALLOW_ALL)
    if req.route not in ("/", "/v6.html"):
        return not_found()
    other = "/v6.html" if req.route == "/" else "/"
    return _html(_page(f"{req.host} {req.route}", [(other, other)], (req.host, req.route)))


HANDLERS: dict[str, Callable[[HostContext, Web, Host, Request], Response]] = {
    "robots-rules": _robots_rules,
    "robots-404": _robots_404,
    "robots-503": _robots_503,
    "robots-redirect": _robots_redirect,
    "robots-big": _robots_big,
    "slow": _slow,
    "status-429": _throttled,
    "status-503": _throttled,
    "calendar": _calendar,
    "session-trap": _session_trap,
    "duplicates": _duplicates,
    "near-duplicates": _near_duplicates,
    "redirects": _redirects,
    "gzip-bomb": _gzip_bomb,
    "huge": _huge,
    "slow-drip": _slow_drip,
    "malformed": _malformed,
    "types": _types,
    "sitemaps": _sitemaps,
    "conditional": _conditional,
    "changing": _changing,
    "private": _private,
    "gateway": _gateway,
    "link-farm": _link_farm,
    "ipv6": _ipv6,
    **dict.fromkeys(tls.TLS_KINDS, tls.handle),
    "requisites": requisites.handle_requisites,
    "assets": requisites.handle_assets,
}


def handle(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """The response of special ``host`` to ``req``."""
    return HANDLERS[host.kind](ctx, web, host, req)
