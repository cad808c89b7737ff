"""Ordinary pages: realistic HTML with boilerplate, text and about 40 links.

Contract: ``render_page(web, host, p, port)`` is a pure function; the same arguments
give the same bytes. Every link on an ordinary page resolves (after fragment removal
and crawlkit's default canonicalization: tracking parameters dropped, query sorted)
to a real page of the web, so the set of reachable canonical URLs is exactly
``page_url`` over all pages (plus the special hosts' roots linked from ``h0``).
Link forms vary on purpose: absolute path, absolute URL, protocol-relative, relative
(``page-5.html``, ``../docs/page-5.html``), with ``<base href>`` on some pages, with
fragments, tracking parameters and reordered queries.
"""

from __future__ import annotations

import html
import re

from crawlkit.testweb import textgen
from crawlkit.testweb.graph import SECTIONS, Host, Web
from crawlkit.testweb.model import Response, not_found, rng_for, stable_hash

ORDINARY_ROBOTS = b"# An ordinary site: everything may be crawled.\nUser-agent: *\nDisallow:\n"


def robots_text(web: Web, host: Host) -> bytes | None:
    """The robots.txt of ordinary ``host``, or None when it answers 404."""
    if host.robots == "404":
        return None
    if host.robots == "delay":
        delay = f"{web.config.crawl_delay:g}"
        return ORDINARY_ROBOTS + f"Crawl-delay: {delay}\n".encode()
    return ORDINARY_ROBOTS


def robots_response(web: Web, host: Host) -> Response:
    """What ``/robots.txt`` of ordinary ``host`` answers (see :func:`robots_text`)."""
    body = robots_text(web, host)
    if body is None:
        return not_found()
    return Response(200, body, content_type="text/plain; charset=utf-8")


_SECTION_RE = re.compile(r"^/([a-z]+)/page-(\d+)\.html$")
_TRACKING = (
    "utm_source=newsletter&utm_medium=email",
    "utm_campaign=spring&gclid=abc123",
    "fbclid=IwAR0xyz",
)


def page_path(p: int) -> str:
    """The canonical path (and query) of page ``p`` of an ordinary host."""
    if p == 0:
        return "/"
    if p % 7 == 3:
        return f"/item?id={p}&lang=en"
    return f"/{SECTIONS[p % len(SECTIONS)]}/page-{p}.html"


def page_number(route: str, query: str, n_pages: int) -> int | None:
    """The page a request addresses, or None (404). Unknown query parameters are
    ignored, as most real servers do, so tracking parameters still reach the page."""
    if route == "/":
        p = 0
    elif route == "/item":
        ident = None
        for part in query.split("&"):
            key, _, value = part.partition("=")
            if key == "id" and value.isdigit():
                ident = int(value)
                break
        if ident is None or ident % 7 != 3:
            return None
        p = ident
    else:
        m = _SECTION_RE.match(route)
        if not m:
            return None
        p = int(m.group(2))
        if p == 0 or p % 7 == 3 or SECTIONS[p % len(SECTIONS)] != m.group(1):
            return None
    return p if p < n_pages else None


def _dir_of(path: str) -> str:
    if path.startswith("/item") or path == "/":
        return "/"
    return path[: path.rindex("/") + 1]


def _relative(target: str, base_dir: str) -> str:
    """A relative reference to ``target`` from a document whose base dir is given."""
    if base_dir == "/":
        return target[1:] if target != "/" else "./"
    if target.startswith(base_dir):
        return target[len(base_dir) :]
    return "../" + target[1:] if target != "/" else "../"


def _link_form(
    rng_val: int, target_path: str, host: str, port: int, base_dir: str, scheme: str = "http"
) -> str:
    form = rng_val % 10
    if form == 0:
        return f"{scheme}://{host}:{port}{target_path}"
    if form == 1:
        return f"//{host}:{port}{target_path}"
    if form in (2, 3):
        return _relative(target_path, base_dir)
    if form == 4:
        return target_path + "#" + ("top", "comments", "section-2")[rng_val % 3]
    if form == 5:
        sep = "&" if "?" in target_path else "?"
        return target_path + sep + _TRACKING[rng_val % len(_TRACKING)]
    if form == 6 and target_path.startswith("/item?"):
        ident = target_path.split("id=")[1].split("&")[0]
        return f"/item?lang=en&id={ident}"
    return target_path


def special_roots(web: Web) -> list[Host]:
    """Special hosts linked from ``h0.test``'s home page (all but private ones)."""
    return [h for h in web.hosts if h.kind not in ("ordinary", "private")]


def page_links(web: Web, host: Host, p: int) -> list[tuple[str, str]]:
    """(host name, canonical path) of every page ``p`` links to (for tests/manifest)."""
    out: list[tuple[str, str]] = []
    for kind, target_host, path, _href, _text in _links(web, host, p, 0, "/"):
        if kind != "external":
            out.append((target_host, path))
    return out


def _links(
    web: Web, host: Host, p: int, port: int, base_dir: str, scheme: str = "http"
) -> list[tuple[str, str, str, str, str]]:
    """(area, target host, canonical path, href, anchor text) for page ``p``."""
    n = host.pages
    rng = rng_for("links", web.config.seed, host.index, p)
    links: list[tuple[str, str, str, str, str]] = []

    def add(area: str, target_host: str, q_path: str) -> None:
        if target_host == host.name:
            href = _link_form(rng.getrandbits(16), q_path, target_host, port, base_dir, scheme)
        else:
            href = f"{scheme}://{target_host}:{port}{q_path}"
        links.append((area, target_host, q_path, href, textgen.title(rng)))

    for q in range(min(n, 7)):
        add("nav", host.name, page_path(q))
    for q in (2 * p + 1, 2 * p + 2):
        if q < n:
            add("main", host.name, page_path(q))
    for _ in range(22):
        # Skewed towards a host's low-numbered pages, like real hubs.
        q = int(n * rng.random() ** 2)
        add("main", host.name, page_path(q))
    for _ in range(5):
        other = web.pick_host(rng.random(), host.index)
        if other is None:
            break
        q = 0 if rng.random() < 0.6 else int(other.pages * rng.random() ** 2)
        add("aside", other.name, page_path(q))
    if p == 0:
        for child in web.tree_children(host):
            add("aside", child.name, "/")
    if host.index == 0 and p == 0:
        for special in special_roots(web):
            links.append(
                ("partners", special.name, "/", f"{scheme}://{special.name}:{port}/", special.kind)
            )
    return links


def render_page(web: Web, host: Host, p: int, port: int, scheme: str = "http") -> bytes:
    """The bytes of page ``p`` of ordinary ``host`` (see module docstring); absolute
    links use ``scheme`` and ``port``."""
    cfg = web.config
    rng = rng_for("page", cfg.seed, host.index, p)
    path = page_path(p)
    base_dir = _dir_of(path)
    base_tag = ""
    if p % 11 == 5:
        # A <base href> that differs from the page's own directory: relative links
        # below are written against it, so a crawler that ignores <base> goes astray.
        base_dir = f"/{SECTIONS[(p + 1) % len(SECTIONS)]}/"
        base_tag = f'<base href="{base_dir}">\n'
    brand = textgen.title(rng_for("brand", cfg.seed, host.index))
    title = textgen.title(rng)
    links = _links(web, host, p, port, base_dir, scheme)
    by_area: dict[str, list[str]] = {}
    for area, _th, _path, href, anchor in links:
        by_area.setdefault(area, []).append(
            f'<a href="{html.escape(href)}">{html.escape(anchor)}</a>'
        )
    out: list[str] = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        f"<title>{title} — {brand}</title>\n",
        f'<meta name="description" content="{html.escape(textgen.sentence(rng))}">\n',
        base_tag,
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n</head>\n',
        f'<body>\n<header id="top"><div class="logo">{brand}</div>\n<nav><ul>\n',
        "".join(f"<li>{a}</li>\n" for a in by_area.get("nav", [])),
        f"</ul></nav></header>\n<main>\n<article>\n<h1>{title}</h1>\n",
        f'<p class="byline">By {textgen.title(rng)} · page {p} of {host.name}</p>\n',
    ]
    tail: list[str] = ["</article>\n</main>\n<aside>\n<h2>Elsewhere</h2>\n<ul>\n"]
    tail.extend(f"<li>{a}</li>\n" for a in by_area.get("aside", []))
    tail.append("</ul>\n")
    if by_area.get("partners"):
        tail.append("<h2>Partners</h2>\n<ul>\n")
        tail.extend(f"<li>{a}</li>\n" for a in by_area["partners"])
        tail.append("</ul>\n")
    # With a <base>, "#top" would resolve against the base, not this page.
    top = html.escape(path) + "#top" if base_tag else "#top"
    tail.append(
        f"</aside>\n<footer><p>© 2026 {brand}. {textgen.sentence(rng)}</p>"
        f'<p><a href="{top}">Back to top</a></p></footer>\n</body>\n</html>\n'
    )
    inline = by_area.get("main", [])
    size = sum(len(s) for s in out) + sum(len(s) for s in tail)
    budget = int(cfg.page_kb * 1024)
    # Spread the inline links so that small pages still carry all of them.
    per_para = max(1, -(-len(inline) // max(1, (budget - size) // 650)))
    para = 0
    while (size < budget or inline) and para < 100000:
        text = textgen.paragraph(rng)
        for _ in range(min(per_para, len(inline))):
            a = inline.pop()
            cut = text.find(" ", rng.randrange(len(text)))
            text = text[:cut] + " " + a + text[cut:] if cut > 0 else text + " " + a
        if para % 4 == 3:
            out.append(f"<h2>{textgen.title(rng)}</h2>\n")
        chunk = f"<p>{text}</p>\n"
        out.append(chunk)
        size += len(chunk)
        para += 1
    out.extend(tail)
    return "".join(out).encode("utf-8")


def last_modified(web: Web, host: Host, p: int) -> float:
    """A fixed Last-Modified for page ``p`` (a date in 2025, from the seed)."""
    return 1735689600.0 + float(stable_hash("lm", web.config.seed, host.index, p) % 31_000_000)
