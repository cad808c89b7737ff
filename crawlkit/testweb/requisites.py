"""The ``requisites`` special: pages that carry every kind of page requisite.

Two hosts per instance: ``requisites-K.test``, a two-page site whose pages use every
requisite element crawlkit extracts (img src/srcset, picture source, link
rel=stylesheet|icon|preload|modulepreload|manifest, script, video/audio/source/track,
poster, object, embed, input type=image, SVG image, background, style attributes and
``<style>`` blocks with ``url()`` and ``@import``), stylesheets that import each other
(one imports itself, and ``deep-0.css`` starts a chain of :data:`DEEP_CHAIN` imports),
and ``assets-K.test``, another site (outside ``--scope site``) that serves a script,
an image and a stylesheet whose ``url()`` points at a second image there.

Every requisite answers 200 with a body of its type, so an archive can be checked
for each. :func:`describe` gives the manifest facts: ``requisites`` maps each page
to every requisite it needs (direct and through its stylesheets, the deep chain's
first file only) and ``deep_chain`` lists the chain, which a crawler must cut short.
"""

from __future__ import annotations

from typing import Any

from crawlkit.testweb.graph import Host, Web
from crawlkit.testweb.model import Request, Response, not_found

__all__ = ["DEEP_CHAIN", "describe", "handle_assets", "handle_requisites"]

DEEP_CHAIN = 30  # deep-0.css imports deep-1.css ... up to deep-30.css

_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)
_TYPES = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".ico": "image/x-icon",
    ".svg": "image/svg+xml",
    ".js": "text/javascript",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mp3": "audio/mpeg",
    ".vtt": "text/vtt",
    ".swf": "application/x-shockwave-flash",
    ".webmanifest": "application/manifest+json",
}

# Same-host requisites of "/" that are plain files (not stylesheets).
_HOME_FILES = [
    "/favicon.ico",
    "/font/preload.woff2",
    "/js/mod.js",
    "/app.webmanifest",
    "/js/app.js",
    "/img/bg.gif",
    "/img/logo.png",
    "/img/logo-2x.png",
    "/img/pic.webp",
    "/img/pic.jpg",
    "/media/v.mp4",
    "/media/poster.jpg",
    "/media/v.webm",
    "/media/subs.vtt",
    "/media/a.mp3",
    "/obj/o.svg",
    "/obj/e.swf",
    "/img/btn.png",
    "/img/svg.png",
    "/img/inline.png",
    "/img/block.png",
]
_STYLESHEETS = {
    "/css/site.css": '@import "/css/theme.css";\n@import "site.css";\n'
    ".hero { background: url(../img/css-bg.png) }\n",
    "/css/theme.css": "@font-face { font-family: F; src: url(/font/f.woff2) format('woff2') }\n",
    "/css/block-import.css": ".y { background-image: url('/img/from-block.png') }\n",
}
# What the stylesheets above pull in, besides each other.
_CSS_FILES = ["/img/css-bg.png", "/font/f.woff2", "/img/from-block.png"]
_P2_FILES = ["/img/p2.png"]
_ASSET_FILES = ["/lib.js", "/cdn.png", "/cdn-bg.png"]
_ASSET_CSS = "/cdn.css"


def _assets_host(host: Host) -> str:
    return f"assets-{host.ordinal}.test"


def _home(ctx: Any, host: Host) -> bytes:
    assets = ctx.url(_assets_host(host), "")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Every requisite</title>
<link rel="stylesheet" href="/css/site.css">
<link rel="stylesheet" href="/css/deep-0.css">
<link rel="icon" href="/favicon.ico">
<link rel="preload" as="font" href="/font/preload.woff2" crossorigin>
<link rel="modulepreload" href="/js/mod.js">
<link rel="manifest" href="/app.webmanifest">
<script src="/js/app.js"></script>
<script src="{assets}/lib.js"></script>
<link rel="stylesheet" href="{assets}/cdn.css">
<style>@import "/css/block-import.css"; .hero {{ background: url(/img/block.png) }}</style>
</head><body background="/img/bg.gif">
<h1>Every requisite</h1>
<img src="/img/logo.png" srcset="/img/logo-2x.png 2x" alt="logo">
<img src="{assets}/cdn.png" alt="from another site">
<picture><source srcset="/img/pic.webp" type="image/webp"><img src="/img/pic.jpg" alt=""></picture>
<video src="/media/v.mp4" poster="/media/poster.jpg"><source src="/media/v.webm" type="video/webm">
<track src="/media/subs.vtt" kind="subtitles"></video>
<audio src="/media/a.mp3"></audio>
<object data="/obj/o.svg" type="image/svg+xml"></object><embed src="/obj/e.swf">
<form><input type="image" src="/img/btn.png" alt="go"></form>
<svg width="10" height="10"><image href="/img/svg.png" width="10" height="10"/></svg>
<div style="background: url('/img/inline.png')">styled</div>
<p><a href="/p2.html">The second page</a></p>
</body></html>
""".encode()


_P2 = b"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Second page</title>
<link rel="stylesheet" href="/css/site.css"></head>
<body><h1>Second page</h1><img src="/img/p2.png" alt=""><p><a href="/">home</a></p></body></html>
"""


def _file(path: str) -> Response:
    ext = path[path.rfind(".") :]
    body = _PNG if ext == ".png" else f"{path}\n".encode() * 4
    return Response(200, body, content_type=_TYPES.get(ext, "application/octet-stream"))


def handle_requisites(ctx: Any, web: Web, host: Host, req: Request) -> Response:
    """The site of pages with every requisite kind."""
    r = req.route
    if r == "/robots.txt":
        return Response(200, b"User-agent: *\nDisallow:\n", content_type="text/plain")
    if r == "/":
        return Response(200, _home(ctx, host))
    if r == "/p2.html":
        return Response(200, _P2)
    if r in _STYLESHEETS:
        return Response(200, _STYLESHEETS[r].encode(), content_type=_TYPES[".css"])
    if r.startswith("/css/deep-") and r.endswith(".css"):
        try:
            n = int(r[len("/css/deep-") : -len(".css")])
        except ValueError:
            return not_found()
        if not 0 <= n <= DEEP_CHAIN:
            return not_found()
        body = f'@import "deep-{n + 1}.css";\n' if n < DEEP_CHAIN else "/* the end */\n"
        return Response(200, body.encode(), content_type=_TYPES[".css"])
    if r in _HOME_FILES or r in _CSS_FILES or r in _P2_FILES:
        return _file(r)
    return not_found()


def handle_assets(ctx: Any, web: Web, host: Host, req: Request) -> Response:
    """The other site: a script, images and a stylesheet the pages borrow."""
    r = req.route
    if r == "/robots.txt":
        return Response(200, b"User-agent: *\nDisallow:\n", content_type="text/plain")
    if r == _ASSET_CSS:
        return Response(200, b".z { background: url(cdn-bg.png) }\n", content_type=_TYPES[".css"])
    if r in _ASSET_FILES:
        return _file(r)
    return not_found()


def describe(host: Host, base: str, port: int) -> tuple[list[str], dict[str, Any]]:
    """(page paths, manifest notes) of one host of the kind (see the module docstring)."""
    if host.kind == "assets":
        return [], {"serves": [base + p for p in [*_ASSET_FILES, _ASSET_CSS]]}
    # the assets site on the same scheme and port as this one (https with --tls), as
    # the pages link it (ctx.url)
    scheme, _, netloc = base.partition("://")
    assets = f"{scheme}://{_assets_host(host)}:{netloc.rpartition(':')[2] or port}"
    site_css = [base + p for p in _STYLESHEETS]
    home = (
        [base + p for p in _HOME_FILES]
        + site_css
        + [base + p for p in _CSS_FILES]
        + [base + "/css/deep-0.css"]
        + [assets + p for p in [*_ASSET_FILES, _ASSET_CSS]]
    )
    p2 = [base + p for p in _P2_FILES] + [base + "/css/site.css", base + "/css/theme.css"]
    p2 += [base + "/img/css-bg.png", base + "/font/f.woff2"]
    notes = {
        "requisites": {base + "/": sorted(home), base + "/p2.html": sorted(p2)},
        "deep_chain": [base + f"/css/deep-{n}.css" for n in range(DEEP_CHAIN + 1)],
        "other_site": assets + "/",
    }
    return ["/", "/p2.html"], notes
