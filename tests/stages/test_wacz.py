"""crawlkit wacz: checked by `wacz validate` (py-wacz) and replayed by pywb."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from archive_tools import pywb_replay, wacz_validate
from conftest import crawlkit
from warc_samples import SITE, crawlkit_warc, warcio_warc, write_site_warc

pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


@pytest.fixture
def warcs(tmp_path: Path) -> list[Path]:
    site = tmp_path / "site.warc.gz"
    write_site_warc(site)
    return [site, crawlkit_warc(tmp_path / "ck"), warcio_warc(tmp_path / "w.warc", gzip=False)]


def test_wacz_is_valid_and_complete(tmp_path, warcs):
    audit = tmp_path / "audit.json"
    audit.write_text('{"ok": true}\n')
    out = tmp_path / "coll.wacz"
    res = crawlkit(
        "wacz",
        *map(str, warcs),
        "-o",
        str(out),
        "--title",
        "Site, Dec 2026",
        "--report",
        str(audit),
    )
    assert res.code == 0, res.stderr
    check = wacz_validate(out)
    assert check.returncode == 0 and "Validation succeeded" in check.stdout, check.stdout

    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert sorted(names) == sorted(
            [f"archive/{w.name}" for w in warcs]
            + [
                "indexes/index.cdx",
                "pages/pages.jsonl",
                "reports/audit.json",
                "datapackage.json",
                "datapackage-digest.json",
            ]
        )
        for w in warcs:  # stored as they are, so a reader can seek by offset
            info = zf.getinfo(f"archive/{w.name}")
            assert info.compress_type == zipfile.ZIP_STORED
            assert zf.read(info) == w.read_bytes()
        index = zf.read("indexes/index.cdx").decode()
        assert index == crawlkit("index", *map(str, warcs)).text
        package = json.loads(zf.read("datapackage.json"))
        digest = json.loads(zf.read("datapackage-digest.json"))
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()]
        for entry in package["resources"]:
            data = zf.read(entry["path"])
            assert entry["hash"] == "sha256:" + hashlib.sha256(data).hexdigest()
            assert entry["bytes"] == len(data)
        assert digest["hash"] == "sha256:" + hashlib.sha256(zf.read("datapackage.json")).hexdigest()
    assert package["wacz_version"] == "1.1.1" and package["title"] == "Site, Dec 2026"
    assert package["created"].endswith("Z") and package["software"].startswith("crawlkit")
    assert pages[0] == {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
    home = next(p for p in pages[1:] if p["url"] == "http://site.test/")
    assert home["title"] == "Home" and home["ts"].startswith("20") and len(home["id"]) == 16
    # the page's text, as extract computes it, for full-text search (as py-wacz --text)
    assert {"id", "url", "ts", "title", "text"} == set(home) and home["text"] == "About"
    # the stylesheets (text/css) of the site WARC are no pages
    assert not any(p["url"].startswith("http://site.test/css/") for p in pages[1:])
    assert len({p["id"] for p in pages[1:]}) == len(pages) - 1
    assert package["mainPageURL"] == pages[1]["url"]


def test_wacz_validate_catches_a_damaged_package(tmp_path, warcs):
    """The check above can fail: a WARC altered after packing is caught."""
    out = tmp_path / "coll.wacz"
    assert crawlkit("wacz", *map(str, warcs), "-o", str(out)).code == 0
    bad = tmp_path / "bad.wacz"
    with zipfile.ZipFile(out) as src, zipfile.ZipFile(bad, "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            if info.filename == f"archive/{warcs[0].name}":
                data = data[:-1] + bytes([data[-1] ^ 1])
            dst.writestr(info, data)
    assert wacz_validate(bad).returncode != 0


def test_wacz_usage_errors(tmp_path, warcs):
    res = crawlkit("wacz", str(warcs[0]), "-o", str(tmp_path / "x.zip"))
    assert res.code == 2 and "must end in .wacz" in res.stderr
    res = crawlkit("wacz", str(tmp_path / "missing.warc.gz"), "-o", str(tmp_path / "x.wacz"))
    assert res.code == 1 and "missing.warc.gz" in res.stderr
    assert not (tmp_path / "x.wacz").exists()


def test_wacz_reads_a_warc_named_twice_once(tmp_path, warcs):
    """The same file named twice (and through a symlink): packed and indexed once, a
    line on stderr saying so, as `crawlkit index` does; the package validates."""
    link = tmp_path / "link.warc.gz"
    link.symlink_to(warcs[0])
    once, twice = tmp_path / "once.wacz", tmp_path / "twice.wacz"
    assert crawlkit("wacz", str(warcs[0]), "-o", str(once)).code == 0
    res = crawlkit("wacz", str(warcs[0]), str(warcs[0]), str(link), "-o", str(twice))
    assert res.code == 0, res.stderr
    assert "named more than once, read once" in res.stderr and "link.warc.gz" in res.stderr
    with zipfile.ZipFile(once) as a, zipfile.ZipFile(twice) as b:
        assert sorted(a.namelist()) == sorted(b.namelist())
        for name in ("indexes/index.cdx", "pages/pages.jsonl"):
            assert a.read(name) == b.read(name), name
    assert wacz_validate(twice).returncode == 0


def test_wacz_names_warcs_that_collide_or_are_not_utf8(tmp_path, warcs):
    """Two WARCs whose names differ only in case, another of the same name in another
    directory, and one whose name is not UTF-8: each gets a distinct name in the
    package (and in its index), and `wacz validate` accepts it."""
    src = warcs[0].read_bytes()
    (tmp_path / "x").mkdir()
    upper, lower, twin = (
        tmp_path / "A.warc.gz",
        tmp_path / "a.warc.gz",
        tmp_path / "x" / "a.warc.gz",
    )
    latin = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9.warc.gz"))
    for p in (upper, lower, twin, latin):
        Path(p).write_bytes(src)
    out = tmp_path / "names.wacz"
    res = crawlkit("wacz", str(upper), str(lower), str(twin), latin, "-o", str(out))
    assert res.code == 0, res.stderr
    assert "a.warc.gz: stored as archive/a-2.warc.gz" in res.stderr
    assert "caf\\xe9.warc.gz: stored as archive/caf%E9.warc.gz" in res.stderr
    check = wacz_validate(out)
    assert check.returncode == 0 and "Validation succeeded" in check.stdout, check.stdout
    archived = ["A.warc.gz", "a-2.warc.gz", "a-3.warc.gz", "caf%E9.warc.gz"]
    with zipfile.ZipFile(out) as zf:
        assert [n for n in zf.namelist() if n.startswith("archive/")] == [
            f"archive/{n}" for n in archived
        ]
        index = zf.read("indexes/index.cdx").decode()
        package = json.loads(zf.read("datapackage.json"))
    assert {json.loads(line.split(" ", 2)[2])["filename"] for line in index.splitlines()} == set(
        archived
    )
    names = [r["name"] for r in package["resources"]]
    assert len(set(names)) == len(names)


def test_a_big_collection_gets_a_zipnum_index(tmp_path, warcs):
    """Above the size (here lowered to 5 lines, with 1 byte of lines held so every
    line goes through the external sort's run files), the index is a ZipNum index
    (indexes/index.cdx.gz + indexes/index.idx, as py-wacz writes it), which `wacz
    validate` accepts, holding the lines `crawlkit index` writes."""
    import gzip

    from crawlkit.stages.wacz import write_wacz

    out = tmp_path / "big.wacz"
    write_wacz(warcs, out, zipnum_above=5, max_bytes=1)
    check = wacz_validate(out)
    assert check.returncode == 0 and "Validation succeeded" in check.stdout, check.stdout
    with zipfile.ZipFile(out) as zf:
        names = zf.namelist()
        assert "indexes/index.cdx" not in names
        data = zf.read("indexes/index.cdx.gz")
        assert zf.getinfo("indexes/index.cdx.gz").compress_type == zipfile.ZIP_STORED
        idx = zf.read("indexes/index.idx").decode().splitlines()
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert gzip.decompress(data).decode() == crawlkit("index", *map(str, warcs)).text
    assert idx[0] == '!meta 0 {"format": "cdxj-gzip-1.0", "filename": "index.cdx.gz"}'
    first = json.loads(idx[1].split(" ", 2)[2])
    block = gzip.decompress(data[first["offset"] : first["offset"] + first["length"]])
    assert block.decode().startswith(idx[1].split(" {", 1)[0])
    assert [(p["ts"], p["url"]) for p in pages] == sorted((p["ts"], p["url"]) for p in pages)
    assert list(tmp_path.glob("crawlkit-sort-*")) == []


def test_pywb_replays_from_crawlkits_index(tmp_path, warcs):
    """pywb finds every capture through crawlkit's CDXJ (its own SURT keys, IP literals
    included) and replays the payload that was archived."""
    coll = tmp_path / "pywb" / "collections" / "c"
    (coll / "archive").mkdir(parents=True)
    (coll / "indexes").mkdir()
    for w in warcs:
        shutil.copy(w, coll / "archive" / w.name)
    res = crawlkit("index", *map(str, warcs), "-o", str(coll / "indexes" / "index.cdxj"))
    assert res.code == 0, res.stderr
    urls = {
        "http://site.test/": SITE["/"][1],
        "http://site.test/css/site.css": SITE["/css/site.css"][1],
        "http://127.0.0.1:8080/img/Logo.PNG": b"<html>1</html>",
        "http://[::1]:8443/a?b=2&a=1": b"<html>2</html>",
        "https://[2001:db8::1]/x/": b"<html>3</html>",
        "http://192.168.0.1/Page?B=1&a=2": b"<p>hi</p>",
    }
    got = pywb_replay(tmp_path / "pywb", "c", *urls, "http://never.archived.test/")
    for url, body in urls.items():
        assert got[url]["status"] == 200, url
        assert got[url]["sha256"] == hashlib.sha256(body).hexdigest(), url
    assert got["http://never.archived.test/"]["status"] == 404


def test_a_pages_copy_at_another_url_is_in_the_page_list(tmp_path):
    """A page served at two URLs is stored once, the second capture as a revisit: it
    is a page of the collection too (ReplayWeb.page lists and replays it), where an
    image's copy is not. It was left out of pages.jsonl."""
    from conftest import fetch_loopback, serve_routes

    page = b"<html><head><title>Same</title></head><body>words</body></html>"
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 16
    routes = {"/en/": ("text/html", page), "/fr/": ("text/html", page)}
    routes |= {"/a.png": ("image/png", png), "/b.png": ("image/png", png)}
    with serve_routes(routes) as (root, _log):
        res = fetch_loopback(tmp_path / "s", [f"{root}{path}" for path in routes])
        assert res.code == 0, res.stderr
    [warc] = (tmp_path / "s" / "warc" / "new").glob("*.warc.gz")
    out = tmp_path / "c.wacz"
    res = crawlkit("wacz", str(warc), "-o", str(out))
    assert res.code == 0, res.stderr
    check = wacz_validate(out)
    assert check.returncode == 0 and "Validation succeeded" in check.stdout, check.stdout
    with zipfile.ZipFile(out) as zf:
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert {p["url"]: p["title"] for p in pages} == {f"{root}/en/": "Same", f"{root}/fr/": "Same"}


def test_a_page_that_changed_between_captures_is_listed_for_each_content(tmp_path):
    """Two crawls of one URL whose page changed: pages.jsonl kept the first capture
    only, so the new text was not in full-text search. An unchanged third capture
    adds no line."""
    from conftest import fetch_loopback, serve_routes

    routes = {"/p": ("text/html", b"<title>First</title><p>first edition</p>")}
    with serve_routes(routes) as (root, _log):
        for n, body in enumerate([b"", b"<title>Second</title><p>second edition</p>", b""]):
            if body:
                routes["/p"] = ("text/html", body)
            res = fetch_loopback(tmp_path / f"s{n}", [f"{root}/p"])
            assert res.code == 0, res.stderr
    warcs = sorted(str(w) for w in tmp_path.glob("s*/warc/new/*.warc.gz"))
    out = tmp_path / "c.wacz"
    res = crawlkit("wacz", *warcs, "-o", str(out))
    assert res.code == 0, res.stderr
    with zipfile.ZipFile(out) as zf:
        pages = [json.loads(line) for line in zf.read("pages/pages.jsonl").splitlines()[1:]]
    assert [(p["url"], p["title"]) for p in pages] == [
        (f"{root}/p", "First"),
        (f"{root}/p", "Second"),
    ]
    assert "second edition" in pages[1]["text"]
