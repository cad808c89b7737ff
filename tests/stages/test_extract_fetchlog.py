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


PAGES = {f"/p{i}.html": ("text/html", f"<title>p{i}</title>".encode()) for i in range(5)}


def test_a_bad_location_in_the_log_loses_only_its_own_page(tmp_path: Path) -> None:
    """One fetch record pointing off a record's start, past the file's end, or with no
    offset: before, the first lost every later page of its file, the second ended
    in MemoryError and the third in KeyError ("internal error"), 0 pages."""
    with serve_routes(PAGES) as (root, _log):
        log = tmp_path / "fetch.ndjson"
        urls = [f"{root}{path}" for path in PAGES]
        res = fetch_loopback(tmp_path / "s", urls, "--log", str(log))
        assert res.code == 0, res.stderr
    recs = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    pages = [r for r in recs if r.get("outcome") == "fetched"]
    assert len(pages) == 5
    warc_dir = str(tmp_path / "s" / "warc")
    for bad in ({"offset": 7}, {"length": 10**12}, {"offset": None}, {"offset": -5}):
        where = {**pages[1]["warc"], **bad}
        if bad.get("offset", 0) is None:
            del where["offset"]
        edited = [{**r, "warc": where} if r is pages[1] else r for r in recs]
        damaged = tmp_path / "damaged.ndjson"
        damaged.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in edited))
        res = crawlkit("extract", "--fetch-log", str(damaged), "--warc-dir", warc_dir)
        # a damaged WARC exits 1; a record that is no location is a bad line, skipped
        assert res.code == (0 if bad.get("offset", 0) in (None, -5) else 1), (bad, res.stderr)
        assert "internal error" not in res.stderr, (bad, res.stderr)
        got = [orjson.loads(line)["url"] for line in res.lines]
        assert got == [r["url"] for r in pages if r is not pages[1]], (bad, res.stderr)
