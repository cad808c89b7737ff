"""Kinds about pace: a slow host, and hosts that answer 429 or 503 with Retry-After.

The 429/503 hosts keep a request counter per host (``HostContext.state``): every
``THROTTLE_EVERY``-th request opens a Retry-After window, and any request inside
it is refused again and logged ``"early": true``.
"""

from __future__ import annotations

import math

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, http_date
from crawlkit.testweb.special_site import (
    ALLOW_ALL,
    Describer,
    Facts,
    Handler,
    Site,
    robots_file,
    simple_site,
)

__all__ = ["DESCRIBERS", "HANDLERS", "SLOW_PAGES", "THROTTLE_EVERY"]

SLOW_PAGES = ["/", "/p1.html", "/p2.html", "/p3.html", "/p4.html", "/p5.html"]


def _slow(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    resp = simple_site(ctx, host, req, SLOW_PAGES, ALLOW_ALL)
    resp.delay = web.config.slow_delay
    return resp


THROTTLE_EVERY = 4


def _throttled(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """Every THROTTLE_EVERY-th request (and any request before Retry-After expired)
    is answered 429 (seconds) or 503 (HTTP-date). robots.txt is never throttled."""
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    st = ctx.state(host.name)
    now = ctx.now()
    until = float(st.get("until", 0.0))
    early = now < until
    if not early:
        n = int(st.get("n", 0)) + 1
        st["n"] = n
        if n % THROTTLE_EVERY != 1:
            return simple_site(ctx, host, req, SLOW_PAGES, None)
        wait = math.ceil(web.config.retry_after)
        # An HTTP-date has whole seconds, so the 503 window ends on a second boundary.
        until = now + wait if host.kind == "status-429" else float(math.ceil(now + wait))
        st["until"] = until
    if host.kind == "status-429":
        status, value = 429, str(max(1, math.ceil(until - now)))
    else:
        status, value = 503, http_date(until)
    return Response(
        status,
        b"slow down\n",
        content_type="text/plain",
        headers=[("Retry-After", value)],
        log={"retry_after": value, "retry_until": until, "early": early},
    )


HANDLERS: dict[str, Handler] = {
    "slow": _slow,
    "status-429": _throttled,
    "status-503": _throttled,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe(site: Site) -> Facts:
    config = site.web.config
    if site.host.kind == "slow":
        return Facts(list(SLOW_PAGES), notes={"delay": config.slow_delay})
    notes = {
        "throttle_every": THROTTLE_EVERY,
        "retry_after": config.retry_after,
        "retry_after_format": "seconds" if site.host.kind == "status-429" else "http-date",
    }
    return Facts(list(SLOW_PAGES), notes=notes)


DESCRIBERS: dict[str, Describer] = dict.fromkeys(HANDLERS, _describe)
