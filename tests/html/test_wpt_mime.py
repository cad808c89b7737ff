"""The Content-Type of a response against the browsers' own conformance cases: the
web-platform-tests files mimesniff/mime-types/resources/mime-types.json and
generated-mime-types.json, retyped as a table. For each, what crawlkit reads from the
header: whether it names an HTML page (the essence, ``text/html``), and the charset
parameter as the decoder takes it (WPT's ``encoding``: GBK, or none, when the
parameter is malformed and the page's own declaration decides).
"""

from __future__ import annotations

import pytest

from crawlkit.html.css import decode_css
from crawlkit.html.page import detect_charset, looks_like_html, media_type

MIME = "mimesniff/mime-types/resources/mime-types.json"
GENERATED = "mimesniff/mime-types/resources/generated-mime-types.json"
LONG = "0123456789" * 13  # WPT's name "longer than 127"

# (Content-Type, its essence or None when it does not parse, WPT's encoding) -- from
# mime-types.json, in its order.
CASES: list[tuple[str, str | None, str | None]] = [
    # Basics
    ("text/html;charset=gbk", "text/html", "GBK"),
    ("TEXT/HTML;CHARSET=GBK", "text/html", "GBK"),
    # Legacy comment syntax
    ("text/html;charset=gbk(", "text/html", None),
    ("text/html;x=(;charset=gbk", "text/html", "GBK"),
    # Duplicate parameter
    ("text/html;charset=gbk;charset=windows-1255", "text/html", "GBK"),
    # Spaces
    ("text/html;charset =gbk", "text/html", None),
    ("text/html ;charset=gbk", "text/html", "GBK"),
    ("text/html; charset=gbk", "text/html", "GBK"),
    ("text/html;charset= gbk", "text/html", "GBK"),
    # Single quotes are a token, not a delimiter
    ("text/html;charset='gbk'", "text/html", None),
    ("text/html;charset='gbk", "text/html", None),
    ("text/html;charset=gbk'", "text/html", None),
    # Invalid parameters
    ("text/html;test;charset=gbk", "text/html", "GBK"),
    ("text/html;test=;charset=gbk", "text/html", "GBK"),
    ("text/html;';charset=gbk", "text/html", "GBK"),
    ('text/html;";charset=gbk', "text/html", "GBK"),
    ("text/html ; ; charset=gbk", "text/html", "GBK"),
    ("text/html;;;;charset=gbk", "text/html", "GBK"),
    # Double quotes
    ('text/html;charset="gbk"', "text/html", "GBK"),
    ('text/html;charset="gbk', "text/html", "GBK"),
    ('text/html;charset=gbk"', "text/html", None),
    ('text/html;charset=" gbk"', "text/html", "GBK"),
    ('text/html;charset="\\ gbk"', "text/html", "GBK"),
    ('text/html;charset="\\g\\b\\k"', "text/html", "GBK"),
    ('text/html;charset="gbk"x', "text/html", "GBK"),
    # Unexpected code points
    ("text/html;charset={gbk}", "text/html", None),
    # Parameter name longer than 127
    (f"text/html;{LONG}=x;charset=gbk", "text/html", "GBK"),
    # type/subtype longer than 127
    (f"{LONG}/{LONG}", f"{LONG}/{LONG}", None),
    # End-of-file handling
    ("x/x;test", "x/x", None),
    ('x/x;test="\\', "x/x", None),
    # Latin1
    ("text/html;test=\u00ff;charset=gbk", "text/html", "GBK"),
    # >Latin1
    ("x/x;test=\ufffd;x=x", "x/x", None),
    # Failure
    ("", None, None),
    ("\t", None, None),
    ("bogus", None, None),
    ("bogus/", None, None),
    ("bogus/ ", None, None),
    ("bogus/bogus/;", None, None),
    ("</>", None, None),
    ("(/)", None, None),
    ("text/html(;doesnot=matter", None, None),
    ("{/}", None, None),
    ("\u0100/\u0100", None, None),
]

# generated-mime-types.json, for every code point c below U+0100 that is no HTTP token
# code point: "c/x" and "x/c" do not parse, "x/x;c=x;bonus=x" and "x/x;x=c;bonus=x"
# keep the type. Here as text/html, which is what the question "is it HTML" asks of it.
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_NON_TOKEN = [chr(c) for c in range(0x100) if chr(c) not in _TOKEN]


def _html(content_type: str) -> bool:
    """Whether crawlkit takes a page served with ``content_type`` for HTML (a body that
    sniffing would not call HTML, so that only the header decides)."""
    return looks_like_html(content_type, b"plain words")


@pytest.mark.parametrize(("content_type", "essence", "encoding"), CASES, ids=repr)
def test_wpt_mime_type_is_html(
    content_type: str, essence: str | None, encoding: str | None
) -> None:
    assert _html(content_type) == (essence == "text/html")
    if essence is not None:
        assert media_type(content_type) == essence


@pytest.mark.parametrize(("content_type", "essence", "encoding"), CASES, ids=repr)
def test_wpt_mime_type_charset(
    content_type: str, essence: str | None, encoding: str | None
) -> None:
    codec, source, _ = detect_charset(b"<p>plain words", content_type)
    if encoding == "GBK":
        assert (codec, source) == ("gb18030", "header")
    else:
        assert source != "header"


@pytest.mark.parametrize("char", [c for c in _NON_TOKEN if c not in "\t\n\r "], ids=repr)
def test_wpt_generated_a_type_with_a_non_token_code_point_is_not_html(char: str) -> None:
    # GENERATED: "c/x" and "x/c" are failures, for every such c but HTTP's white
    # space, which is trimmed (and ";", which ends the type: "text/html;" is HTML).
    assert not _html(f"{char}text/html")
    assert _html(f"text/html{char}") == (char == ";")


@pytest.mark.parametrize("char", [c for c in _NON_TOKEN if c != ";"], ids=repr)
def test_wpt_generated_a_bad_parameter_keeps_the_type_and_the_next_one(char: str) -> None:
    # GENERATED: "x/x;c=x;bonus=x" and "x/x;x=c;bonus=x" are x/x with bonus=x (but
    # for '"', which starts a quoted string: WPT has no "x=" case of it).
    types = [f"text/html;{char}=x;charset=gbk"]
    if char != '"':
        types.append(f"text/html;x={char};charset=gbk")
    for content_type in types:
        assert _html(content_type)
        assert detect_charset(b"<p>plain", content_type)[:2] == ("gb18030", "header")


@pytest.mark.parametrize(
    ("content_type", "text"),
    [
        ('text/css;charset="\\g\\b\\k"', "a{}\u4f60"),  # a quoted string, escapes and all
        ("text/css;charset='gbk'", "a{}\ufffd\ufffd"),  # no charset: UTF-8
    ],
)
def test_wpt_a_stylesheet_charset_is_read_the_same_way(content_type: str, text: str) -> None:
    # MIME: the same parameter parsing for a stylesheet's Content-Type.
    assert decode_css(b"a{}\xc4\xe3", content_type) == text
