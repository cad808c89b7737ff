"""What real pages showed the extractor read differently from a browser (HTML Living
Standard): robots directives aimed at other agents, a charset declared where no parser
looks, refresh values that are none, a base that is no base, srcset descriptors,
an icon's title, anchors taken for nesting, and the scan used when a parse runs out."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import RAW, crawl_loopback, serve_routes

from crawlkit.html.fallback import quick_page
from crawlkit.html.page import (
    HtmlExtractor,
    detect_charset,
    parse_robots_directives,
    parse_srcset,
    refresh_target,
)
from crawlkit.url import Canonicalizer

PAGE = "http://127.0.0.1:8000/dir/page.html"


@pytest.fixture(scope="module")
def ex() -> HtmlExtractor:
    return HtmlExtractor(Canonicalizer(), agent="mybot")


def links(ex: HtmlExtractor, body: bytes, **kw: str) -> list[str]:
    return [link.url.url for link in ex.extract(body, PAGE, **kw).links]


# ---------------------------------------------------------------- robots directives


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("noindex, nofollow", (True, True)),
        # an agent's name covers the directives after it, up to the next name
        ("otherbot: noindex, nofollow", (False, False)),
        ("otherbot: noindex, mybot: nofollow", (False, True)),
        ("nofollow, otherbot: noindex", (False, True)),
        ("MyBot: none", (True, True)),
        ("robots: noindex", (True, False)),
        # one header line's name does not reach into the next line
        ("otherbot: noindex\nnofollow", (False, True)),
        # a directive with a value is no agent's name
        ("unavailable_after: 25 Jun 2010 15:00:00 PST, nofollow", (False, True)),
    ],
)
def test_robots_directives_by_agent(value: str, expected: tuple[bool, bool]) -> None:
    assert parse_robots_directives(value, "mybot") == expected


def test_meta_robots_of_the_agent_token_not_of_crawlkit(ex: HtmlExtractor) -> None:
    mine = ex.extract(b'<meta name="MyBot" content="nofollow"><a href="/a">a</a>', PAGE)
    theirs = ex.extract(b'<meta name="crawlkit" content="nofollow"><a href="/a">a</a>', PAGE)
    assert (mine.nofollow, theirs.nofollow) == (True, False)


# ---------------------------------------------------------------- charset


@pytest.mark.parametrize(
    ("body", "content_type", "codec"),
    [
        # a declaration inside a comment is text
        (b'<!-- <meta charset="windows-1251"> --><meta charset="utf-8">', None, "utf-8"),
        (b'<!--><meta charset="koi8-r">', None, "koi8-r"),  # "<!-->" is a whole comment
        # ... or inside another tag's attribute value
        (b'<div title="<meta charset=koi8-r>"></div><meta charset=shift_jis>', None, "cp932"),
        # content=...charset= counts beside http-equiv=content-type only
        (b'<meta name="description" content="text/html; charset=windows-1251">', None, "utf-8"),
        (b'<meta content="text/html; charset=koi8-r" http-equiv="Content-Type">', None, "koi8-r"),
        # a charset attribute of no encoding is not overridden by content=
        (b"<meta charset=bogus content='charset=koi8-r' http-equiv=content-type >", None, "utf-8"),
        (b'<meta charset="bogus"><meta charset=koi8-r>', None, "koi8-r"),
        (b"<META/CHARSET=UTF-16>", None, "utf-8"),
        # XHTML: the XML declaration, never <meta>
        (
            b'<?xml version="1.0" encoding="Shift_JIS"?><html><meta charset="iso-8859-1">',
            "application/xhtml+xml",
            "cp932",
        ),
        (b'<html><meta charset="iso-8859-1">', "application/xhtml+xml", "utf-8"),
    ],
)
def test_charset_as_the_prescan_reads_tags(
    body: bytes, content_type: str | None, codec: str
) -> None:
    assert detect_charset(body, content_type)[0] == codec


def test_xhtml_title_read_in_its_declared_encoding(ex: HtmlExtractor) -> None:
    body = '<?xml version="1.0" encoding="Shift_JIS"?><html><title>日本語</title></html>'
    page = ex.extract(body.encode("shift_jis"), PAGE, content_type="application/xhtml+xml")
    assert page.title == "日本語"


# ---------------------------------------------------------------- links


@pytest.mark.parametrize(
    ("content", "target"),
    [
        ("0; url=/a", "/a"),
        ("5;URL='/b'x", "/b"),
        ("1, /c", "/c"),
        (".5 /d", "/d"),
        ("1.9..5.; url=/e", "/e"),
        ("1; urlfoo", "urlfoo"),
        ("1", None),  # a refresh of the page itself
        # no delay, or a delay followed by something else: no refresh at all
        ("url=/x", None),
        ("-1; url=/x", None),
        ("+5; url=/x", None),
        ("1e0; url=/x", None),
        ("5x; url=/x", None),
        ("text/html; charset=utf-8", None),
        ("foo", None),
    ],
)
def test_refresh_by_the_declarative_refresh_steps(content: str, target: str | None) -> None:
    assert refresh_target(content) == target


def test_refresh_without_a_delay_adds_no_link(ex: HtmlExtractor) -> None:
    body = b'<meta http-equiv="refresh" content="url=/invented.html"><a href="/real">r</a>'
    assert links(ex, body) == ["http://127.0.0.1:8000/real"]


@pytest.mark.parametrize("base", ["javascript:void(0)", "data:text/html,x"])
def test_a_data_or_javascript_base_is_passed_over(ex: HtmlExtractor, base: str) -> None:
    body = f'<base href="{base}"><a href="next.html">n</a><img src="i.png">'.encode()
    page = ex.extract(body, PAGE)
    assert [link.url.url for link in page.links] == ["http://127.0.0.1:8000/dir/next.html"]
    assert [link.url.url for link in page.requisites] == ["http://127.0.0.1:8000/dir/i.png"]


@pytest.mark.parametrize(
    ("srcset", "urls"),
    [
        # parentheses do not nest: the first ")" ends them
        ("/a.png 1x (((, /b.png 1x, ), /c.png 2x", ["/a.png", "/c.png"]),
        # a ")" outside them is a character like any other
        ("/d.png 100w), /e.png 200w", ["/d.png", "/e.png"]),
        ("/f.png (1, 2), /g.png", ["/f.png", "/g.png"]),
    ],
)
def test_srcset_parentheses(srcset: str, urls: list[str]) -> None:
    assert parse_srcset(srcset) == urls


def test_an_svg_title_is_not_the_page_title(ex: HtmlExtractor) -> None:
    icon = b"<body><svg><title>Close icon</title></svg><p>text</p>"
    assert ex.extract(icon, PAGE).title is None
    later = b"<body><svg><title>Close icon</title></svg><title>The page</title>"
    assert ex.extract(later, PAGE).title == "The page"


def test_anchors_left_open_are_not_nesting(ex: HtmlExtractor) -> None:
    # XHTML-style named anchors (<a name="x"/> opens an <a> in HTML), enough of them
    # for the depth estimate to run: the tree is a few levels deep.
    anchors = "".join(
        f'<a name="s{i}"/><h2>Section {i}</h2><p>{"<b>word</b> " * 30}</p>\n' for i in range(300)
    )
    items = "".join(f'<li><a href="/doc/{i}.html">doc {i}</a></li>' for i in range(50))
    page = ex.extract(f"<title>FAQ</title><body>{anchors}<ul>{items}</ul>".encode(), PAGE)
    assert page.capped == []
    assert len(page.links) == 50


def test_the_fallback_scan_reads_references_encoding_and_meta_robots(ex: HtmlExtractor) -> None:
    body = (
        b'<meta name="mybot" content="nofollow">'
        b'<a href="/list?page=2&amp;sort=asc">n</a><a href="/a&#47;b">s</a>'
        b'<a href="/q?x=caf\xe9">q</a>'
    )
    page = quick_page(ex, body, PAGE, content_type="text/html; charset=windows-1252")
    assert [link.url.url for link in page.links] == [
        "http://127.0.0.1:8000/list?page=2&sort=asc",
        "http://127.0.0.1:8000/a/b",
        "http://127.0.0.1:8000/q?x=caf%E9",
    ]
    assert page.nofollow


# ---------------------------------------------------------------- in a crawl


def _raw(headers: list[str], body: str) -> tuple[str, bytes]:
    data = body.encode()
    head = ["HTTP/1.1 200 OK", "Content-Type: text/html", f"Content-Length: {len(data)}"]
    return RAW, ("\r\n".join([*head, *headers, "Connection: close"]) + "\r\n\r\n").encode() + data


def test_crawl_obeys_each_header_line_and_its_own_agent_name(tmp_path: Path) -> None:
    routes = {
        "/": ("text/html", b"".join(b'<a href="/p%d">p</a>' % i for i in range(1, 5))),
        # both lines count: the second says nofollow
        "/p1": _raw(["X-Robots-Tag: noarchive", "X-Robots-Tag: nofollow"], '<a href="/x1">x</a>'),
        # otherbot's two directives, not ours
        "/p2": _raw(["X-Robots-Tag: otherbot: noindex, nofollow"], '<a href="/ok2">o</a>'),
        # ours by the agent's token
        "/p3": _raw(["X-Robots-Tag: mybot: nofollow"], '<a href="/x3">x</a>'),
        "/p4": ("text/html", b'<meta name="mybot" content="nofollow"><a href="/x4">x</a>'),
        "/ok2": ("text/html", b"ok"),
        **{f"/x{i}": ("text/html", b"must not be asked") for i in (1, 3, 4)},
    }
    with serve_routes(routes) as (root, log):
        result = crawl_loopback(f"{root}/", tmp_path / "s", "--agent", "MyBot/1.0", "--for", "30s")
    assert result.code == 0, result.stderr
    assert "/ok2" in log
    assert not {"/x1", "/x3", "/x4"} & set(log), log


def test_an_svg_link_written_with_xlink_href_is_a_link(ex: HtmlExtractor) -> None:
    """SVG 1.1's <a xlink:href> is a hyperlink to a browser; only href was read, so a
    page linked this way was never reached (found on a test page of real patterns)."""
    html = (
        b'<svg><a xlink:href="x.html"><rect/></a><a href="y.html" xlink:href="no.html">'
        b"<circle/></a></svg><a>no link</a>"
    )
    page = ex.extract(html, "http://a.test/dir/")
    assert [link.url.url for link in page.links] == [
        "http://a.test/dir/x.html",
        "http://a.test/dir/y.html",
    ]


@pytest.mark.parametrize("at", [5_000, 15_912, 34_468])
def test_a_charset_declared_late_in_the_head_is_read(ex: HtmlExtractor, at: int) -> None:
    # 5% of 1,392 real pages declared theirs past 4 KB (after scripts and styles); a
    # Shift_JIS page so written was read as windows-1252, its title mojibake.
    title = "米朝首脳直通電話"
    filler = "<script>var x = 1;</script>\n" * (at // 28)
    page = f"<html><head>{filler}<meta charset=shift_jis><title>{title}</title></head>"
    body = (page + "<body><p>本文</p></body></html>").encode("cp932")
    assert detect_charset(body) == ("cp932", "meta", 0)
    assert ex.extract(body, PAGE).title == title


def test_the_head_is_read_to_its_end_and_no_further() -> None:
    filler = b"<script>var x = 1;</script>\n" * 200  # 5,600 bytes
    in_body = b"<html><head>" + filler + b"</head><body><meta charset=koi8-r><p>x</p>"
    assert detect_charset(in_body)[1] == "utf-8"  # (a <meta> in the body declares nothing)
    early_body = b"<html><body>" + filler + b"<meta charset=koi8-r>"
    assert detect_charset(early_body)[1] == "utf-8"
    past_head = b"<html><head>" + filler * 12 + b"<meta charset=koi8-r>"  # past 64 KiB
    assert detect_charset(past_head)[1] == "utf-8"


def test_a_title_keeps_its_ideographic_and_no_break_spaces(ex: HtmlExtractor) -> None:
    body = "<title>\n  電話\u3000習氏\u00a0x \t y  </title>".encode()
    assert ex.extract(body, PAGE).title == "電話\u3000習氏\u00a0x y"


def test_an_empty_href_links_to_the_page_in_the_fallback_scan_too(ex: HtmlExtractor) -> None:
    body = b'<a href="">self</a><a href=" ">self</a><area href=""><a href="/x">x</a>'
    page = quick_page(ex, body, PAGE + "#top", content_type="text/html")
    assert [(link.url.url, link.tag) for link in page.links] == [
        (PAGE, "a"),
        ("http://127.0.0.1:8000/x", "a"),
    ]
