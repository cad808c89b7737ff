"""robots.txt kinds: agent groups and wildcards, 404, 503, a redirect chain, 600 KiB.

What each host's robots.txt says, and which of its pages the agent token
``crawlkit`` may fetch, is hand-written here (``ROBOTS_RULES_PAGES``) so tests
compare a crawler with the truth rather than with another matcher.
"""

from __future__ import annotations

from functools import lru_cache

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, redirect
from crawlkit.testweb.special_site import PDF, Handler, html_page, page, robots_file, simple_site

__all__ = [
    "HANDLERS",
    "ROBOTS_BIG_SIZE",
    "ROBOTS_REDIRECT_FINAL",
    "ROBOTS_RULES_PAGES",
    "robots_big_text",
    "robots_rules_text",
]


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
        return robots_file(robots_rules_text(web.config.crawl_delay))
    paths = [p for p, _, _ in ROBOTS_RULES_PAGES]
    if req.path not in paths:
        return not_found()
    if req.path.startswith("/docs/report.pdf"):
        return Response(200, PDF, content_type="application/pdf")
    links = [(p, f"page {p}") for p in paths if p != req.path]
    return html_page(page(f"robots rules {req.path}", links, (host.name, req.path)))


def _robots_404(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return not_found()
    return simple_site(ctx, host, req, ["/", "/a.html", "/b.html"], None)


def _robots_503(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return Response(503, b"robots temporarily unavailable\n", content_type="text/plain")
    return simple_site(ctx, host, req, ["/", "/a.html", "/b.html"], None)


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
        return robots_file(ROBOTS_REDIRECT_FINAL)
    return simple_site(ctx, host, req, ["/", "/blocked/x.html", "/open.html"], None)


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
        return robots_file(robots_big_text())
    paths = ["/", "/deep-rule/x.html", "/beyond-limit/x.html", "/fine.html"]
    return simple_site(ctx, host, req, paths, None)


HANDLERS: dict[str, Handler] = {
    "robots-rules": _robots_rules,
    "robots-404": _robots_404,
    "robots-503": _robots_503,
    "robots-redirect": _robots_redirect,
    "robots-big": _robots_big,
}
