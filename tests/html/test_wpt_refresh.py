"""``<meta http-equiv=refresh>`` against the browsers' own conformance cases: every
``content`` value of the web-platform-tests file
html/semantics/document-metadata/the-meta-element/pragma-directives/
attr-meta-http-equiv-refresh/parsing.html, retyped as a table, and the link the
extractor takes from it.

WPT gives ``[]`` (no refresh) or ``[time, url]``, the URL unresolved, and the page
itself (``refresh.sub.html``) for a refresh without one. A refresh of the page itself
is no new link, so both of those read here as no link (``None``); a target is
resolved against the page, as the browser navigates to it.
"""

from __future__ import annotations

import html

import pytest

from crawlkit.html.page import HtmlExtractor, refresh_target
from crawlkit.url import Canonicalizer

PAGE = "http://127.0.0.1:8000/dir/page.html"
FOO = "http://127.0.0.1:8000/dir/foo"
SELF = None  # WPT's "refresh.sub.html": a refresh of the page itself, no new link
NONE = None  # WPT's []: no refresh at all

# (content, the URL the browser navigates to) -- parsing.html, in its order.
CASES: list[tuple[str, str | None]] = [
    ("", NONE),
    ("1", SELF),
    ("1 ", SELF),
    ("1\t", SELF),
    ("1\r", SELF),
    ("1\n", SELF),
    ("1\f", SELF),
    ("1;", SELF),
    ("1,", SELF),
    ("1; url=foo", FOO),
    ("1, url=foo", FOO),
    ("1 url=foo", FOO),
    ("1;\turl=foo", FOO),
    ("1,\turl=foo", FOO),
    ("1\turl=foo", FOO),
    ("1;\rurl=foo", FOO),
    ("1,\rurl=foo", FOO),
    ("1\rurl=foo", FOO),
    ("1;\nurl=foo", FOO),
    ("1,\nurl=foo", FOO),
    ("1\nurl=foo", FOO),
    ("1;\furl=foo", FOO),
    ("1,\furl=foo", FOO),
    ("1\furl=foo", FOO),
    ("1url=foo", NONE),
    ("1x;url=foo", NONE),
    ("1 x;url=foo", "http://127.0.0.1:8000/dir/x;url=foo"),
    ("1;;url=foo", "http://127.0.0.1:8000/dir/;url=foo"),
    ("  1  ;  url  =  foo", FOO),
    ("  1  ,  url  =  foo", FOO),
    ("  1  ;  foo", FOO),
    ("  1  ,  foo", FOO),
    ("  1  url  =  foo", FOO),
    ("1; url=foo ", FOO),
    ("1; url=f\to\no", FOO),  # the URL parser drops tabs and newlines
    ('1; url="foo"bar', FOO),
    ("1; url='foo'bar", FOO),
    ("1; url=\"foo'bar", "http://127.0.0.1:8000/dir/foo'bar"),
    ("1; url foo", "http://127.0.0.1:8000/dir/url%20foo"),
    ("1; urlfoo", "http://127.0.0.1:8000/dir/urlfoo"),
    ("1; urfoo", "http://127.0.0.1:8000/dir/urfoo"),
    ("1; ufoo", "http://127.0.0.1:8000/dir/ufoo"),
    ('1; "foo"bar', FOO),
    ("; foo", NONE),
    (", foo", NONE),
    ("foo", NONE),
    ("+1; url=foo", NONE),
    ("-1; url=foo", NONE),
    ("+0; url=foo", NONE),
    ("-0; url=foo", NONE),
    ("0; url=foo", FOO),
    ("+1; foo", NONE),
    ("-1; foo", NONE),
    ("+0; foo", NONE),
    ("-0; foo", NONE),
    ("0; foo", FOO),
    ("+1", NONE),
    ("-1", NONE),
    ("+0", NONE),
    ("-0", NONE),
    ("0", SELF),
    ("1.9; url=foo", FOO),
    ("1.9..5.; url=foo", FOO),
    (".9; url=foo", FOO),
    ("0.9; url=foo", FOO),
    ("1e0; url=foo", NONE),
    ("1e1; url=foo", NONE),
    ("10e-1; url=foo", NONE),
    ("-0.1; url=foo", NONE),
]


@pytest.fixture(scope="module")
def ex() -> HtmlExtractor:
    return HtmlExtractor(Canonicalizer())


@pytest.mark.parametrize(("content", "expected"), CASES, ids=repr)
def test_wpt_meta_refresh(ex: HtmlExtractor, content: str, expected: str | None) -> None:
    # The content as an attribute value of a real page: tabs, CRs and form feeds as
    # character references, so that the tokenizer hands them over as written.
    value = html.escape(content, quote=True).translate({ord(c): f"&#{ord(c)};" for c in "\t\n\r\f"})
    body = f'<meta http-equiv="refresh" content="{value}"><p>text'.encode()
    page = ex.extract(body, PAGE)
    assert [link.url.url for link in page.links] == ([expected] if expected else [])


@pytest.mark.parametrize(("content", "expected"), CASES, ids=repr)
def test_wpt_refresh_target_is_found_exactly_when_the_browser_navigates(
    content: str, expected: str | None
) -> None:
    assert (refresh_target(content) is not None) == (expected is not None)
