"""What every special kind builds on: small pages, robots files, shared bytes.

A special host is a small site of its own; these helpers give its pages (a title,
deterministic text, a list of links), its robots.txt response, and the common case
of a few pages that all link to each other. ``Handler`` is the type of every
kind's handler (:mod:`crawlkit.testweb.specials` dispatches to them).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from crawlkit.testweb import textgen
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, rng_for

__all__ = [
    "AGENT",
    "ALLOW_ALL",
    "PDF",
    "Handler",
    "html_page",
    "page",
    "robots_file",
    "simple_site",
]

Handler = Callable[[HostContext, Web, Host, Request], Response]
"""A special kind's behaviour: the response of ``host`` (of that kind) to a request."""

ALLOW_ALL = b"User-agent: *\nDisallow:\n"
AGENT = "crawlkit"  # the agent token the manifest's allowed pages are written for

# The smallest valid PDF: served by the robots-rules and types hosts.
PDF = (b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]"
       b"/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n")  # fmt: skip


def page(title: str, links: list[tuple[str, str]], seed: object, paras: int = 3) -> bytes:
    """An HTML page: ``title``, ``paras`` paragraphs of text chosen by ``seed``, and
    a list of ``links`` as (href, text)."""
    rng = rng_for("special-text", seed)
    body = "".join(f"<p>{textgen.paragraph(rng)}</p>\n" for _ in range(paras))
    items = "".join(f'<li><a href="{html.escape(h)}">{html.escape(t)}</a></li>\n' for h, t in links)
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
        f"{body}<ul>\n{items}</ul>\n</body></html>\n"
    ).encode()


def html_page(body: bytes, **kw: Any) -> Response:
    """A 200 response with an HTML ``body`` (``kw``: more :class:`Response` fields)."""
    return Response(200, body, **kw)


def robots_file(body: bytes) -> Response:
    """A 200 robots.txt response."""
    return Response(200, body, content_type="text/plain; charset=utf-8")


def simple_site(
    ctx: HostContext, host: Host, req: Request, paths: list[str], robots: bytes | None
) -> Response:
    """Serve ``paths`` (each a small page linking to all the others), and ``robots``
    as robots.txt unless it is None (then robots.txt is up to the caller: 404 here)."""
    if req.route == "/robots.txt" and robots is not None:
        return robots_file(robots)
    if req.path not in paths and req.route not in paths:
        return not_found()
    links = [(p, f"page {p}") for p in paths if p != req.path]
    return html_page(page(f"{host.name} {req.path}", links, (host.name, req.path)))
