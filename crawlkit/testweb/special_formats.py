"""Kinds about formats: responses of many content types, and every sitemap format.

``sitemaps`` names its sitemaps in robots.txt: an index pointing at an XML and a
gzipped sitemap, and a text sitemap; some pages are listed there and linked nowhere.
"""

from __future__ import annotations

import gzip

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import HostContext, Request, Response, not_found, stable_hash
from crawlkit.testweb.special_site import (
    ALLOW_ALL,
    PDF,
    Describer,
    Facts,
    Handler,
    Site,
    html_page,
    page,
    robots_entry,
    robots_file,
)

__all__ = [
    "DESCRIBERS",
    "HANDLERS",
    "SITEMAP_A",
    "SITEMAP_B",
    "SITEMAP_LINKED",
    "SITEMAP_T",
    "TYPES",
    "lastmod",
]

_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
TYPES: dict[str, tuple[str | None, bytes]] = {
    "/doc.pdf": ("application/pdf", PDF),
    "/img.png": ("image/png", _PNG),
    "/data.json": ("application/json", b'{"links": ["/doc.pdf"]}\n'),
    "/notes.txt": ("text/plain; charset=utf-8", b"plain text, http://types-0.test/ not a link\n"),
    "/feed.xml": (
        "application/rss+xml",
        b'<?xml version="1.0"?><rss version="2.0"><channel>'
        b"<title>feed</title><item><link>/doc.pdf</link></item></channel></rss>\n",
    ),
    "/blob": ("application/octet-stream", bytes(range(256)) * 4),
    "/html-as-text": ("text/plain", b'<html><body><a href="/doc.pdf">x</a></body></html>\n'),
    "/no-type": (None, b"<html><body><p>no content type</p></body></html>\n"),
    "/page.xhtml": (
        "application/xhtml+xml",
        b'<?xml version="1.0"?><html xmlns='
        b'"http://www.w3.org/1999/xhtml"><body><a href="/">home</a></body></html>\n',
    ),
}


def _types(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    if req.route == "/robots.txt":
        return robots_file(ALLOW_ALL)
    if req.route == "/":
        return html_page(page("Files", [(p, p) for p in TYPES], host.name))
    if req.route in TYPES:
        ctype, body = TYPES[req.route]
        return Response(200, body, content_type=ctype)
    return not_found()


SITEMAP_A = [f"/sm/a-{k}.html" for k in range(5)]
SITEMAP_B = [f"/sm/b-{k}.html" for k in range(5)]
SITEMAP_T = [f"/sm/t-{k}.html" for k in range(3)]
SITEMAP_LINKED = ["/", "/sm/a-0.html"]


def lastmod(path: str) -> str:
    """The ``<lastmod>`` the sitemaps give ``path`` (a fixed day of October 2026)."""
    day = 1 + stable_hash("lastmod", path) % 28
    return f"2026-10-{day:02d}"


def _urlset(ctx: HostContext, host: Host, paths: list[str]) -> bytes:
    items = "".join(
        f"<url><loc>{ctx.url(host.name, p)}</loc><lastmod>{lastmod(p)}</lastmod>"
        f"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
        for p in paths
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/'
        f'schemas/sitemap/0.9">\n{items}</urlset>\n'
    ).encode()


def _sitemaps(ctx: HostContext, web: Web, host: Host, req: Request) -> Response:
    r = req.route
    if r == "/robots.txt":
        text = (
            f"User-agent: *\nDisallow:\n\nSitemap: {ctx.url(host.name, '/sitemap_index.xml')}"
            f"\nSitemap: {ctx.url(host.name, '/sitemap.txt')}\n"
        )
        return robots_file(text.encode())
    if r == "/sitemap_index.xml":
        items = "".join(
            f"<sitemap><loc>{ctx.url(host.name, p)}</loc><lastmod>2026-10-30</lastmod></sitemap>\n"
            for p in ("/sitemap-a.xml", "/sitemap-b.xml.gz")
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>\n<sitemapindex xmlns="http://www.'
            f'sitemaps.org/schemas/sitemap/0.9">\n{items}</sitemapindex>\n'
        ).encode()
        return Response(200, body, content_type="application/xml")
    if r == "/sitemap-a.xml":
        return Response(200, _urlset(ctx, host, SITEMAP_A), content_type="application/xml")
    if r == "/sitemap-b.xml.gz":
        body = gzip.compress(_urlset(ctx, host, SITEMAP_B), mtime=0)
        return Response(200, body, content_type="application/x-gzip")
    if r == "/sitemap.txt":
        body = "".join(ctx.url(host.name, p) + "\n" for p in SITEMAP_T).encode()
        return Response(200, body, content_type="text/plain; charset=utf-8")
    if r == "/":
        return html_page(page("Sitemapped site", [("/sm/a-0.html", "first")], host.name))
    if r in SITEMAP_A or r in SITEMAP_B or r in SITEMAP_T:
        return html_page(page(f"Listed {r}", [("/", "home")], (host.name, r)))
    return not_found()


HANDLERS: dict[str, Handler] = {
    "types": _types,
    "sitemaps": _sitemaps,
}


# -- manifest facts ---------------------------------------------------------------------
def _describe_types(site: Site) -> Facts:
    content_types = {site.base + p: t for p, (t, _) in TYPES.items()}
    return Facts(["/", *TYPES], notes={"content_types": content_types})


def _describe_sitemaps(site: Site) -> Facts:
    base = site.base
    listed = SITEMAP_A + SITEMAP_B + SITEMAP_T
    text = (
        f"User-agent: *\nDisallow:\n\nSitemap: {base}/sitemap_index.xml"
        f"\nSitemap: {base}/sitemap.txt\n"
    )
    notes = {
        "sitemaps": [
            base + p
            for p in ("/sitemap_index.xml", "/sitemap-a.xml", "/sitemap-b.xml.gz", "/sitemap.txt")
        ],
        "sitemap_only": [base + p for p in listed if p not in SITEMAP_LINKED],
        "lastmod": {base + p: lastmod(p) for p in listed},
    }
    return Facts(["/", *listed], notes=notes, robots=robots_entry(site.robots_url, 200, text))


DESCRIBERS: dict[str, Describer] = {"types": _describe_types, "sitemaps": _describe_sitemaps}
