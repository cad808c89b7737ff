"""`crawlkit testweb --files DIR`: a directory's files served as they are, by one host.

Judged as a user would: over HTTP (answers, validators, what never leaves the
directory), and by a crawl of the directory, from the server's log and the WARC."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

HOST = "files.test"
FILES = {
    "index.html": b'<!doctype html><html><head><title>Home</title><link rel="stylesheet" '
    b'href="style.css"></head><body><a href="docs">Docs</a> <a href="about.html?x=1">About'
    b'</a> <a href="gone.html">Gone</a> <img src="img/dot.png"></body></html>\n',
    "docs/index.html": b'<html><head><title>Docs</title></head><body><a href="../">Up</a> '
    b'<a href="page%20two.html">Two</a></body></html>\n',
    "docs/page two.html": b"<html><head><title>Two</title></head><body>two</body></html>\n",
    "about.html": b"<html><body>about (robots.txt keeps it out)</body></html>\n",
    "style.css": b"body { color: black }\n",
    "img/dot.png": b"\x89PNG\r\n\x1a\n not really a picture",
    "robots.txt": b"User-agent: *\nDisallow: /about.html\n",
}


def _site(root: Path) -> Path:
    for name, body in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body)
    return root


@pytest.fixture
def files_web(tmp_path):
    site = _site(tmp_path / "site")
    (tmp_path / "secret.txt").write_bytes(b"outside the directory")
    os.symlink(tmp_path / "secret.txt", site / "link-out.txt")
    with start_testweb(tmp_path, "--hosts", "0", "--special", "none", "--files", str(site)) as web:
        yield web


def test_the_files_are_answered_as_a_static_server_answers(files_web):
    web = files_web
    assert web.seeds.read_text().split() == [web.url(HOST)]
    assert web.hosts == {HOST: "127.3.0.1"}
    status, headers, body = web.get(web.url(HOST, "/"))
    assert (status, headers["content-type"], body) == (200, "text/html", FILES["index.html"])
    status, headers, body = web.get(web.url(HOST, "/docs/page%20two.html?any=query"))
    assert (status, body) == (200, FILES["docs/page two.html"])
    status, headers, _ = web.get(web.url(HOST, "/docs?q=1"))
    assert status == 301 and headers["location"] == "/docs/?q=1"
    assert web.get(web.url(HOST, "/img/dot.png"))[1]["content-type"] == "image/png"
    assert web.get(web.url(HOST, "/style.css"))[1]["content-type"] == "text/css"
    # a recrawl gets a 304 from the file's validators
    _, headers, _ = web.get(web.url(HOST, "/about.html"))
    again = web.get(web.url(HOST, "/about.html"), headers={"If-None-Match": headers["etag"]})
    assert again[0] == 304
    # nothing outside the directory, however the path asks for it
    for path in ("/../secret.txt", "/docs/../../secret.txt", "/%2e%2e/secret.txt",
                 "/link-out.txt", "/img", "/nothing.html", "/docs/%00"):  # fmt: skip
        status, _, body = web.get(web.url(HOST, path))
        assert status in (301, 404) and b"outside" not in body, path
    assert web.get(web.url(HOST, "/img/"))[0] == 404  # a directory without index.html
    host = web.manifest["hosts"][0]
    assert host["kind"] == "files" and host["robots"]["status"] == 200
    assert host["robots"]["text"] == FILES["robots.txt"].decode()


def test_a_crawl_of_the_directory_takes_each_file_once_and_obeys_its_robots(files_web, tmp_path):
    web = files_web
    res = crawlkit(
        *("crawl", str(web.seeds), "--state", str(tmp_path / "state")),
        *("--hosts-file", str(web.hosts_file), "--allow-net", "127.0.0.0/9"),
        *("--min-delay", "0.05s", "--no-budgets", "--for", "60s"),
    )
    assert res.code == 0, res.stderr
    asked = [(q["path"], q["status"]) for q in web.requests()]
    want = {
        ("/robots.txt", 200),
        ("/", 200),
        ("/docs", 301),
        ("/docs/", 200),
        ("/docs/page%20two.html", 200),
        ("/gone.html", 404),
        ("/style.css", 200),
        ("/img/dot.png", 200),
    }
    assert sorted(asked) == sorted(want)  # each once; /about.html never (robots.txt)
    assert asked[0] == ("/robots.txt", 200)
    audit = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", "0.05")
    assert audit.code == 0, audit.stdout + audit.stderr
    archived = {}
    for warc in (tmp_path / "state" / "warc").rglob("*.warc.gz"):
        with warc.open("rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type == "response" and rec.http_headers.get_statuscode() == "200":
                    path = rec.rec_headers.get_header("WARC-Target-URI").split(str(web.port))[1]
                    archived[path] = rec.content_stream().read()
    assert archived == {
        "/robots.txt": FILES["robots.txt"],
        "/": FILES["index.html"],
        "/docs/": FILES["docs/index.html"],
        "/docs/page%20two.html": FILES["docs/page two.html"],
        "/style.css": FILES["style.css"],
        "/img/dot.png": FILES["img/dot.png"],
    }


def test_files_must_name_a_directory(tmp_path):
    res = crawlkit("testweb", "--files", str(tmp_path / "nope"), "--for", "1s")
    assert res.code == 2 and "--files" in res.stderr and "not a directory" in res.stderr
