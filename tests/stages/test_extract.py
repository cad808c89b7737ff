"""extract: links, robots, charset, sniffing, visible text (library level)."""

from __future__ import annotations

import random
import re

import ada_url
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.errors import InvalidURL
from crawlkit.html.page import (
    HtmlExtractor,
    LinkResolver,
    collapsed_length,
    collapsed_length_numpy,
    detect_charset,
    looks_like_html,
    parse_robots_directives,
    refresh_target,
)
from crawlkit.url import Canonicalizer

PAGE = "https://www.example.com/dir/page.html?q=1"


@pytest.fixture(scope="module")
def ex() -> HtmlExtractor:
    return HtmlExtractor(Canonicalizer())


def links_of(ex: HtmlExtractor, html: str | bytes, url: str = PAGE) -> list[str]:
    body = html.encode("utf-8") if isinstance(html, str) else html
    return [link.url.url for link in ex.extract(body, url, content_type="text/html").links]


# (case, markup, expected links in document order)
LINK_TABLE = [
    ("absolute", '<a href="http://other.example.org/x">x</a>', ["http://other.example.org/x"]),
    ("relative file", '<a href="next.html">n</a>', ["https://www.example.com/dir/next.html"]),
    ("relative dot-dot", '<a href="../up/a">u</a>', ["https://www.example.com/up/a"]),
    ("root relative", '<a href="/root">r</a>', ["https://www.example.com/root"]),
    ("query only", '<a href="?p=2">p</a>', ["https://www.example.com/dir/page.html?p=2"]),
    ("protocol-relative", '<a href="//cdn.example.net/lib">c</a>', ["https://cdn.example.net/lib"]),
    (
        "base href",
        '<head><base href="http://base.example.com/b/"></head>'
        '<a href="rel">r</a><a href="/abs">a</a>',
        ["http://base.example.com/b/rel", "http://base.example.com/abs"],
    ),
    (
        "relative base href",
        '<base href="/other/"><a href="x">x</a>',
        ["https://www.example.com/other/x"],
    ),
    (
        "only the first base counts",
        '<base href="/one/"><base href="/two/"><a href="x">x</a>',
        ["https://www.example.com/one/x"],
    ),
    (
        "entities",
        '<a href="/s?b=2&amp;a=1&#38;c=3">e</a>',
        ["https://www.example.com/s?a=1&b=2&c=3"],
    ),
    ("numeric entity in path", '<a href="/a&#x2F;b">e</a>', ["https://www.example.com/a/b"]),
    ("whitespace around", '<a href="  \n /w  \t">w</a>', ["https://www.example.com/w"]),
    ("newline and tab inside", '<a href="/a\n/b\tc">w</a>', ["https://www.example.com/a/bc"]),
    ("space inside is escaped", '<a href="/a b">w</a>', ["https://www.example.com/a%20b"]),
    ("javascript", '<a href="javascript:void(0)">j</a><a href=" JavaScript:x()">j</a>', []),
    ("mailto and tel", '<a href="mailto:a@example.com">m</a><a href="tel:+1234">t</a>', []),
    ("data", '<a href="data:text/html,<p>hi</p>">d</a>', []),
    ("ftp and file", '<a href="ftp://example.com/f">f</a><a href="file:///etc/passwd">f</a>', []),
    # an empty href is the document's base URL (HTML, WHATWG URL: the page itself, its
    # fragment dropped, as document.links has it); no href is no link
    (
        "empty and missing href",
        '<a>none</a><a href="">e</a><a href="   ">s</a><area href>',
        ["https://www.example.com/dir/page.html?q=1"],
    ),
    (
        "empty href with a base",
        '<base href="/b/x#f"><a href="">e</a>',
        ["https://www.example.com/b/x"],
    ),
    ("empty src and link href", '<iframe src=""></iframe><link rel="next" href=" ">', []),
    ("fragment dropped", '<a href="/p#section">f</a>', ["https://www.example.com/p"]),
    (
        "uppercase tags and attributes",
        '<A HREF="/up">u</A><AREA HREF="/area"><IFRAME SRC="/if"></IFRAME>'
        '<LINK REL="Next" HREF="/next">',
        [
            "https://www.example.com/up",
            "https://www.example.com/area",
            "https://www.example.com/if",
            "https://www.example.com/next",
        ],
    ),
    (
        "frameset",
        '<HTML><FRAMESET COLS="50%,50%"><FRAME SRC="/left"><frame src="right.html"></FRAMESET>',
        ["https://www.example.com/left", "https://www.example.com/dir/right.html"],
    ),
    (
        "broken markup",
        "<div><p><a href=/unquoted>u</a><table><a href=\"/in-table\">t<td><a href='/single'>"
        '<b><i>unclosed <a href="/after"',
        [
            "https://www.example.com/unquoted",
            "https://www.example.com/in-table",
            "https://www.example.com/single",
        ],
    ),
    (
        "link rels",
        '<link rel="stylesheet" href="/s.css"><link rel="canonical" href="/canon">'
        '<link rel="alternate" hreflang="de" href="/de/"><link rel="icon" href="/i.ico">'
        '<link rel="preload next" href="/n2">',
        [
            "https://www.example.com/canon",
            "https://www.example.com/de/",
            "https://www.example.com/n2",
        ],
    ),
    (
        "meta refresh",
        '<meta http-equiv="Refresh" content="5; URL=\'/target?x=1\'">',
        ["https://www.example.com/target?x=1"],
    ),
    ("meta refresh without url", '<meta http-equiv="refresh" content="30">', []),
    (
        "canonicalized",
        '<a href="HTTP://WWW.Example.COM:80/a/./b/../c?utm_source=x&z=1&a=2">c</a>',
        ["http://www.example.com/a/c?a=2&z=1"],
    ),
    (
        "one record per URL",
        '<a href="/d">1</a><a href="/d#x">2</a><a href="https://www.example.com/d">3</a>',
        ["https://www.example.com/d"],
    ),
    ("idn host", '<a href="http://bücher.example/">b</a>', ["http://xn--bcher-kva.example/"]),
]


@pytest.mark.parametrize(("case", "markup", "expected"), LINK_TABLE, ids=[c[0] for c in LINK_TABLE])
def test_link_table(ex, case, markup, expected):
    assert links_of(ex, markup) == expected


def test_link_fields_and_tags(ex):
    page = ex.extract(
        b'<a href="http://news.example.co.uk:8080/a">x</a><iframe src="/f"></iframe>',
        PAGE,
        content_type="text/html",
    )
    first, second = page.links
    assert first.url.host == "news.example.co.uk:8080"
    assert first.url.site == "example.co.uk"
    assert len(first.url.fp) == 16
    assert (first.tag, second.tag) == ("a", "iframe")


def test_nofollow_per_link_and_per_page(ex):
    page = ex.extract(
        b'<a href="/a" rel="nofollow noopener">a</a><a href="/b" REL="NOFOLLOW">b</a>'
        b'<a href="/c" rel="ugc">c</a><a href="/a">a again, followable</a>',
        PAGE,
    )
    flags = {link.url.url.rsplit("/", 1)[1]: link.nofollow for link in page.links}
    assert flags == {"a": False, "b": True, "c": False}
    assert (page.noindex, page.nofollow) == (False, False)

    page = ex.extract(b'<meta name="ROBOTS" content="NoIndex, NoFollow"><a href="/x">x</a>', PAGE)
    assert (page.noindex, page.nofollow) == (True, True)
    assert [link.nofollow for link in page.links] == [True]

    page = ex.extract(b'<meta name="robots" content="none"><a href="/x">x</a>', PAGE)
    assert (page.noindex, page.nofollow) == (True, True)

    page = ex.extract(b'<a href="/x">x</a>', PAGE, x_robots_tag="noindex")
    assert (page.noindex, page.nofollow) == (True, False)
    page = ex.extract(b'<a href="/x">x</a>', PAGE, x_robots_tag="otherbot: nofollow")
    assert page.nofollow is False


def test_robots_directives():
    assert parse_robots_directives("noindex,nofollow") == (True, True)
    assert parse_robots_directives("index, follow") == (False, False)
    assert parse_robots_directives(None) == (False, False)
    assert parse_robots_directives("googlebot: noindex") == (False, False)
    assert parse_robots_directives("robots: noindex") == (True, False)


def test_refresh_target():
    assert refresh_target("0; url=http://a/b") == "http://a/b"
    assert refresh_target('3;URL="/x y"') == "/x y"
    assert refresh_target("  10 ,  url = /z") == "/z"
    assert refresh_target("5") is None


def test_title_canonical_and_text(ex):
    html = """<!doctype html><html><head><title>  The
    Title </title><link rel=canonical href="/canonical"><style>.x{color:red}</style>
    <script>var hidden = "script text";</script></head><body>
    <header>Site header</header><nav><a href="/n">Menu</a></nav>
    <main><h1>Headline</h1><p>First paragraph.</p><p>Second&nbsp;one &amp; more.</p>
    <noscript>Enable JS</noscript><template><p>tmpl</p></template></main>
    <aside>Related links</aside><footer>Copyright</footer></body></html>"""
    page = ex.extract(html.encode(), PAGE, content_type="text/html")
    assert page.title == "The Title"
    assert page.canonical == "https://www.example.com/canonical"
    assert page.text == "Headline First paragraph. Second\xa0one & more."
    for gone in ("script", "header", "Menu", "Related", "Copyright", "Enable", "tmpl", "color"):
        assert gone not in page.text
    assert page.text_bytes == len(page.text.encode("utf-8"))
    assert "https://www.example.com/n" in [link.url.url for link in page.links]  # nav counts


def _collapsed_bytes(text: str) -> int:
    words = [t for t in re.split(r"[ \t\n\r\f\v]+", text) if t]
    return len(" ".join(words).encode("utf-8", "surrogatepass"))


@pytest.mark.parametrize("count", [collapsed_length, collapsed_length_numpy], ids=["c", "numpy"])
@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "a",
        "  a  b\n\n c ",
        "\tü\xa0ß  日本 ",
        "x" * 1000 + "\n" * 5 + "y",
        "\x0b\x0ca\x1cb\x85c\u2028d\u3000 ",  # ASCII's white space only, VT and FF too
        "🙂 \U0010ffff\ud800 x",  # 4-byte code points; a lone surrogate is 3 bytes
    ],
)
def test_collapsed_length(count, text):
    assert count(text) == _collapsed_bytes(text)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1fa\xa0é\u0100€\ud83d😀日")))
def test_collapsed_length_c_and_numpy_agree(text):
    assert collapsed_length(text) == collapsed_length_numpy(text) == _collapsed_bytes(text)


@pytest.mark.parametrize("alphabet", [" \ta\xe9\n", " a\u20ac\x0c", " a\U0001f642\r"])
@pytest.mark.parametrize("size", [126, 127, 128, 254, 255, 1000, 300_000])
def test_collapsed_length_over_the_c_loops_blocks(alphabet, size):
    # The C loop counts Latin-1 text in blocks of 127 code points, wider text in
    # blocks of 2**20; words and bytes cross their edges.
    rng = random.Random(size)
    text = "".join(rng.choice(alphabet) for _ in range(size))
    assert collapsed_length(text) == _collapsed_bytes(text)


def test_charset_detection():
    assert detect_charset(b"\xef\xbb\xbf<p>x", "text/html; charset=latin1")[:2] == ("utf-8", "bom")
    assert detect_charset(b"<p>x", 'text/html; charset="ISO-8859-1"')[:2] == ("cp1252", "header")
    assert detect_charset(b'<meta charset="shift_jis"><p>', None)[:2] == ("cp932", "meta")
    meta = b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1251">'
    assert detect_charset(meta, "text/html")[:2] == ("cp1251", "meta")
    assert detect_charset("<p>café</p>".encode(), None)[:2] == ("utf-8", "utf-8")
    assert detect_charset("<p>café</p>".encode("latin-1"), None)[:2] == ("cp1252", "default")
    assert detect_charset(b"<p>x", "text/html; charset=bogus-charset")[1] != "header"


@pytest.mark.parametrize(
    ("encoding", "header", "markup"),
    [
        ("cp1252", "text/html; charset=iso-8859-1", "<p>Ça coûte 5 € — déjà vu</p>"),
        ("cp1251", None, '<meta charset="windows-1251"><p>Привет мир</p>'),
        ("shift_jis", "text/html; charset=Shift_JIS", "<p>日本語のテキスト</p>"),
        (
            "gb18030",
            None,
            '<meta http-equiv="content-type" content="text/html; charset=gb2312"><p>中文</p>',
        ),
        ("utf-16-le", None, "\ufeff<p>UTF-16 text ünïcödé</p>"),
        ("utf-8", "text/html", "<p>plain UTF-8 ünïcödé 🙂</p>"),
    ],
)
def test_text_decoded_by_charset(ex, encoding, header, markup):
    body = markup.encode(encoding)
    page = ex.extract(body, PAGE, content_type=header)
    expected = markup.split("<p>")[1].split("</p>")[0].lstrip("\ufeff")
    assert page.text == expected


def test_html_sniffing():
    assert looks_like_html("text/html; charset=utf-8", b"<p>x")
    assert looks_like_html("application/xhtml+xml", b"<?xml version='1.0'?><html>")
    assert looks_like_html(None, b"  <!DOCTYPE html><html>")
    assert looks_like_html("", b"\xef\xbb\xbf<html><body>")
    assert looks_like_html("text/plain", b"<html><head>")
    assert looks_like_html("application/octet-stream", b"<!-- c --><p>")
    assert not looks_like_html("text/plain", b"just text, <b> later")
    assert not looks_like_html(None, b"%PDF-1.7 ...")
    assert not looks_like_html("text/html", b"\x89PNG\r\n\x1a\n....")  # wrong type
    assert not looks_like_html("image/png", b"<html>")
    assert not looks_like_html("application/json", b'{"a": "<html>"}')
    assert not looks_like_html("text/plain", b"<htmlx>")
    xhtml = b'<?xml version="1.0"?>\n<!DOCTYPE html>\n<html xmlns="http://www.w3.org/1999/xhtml">'
    assert looks_like_html(None, xhtml)
    assert not looks_like_html(None, b'<?xml version="1.0"?><rss version="2.0">')


def test_caps(ex):
    small = HtmlExtractor(Canonicalizer(), max_html_bytes=2000, max_links=5)
    many = "".join(f'<a href="/l{i}">l</a>' for i in range(50))
    page = small.extract(many.encode(), PAGE)
    assert len(page.links) == 5
    assert page.capped == ["links"]
    big = b"<p>" + b"word " * 2000 + b'</p><a href="/late">late</a>'
    page = small.extract(big, PAGE)
    assert "html" in page.capped
    assert page.links == []
    assert ex.extract(big, PAGE).capped == []


def test_garbage_does_not_raise(ex):
    for body in (
        b"",
        b"\x00\x01\x02\xff\xfe",
        b"<" * 10000,
        b"<a href='" + b"x" * 100000,
        "<a href='\ud800'>".encode("utf-8", "surrogatepass"),
    ):
        page = ex.extract(body, PAGE)
        assert isinstance(page.text, str)


_HREF_PARTS = st.sampled_from(
    [
        "a",
        "B",
        "0",
        "-",
        "_",
        "~",
        ".",
        "..",
        "/",
        "//",
        "%7e",
        "%2F",
        "?",
        "q=1",
        "&",
        "=",
        "#",
        "x",
        " ",
        "\t",
        ";",
        "jsessionid=1",
        ":",
        "@",
        "\\",
        "é",
        "utm_source=z",
        "./",
        "../",
        "+",
        "lang=en",
        "'",
    ]
)
_BASES = st.sampled_from(
    [
        "https://www.example.com/dir/page.html?q=1",
        "http://example.com/",
        "http://example.com",
        "https://user:pw@Example.COM:8443/a/b/",
        "http://example.com:80/x%7ey/z",
        "https://ex.co.uk/a;jsessionid=9/b",
        "http://127.0.0.1:8080/p/q",
        "https://xn--bcher-kva.example/ü/",
        "http://example.com/./a/../b/c",
        "http://example.com/a//b/c/d.html",
        "https://h.test:8080/x/y/z/",
        "http://127.1.0.7:8080/docs/page-2.html",
        "http://127.1.0.7:8080/docs/page-3.html",
        "https://h.test/a/b?x=/y/z#f/g",
        "https://h.test/a/b#f?g/h",
        "https://h.test/a/c/d/",
    ]
)
_PREFIXES = st.sampled_from(
    [
        "",
        "/",
        "//",
        "http://",
        "https://",
        "http://example.com/",
        "https://Other.example.org/",
        "https://other.example.org:443/",
        "http://sub.example.com:8080/",
        "HTTP://example.com/",
        "http://1.2.3.4/",
        "http://example.com./",
        "http://xn--bcher-kva.example/",
        # IPv4 as WHATWG writes it (the shortcut takes it) and as it does not
        "http://127.1.0.7:8080/",
        "http://255.0.10.99/",
        "http://127.1/",
        "http://0x7f.0.0.1/",
        "http://1.2.3.04/",
        "http://256.1.1.1/",
        "http://1.2.3.4.5/",
        # scheme-relative, to a name, an address and odd authorities
        "//example.com/",
        "//Other.example.org:443/",
        "//127.1.0.7:8080/",
        "//1.2.3.04/",
        "///",
        "//user@example.com/",
    ]
)


# Both resolver cores: the C one (crawlkit/html/_speedups.c) where it was built, and
# PyCore (tests/html/test_speedups.py holds them to each other too).
_CORES = pytest.mark.parametrize("compiled", [True, False], ids=["c-core", "py-core"])


@_CORES
@settings(max_examples=3000, deadline=None)
@given(_BASES, _PREFIXES, st.lists(_HREF_PARTS, max_size=6))
def test_fast_link_path_agrees_with_the_canonicalizer(compiled, base_raw, prefix, parts):
    """The resolver's plain-path shortcut gives exactly what a full parse gives."""
    _assert_resolved_as_parsed(
        LinkResolver(Canonicalizer(), compiled=compiled),
        href=prefix + "".join(parts),
        base_raw=base_raw,
    )


def _assert_resolved_as_parsed(resolver: LinkResolver, href: str, base_raw: str) -> None:
    """``resolver`` gives for ``href`` on a page at ``base_raw`` what a full parse gives."""
    base = ada_url.normalize_url(base_raw)
    authority = base[: base.index("/", base.index("//") + 2)]
    try:
        expected = Canonicalizer().parse(href, base)
    except InvalidURL:
        expected = None
    assert resolver.resolve(href, base, authority) == expected, (href, base)


# Pages of one host in different directories, and links whose results depend on them.
_SITE_BASES = st.sampled_from(
    [
        "https://h.test/",
        "https://h.test/a/b?x=/y/z#f/g",
        "https://h.test/a/b#f?g/h",
        "https://h.test/a/c/d/",
        "https://h.test/a/c/e.html?id=2",
        "https://h.test/a%2Fb/c",
        "https://h.test/a;x/c",
    ]
)
_SITE_HREFS = st.sampled_from(
    ["x", "../x", "./", ".", "..", "../../x/y", "#top", "?q=1", "x?b=2&a=1", "", "x#f", "a:b"]
)


@_CORES
@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.tuples(_SITE_BASES, _SITE_HREFS),
            st.tuples(_BASES, st.builds("".join, st.tuples(_PREFIXES, *[_HREF_PARTS] * 3))),
        ),
        max_size=30,
    )
)
def test_one_resolver_over_many_pages_agrees_with_the_canonicalizer(compiled, links):
    """One resolver, its cache shared by the links of many bases (pages of one
    directory share relative links' results), gives what a full parse gives."""
    resolver = LinkResolver(Canonicalizer(), compiled=compiled)
    for base_raw, href in links:
        _assert_resolved_as_parsed(resolver, href, base_raw)


# Hostile shapes the tree builder spends quadratic time on (issue 15): each is cut by
# crawlkit.html.guard before parsing; what comes before the cut survives.
DEEP = 100_000
HOSTILE = [
    ("div", b"<div>" * DEEP, "depth"),
    ("ul-li", b"<ul><li>" * DEEP, "depth"),
    ("b", b"<b>" * DEEP, "depth"),
    ("table", b"<table><tr><td>" * DEEP, "depth"),
    ("svg-breakout", b"<svg><div/>" + b"<path/>" * DEEP, "depth"),
    ("attributes", b"<div " + b" ".join(b"a%d=1" % i for i in range(DEEP)) + b">", "attributes"),
    ("body-repeats", b"".join(b"<body a%d>" % i for i in range(DEEP)), "attributes"),
]


@pytest.mark.parametrize(("shape", "bomb", "cap"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_nesting_is_capped_and_what_came_before_survives(ex, shape, bomb, cap):
    head = (
        b'<html><head><title>T</title></head><body><p>before the bomb <a href="/first">'
        b'first</a></p><div><div><a href="/nested">n</a></div></div>'
    )
    page = ex.extract(head + bomb + b"hello", PAGE, content_type="text/html")
    assert page.capped == [cap]
    assert page.title == "T"
    assert "before the bomb" in page.text
    urls = [link.url.url for link in page.links]
    assert urls[:2] == ["https://www.example.com/first", "https://www.example.com/nested"]


def test_depth_cap_keeps_deep_text_one_level_up(ex):
    from crawlkit.html.guard import MAX_DEPTH

    deep = (
        b"<div>" * (MAX_DEPTH + 50)
        + b'deep text <a href="/deep">d</a>'
        + b"</div>" * (MAX_DEPTH + 50)
    )
    filler = b"<p>filler</p>" * 6000  # pages under 64 KiB are not scanned
    page = ex.extract(
        b"<html><body>" + deep + b"<p>after</p>" + filler, PAGE, content_type="text/html"
    )
    assert page.capped == ["depth"]
    assert "deep text" in page.text and "after" in page.text
    # An <a> adds one level at most (one is open at a time): never past the cap, kept.
    assert [link.url.url.rsplit("/", 1)[1] for link in page.links] == ["deep"]


@pytest.mark.parametrize(
    "markup",
    [
        # real pages: deep but under the cap, inline SVG icons, scripts full of tags
        b"<div>" * 100 + b"x" + b"</div>" * 100,
        b"<svg>" + b'<path d="M0 0"/>' * 5000 + b"</svg>" + b"<p>x" * 200,
        # (scripts build markup in balanced strings; a comment holds a page's old markup)
        b"<script>"
        + b'"<div>" + x + "</div>" + ' * 3000
        + b"</script><!-- "
        + b"<div>" * 200
        + b" -->",
        b"<ul>" + b"<li>item" * 5000 + b"</ul><table>" + b"<tr><td>c" * 2000 + b"</table>",
        b'<img alt="' + b"word " * 100 + b'" src="/a.png">' * 50,
    ],
    ids=["deep-100", "svg-icons", "script-and-comment", "lists-tables", "long-alt"],
)
def test_ordinary_pages_are_not_capped(ex, markup):
    from crawlkit.html.guard import SCAN_FROM

    page = b"<html><body>" + markup * (1 + SCAN_FROM // len(markup))  # big enough to scan
    assert ex.extract(page, PAGE, content_type="text/html").capped == []


_TOKENS = st.sampled_from(
    [
        b"<div>",
        b"</div>",
        b"<b>",
        b"</b>",
        b"<p>",
        b"<li>",
        b"<ul>",
        b"</ul>",
        b"<svg>",
        b"</svg>",
        b"<path/>",
        b"<script>",
        b"</script>",
        b"<!--",
        b"-->",
        b"<a href=x>",
        b"</a>",
        b"<table>",
        b"<td>",
        b"text",
        b" ",
        b"<",
        b">",
        b'"',
        b"<body a=1>",
        b"<i x y z>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=400), st.integers(0, 400))
def test_guard_never_raises_and_leaves_pages_under_the_caps_alone(tokens, repeat):
    from crawlkit.html.guard import SCAN_FROM, guard_markup

    markup = b"".join(tokens) * (1 + repeat // 100)
    markup += b" " * max(0, SCAN_FROM - len(markup))  # big enough to be scanned
    out, capped = guard_markup(markup)
    assert set(capped) <= {"depth", "attributes"}
    assert (out is markup) == (not capped)
    assert len(out) <= len(markup)
    text, text_capped = guard_markup(markup.decode("utf-8"))
    assert text_capped == capped and isinstance(text, str)
