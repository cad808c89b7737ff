"""Crawler traps: an endless calendar, session ids in every link, a link farm.

Each page logs its ``depth`` (how far into the trap it is), so a test can see from
the server's request log how deep a crawler went.
"""

from __future__ import annotations

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, stable_hash
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

__all__ = ["CAL_START", "DESCRIBERS", "FARM_FANOUT", "HANDLERS", "SESSION_ITEMS"]

CAL_START = (2026, 11)


def _month_path(y: int, m: int) -> str:
    return f"/calendar/{y:04d}/{m:02d}/"


def _calendar(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route == "/":
        return html_page(page("Events", [(_month_path(*CAL_START), "this month")], host.name))
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
    return html_page(page(title, links, host.name, paras=1), log={"depth": depth})


SESSION_ITEMS = 10


def _session_trap(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
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
        route.startswith("/catalog/item-")
        and route.endswith(".html")
        and route[14:-5].isdigit()
        and int(route[14:-5]) < SESSION_ITEMS
    ):
        return not_found()
    token = f"{depth + 1}x{stable_hash('sid', req.path) % 10**8:08d}"
    links = []
    for k in range(SESSION_ITEMS):
        if k % 2:
            links.append((f"/catalog/item-{k}.html?sid={token}", f"item {k}"))
        else:
            links.append((f"/s/{token}/catalog/item-{k}.html", f"item {k}"))
    links.append((f"/?sid={token}", "home"))
    return html_page(page(f"Catalog {route}", links, (host.name, route)), log={"depth": depth})


def _token_depth(token: str) -> int:
    head = token.split("x", 1)[0]
    return int(head) if head.isdigit() else 0


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
        return robots_file(ALLOW_ALL)
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
    body = page(f"Best deals {n}", links, (host.name, n % 97), paras=1)
    return html_page(body, log={"depth": _farm_depth(n)})


HANDLERS: dict[str, Handler] = {
    "calendar": _calendar,
    "session-trap": _session_trap,
    "link-farm": _link_farm,
}


# -- manifest facts: pages lists only the entry pages of a trap ----------------------------
def _describe_calendar(site: Site) -> Facts:
    trap = "/calendar/YYYY/MM/[DD/] links to the next and previous month forever"
    return Facts(["/"], notes={"trap": trap}, infinite=True)


def _describe_session_trap(site: Site) -> Facts:
    trap = (
        "every link carries a new session id: ?sid=TOKEN (dropped by default "
        "canonicalization) or /s/TOKEN/... in the path (not dropped)"
    )
    pages = ["/"] + [f"/catalog/item-{i}.html" for i in range(SESSION_ITEMS)]
    return Facts(pages, notes={"trap": trap, "session_param": "sid"}, infinite=True)


def _describe_link_farm(site: Site) -> Facts:
    trap = (
        f"each page links to {FARM_FANOUT} new pages on the other farm hosts, "
        "forever; all farm hosts share one address"
    )
    farm = [h.name for h in site.web.specials_of.get("link-farm", [])]
    return Facts(["/"], notes={"trap": trap, "farm": farm}, infinite=True)


DESCRIBERS: dict[str, Describer] = {
    "calendar": _describe_calendar,
    "session-trap": _describe_session_trap,
    "link-farm": _describe_link_farm,
}
