"""The ``redirects`` kind: chains of every 3xx (5 and 9 hops), loops, a redirect to
itself, a relative Location and one to another host.
"""

from __future__ import annotations

from crawlkit.testweb.graph import Host, Web
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
)

__all__ = ["CHAIN_STATUSES", "DESCRIBERS", "HANDLERS", "LONG_HOPS"]

CHAIN_STATUSES = (301, 302, 303, 307, 308)
LONG_HOPS = 9


def _cross_host_target(web: Web) -> str:
    """The host ``/to-h0`` sends to: the first ordinary host, ``h0.test``, or its IP
    literal under ``--ip-hosts`` (a name no hosts file holds would send a crawler to
    the system's DNS, off loopback)."""
    return web.ordinary[0].name if web.ordinary else "h0.test"


def _redirects(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if r == "/":
        links = [
            ("/chain/0", "5-hop chain"),
            ("/long/0", "9-hop chain"),
            ("/loop/a", "loop"),
            ("/self", "self"),
            ("/rel", "relative"),
            ("/to-h0", "cross-host"),
            ("/final.html", "final"),
        ]
        return html_page(page("Redirects", links, host.name))
    if r in ("/final.html", "/final-long.html"):
        return html_page(page(f"Landed on {r}", [("/", "home")], (host.name, r)))
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
        return redirect(302, ctx.url(_cross_host_target(web), "/"))
    return not_found()


HANDLERS: dict[str, Handler] = {
    "redirects": _redirects,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe(site: Site) -> Facts:
    base = site.base
    redirects = {
        "chain": [base + f"/chain/{i}" for i in range(len(CHAIN_STATUSES))]
        + [base + "/final.html"],
        "long": [base + f"/long/{i}" for i in range(LONG_HOPS)] + [base + "/final-long.html"],
        "loop": [base + "/loop/a", base + "/loop/b"],
        "self": base + "/self",
        "relative": [base + "/rel", base + "/final.html"],
        "cross_host": [
            base + "/to-h0",
            f"{site.scheme}://{_cross_host_target(site.web)}:{site.link_port}/",
        ],
    }
    notes = {"redirects": redirects, "beyond_hop_cap": [base + "/final-long.html"]}
    return Facts(["/", "/final.html"], notes=notes)


DESCRIBERS: dict[str, Describer] = {"redirects": _describe}
