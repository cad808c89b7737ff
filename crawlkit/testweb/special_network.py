"""Kinds about where a host is: a host on the simulated private network and the
gateway that links and redirects to it, and a host on ``::1`` only.
"""

from __future__ import annotations

from crawlkit.testweb.graph import PRIVATE_NET, Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, redirect
from crawlkit.testweb.special_site import (
    ALLOW_ALL,
    Describer,
    Facts,
    Handler,
    Site,
    html_page,
    page,
    robots_file,
    simple_site,
)

__all__ = ["DESCRIBERS", "HANDLERS"]


def _private(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    return simple_site(ctx, host, req, ["/", "/secret.html"], ALLOW_ALL)


def _gateway(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    target = ctx.url(f"private-{host.ordinal}.test", "/secret.html")
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route == "/":
        links = [(target, "intranet"), ("/go-private", "shortcut")]
        return html_page(page("Gateway", links, host.name))
    if req.route == "/go-private":
        return redirect(302, target)
    return not_found()


def _ipv6(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """Also reached by address (``http://[::1]:PORT/``): pages name the Host they got."""
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route not in ("/", "/v6.html"):
        return not_found()
    other = "/v6.html" if req.route == "/" else "/"
    return html_page(page(f"{req.host} {req.route}", [(other, other)], (req.host, req.route)))


HANDLERS: dict[str, Handler] = {
    "private": _private,
    "gateway": _gateway,
    "ipv6": _ipv6,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe_private(site: Site) -> Facts:
    why = f"address in {PRIVATE_NET}: refuse unless --allow-net covers it"
    return Facts(["/", "/secret.html"], notes={"why": why})


def _describe_gateway(site: Site) -> Facts:
    private = f"{site.scheme}://private-{site.host.ordinal}.test:{site.link_port}/secret.html"
    return Facts(["/"], notes={"to_private": [private, site.base + "/go-private"]})


def _describe_ipv6(site: Site) -> Facts:
    why = "on ::1 only: needs --allow-net ::1/128; also reachable as [::1]"
    return Facts(["/", "/v6.html"], notes={"why": why})


DESCRIBERS: dict[str, Describer] = {
    "private": _describe_private,
    "gateway": _describe_gateway,
    "ipv6": _describe_ipv6,
}
