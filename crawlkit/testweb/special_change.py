"""Kinds a recrawl meets: validators (ETag, Last-Modified, weak ETag, none) that
answer correct 304s, and a page that changes every ``--change-every`` seconds.

The changing page takes the time from an ``X-Testweb-Now`` request header (unix
seconds) when one is sent, so a test can walk a simulated clock through days of
changes in a second; without it, the server's clock.
"""

from __future__ import annotations

from crawlkit.testweb import textgen
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import (
    HostContext,
    Request,
    Response,
    http_date,
    not_found,
    rng_for,
    stable_hash,
)
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

__all__ = ["CONDITIONAL_PAGES", "DESCRIBERS", "HANDLERS"]

CONDITIONAL_PAGES = [
    "/etag-only.html",
    "/lm-only.html",
    "/both.html",
    "/weak.html",
    "/no-validators.html",
]
_FIXED_LM = 1767225600.0  # 2026-01-01T00:00:00Z


def _conditional(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if r == "/":
        return html_page(page("Validators", [(p, p) for p in CONDITIONAL_PAGES], host.name))
    if r not in CONDITIONAL_PAGES:
        return not_found()
    body = page(f"Validators {r}", [("/", "home")], (host.name, r))
    tag = f'"{stable_hash(body):016x}"'
    if r == "/etag-only.html":
        return html_page(body, etag=tag)
    if r == "/lm-only.html":
        return html_page(body, last_modified=_FIXED_LM)
    if r == "/both.html":
        return html_page(body, etag=tag, last_modified=_FIXED_LM)
    if r == "/weak.html":
        return html_page(body, etag="W/" + tag)
    return html_page(body)


def _changing(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if r == "/":
        links = [("/clock.html", "clock"), ("/stable.html", "stable")]
        return html_page(page("Live", links, host.name))
    if r == "/stable.html":
        body = page("Stable", [("/", "home")], (host.name, r))
        return html_page(body, etag=f'"{stable_hash(body):016x}"', last_modified=_FIXED_LM)
    if r == "/clock.html":
        period = web.config.change_every
        try:
            clock = float(req.header("x-testweb-now") or ctx.now())
        except ValueError:
            clock = ctx.now()
        version = int(clock // period)
        since = version * period
        rng = rng_for("clock", web.config.seed, version)
        body = (
            f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Version {version}'
            f"</title></head><body><p>Version {version} since {http_date(since)}</p>"
            f'<p>{textgen.paragraph(rng)}</p><a href="/">home</a>'
            "</body></html>\n"
        ).encode()
        return html_page(body, etag=f'"v{version}"', last_modified=since, log={"version": version})
    return not_found()


HANDLERS: dict[str, Handler] = {
    "conditional": _conditional,
    "changing": _changing,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe_conditional(site: Site) -> Facts:
    base = site.base
    validators = {
        base + "/etag-only.html": ["etag"],
        base + "/lm-only.html": ["last-modified"],
        base + "/both.html": ["etag", "last-modified"],
        base + "/weak.html": ["weak-etag"],
        base + "/no-validators.html": [],
    }
    return Facts(["/", *CONDITIONAL_PAGES], notes={"validators": validators})


def _describe_changing(site: Site) -> Facts:
    notes = {"change_every": site.web.config.change_every, "changing": [site.base + "/clock.html"]}
    return Facts(["/", "/clock.html", "/stable.html"], notes=notes)


DESCRIBERS: dict[str, Describer] = {
    "conditional": _describe_conditional,
    "changing": _describe_changing,
}
