"""Special hosts: the hostile and tricky parts of the web, one small handler each.

Every kind is switchable (``--special``); ``KINDS`` (:mod:`crawlkit.testweb.kinds`)
lists them with their default counts. A kind lives with its family, one module each,
every module giving its kinds' handlers in a ``HANDLERS`` table and their manifest
facts in a ``DESCRIBERS`` table (see :mod:`crawlkit.testweb.special_site`):

* :mod:`~crawlkit.testweb.special_robots`: robots-rules, robots-404, robots-503,
  robots-redirect, robots-big
* :mod:`~crawlkit.testweb.special_pace`: slow, status-429, status-503
* :mod:`~crawlkit.testweb.special_traps`: calendar, session-trap, link-farm
* :mod:`~crawlkit.testweb.special_duplicates`: duplicates, near-duplicates
* :mod:`~crawlkit.testweb.special_redirects`: redirects
* :mod:`~crawlkit.testweb.special_bodies`: gzip-bomb, huge, slow-drip, malformed
* :mod:`~crawlkit.testweb.special_formats`: types, sitemaps
* :mod:`~crawlkit.testweb.special_change`: conditional, changing
* :mod:`~crawlkit.testweb.special_network`: private, gateway, ipv6
* :mod:`~crawlkit.testweb.tls`: the ``tls-*`` kinds;
  :mod:`~crawlkit.testweb.requisites`: requisites, assets

A handler is a pure function of (server context, web, host, request) except where a
kind is *about* time or state (rate limits, changing pages, near-duplicate
timestamps). A describer gives what a crawler should make of a host (its pages,
which of them robots.txt allows, trap patterns, ...) for
:mod:`crawlkit.testweb.manifest`.
"""

from __future__ import annotations

from crawlkit.testweb import (
    requisites,
    special_bodies,
    special_change,
    special_duplicates,
    special_formats,
    special_network,
    special_pace,
    special_redirects,
    special_robots,
    special_traps,
    tls,
)
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response
from crawlkit.testweb.special_site import Describer, Facts, Handler, Site

__all__ = ["DESCRIBERS", "HANDLERS", "describe", "handle"]

HANDLERS: dict[str, Handler] = {
    **special_robots.HANDLERS,
    **special_pace.HANDLERS,
    **special_traps.HANDLERS,
    **special_duplicates.HANDLERS,
    **special_redirects.HANDLERS,
    **special_bodies.HANDLERS,
    **special_formats.HANDLERS,
    **special_change.HANDLERS,
    **special_network.HANDLERS,
    **dict.fromkeys(tls.TLS_KINDS, tls.handle),
    "requisites": requisites.handle_requisites,
    "assets": requisites.handle_assets,
}
"""Every special host kind (:attr:`Host.kind`) to its handler."""


def handle(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    """The response of special ``host`` to ``req``."""
    return HANDLERS[host.kind](ctx, web, host, req)


def _describe_tls(site: Site) -> Facts:
    http_base = f"http://{site.host.name}:{site.port}"
    pages, hostile, notes = tls.describe(site.host.kind, site.base, http_base)
    return Facts(pages, hostile=hostile, notes=notes)


def _describe_requisites(site: Site) -> Facts:
    pages, notes = requisites.describe(site.host, site.base, site.port)
    return Facts(pages, notes=notes)


DESCRIBERS: dict[str, Describer] = {
    **special_robots.DESCRIBERS,
    **special_pace.DESCRIBERS,
    **special_traps.DESCRIBERS,
    **special_duplicates.DESCRIBERS,
    **special_redirects.DESCRIBERS,
    **special_bodies.DESCRIBERS,
    **special_formats.DESCRIBERS,
    **special_change.DESCRIBERS,
    **special_network.DESCRIBERS,
    **dict.fromkeys(tls.TLS_KINDS, _describe_tls),
    "requisites": _describe_requisites,
    "assets": _describe_requisites,
}
"""Every special host kind to the function giving its manifest facts."""


def describe(site: Site) -> Facts:
    """The manifest facts of special host ``site.host``."""
    return DESCRIBERS[site.host.kind](site)
