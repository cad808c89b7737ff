"""robots.txt kinds: agent groups and wildcards, 404, 503, a redirect chain, 600 KiB.

What each host's robots.txt says, and which of its pages the agent token
``crawlkit`` may fetch, is hand-written here (``ROBOTS_RULES_PAGES``) so tests
compare a crawler with the truth rather than with another matcher.
"""

from __future__ import annotations

from functools import lru_cache

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, redirect
from crawlkit.testweb.special_site import (
    PDF,
    Describer,
    Facts,
    Handler,
    Site,
    html_page,
    page,
    robots_entry,
    robots_file,
    simple_site,
)

__all__ = [
    "DESCRIBERS",
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


# -- manifest facts ---------------------------------------------------------------------
def _describe_rules(site: Site) -> Facts:
    cd = site.web.config.crawl_delay
    return Facts(
        pages=[p for p, _, _ in ROBOTS_RULES_PAGES],
        disallowed=[p for p, ok, _ in ROBOTS_RULES_PAGES if not ok],
        notes={
            "allowed_for_star": [site.base + p for p, _, ok in ROBOTS_RULES_PAGES if ok],
            "pdf": [site.base + "/docs/report.pdf", site.base + "/docs/report.pdf?download=1"],
        },
        robots=robots_entry(site.robots_url, 200, robots_rules_text(cd).decode(), cd),
    )


def _describe_404(site: Site) -> Facts:
    return Facts(["/", "/a.html", "/b.html"], robots=robots_entry(site.robots_url, 404, None))


def _describe_503(site: Site) -> Facts:
    pages = ["/", "/a.html", "/b.html"]
    why = "robots.txt answers 503 forever: disallow everything (RFC 9309 2.3.1.4)"
    return Facts(
        pages,
        disallowed=list(pages),
        notes={"why": why},
        robots=robots_entry(site.robots_url, 503, None),
    )


def _describe_redirect(site: Site) -> Facts:
    base = site.base
    chain = [
        site.robots_url,
        base + "/robots-moved.txt",
        base + "/r/robots-2.txt",
        base + "/final-robots.txt",
    ]
    return Facts(
        ["/", "/blocked/x.html", "/open.html"],
        disallowed=["/blocked/x.html"],
        notes={"robots_chain": chain},
        robots=robots_entry(site.robots_url, 301, ROBOTS_REDIRECT_FINAL.decode()),
    )


def _describe_big(site: Site) -> Facts:
    """Writes the 600 KiB robots.txt to DIR/robots/NAME.txt (the entry points at it)."""
    path = site.directory / "robots" / f"{site.host.name}.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(robots_big_text())
    notes = {
        "size": ROBOTS_BIG_SIZE,
        "past_500k": [site.base + "/beyond-limit/x.html"],
        "why": "/beyond-limit/ is disallowed by a rule past 500 KiB: a crawler may fetch it "
        "or not, so it is in neither allowed nor disallowed",
    }
    return Facts(
        ["/", "/deep-rule/x.html", "/fine.html", "/beyond-limit/x.html"],
        disallowed=["/deep-rule/x.html"],
        notes=notes,
        robots=robots_entry(site.robots_url, 200, file=str(path)),
    )


DESCRIBERS: dict[str, Describer] = {
    "robots-rules": _describe_rules,
    "robots-404": _describe_404,
    "robots-503": _describe_503,
    "robots-redirect": _describe_redirect,
    "robots-big": _describe_big,
}
