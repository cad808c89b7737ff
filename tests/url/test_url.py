"""The URL layer: canonical forms at each rule level, registered domains, fingerprints."""

from __future__ import annotations

import contextlib

import ada_url
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.errors import InvalidURL
from crawlkit.url import (
    Canonicalizer,
    Rules,
    fingerprint,
    load_param_denylist,
    site_of_host,
    whatwg_href,
)

NONE = Canonicalizer(Rules.NONE)
SAFE = Canonicalizer(Rules.SAFE)
DEFAULT = Canonicalizer(Rules.DEFAULT)


# (input, none, safe, default) — each row names what it shows.
RULE_TABLE = [
    # scheme and host case, default port: the WHATWG parser already does these
    ("HTTP://Example.COM:80/", "http://example.com/", "http://example.com/", "http://example.com/"),
    ("https://a.com:443/x", "https://a.com/x", "https://a.com/x", "https://a.com/x"),
    ("http://a.com:8080/x", "http://a.com:8080/x", "http://a.com:8080/x", "http://a.com:8080/x"),
    # empty path becomes /
    ("http://a.com", "http://a.com/", "http://a.com/", "http://a.com/"),
    # dot segments
    ("http://a.com/a/./b/../c", "http://a.com/a/c", "http://a.com/a/c", "http://a.com/a/c"),
    # fragment dropped at every level
    ("http://a.com/x#top", "http://a.com/x", "http://a.com/x", "http://a.com/x"),
    ("http://a.com/x#", "http://a.com/x", "http://a.com/x", "http://a.com/x"),
    # percent-escapes: uppercase, unreserved decoded (safe and up only)
    (
        "http://a.com/%7euser/%2fx",
        "http://a.com/%7euser/%2fx",
        "http://a.com/~user/%2Fx",
        "http://a.com/~user/%2Fx",
    ),
    # a stray "%" is escaped, so decoding never makes a new escape ("%%41" is not "%A")
    (
        "http://a.com/%%41a=1%z",
        "http://a.com/%%41a=1%z",
        "http://a.com/%25Aa=1%25z",
        "http://a.com/%25Aa=1%25z",
    ),
    (
        "http://a.com/?q=%41%e2%82%ac",
        "http://a.com/?q=%41%e2%82%ac",
        "http://a.com/?q=A%E2%82%AC",
        "http://a.com/?q=A%E2%82%AC",
    ),
    # tracking parameters removed and query sorted (default only)
    (
        "http://a.com/p?utm_source=x&b=2&a=1&gclid=9",
        "http://a.com/p?utm_source=x&b=2&a=1&gclid=9",
        "http://a.com/p?utm_source=x&b=2&a=1&gclid=9",
        "http://a.com/p?a=1&b=2",
    ),
    (
        "http://a.com/p?fbclid=1&msclkid=2&mc_cid=3&mc_eid=4&UTM_Medium=5",
        "http://a.com/p?fbclid=1&msclkid=2&mc_cid=3&mc_eid=4&UTM_Medium=5",
        "http://a.com/p?fbclid=1&msclkid=2&mc_cid=3&mc_eid=4&UTM_Medium=5",
        "http://a.com/p",
    ),
    # stable sort for equal keys
    (
        "http://a.com/?b=1&a=2&a=1",
        "http://a.com/?b=1&a=2&a=1",
        "http://a.com/?b=1&a=2&a=1",
        "http://a.com/?a=2&a=1&b=1",
    ),
    # session ids, in the query and as a path parameter
    (
        "http://a.com/x?PHPSESSID=abc&id=1",
        "http://a.com/x?PHPSESSID=abc&id=1",
        "http://a.com/x?PHPSESSID=abc&id=1",
        "http://a.com/x?id=1",
    ),
    (
        "http://a.com/x;jsessionid=ABC123?id=1",
        "http://a.com/x;jsessionid=ABC123?id=1",
        "http://a.com/x;jsessionid=ABC123?id=1",
        "http://a.com/x?id=1",
    ),
    (
        "http://a.com/x?ASPSESSIONIDQQ=1&CFID=2&CFTOKEN=3&k=v",
        "http://a.com/x?ASPSESSIONIDQQ=1&CFID=2&CFTOKEN=3&k=v",
        "http://a.com/x?ASPSESSIONIDQQ=1&CFID=2&CFTOKEN=3&k=v",
        "http://a.com/x?k=v",
    ),
    # empty query: kept by none and safe (a browser sends "?"), dropped by default
    ("http://a.com/x?", "http://a.com/x?", "http://a.com/x?", "http://a.com/x"),
    ("http://a.com/x?&&", "http://a.com/x?&&", "http://a.com/x?&&", "http://a.com/x"),
    # www. and trailing slashes are never touched
    (
        "http://www.a.com/dir/",
        "http://www.a.com/dir/",
        "http://www.a.com/dir/",
        "http://www.a.com/dir/",
    ),
    (
        "http://www.a.com/dir",
        "http://www.a.com/dir",
        "http://www.a.com/dir",
        "http://www.a.com/dir",
    ),
    # IDN to punycode
    (
        "http://Bücher.example/",
        "http://xn--bcher-kva.example/",
        "http://xn--bcher-kva.example/",
        "http://xn--bcher-kva.example/",
    ),
    # IPv6 and IPv4 forms
    ("http://[0:0::1]:8080/", "http://[::1]:8080/", "http://[::1]:8080/", "http://[::1]:8080/"),
    ("http://0x7f.1/", "http://127.0.0.1/", "http://127.0.0.1/", "http://127.0.0.1/"),
]


@pytest.mark.parametrize(("raw", "none", "safe", "default"), RULE_TABLE)
def test_rule_levels(raw: str, none: str, safe: str, default: str) -> None:
    assert NONE.canonicalize(raw) == none
    assert SAFE.canonicalize(raw) == safe
    assert DEFAULT.canonicalize(raw) == default


# WHATWG resolution against a base (the browser's answer).
RESOLUTION = [
    ("http://a.com/b/c/d", "../x", "http://a.com/b/x"),
    ("http://a.com/b/c/d", "../../../../x", "http://a.com/x"),
    ("http://a.com/b/c/d", "?q=1", "http://a.com/b/c/d?q=1"),
    ("http://a.com/b/c/d", "#frag", "http://a.com/b/c/d"),
    ("https://a.com/b/", "//cdn.b.com/x.js", "https://cdn.b.com/x.js"),
    ("http://a.com/b/", "/abs", "http://a.com/abs"),
    ("http://a.com/b/", "  spaced  ", "http://a.com/b/spaced"),
    ("http://a.com/b/", "x y", "http://a.com/b/x%20y"),
    ("http://a.com/b/", "http:other", "http://a.com/b/other"),
    ("http://a.com/", "http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
    ("http://a.com/", "HTTPS://MÜNCHEN.de/ä", "https://xn--mnchen-3ya.de/%C3%A4"),
    ("http://a.com/a%2fb/", "c", "http://a.com/a%2Fb/c"),
    ("http://a.com/", "\\\\b.com\\x", "http://b.com/x"),
]


@pytest.mark.parametrize(("base", "ref", "expected"), RESOLUTION)
def test_whatwg_resolution(base: str, ref: str, expected: str) -> None:
    assert DEFAULT.canonicalize(ref, base) == expected


@pytest.mark.parametrize(
    "bad",
    [
        "mailto:a@b.c",
        "javascript:alert(1)",
        "data:text/html,x",
        "ftp://a.com/",
        "/relative",
        "",
        "http://",
        "http://exa mple.com/",
        "http://[::1/",
        "file:///etc/passwd",
        "\ud800",
    ],
)
def test_unusable_urls_raise_invalid_url(bad: str) -> None:
    with pytest.raises(InvalidURL):
        DEFAULT.parse(bad)


PSL = [
    ("www.bbc.co.uk", "bbc.co.uk"),
    ("a.b.c.example.com", "example.com"),
    ("foo.blogspot.com", "foo.blogspot.com"),  # private section counts
    ("x.foo.blogspot.com", "foo.blogspot.com"),
    ("co.uk", "co.uk"),  # a public suffix is its own site
    ("127.0.0.1", "127.0.0.1"),
    ("[::1]", "[::1]"),
    ("localhost", "localhost"),
    ("www.xn--mnchen-3ya.de", "xn--mnchen-3ya.de"),
    ("a.b.xn--p1ai", "b.xn--p1ai"),  # .рф
    ("h3.test", "h3.test"),
    ("example.com.", "example.com"),
]


@pytest.mark.parametrize(("host", "site"), PSL)
def test_registered_domain(host: str, site: str) -> None:
    assert site_of_host(host) == site


def test_record_fields() -> None:
    parsed = DEFAULT.parse("HTTPS://News.BBC.co.uk:8443/a?b=1#x")
    assert parsed.url == "https://news.bbc.co.uk:8443/a?b=1"
    assert parsed.host == "news.bbc.co.uk:8443"
    assert parsed.site == "bbc.co.uk"
    assert parsed.fp == format(xxhash.xxh3_64_intdigest(parsed.url.encode()), "016x")
    assert len(parsed.fp) == 16 and parsed.fp == fingerprint(parsed.url)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # sid names a story on many sites (?sid=1, Slashdot's ?sid=06/12/05/1234567):
        # dropped only with a generated token, where it is a session's
        ("http://a.com/story.php?sid=1", "http://a.com/story.php?sid=1"),
        ("http://a.com/a.pl?sid=06/12/05/1234567", "http://a.com/a.pl?sid=06/12/05/1234567"),
        ("http://a.com/p?sid=news-2024-story", "http://a.com/p?sid=news-2024-story"),
        ("http://a.com/p?sid=9f2c4e1a7b3d5f60a1b2c3d4e5f60718&b=1", "http://a.com/p?b=1"),
        ("http://a.com/p?SID=1x208431&b=1", "http://a.com/p?b=1"),
        ("http://a.com/p?sid=0000000000012345", "http://a.com/p"),
        ("http://a.com/p?phpsessid=1", "http://a.com/p"),  # a session's name: any value
    ],
)
def test_sid_is_dropped_only_as_a_session_token(url: str, expected: str) -> None:
    assert DEFAULT.canonicalize(url) == expected


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        # prefixed session-id names (BroadVision's BV_SessionID, PHP frameworks'
        # _sessionid), met by Nutch's session-id rule: every visit a new URL
        (
            "http://a.com/shop.php?BV_SessionID=@@@@0417.2231@@@@&item=7",
            "http://a.com/shop.php?item=7",
        ),
        ("http://a.com/list?_sessionid=k2v9x7&sort=new", "http://a.com/list?sort=new"),
        ("http://a.com/list?page=2&_SessionID=77aa01f3c9", "http://a.com/list?page=2"),
        # _sid, like sid, only with a generated token: "_sid=7" may be a story's id
        ("http://a.com/a.php?_sid=3e1f0c9a2b7d4e6f&n=1", "http://a.com/a.php?n=1"),
        ("http://a.com/a.php?_sid=7&n=1", "http://a.com/a.php?_sid=7&n=1"),
    ],
)
def test_prefixed_session_id_names_are_dropped(url: str, expected: str) -> None:
    assert DEFAULT.canonicalize(url) == expected


@pytest.mark.parametrize(
    ("url", "expected", "host"),
    [
        ("http://www.example.org./x", "http://www.example.org/x", "www.example.org"),
        (
            "HTTP://WWW.Example.ORG..:8080/x",
            "http://www.example.org:8080/x",
            "www.example.org:8080",
        ),
        ("http://u:p@a.example./", "http://u:p@a.example/", "a.example"),
        ("https://1.2.3.4./", "https://1.2.3.4/", "1.2.3.4"),
    ],
)
def test_a_host_written_absolute_is_one_host(url: str, expected: str, host: str) -> None:
    """A trailing dot (DNS's root) names the same host: one URL, one politeness queue,
    one robots.txt at default rules (kept apart, a server was asked by two host clocks
    at once); safe rules keep the URL as linked."""
    parsed = DEFAULT.parse(url)
    assert (parsed.url, parsed.host) == (expected, host)
    assert parsed.fp == DEFAULT.parse(expected).fp
    assert DEFAULT.canonicalize(parsed.url) == parsed.url  # a fixed point
    assert SAFE.canonicalize("http://www.example.org./x") == "http://www.example.org./x"


def test_user_denylist_extends_shipped_one(tmp_path) -> None:
    extra = tmp_path / "deny.txt"
    extra.write_text("# mine\nref\nsrc_*\n")
    canon = Canonicalizer(param_denylist=load_param_denylist([extra]))
    assert canon.canonicalize("http://a.com/?ref=x&src_a=1&utm_x=2&k=1") == "http://a.com/?k=1"
    assert DEFAULT.canonicalize("http://a.com/?ref=x") == "http://a.com/?ref=x"


# --- properties -------------------------------------------------------------------

url_parts = st.sampled_from(
    [
        "http://",
        "https://",
        "HTTP://",
        "http://a.com",
        "www.",
        "Ex.COM",
        ":80",
        ":443",
        ":8080",
        "/",
        "/./",
        "/../",
        "//",
        "%7e",
        "%2f",
        "%41",
        "%e2%82%ac",
        "%",
        "?",
        "&",
        "=",
        "#",
        "utm_source=1",
        "a=1",
        "b=2",
        ";jsessionid=x",
        ";JSESSIONID=",
        "PHPSESSID=2",
        "ü",
        "é",
        "[::1]",
        "127.0.0.1",
        "xn--",
        "-",
        ".",
        " ",
        "\t",
        "\\",
        "@",
        "user:pw@",
        "a",
        "Z",
        "0",
    ]
)
urlish = st.lists(url_parts, min_size=1, max_size=14).map("".join)
anything = st.one_of(urlish, st.text(max_size=60))


@settings(max_examples=600, deadline=None)
@given(urlish)
def test_canonicalization_is_idempotent(raw: str) -> None:
    for canon in (NONE, SAFE, DEFAULT):
        try:
            once = canon.canonicalize("http://h.com/" + raw if not raw.startswith("http") else raw)
        except InvalidURL:
            continue
        assert canon.canonicalize(once) == once, (canon.rules, raw, once)


@settings(max_examples=600, deadline=None)
@given(anything, st.one_of(st.none(), st.just("http://base.com/a/b")))
def test_never_raises_anything_but_invalid_url(raw: str, base: str | None) -> None:
    for canon in (NONE, SAFE, DEFAULT):
        with contextlib.suppress(InvalidURL):
            canon.parse(raw, base)


@settings(max_examples=400, deadline=None)
@given(urlish, urlish)
def test_stricter_levels_collapse_at_least_as_much(a: str, b: str) -> None:
    a = "http://h.com/" + a
    b = "http://h.com/" + b

    def forms(canon: Canonicalizer, raw: str) -> str | None:
        try:
            return canon.canonicalize(raw)
        except InvalidURL:
            return None

    if forms(NONE, a) is not None and forms(NONE, a) == forms(NONE, b):
        assert forms(SAFE, a) == forms(SAFE, b)
    if forms(SAFE, a) is not None and forms(SAFE, a) == forms(SAFE, b):
        assert forms(DEFAULT, a) == forms(DEFAULT, b)


def _ada_answer(url: str, base: str | None) -> str | None:
    try:
        return ada_url.join_url(base, url) if base else ada_url.normalize_url(url)
    except Exception:
        return None


def _our_answer(url: str, base: str | None) -> str | None:
    try:
        return whatwg_href(url, base)
    except ValueError:  # UnicodeEncodeError (lone surrogates) is one
        return None


@settings(max_examples=600, deadline=None)
@given(anything, st.one_of(st.none(), st.just("http://base.com/a/b?q#f"), urlish))
def test_whatwg_href_is_the_packages_join_and_normalize(url: str, base: str | None) -> None:
    """The direct C calls give what ada_url's own wrappers give, failures included."""
    assert _our_answer(url, base) == _ada_answer(url, base)


@pytest.mark.parametrize(
    ("url", "base", "expected"),
    [
        ("../g?x#y", "http://a/b/c/d;p?q", "http://a/b/g?x#y"),
        ("HTTP://Ex.COM:80/%7e", None, "http://ex.com/%7e"),
        ("//h.test:8080/x", "https://base.com/", "https://h.test:8080/x"),
        ("no scheme", None, None),
        ("http://[::1", None, None),
        ("\ud800", "http://a/", None),
    ],
)
def test_whatwg_href_examples(url: str, base: str | None, expected: str | None) -> None:
    assert _our_answer(url, base) == expected


def test_suffix_list_agrees_with_the_publicsuffixlist_package() -> None:
    """Our fast lookup must give the package's answer on every kind of rule."""
    from publicsuffixlist import PublicSuffixList

    reference = PublicSuffixList()
    hosts = [
        "a.b.example.com",
        "www.bbc.co.uk",
        "x.y.kawasaki.jp",
        "city.kawasaki.jp",
        "a.city.kawasaki.jp",
        "www.ck",
        "a.b.ck",
        "foo.bar.compute.amazonaws.com",
        "x.s3.amazonaws.com",
        "a.github.io",
        "github.io",
        "b.a.github.io",
        "com",
        "uk",
        "a.unknown-tld",
        "a.b.xn--p1ai",
        "x.xn--mnchen-3ya.de",
        "deep.a.b.c.d.e.co.jp",
        "a.b.c.appspot.com",
        "x.pvt.k12.ma.us",
        "t.test",
        "q.r.s.herokuapp.com",
        # rules written in Unicode in the PSL (公司.cn, 東京.jp), met in punycode
        "www.example.xn--55qx5d.cn",
        "a.b.xn--1lqs71d.jp",
    ]
    for host in hosts:
        assert site_of_host(host) == (reference.privatesuffix(host) or host), host
