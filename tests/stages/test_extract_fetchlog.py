"""``crawlkit extract --fetch-log``: the responses a fetch log points to, with each copy
of a page or stylesheet at another URL parsed from its first capture (docs/design.md:
extract reads "WARC, or fetch records pointing into WARC")."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import crawlkit, fetch_loopback, serve_routes

PAGE = (
    b'<html><head><title>T</title><link rel="stylesheet" href="s.css"></head>'
    b'<body><a href="next.html">next</a></body></html>'
)
SHEET = b"body { background: url(bg.png) }"
ROUTES = {
    "/x/same.html": ("text/html", PAGE),
    "/y/same.html": ("text/html", PAGE),
    "/x/s.css": ("text/css", SHEET),
    "/y/s.css": ("text/css", SHEET),
}


def _fetch(tmp_path: Path, root: str) -> Path:
    log = tmp_path / "fetch.ndjson"
    res = fetch_loopback(tmp_path / "s", [f"{root}{path}" for path in ROUTES], "--log", str(log))
    assert res.code == 0, res.stderr
    return log


def test_copies_at_other_urls_give_their_own_links(tmp_path: Path) -> None:
    with serve_routes(ROUTES) as (root, _log):
        log = _fetch(tmp_path, root)
    links = tmp_path / "links.ndjson"
    args = ["extract", "--fetch-log", str(log), "--warc-dir", str(tmp_path / "s" / "warc")]
    res = crawlkit(*args, "--links", str(links))
    assert res.code == 0, res.stderr
    # one page record: the copy at /y/ is the first capture's page, parsed for its links
    assert [orjson.loads(line)["url"] for line in res.lines] == [f"{root}/x/same.html"]
    found = {(r["from"], r["url"]) for r in map(orjson.loads, links.read_bytes().splitlines())}
    for d in ("x", "y"):
        assert (f"{root}/{d}/same.html", f"{root}/{d}/next.html") in found
        assert (f"{root}/{d}/s.css", f"{root}/{d}/bg.png") in found
    # the WARC files alone pass the copies over: they do not say where the bodies are
    alone = crawlkit("extract", str(tmp_path / "s" / "warc" / "new"), "--links", str(links))
    assert alone.code == 0, alone.stderr
    found = {(r["from"], r["url"]) for r in map(orjson.loads, links.read_bytes().splitlines())}
    assert (f"{root}/y/same.html", f"{root}/y/next.html") not in found


def test_a_warc_file_the_log_names_and_the_directory_lacks_exits_1(tmp_path: Path) -> None:
    with serve_routes(ROUTES) as (root, _log):
        log = _fetch(tmp_path, root)
    warc_dir = tmp_path / "s" / "warc"
    [warc] = (warc_dir / "new").glob("*.warc.gz")
    warc.unlink()
    res = crawlkit("extract", "--fetch-log", str(log), "--warc-dir", str(warc_dir))
    assert res.code == 1
    assert f"no WARC file {warc.name}" in res.stderr
    both = crawlkit("extract", "--fetch-log", str(log), str(warc))
    assert both.code == 2 and "WARC files or --fetch-log, not both" in both.stderr
    alone = crawlkit("extract", "--fetch-log", str(log))
    assert alone.code == 2 and "--fetch-log and --warc-dir go together" in alone.stderr
