"""A link's query in the page's encoding: the WHATWG URL Standard parses a document's
URLs with its encoding as the query's (browsers send ``?q=caf%E9`` from a windows-1252
page), so the crawler asks the server, and the archive holds, what a browser would."""

from __future__ import annotations

import pytest

from crawlkit.html.encoding import query_in_document_encoding
from crawlkit.html.page import HtmlExtractor
from crawlkit.url import Canonicalizer

BASE = "http://a.test/dir/"


def _links(body: bytes, content_type: str) -> dict[str, str]:
    page = HtmlExtractor(Canonicalizer()).extract(body, BASE, content_type=content_type)
    return {link.tag: link.url.url for link in page.links + page.requisites}


@pytest.mark.parametrize(
    ("charset", "query"),
    [
        ("iso-8859-1", "caf%E9"),  # decoded as windows-1252, as browsers do
        ("windows-1252", "caf%E9"),
        ("utf-8", "caf%C3%A9"),
    ],
)
def test_a_links_query_is_encoded_in_the_pages_encoding(charset: str, query: str) -> None:
    html = '<a href="/search?q=café">s</a><img src="/i.png?v=é">'
    got = _links(html.encode(charset), f"text/html; charset={charset}")
    assert got["a"] == f"http://a.test/search?q={query}"
    assert got["img"] == "http://a.test/i.png?v=" + query.replace("caf", "")


def test_a_meta_charset_counts_and_the_path_stays_utf8() -> None:
    html = '<meta charset="shift_jis"><a href="/日本/x?q=日本">j</a>'
    got = _links(html.encode("shift_jis"), "text/html")
    # path: UTF-8 for every document; query: the document's bytes (0x7B stays "{")
    assert got["a"] == "http://a.test/%E6%97%A5%E6%9C%AC/x?q=%93%FA%96{"


def test_inline_css_urls_stay_utf8() -> None:
    html = '<style>body { background: url("/bg.png?v=é") }</style>'
    got = _links(html.encode("windows-1252"), "text/html; charset=windows-1252")
    assert got["style"] == "http://a.test/bg.png?v=%C3%A9"


def test_what_the_encoding_lacks_becomes_a_character_reference() -> None:
    assert query_in_document_encoding("/s?q=日#top", "cp1252") == "/s?q=%26%2326085%3B#top"
    assert query_in_document_encoding("/é?q=x", "cp1252") == "/é?q=x"  # no non-ASCII query
