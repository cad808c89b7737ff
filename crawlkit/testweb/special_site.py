"""What every special kind builds on: small pages, robots files, manifest facts.

A special host is a small site of its own; these helpers give its pages (a title,
deterministic text, a list of links), its robots.txt response, and the common case
of a few pages that all link to each other.

Each kind has two functions, gathered by :mod:`crawlkit.testweb.specials`: a
``Handler`` (the host's response to a request) and a ``Describer`` (the host's
:class:`Facts` for ``manifest.json``: its pages, which robots.txt forbids, what the
tests need to know), which sees where the host is served as a :class:`Site`.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlkit.testweb import textgen
from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, rng_for

__all__ = [
    "AGENT",
    "ALLOW_ALL",
    "PDF",
    "Describer",
    "Facts",
    "Handler",
    "Site",
    "html_page",
    "page",
    "robots_entry",
    "robots_file",
    "simple_site",
]

Handler = Callable[[HostContext, Web, Host, Request], Response]
"""A special kind's behaviour: the response of ``host`` (of that kind) to a request."""

ALLOW_ALL = b"User-agent: *\nDisallow:\n"
AGENT = "crawlkit"  # the agent token the manifest's allowed pages are written for

# The smallest valid PDF: served by the robots-rules and types hosts.
PDF = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n2 0 obj<</Type/Pages/Kids[]"
    b"/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


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


# -- manifest facts ---------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Site:
    """One host as the manifest names it: links use ``scheme`` and ``link_port``
    (https and the TLS port when the web is served with --tls)."""

    web: Web
    host: Host
    scheme: str
    port: int  # the plain HTTP port
    link_port: int
    directory: Path  # the web's directory, for files an entry points at

    @property
    def base(self) -> str:
        """``scheme://name:port``, the prefix of every URL of the host."""
        return f"{self.scheme}://{self.host.name}:{self.link_port}"

    @property
    def robots_url(self) -> str:
        return self.base + "/robots.txt"


@dataclass(slots=True)
class Facts:
    """A special host's manifest entry beyond its name and address (see
    :mod:`crawlkit.testweb.manifest`). Paths are relative to the host's root;
    ``notes`` hold whole URLs."""

    pages: list[str]
    disallowed: list[str] = field(default_factory=list)
    hostile: list[str] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)
    robots: dict[str, Any] | None = None  # None: robots.txt is ALLOW_ALL, answering 200
    infinite: bool = False  # a trap: ``pages`` lists only its entry pages


Describer = Callable[[Site], Facts]
"""A special kind's manifest facts for one of its hosts."""


def robots_entry(
    url: str,
    status: int | None,
    text: str | None = None,
    crawl_delay: float | None = None,
    file: str | None = None,
) -> dict[str, Any]:
    """The manifest's ``robots`` of a host: the URL, the status it answers, its
    Crawl-delay, and its text (or the ``file`` holding it, when it is big)."""
    out: dict[str, Any] = {"url": url, "status": status, "crawl_delay": crawl_delay}
    if file:
        out["file"] = file
    else:
        out["text"] = text
    return out
