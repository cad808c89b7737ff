"""crawlkit.html.guard: the pre-scan that bounds the tree builder's work (issue 23).

Each hostile shape of issue 23 (ordinary markup the earlier scan walked past) is capped
here, so its parse stays cheap, and what came before the bomb survives; real markup
that the earlier scan misread (a ``<style>`` in a script string, words in a quoted SVG
path) is left alone. How fast each shape parses is measured in
``bench/bench_extract.py --hostile``, not here.
"""

from __future__ import annotations

import pytest

from crawlkit.html.guard import MAX_ATTRIBUTES, SCAN_FROM, guard_markup
from crawlkit.html.page import HtmlExtractor
from crawlkit.url import Canonicalizer

PAGE = "https://www.example.com/a/page.html"
HEAD = b'<html><head><title>T</title></head><body><p>before <a href="/first">first</a></p>'
N = 20_000  # tags in a bomb: enough to be scanned, small enough to stay fast


@pytest.fixture(scope="module")
def ex() -> HtmlExtractor:
    return HtmlExtractor(Canonicalizer())


def _filler(size: int = SCAN_FROM) -> bytes:
    """Ordinary paragraphs, so a page is big enough to be scanned."""
    unit = b"<p>filler text of an ordinary page</p>\n"
    return unit * (size // len(unit) + 1)


# The shapes of issue 23 that walked past the scan, and two more of the same kind.
ISSUE_23 = [
    ("svg-script", b"<svg><script>" + b"<div>" * N + b"hi</script></body></html>"),
    ("textareaz", b"<textareaz>" + b"<div>" * N + b"hi"),
    ("svg-title", b"<svg><title>" + b"<div>" * N + b"hi"),
    ("bang-comment", b"<!-- x --!>" + b"<div>" * N + b"hi"),
    ("div-x-pairs", b"<div></x>" * N + b"hi"),
    ("style-in-script", b"<script>var s='<style>a{}<\\/style>';</script>" + b"<div>" * N),
    ("comment-in-script", b"<script>'<!--'</script>" + b"<div>" * N),
    ("script-in-attribute", b'<a title="<script>">' + b"<div>" * N),
    ("svg-font-script", b"<svg><font><script>" + b"<div>" * N),
    ("nested-divs", b"<div>" * (5 * N)),
]


@pytest.mark.parametrize("bomb", [b for _, b in ISSUE_23], ids=[s for s, _ in ISSUE_23])
def test_issue_23_shapes_are_capped_and_what_came_before_survives(ex, bomb):
    page = ex.extract(HEAD + bomb, PAGE, content_type="text/html")
    assert page.capped == ["depth"]
    assert page.title == "T" and "before" in page.text
    assert page.links[0].url.url == "https://www.example.com/first"


def test_a_tag_of_500k_attributes_keeps_its_first_ones(ex):
    tag = b'<a href="/big" ' + b" ".join(b"a%d=1" % i for i in range(500_000)) + b">big</a>"
    page = ex.extract(HEAD + tag + b"<p>after</p>", PAGE, content_type="text/html")
    assert page.capped == ["attributes"]
    assert [link.url.url for link in page.links] == [
        "https://www.example.com/first",
        "https://www.example.com/big",
    ]
    assert "after" in page.text


def test_attributes_after_a_quoted_gt_are_counted():
    page = HEAD + b'<div t=">" ' + b" ".join(b"a%d" % i for i in range(2 * MAX_ATTRIBUTES)) + b">x"
    out, capped = guard_markup(page + _filler())
    assert capped == ["attributes"]
    assert b"a%d" % (MAX_ATTRIBUTES - 2) in out and b" a%d " % (MAX_ATTRIBUTES + 5) not in out


def test_a_raw_text_start_tag_without_end_tag_does_not_raise():
    """Issue 23: a script string holding "<style>" with its end tag escaped raised
    IndexError in the scan, and the page was dropped."""
    page = HEAD + b"<script>var s='<style>a{}<\\/style>';</script>" + _filler() + b"<div>" * 200
    out, capped = guard_markup(page)
    assert capped == [] and out is page


@pytest.mark.parametrize(
    "tail",
    [
        b"<script>" + b"x" * SCAN_FROM,
        b"<!--" + b"x" * SCAN_FROM,
        b"<style>" + b"<div>" * 400 + b"<b>x</b>" * 4000,
    ],
    ids=["script", "comment", "style-of-tags"],
)
def test_an_element_never_closed_parses_with_what_came_before(ex, tail):
    page = ex.extract(HEAD + _filler() + tail, PAGE, content_type="text/html")
    assert page.capped == []
    assert page.links[0].url.url == "https://www.example.com/first"


def test_words_in_a_quoted_value_are_not_attributes():
    """Issue 23: an inline SVG logo's path, whose commands after spaces looked like
    attribute names, cut 24 KB of a real page."""
    path = b'<svg><path d="' + b"c-.32 0-.28.72 0 .72 1.6 0 5.08 " * 200 + b'"/></svg>'
    alt = b"<img alt='" + b"word " * 600 + b"' src=/a.png>"
    page = HEAD + path + alt + _filler()
    out, capped = guard_markup(page)
    assert capped == [] and out is page


def test_tags_in_scripts_after_an_svg_in_a_script_string_stay_text():
    """A real page: an "<svg" in a script string must not make later scripts look like
    SVG elements (whose content would be read as tags)."""
    js = b"<script>var i='<svg class=x>';</script><script>for(d=0;d<e;++d)" + b"x y " * 400
    page = HEAD + js + b"</script>" + _filler()
    assert guard_markup(page) == (page, [])


def test_guard_markup_keeps_str_and_bytes_alike():
    page = HEAD + b"<div>" * N
    out, capped = guard_markup(page)
    text, text_capped = guard_markup(page.decode())
    assert capped == text_capped == ["depth"] and text.encode() == out


def test_unclosed_tags_in_scripts_count_past_the_looser_cap():
    """Tags inside comments and raw text also count, against MAX_ANY_DEPTH: a region
    the scan takes for text and the tree builder does not cannot hide a bomb."""
    from crawlkit.html.guard import MAX_ANY_DEPTH

    few = HEAD + b"<script>" + b"'<div>';" * (MAX_ANY_DEPTH - 50) + b"</script>"
    many = HEAD + b"<script>" + b"'<div>';" * (MAX_ANY_DEPTH + 50) + b"</script>"
    tags = b"<b>x</b>" * 5000 + _filler()  # past DEPTH_FROM tags: nesting is estimated
    assert guard_markup(few + tags)[1] == []
    assert guard_markup(many + tags)[1] == ["depth"]
