"""crawlkit/html/_speedups.c against the Python it stands in for.

The link resolver's two cores, C and PyCore, do the same: the same URL for every href
and base, the same cache entries, the same byte estimate, the same clearing at the
bound (tests/stages/test_extract.py holds each to the canonicalizer's full parse).
requisite_markers gives what requisite_markers_py gives for any bytes."""

from __future__ import annotations

import pytest
from c_toolchain import skip_without_c_toolchain
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.html import resolve as module
from crawlkit.html.links import requisite_markers_py
from crawlkit.html.resolve import LinkResolver
from crawlkit.url import Canonicalizer, ParsedURL

# Where the C core was not built, only the last test runs (and says whether it should
# have been).
needs_c = pytest.mark.skipif(module._compiled is None, reason="the C core was not built")

# Bases and hrefs that reach every branch: each key kind, each shortcut (authority,
# absolute, scheme-relative, directory with climbs), queries clean and not, hosts
# the shortcut takes (names, dotted quads, ports) and those it leaves to the parser.
_BASES = st.sampled_from(
    [
        "http://h.test/",
        "http://h.test/a/b/c.html",
        "https://h.test:8443/a/b/?q=1#f",
        "https://h.test/a/b#f?g/h",
        "http://127.1.0.7:8080/docs/page-2.html",
        "http://h.test/a%2Fb/c",
        "http://h.test/a;x/c",
        "http://user@h.test/a/",
        "https://xn--bcher-kva.example/d/e/",
    ]
)
_HOSTS = [
    "h.test",
    "H.test",
    "a-b.c-d",
    "a..b",
    "a.b.",
    ".a",
    "-",
    "x9",
    "9",
    "1.2.3.4",
    "1.2.3.04",
    "01.2.3.4",
    "256.1.1.1",
    "255.255.255.255",
    "1.2.3",
    "1.2.3.4.5",
    "127.1",
    "h.test:8080",
    "h.test:",
    "h.test:123456",
    "h.test:8a",
    "1.2.3.4:80",
    "h.test:80:80",
    "ü.test",
    "",
]
_PIECES = st.sampled_from(
    [
        "a",
        "b.html",
        "/",
        ".",
        "..",
        "./",
        "../",
        "-",
        "_",
        "~",
        "%41",
        "?",
        "q=1",
        "&",
        "=",
        "+",
        "#",
        "x",
        " ",
        "\t",
        "\n",
        ":",
        ";",
        "é",
        "utm_source=z",
        "id=3",
        "//",
    ]
)
_PREFIXES = st.one_of(
    st.sampled_from(["", "/", "//", "#", "?", "mailto:", "HTTP://", "a:", "\t/", "../", "./"]),
    st.sampled_from(_HOSTS).flatmap(
        lambda host: st.sampled_from([f"http://{host}/", f"https://{host}/", f"//{host}/"])
    ),
)
_HREFS = st.builds(lambda p, parts: p + "".join(parts), _PREFIXES, st.lists(_PIECES, max_size=5))


def _authority(base: str) -> str:
    return base[: base.index("/", base.index("//") + 2)]


def _pair(max_bytes: int = 10**9, max_entries: int = 200_000) -> tuple[LinkResolver, ...]:
    canon = Canonicalizer()
    return tuple(
        LinkResolver(canon, max_entries, max_bytes, compiled=compiled) for compiled in (True, False)
    )


@needs_c
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.tuples(_BASES, _HREFS), min_size=1, max_size=40), st.integers(0, 3))
def test_both_cores_give_the_same_urls_entries_and_bytes(links, bound) -> None:
    # A small byte bound clears the cache now and then: both clear at the same link.
    max_bytes = [10**9, 2_000, 5_000, 700][bound]
    c_core, py_core = _pair(max_bytes=max_bytes)
    assert c_core.compiled and not py_core.compiled
    for base, href in links:
        got = c_core.resolve(href, base, _authority(base))
        want = py_core.resolve(href, base, _authority(base))
        assert got == want, (href, base)
        assert got is None or type(got) is ParsedURL
        assert c_core.bytes == py_core.bytes, (href, base)
    assert c_core._cache == py_core._cache
    assert c_core._authorities == py_core._authorities


@needs_c
def test_the_entry_bound_clears_both_alike() -> None:
    c_core, py_core = _pair(max_entries=3)
    base = "http://h.test/a/"
    for i in range(10):
        for resolver in (c_core, py_core):
            resolver.resolve(f"p{i}.html", base, "http://h.test")
        assert list(c_core._cache) == list(py_core._cache)
        assert len(c_core._cache) <= 3


@needs_c
@pytest.mark.parametrize(
    ("href", "base", "url"),
    [
        ("../../../x", "http://h.test/a/b/", "http://h.test/x"),
        ("..", "http://h.test/a/b/c", "http://h.test/a/"),
        (".", "http://h.test/a/b/c", "http://h.test/a/b/"),
        ("./x?b=2&a=1#f", "http://h.test/a/", "http://h.test/a/x?a=1&b=2"),
        ("//o.test:81/p", "https://h.test/", "https://o.test:81/p"),
        ("http://1.2.3.4:80/p", "http://h.test/", "http://1.2.3.4/p"),
        ("http://1.2.3.04/p", "http://h.test/", "http://1.2.3.4/p"),
        ("#top", "http://h.test/a?q=1#f", "http://h.test/a?q=1"),
        ("/x?utm_source=n", "http://h.test/a", "http://h.test/x"),
    ],
)
def test_shortcut_and_parse_cases(href: str, base: str, url: str) -> None:
    for resolver in _pair():
        parsed = resolver.resolve(href, base, _authority(base))
        assert parsed is not None and parsed.url == url, (resolver.compiled, href)


@needs_c
def test_the_c_core_checks_its_arguments() -> None:
    c_core, _ = _pair()
    with pytest.raises(TypeError):
        c_core.resolve(b"/x", "http://h.test/", "http://h.test")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        c_core.resolve("/x", "http://h.test/")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        module._compiled.Core({}, {}, None, None, None, None, dict, 1, 1)  # type: ignore[arg-type]


@needs_c
def test_an_error_in_a_callback_reaches_the_caller_and_leaves_no_entry() -> None:
    def broken(_raw: str) -> str:
        raise RuntimeError("query_part failed")

    resolver = LinkResolver(Canonicalizer())
    resolver._core = module._compiled.Core(
        resolver._cache, resolver._authorities, resolver._parse, broken,
        resolver._host_site, module.FINGERPRINT_OF_BYTES, ParsedURL, 100, 10**6,
    )  # fmt: skip
    with pytest.raises(RuntimeError, match="query_part failed"):
        resolver._core.resolve("/x?a=1", "http://h.test/", "http://h.test")
    assert resolver._cache == {}


def test_the_c_core_is_built_where_a_c_compiler_is() -> None:
    skip_without_c_toolchain("links resolve in PyCore only")
    assert module._compiled is not None, "crawlkit/html/_speedups.c was not built"
    assert LinkResolver(Canonicalizer()).compiled


# Pieces of markup around the three markers, in either case and cut short, with the
# white space a bytes pattern's \s takes (and \x1c, which it does not).
_MARKUP_PIECES = st.sampled_from(
    [b"url(", b"URL(", b"uRl", b"(", b"url", b" url (", b"@import", b"@IMPORT", b"@impor",
     b"@", b"import", b"background", b"BACKGROUND", b"backgroun", b"=", b" ", b"\t", b"\n",
     b"\x0b", b"\x0c", b"\r", b"\x1c", b"x", b"\xc3\xa9", b"<p style='a:b'>"]
)  # fmt: skip


@needs_c
@settings(max_examples=2000, deadline=None)
@given(st.lists(_MARKUP_PIECES, max_size=12).map(b"".join))
def test_requisite_markers_in_c_and_python_agree(markup: bytes) -> None:
    assert module._compiled.requisite_markers(markup) == requisite_markers_py(markup)


@needs_c
def test_requisite_markers_take_any_buffer_and_refuse_text() -> None:
    markers = module._compiled.requisite_markers
    assert markers(bytearray(b"<a background =1>")) == (False, True)
    assert markers(memoryview(b"x{background:url(a.png)}")) == (True, False)
    with pytest.raises(TypeError):
        markers("url(")  # type: ignore[arg-type]
