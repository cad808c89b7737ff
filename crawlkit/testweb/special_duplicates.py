"""Duplicate kinds: the same bytes under many URLs, and pages that differ only a little.

``near-duplicates`` is about time: each story carries the time it was served and
a rotating ad, so two fetches of one URL differ (a simhash should still match).
"""

from __future__ import annotations

from crawlkit.testweb import textgen
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, http_date, not_found, rng_for
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

__all__ = ["DESCRIBERS", "DUP_DOCS", "HANDLERS", "NEAR_DUP_PAGES", "dup_variants"]

DUP_DOCS = 8


def dup_variants(k: int) -> list[str]:
    return [
        f"/doc/{k}",
        f"/doc/{k}/",
        f"/doc/{k}/index.html",
        f"/doc/{k}?print=1",
        f"/DOC/{k}",
        f"/doc/{k}?ref=home",
        f"/mirror/doc-{k}.html",
    ]


def _duplicates(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.path == "/":
        links = [(v, f"doc {k}") for k in range(DUP_DOCS) for v in dup_variants(k)]
        return html_page(page("Documents", links, host.name))
    for k in range(DUP_DOCS):
        if req.path in dup_variants(k):
            return html_page(page(f"Document {k}", [("/", "home")], (host.name, "doc", k), 6))
    return not_found()


_ADS = ["Buy shoes", "Cheap flights", "New phone", "Learn piano", "Fresh coffee"]
NEAR_DUP_PAGES = 10


def _near_duplicates(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.path == "/":
        links = [(f"/news/{k}.html", f"edition {k}") for k in range(NEAR_DUP_PAGES)]
        return html_page(page("Wire stories", links, host.name))
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
        f'<aside class="ad">{_ADS[n % len(_ADS)]}</aside>\n{article}<a href="/">home</a>\n'
        "</body></html>\n"
    ).encode()
    return html_page(body, headers=[("Cache-Control", "no-cache")])


HANDLERS: dict[str, Handler] = {
    "duplicates": _duplicates,
    "near-duplicates": _near_duplicates,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe_duplicates(site: Site) -> Facts:
    groups = [[site.base + v for v in dup_variants(i)] for i in range(DUP_DOCS)]
    pages = ["/"] + [v for i in range(DUP_DOCS) for v in dup_variants(i)]
    return Facts(pages, notes={"groups": groups})


def _describe_near_duplicates(site: Site) -> Facts:
    stories = [f"/news/{i}.html" for i in range(NEAR_DUP_PAGES)]
    return Facts(["/", *stories], notes={"group": [site.base + p for p in stories]})


DESCRIBERS: dict[str, Describer] = {
    "duplicates": _describe_duplicates,
    "near-duplicates": _describe_near_duplicates,
}
