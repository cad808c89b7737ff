"""`crawlkit archive` on a real site's structure: a part of formats.kaitai.io (the Kaitai
Struct format gallery, a generated static site) served from its files on loopback.

The site is served by ``crawlkit testweb --files`` (its request log judges the crawl).
The files are public data of another project, so they are not in this repository: the
test reads them from ``$CRAWLKIT_REAL_SITE`` or tests/data/real-site/formats.kaitai.io/
(git-ignored), and skips, saying how to get them, when neither holds them.
tests/data/real-site/README.md says which part and how to rebuild it.

The pages link as real sites do (``../``, ``index.html`` beside ``./``, protocol-relative
``//host/`` links, links to source files and to an SVG, a cross-reference page naming
every format, of which most are not in the part served: 404s). The test walks the
files itself with the standard library's HTML parser to find what a crawler must
reach, then judges the archive from the server's log and the WARC files: every
reachable URL asked once, nothing else, one request at a time with the gap, and every
page in the WARC with the bytes the server sent.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlsplit

import pytest
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

SITE = Path(
    os.environ.get("CRAWLKIT_REAL_SITE")
    or Path(__file__).resolve().parents[1] / "data" / "real-site" / "formats.kaitai.io"
)
GAP = 0.05  # seconds: the --min-delay the crawl is given, and what the log must show
# The server stamps an answer's end when its event loop runs again after the write:
# late by a time slice or two on a loaded machine, which makes a gap look that much
# shorter.
JITTER = 0.02


class _Refs(HTMLParser):
    """The links a crawler follows (``<a>``, ``<area>``) and the requisites an archive
    fetches (stylesheets, images, scripts) of one page, as written."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[str] = []
        self.requisites: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v for k, v in attrs if v is not None}
        if tag in ("a", "area") and "href" in a:
            self.links.append(a["href"])
        elif tag == "link" and "stylesheet" in a.get("rel", "").lower().split() and "href" in a:
            self.requisites.append(a["href"])
        elif tag in ("img", "script") and "src" in a:
            self.requisites.append(a["src"])


def _file_of(root: Path, path: str) -> Path | None:
    """The file a static server sends for ``path`` (a directory's index.html)."""
    local = root / unquote(path).lstrip("/")
    if path.endswith("/"):
        local = local / "index.html"
    return local if local.is_file() else None


def _reachable(root: Path, start: str) -> tuple[set[str], set[str]]:
    """Paths on ``start``'s origin a crawler must ask for from ``start``: the pages and
    files linked, found or not (a breadth-first walk of the files), and the requisites
    of the pages found."""
    origin = urlsplit(start).netloc
    pages, requisites = {start}, set()
    queue = [start]
    while queue:
        url = queue.pop()
        path = urlsplit(url).path or "/"
        local = _file_of(root, path)
        if local is None or local.suffix != ".html":
            continue
        refs = _Refs()
        refs.feed(local.read_text("utf-8", "replace"))
        for href, into in [(h, pages) for h in refs.links] + [
            (h, requisites) for h in refs.requisites
        ]:
            target = urldefrag(urljoin(url, href.strip()))[0]
            parts = urlsplit(target)
            if parts.scheme != "http" or parts.netloc != origin or target in into:
                continue
            into.add(target)
            if into is pages:
                queue.append(target)
    return {urlsplit(u).path for u in pages}, {urlsplit(u).path for u in requisites}


@pytest.mark.skipif(
    not (SITE / "index.html").is_file(),
    reason=f"the site's files are not in {SITE} (tests/data/real-site/README.md: how to get them)",
)
def test_archive_takes_every_page_of_a_real_site_once(tmp_path: Path) -> None:
    root = SITE
    with start_testweb(tmp_path, "--hosts", "0", "--special", "none", "--files", str(root)) as web:
        start = web.url("files.test")
        pages, requisites = _reachable(root, start)
        out = tmp_path / "coll"
        args = ["archive", start, str(out), "--allow-net", "127.0.0.0/9"]
        args += ["--hosts-file", str(web.hosts_file)]
        # --dns-server: the CDN hosts the pages name are looked up nowhere but here
        args += ["--min-delay", f"{GAP}s", "--delay-factor", "0", "--dns-server", "127.0.0.1:9"]
        done = crawlkit(*args)
        requests = web.requests()
    assert done.code == 0, done.stderr
    # The part holds 5 formats of 185: the cross-reference and index pages link the
    # rest, which the server does not have.
    found = {p for p in pages if _file_of(root, p) is not None}
    assert found and len(pages) > len(found)

    asked = Counter(r["path"] for r in requests)
    assert [p for p, n in asked.items() if n > 1] == []
    assert set(asked) == pages | requisites | {"/robots.txt"}
    status = {r["path"]: r["status"] for r in requests}
    assert {p for p in pages if status[p] == 200} == found

    # One request at a time, each at least the gap after the last answer.
    ordered = sorted(requests, key=lambda r: r["t_start"])
    gaps = [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(ordered)]
    assert min(gaps) >= GAP - JITTER, sorted(gaps)[:5]

    # Every page found is archived with the bytes the server sent: in a response
    # record, or in a revisit naming the response of the same bytes (./ and index.html).
    bodies: dict[str, bytes] = {}
    same_as: dict[str, str] = {}
    for warc in sorted(out.glob("warc/*.warc.gz")):
        with open(warc, "rb") as f:
            for record in ArchiveIterator(f):
                path = urlsplit(record.rec_headers.get_header("WARC-Target-URI") or "").path
                if record.rec_type == "response":
                    bodies[path] = record.content_stream().read()
                elif record.rec_type == "revisit":
                    refers = record.rec_headers.get_header("WARC-Refers-To-Target-URI")
                    same_as[path] = urlsplit(refers or "").path
    for path, original in same_as.items():
        bodies.setdefault(path, bodies.get(original, b""))
    for path in found:
        assert bodies.get(path) == _file_of(root, path).read_bytes(), path  # type: ignore[union-attr]
