"""ReplayWeb.page opens crawlkit's WACZ: every page and requisite comes from the archive.

A two-host site (`crawlkit testweb --special requisites`: CSS url() and @import, a web
font, img srcset, <picture>, scripts, a stylesheet and images on another host) is
crawled with `crawlkit crawl`, packed with `crawlkit wacz`, and opened in ReplayWeb.page
(npm `replaywebpage`, its built ui.js and sw.js served from a loopback HTTP server) in
headless Chromium driven by npm `playwright-core` (tests/replay/replay.mjs). For each
page the replay frame must show the page, everything the page asked for must have
come from the archive with status 200, and every requisite the site's manifest names
must be served from inside the replay with the bytes the server sent.

Needs `chromium` (Debian) and `npm install` in tests/replay (`.ci/run` installs both);
skips, saying which is missing, without them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import urlsplit

import pytest
from conftest import crawlkit, start_testweb

from crawlkit.stages.wacz import write_wacz

HERE = Path(__file__).resolve().parent
MODULES = HERE / "node_modules"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
NODE = shutil.which("node")

pytestmark = pytest.mark.skipif(
    not (
        CHROMIUM
        and NODE
        and (MODULES / "replaywebpage" / "sw.js").is_file()
        and (MODULES / "playwright-core").is_dir()
    ),
    reason="needs chromium, node and `npm install` in tests/replay (see .ci/run)",
)

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "application/javascript",
    ".wacz": "application/wacz",
}

_EMBED = """<!doctype html>
<html><head><meta charset="utf-8"><script src="/ui.js"></script></head>
<body><script>
const el = document.createElement("replay-web-page");
el.setAttribute("source", "/coll.wacz");
el.setAttribute("replayBase", "/replay/");
el.setAttribute("embed", "replayonly");
el.setAttribute("url", new URLSearchParams(location.search).get("url"));
el.style.cssText = "display: block; width: 1000px; height: 700px";
document.body.appendChild(el);
</script></body></html>
"""


# The replay app's page, as ReplayWeb.page's service worker serves it at replay/ once it
# controls the page; served here too for a frame that asks before it does (on a loaded
# machine the frame then got a 404 and stayed on it).
_REPLAY_INDEX = """<!doctype html>
<html><head><script src="./ui.js"></script></head>
<body><replay-app-main></replay-app-main></body></html>
"""


class _Files(BaseHTTPRequestHandler):
    """Serves a fixed set of files, with byte ranges (ReplayWeb.page reads a WACZ by
    ranges)."""

    files: ClassVar[dict[str, Path]] = {}

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def _answer(self, *, body: bool) -> None:
        path = self.files.get(urlsplit(self.path).path)
        if path is None:
            self.send_error(404)
            return
        size = path.stat().st_size
        start, end, status = 0, size - 1, 200
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        if m and (m.group(1) or m.group(2)):
            if m.group(1):
                start = int(m.group(1))
                end = min(int(m.group(2)), size - 1) if m.group(2) else size - 1
            else:
                start = max(size - int(m.group(2)), 0)
            status = 206
        self.send_response(status)
        self.send_header("Content-Type", _TYPES.get(path.suffix, "application/octet-stream"))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(end - start + 1))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        if body:
            with open(path, "rb") as f:
                f.seek(start)
                self.wfile.write(f.read(end - start + 1))

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve(files: dict[str, Path]) -> Iterator[str]:
    handler = type("Handler", (_Files,), {"files": files})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_replaywebpage_replays_every_page_and_requisite(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "3", "--special", "requisites") as web:
        site = web.hosts_of_kind("requisites")[0]
        state, warc_dir = tmp_path / "state", tmp_path / "warc"
        res = crawlkit(
            "crawl",
            site["root"],
            "--state",
            str(state),
            "--scope",
            "site",
            "--no-budgets",
            "--warc-dir",
            str(warc_dir),
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--min-delay",
            "0.05s",
        )
        assert res.code == 0, res.stderr
        requisites = site["notes"]["requisites"]
        # the crawl cuts the chain of imports at its bound (the browser asks for more)
        cut = set(site["notes"]["deep_chain"])
        wanted = {u for urls in requisites.values() for u in urls}
        served = {u: hashlib.sha256(web.get(u)[2]).hexdigest() for u in sorted(wanted)}
    warcs = sorted(map(str, warc_dir.glob("*.warc.gz")))
    wacz = tmp_path / "coll.wacz"
    res = crawlkit("wacz", *warcs, "-o", str(wacz), "--main-url", site["root"])
    assert res.code == 0, res.stderr
    # the same collection with a ZipNum index (crawlkit writes one above 100,000 lines)
    zipnum = tmp_path / "zipnum.wacz"
    write_wacz(warcs, zipnum, main_url=site["root"], zipnum_above=0)
    with zipfile.ZipFile(zipnum) as zf:
        assert "indexes/index.idx" in zf.namelist()
    for package in (wacz, zipnum):
        _check(_replay(tmp_path, package, requisites), site, requisites, served, cut)


def _replay(tmp_path: Path, wacz: Path, requisites: dict[str, list[str]]) -> dict[str, dict]:
    """{page: what replay.mjs saw} for ``wacz`` opened in ReplayWeb.page."""
    root = tmp_path / "www"
    root.mkdir(exist_ok=True)
    (root / "embed.html").write_text(_EMBED)
    (root / "replay.html").write_text(_REPLAY_INDEX)
    files = {
        "/embed.html": root / "embed.html",
        "/replay/": root / "replay.html",
        "/replay/index.html": root / "replay.html",
        "/ui.js": MODULES / "replaywebpage" / "ui.js",
        "/replay/ui.js": MODULES / "replaywebpage" / "ui.js",
        "/replay/sw.js": MODULES / "replaywebpage" / "sw.js",
        "/coll.wacz": wacz,
    }
    gen = _serve(files)
    base = next(gen)
    try:
        spec = tmp_path / "spec.json"
        spec.write_text(json.dumps({"base": base, "chromium": CHROMIUM, "pages": requisites}))
        out = subprocess.run(
            [str(NODE), str(HERE / "replay.mjs"), str(spec)],
            capture_output=True,
            text=True,
            timeout=240,
            cwd=HERE,
            env={**os.environ, "NODE_PATH": str(MODULES)},
        )
    finally:
        gen.close()
    assert out.returncode == 0, f"{wacz.name}: {out.stderr[-3000:]}"
    return {r["page"]: r for r in map(json.loads, out.stdout.splitlines())}


def _check(
    results: dict[str, dict],
    site: dict,
    requisites: dict[str, list[str]],
    served: dict[str, str],
    cut: set[str],
) -> None:
    assert set(results) == set(requisites)
    home = results[site["root"]]
    browser_asked = {r["url"] for r in home["loaded"]}
    for path in ("/css/site.css", "/img/logo.png", "/img/pic.webp", "/font/preload.woff2"):
        assert site["root"].rstrip("/") + path in browser_asked, path
    assert any("//assets-" in u for u in browser_asked)  # the other host's requisites
    for page, got in results.items():
        assert "Not Found" not in got["text"] and got["title"], (page, got["text"])
        assert got["loaded"], page  # the page asked the archive for its requisites
        # 206: media read by ranges; 302: the page's URL without a timestamp, redirected
        ok = [
            (r["status"] in (200, 206) or (r["status"] == 302 and r["url"] == page))
            for r in got["loaded"]
        ]
        missing = [
            r for r, good in zip(got["loaded"], ok, strict=True) if not good and r["url"] not in cut
        ]
        assert missing == [], (page, missing)
        asked = {r["url"] for r in got["loaded"]}
        assert {page, *(u for u in requisites[page] if u.endswith((".css", ".png")))} & asked
        for url in requisites[page]:
            assert got["fetched"][url]["status"] == 200, (page, url)
            assert got["fetched"][url]["sha256"] == served[url], (page, url)
