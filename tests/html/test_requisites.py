"""Page requisites: every element kind in HTML, CSS url()/@import, and extract on a WARC."""

from __future__ import annotations

import json

import pytest
from conftest import crawlkit
from warc_samples import write_site_warc

from crawlkit.html.css import css_refs, decode_css
from crawlkit.html.page import HtmlExtractor, parse_srcset
from crawlkit.url import Canonicalizer

# warcio's writer buffers payloads in SpooledTemporaryFiles it never closes.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

PAGE_URL = "http://h.test/d/i.html"
# Every requisite kind of issue 14, with the (tag, URL) extract must give for it.
KINDS = [
    ('<img src="a.png">', [("img", "http://h.test/d/a.png")]),
    (
        '<img src="/i.png" srcset="/i1.png 1x, /i2.png 2x">',
        [
            ("img", "http://h.test/i.png"),
            ("img", "http://h.test/i1.png"),
            ("img", "http://h.test/i2.png"),
        ],
    ),
    (
        '<picture><source srcset="/p.webp 600w" type="image/webp"><img src="/p.jpg"></picture>',
        [("source", "http://h.test/p.webp"), ("img", "http://h.test/p.jpg")],
    ),
    ('<link rel="stylesheet" href="/s.css">', [("link", "http://h.test/s.css")]),
    ('<link rel="icon" href="/favicon.ico">', [("link", "http://h.test/favicon.ico")]),
    ('<link rel="shortcut icon" href="/f2.ico">', [("link", "http://h.test/f2.ico")]),
    ('<link rel="apple-touch-icon" href="/t.png">', [("link", "http://h.test/t.png")]),
    ('<link rel="preload" as="font" href="/f.woff2">', [("link", "http://h.test/f.woff2")]),
    ('<link rel="modulepreload" href="/m.js">', [("link", "http://h.test/m.js")]),
    ('<link rel="manifest" href="/app.webmanifest">', [("link", "http://h.test/app.webmanifest")]),
    ('<script src="/app.js"></script>', [("script", "http://h.test/app.js")]),
    (
        '<video src="/v.mp4" poster="/poster.jpg"><source src="/v.webm"><track src="/s.vtt">'
        "</video>",
        [
            ("video", "http://h.test/v.mp4"),
            ("video", "http://h.test/poster.jpg"),
            ("source", "http://h.test/v.webm"),
            ("track", "http://h.test/s.vtt"),
        ],
    ),
    (
        '<audio src="/a.mp3"><source src="/a.ogg"></audio>',
        [("audio", "http://h.test/a.mp3"), ("source", "http://h.test/a.ogg")],
    ),
    ('<object data="/o.svg"></object>', [("object", "http://h.test/o.svg")]),
    ('<embed src="/e.swf">', [("embed", "http://h.test/e.swf")]),
    (
        '<input type="image" src="/b.png"><input type="text" src="/no.png">',
        [("input", "http://h.test/b.png")],
    ),
    (
        '<svg><image href="/s1.png"/><image xlink:href="/s2.png"/></svg>',
        [("image", "http://h.test/s1.png"), ("image", "http://h.test/s2.png")],
    ),
    ("<div style=\"background: url('/bg.png')\">x</div>", [("style", "http://h.test/bg.png")]),
    (
        '<style>@import "/imp.css"; body { background: url(body.png) }</style>',
        [("style", "http://h.test/imp.css"), ("style", "http://h.test/d/body.png")],
    ),
    ('<body background="/old.gif"><p>x</p></body>', [("background", "http://h.test/old.gif")]),
]


@pytest.fixture(scope="module")
def ex() -> HtmlExtractor:
    return HtmlExtractor(Canonicalizer())


def requisites(ex: HtmlExtractor, markup: str, url: str = PAGE_URL) -> list[tuple[str, str]]:
    page = ex.extract(markup.encode(), url, content_type="text/html")
    return [(r.tag, r.url.url) for r in page.requisites]


@pytest.mark.parametrize(("markup", "expected"), KINDS, ids=[k[0][:40] for k in KINDS])
def test_every_requisite_kind(ex, markup, expected):
    assert requisites(ex, markup) == expected


def test_requisites_are_not_links_and_not_nofollow(ex):
    page = ex.extract(
        b'<meta name="robots" content="nofollow"><a href="/x.png">x</a><img src="/x.png">'
        b'<img style="border-image: url(/x.png)" src="/y.png">',
        PAGE_URL,
        content_type="text/html",
    )
    assert [(lk.url.url, lk.nofollow) for lk in page.links] == [("http://h.test/x.png", True)]
    # once per URL, in document order, never nofollow; an element matched twice
    # (img with a style attribute) is read once
    assert [(r.url.url, r.nofollow) for r in page.requisites] == [
        ("http://h.test/x.png", False),
        ("http://h.test/y.png", False),
    ]


def test_base_href_data_urls_and_other_schemes(ex):
    got = requisites(
        ex,
        '<base href="https://cdn.test/assets/"><img src="a.png"><img src="data:image/png;base64,'
        'AAAA"><script src="javascript:alert(1)"></script><img src="//img.test/b.png">',
    )
    assert got == [("img", "https://cdn.test/assets/a.png"), ("img", "https://img.test/b.png")]


def test_requisites_are_capped(ex):
    capped = HtmlExtractor(Canonicalizer(), max_links=3)
    page = capped.extract(
        "".join(f'<img src="/{i}.png">' for i in range(10)).encode(), PAGE_URL, content_type=None
    )
    assert len(page.requisites) == 3 and "requisites" in page.capped


@pytest.mark.parametrize(
    ("value", "urls"),
    [
        ("a.png 1x, b.png 2x", ["a.png", "b.png"]),
        ("a.png, b.png", ["a.png", "b.png"]),
        ("a.png,b.png", ["a.png,b.png"]),  # one URL: commas end a URL only before a space
        (" a.png  100w ,\n b.png 200w", ["a.png", "b.png"]),
        ("a.png, , b.png", ["a.png", "b.png"]),
        ("a.png (max-width: 10px, x) 1x, b.png", ["a.png", "b.png"]),
        ("", []),
        (",,,", []),
    ],
)
def test_srcset(value, urls):
    assert parse_srcset(value) == urls


CSS_CASES = [
    ('@import "a.css";', [("a.css", "import")]),
    ("@import 'b.css' screen;", [("b.css", "import")]),
    ("@import url(c.css);", [("c.css", "import")]),
    ('@IMPORT URL( "d.css" ) print;', [("d.css", "import")]),
    ("a{background:url(x.png)}", [("x.png", "url")]),
    ("a{background:url( 'x y.png' )}", [("x y.png", "url")]),
    (
        '@font-face{src:url("f.woff2") format("woff2"), url(f.woff)}',
        [("f.woff2", "url"), ("f.woff", "url")],
    ),
    ("/* url(no.png) @import 'no.css'; */ a{b:url(yes.png)}", [("yes.png", "url")]),
    ('a{content:"url(no.png)"} b{c:url(yes.png)}', [("yes.png", "url")]),
    (r"a{b:url(f\28 1\29.png)} c{d:url('q\'x.png')}", [("f(1).png", "url"), ("q'x.png", "url")]),
    ("a{filter:url(#blur)} b{mask:url()} c{d:url('')}", []),
    ("nourl(x.png) -webkit-url(y.png)", []),
    ("a{b:url(unclosed.png", []),
    ('a{b:url("unterminated\n)} c{d:url(next.png)}', [("next.png", "url")]),
    ("a{b:image-set(url(i1.png) 1x, url(i2.png) 2x)}", [("i1.png", "url"), ("i2.png", "url")]),
    # image-set()'s bare strings are URLs (not type()'s, not a gradient's); in order
    (
        'a{b:url(z.png)} c{d:image-set("a.avif" type("image/avif"), "a.jpg" 1x)} e{f:url(y.png)}',
        [("z.png", "url"), ("a.avif", "url"), ("a.jpg", "url"), ("y.png", "url")],
    ),
    (
        'a{b:-webkit-image-set("x1.png" 1x, linear-gradient(red, "no") 2x, "x3.png" 3x)}',
        [("x1.png", "url"), ("x3.png", "url")],
    ),
    ('/* image-set("no.png") */ a{content:"image-set(\'no\')"}', []),
]


@pytest.mark.parametrize(("css", "expected"), CSS_CASES, ids=[c[0][:30] for c in CSS_CASES])
def test_css_refs(css, expected):
    assert [(r.url, r.kind) for r in css_refs(css)] == expected


@pytest.mark.parametrize(
    "hostile",
    [
        'a{b:url("' * 300_000,  # every url( opens a string that never ends
        "a{b:url(" * 300_000,  # every url( is unclosed
        "/*" * 500_000,
        "'\\" * 500_000,
        "a{b:image-set(" * 150_000,  # every image-set( unclosed, nested
    ],
    ids=["unterminated-strings", "unclosed-urls", "comments", "escapes", "image-sets"],
)
def test_css_refs_linear_on_hostile_input(hostile):
    # A scanner that re-read the rest of the line at each "url(" would take hours
    # here (quadratic in 2 MB); this one reads each byte a bounded number of times.
    assert css_refs(hostile) == []


def test_css_refs_bounded():
    many = "a{b:url(x.png)}" * 1000
    assert len(css_refs(many, max_urls=50)) == 50
    assert len(css_refs("a{b:image-set(" + '"x.png" 1x,' * 1000 + ")}", max_urls=50)) == 50
    assert css_refs("a{b:url(x.png)}" + " " * 100 + "c{d:url(y.png)}", max_bytes=50) == [
        ("x.png", "url")
    ]


def test_decode_css():
    assert decode_css('@charset "iso-8859-1"; a{b:url(é.png)}'.encode("latin-1")).endswith(
        "url(é.png)}"
    )
    assert decode_css("a{b:url(é.png)}".encode("utf-16"), None) == "a{b:url(é.png)}"
    assert decode_css(b"\xe9", "text/css; charset=windows-1252") == "é"
    assert decode_css(b"\xff") == "\ufffd"


# -- through the command, on a real WARC --------------------------------------------------


def test_extract_command_writes_requisites_of_pages_and_stylesheets(tmp_path):
    warc = tmp_path / "site.warc.gz"
    write_site_warc(warc)
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links))
    assert res.code == 0, res.stderr
    pages = [json.loads(line) for line in res.lines]
    assert [p["url"] for p in pages] == ["http://site.test/"]  # a stylesheet is no page
    assert pages[0]["links"] == 1 and pages[0]["requisites"] == 6
    records = [json.loads(line) for line in links.read_text().splitlines()]
    got = [(r["from"], r["reason"], r["tag"], r["url"]) for r in records]
    home, site_css, theme = (
        "http://site.test/",
        "http://site.test/css/site.css",
        "http://site.test/css/theme.css",
    )
    assert got == [
        (home, "link", "a", "http://site.test/about"),
        (home, "requisite", "link", "http://site.test/css/site.css"),
        (home, "requisite", "link", "http://site.test/favicon.ico"),
        (home, "requisite", "script", "https://cdn.other.test/lib.js"),
        (home, "requisite", "style", "http://site.test/img/bg.png"),
        (home, "requisite", "img", "http://site.test/img/logo.png"),
        (home, "requisite", "img", "http://site.test/img/logo-2x.png"),
        (site_css, "requisite", "import", "http://site.test/css/theme.css"),
        (site_css, "requisite", "import", "http://site.test/css/site.css"),  # itself
        (site_css, "requisite", "css", "http://site.test/img/hero.jpg"),
        (site_css, "requisite", "css", "https://fonts.other.test/f.woff2"),
        (theme, "requisite", "css", "http://site.test/css/h1.png"),
    ]
    for r in records:
        assert r["depth"] == 2 and r["nofollow"] is False and r["via"] == r["from"]
        assert {"host", "site", "fp", "priority"} <= r.keys()
    assert "1 links, 11 requisites (2 stylesheets read)" in res.stderr


def test_extract_no_requisites(tmp_path):
    warc = tmp_path / "site.warc.gz"
    write_site_warc(warc)
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links), "--no-requisites")
    assert res.code == 0, res.stderr
    records = [json.loads(line) for line in links.read_text().splitlines()]
    assert [r["url"] for r in records] == ["http://site.test/about"]
