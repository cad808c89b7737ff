"""Charset labels are the web's (the WHATWG Encoding Standard's), not any Python codec:
``charset=undefined`` (a broken template's), ``zlib`` or ``hex`` made extract raise on
the page, lose the whole chunk and stop a crawl on it for good; ``utf-7`` decoded
links no browser sees. And one response extract cannot read never ends its run."""

from __future__ import annotations

import orjson
import pytest
from conftest import crawlkit, serve_routes

from crawlkit.html.encoding import codec_for_label
from crawlkit.html.page import HtmlExtractor
from crawlkit.stages import extract_page
from crawlkit.url import Canonicalizer

PAGE = '<html><head>{meta}<title>T</title></head><body><a href="/next">n</a></body></html>'


@pytest.mark.parametrize("label", ["undefined", "zlib", "hex", "rot13", "idna", "utf-7", "klingon"])
def test_a_python_codec_name_is_no_charset(label: str) -> None:
    assert codec_for_label(label) is None


@pytest.mark.parametrize(
    ("label", "codec"),
    [("ISO-8859-1", "cp1252"), ("latin1", "cp1252"), (" Shift_JIS\t", "cp932"), ("gbk", "gb18030")],
)
def test_the_webs_labels_are_its_encodings(label: str, codec: str) -> None:
    assert codec_for_label(label) == codec


def test_a_page_stylesheet_and_sitemap_with_codec_names_are_crawled(tmp_path) -> None:
    routes = {
        "/robots.txt": ("text/plain", b"User-agent: *\nSitemap: /sm.xml\n"),
        "/": ("text/html; charset=undefined", PAGE.format(meta="").encode()),
        "/next": ("text/html", PAGE.format(meta='<meta charset="zlib">').encode()),
        "/s.css": ("text/css; charset=hex", b"body { background: url(bg.png) }"),
        "/sm.xml": (
            "application/xml",
            b'<?xml version="1.0" encoding="undefined"?><urlset><url><loc>/x</loc></url></urlset>',
        ),
    }
    with serve_routes(routes) as (root, log):
        state = tmp_path / "state"
        args = ["crawl", f"{root}/", f"{root}/s.css", "--state", str(state), "--json"]
        res = crawlkit(*args, "--min-delay", "0.05s", "--allow-net", "127.0.0.0/8")
        assert res.code == 0, res.stderr
        assert "internal error" not in res.stderr
    assert {"/", "/next", "/sm.xml", "/bg.png"} <= set(log)
    assert orjson.loads(res.stdout)["pages"] >= 2
    assert "sm.xml: unknown encoding 'undefined'" in res.stderr


def test_one_response_extract_cannot_read_is_passed_over(monkeypatch) -> None:
    """Whatever raises on one response (here the page's parse and its fallback both)
    is a counted, reported page error; the chunk's other pages are written."""
    ex = HtmlExtractor(Canonicalizer())
    job = ("http://a.test/", None, None, 200, "text/html", None, 0, b"<p>x", None, "html")
    good = ("http://a.test/ok", None, None, 200, "text/html", None, 0, b"<p>y", None, "html")
    boom = RuntimeError("a bug")
    monkeypatch.setattr(ex, "extract", lambda *a, **k: (_ for _ in ()).throw(boom))
    monkeypatch.setattr(extract_page, "quick_page", lambda *a, **k: (_ for _ in ()).throw(boom))
    pages, _links, counts, warnings = extract_page.process_chunk([job], ex)
    assert pages == b"" and counts["errors"] == 1
    assert warnings == [
        ("http://a.test/: cannot read it (RuntimeError: a bug); passed over", "page error")
    ]
    monkeypatch.undo()
    pages, _links, counts, _w = extract_page.process_chunk(
        [job, good], HtmlExtractor(Canonicalizer())
    )
    assert pages.count(b"\n") == 2
