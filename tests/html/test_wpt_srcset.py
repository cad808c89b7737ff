"""``srcset`` against the browsers' own conformance cases: every value of the
web-platform-tests file html/semantics/embedded-content/the-img-element/srcset/
parse-a-srcset-attribute.html, retyped as a table.

WPT checks the one candidate a browser picks (``currentSrc``; '' for none). A crawler
wants every candidate a browser may pick (another screen density or width picks
another), so the table gives both: WPT's pick, and the URLs crawlkit takes, which
are the candidates of HTML's "parse a srcset attribute" (its splitting loop and
descriptor tokenizer decide where a URL starts and ends) -- and the browser's pick is
always among them.

Deliberate difference, marked ``# kept`` below: crawlkit does not run the
descriptor parser, so a candidate whose descriptors a browser rejects (``1x 1x``,
``0w``, an unclosed ``(``) is still taken. The standard changed its mind on such
candidates more than once (WPT's own copy ignores unknown descriptors, ``foo``,
``-1w``, where today's text drops the candidate); fetching one image a browser
would not costs one request, missing one it picks loses it from the archive.
"""

from __future__ import annotations

import pytest

from crawlkit.html.page import HtmlExtractor, parse_srcset
from crawlkit.url import Canonicalizer

WPT = "html/semantics/embedded-content/the-img-element/srcset/parse-a-srcset-attribute.html"
A = "data:,a"
KEPT = "a candidate the browser's descriptor parser drops"

# (srcset, WPT's expected currentSrc, the URLs crawlkit takes), in the file's order.
CASES: list[tuple[str, str, list[str] | None]] = [  # None: [the pick]
    # splitting loop
    ("", "", []),
    (",", "", []),
    (",,,", "", []),
    ("  data:,a  1x  ", A, [A]),
    ("\t\tdata:,a\t\t1x\t\t", A, [A]),
    ("\n\ndata:,a\n\n1x\n\n", A, [A]),
    # U+000B, U+000E-U+0010 are no white space: one URL, the whole value
    ("\x0b\x0bdata:,a\x0b\x0b1x\x0b\x0b", "\x0b\x0bdata:,a\x0b\x0b1x\x0b\x0b", None),
    ("\f\fdata:,a\f\f1x\f\f", A, [A]),
    ("\r\rdata:,a\r\r1x\r\r", A, [A]),
    ("\x0e\x0edata:,a\x0e\x0e1x\x0e\x0e", "\x0e\x0edata:,a\x0e\x0e1x\x0e\x0e", None),
    ("\x0f\x0fdata:,a\x0f\x0f1x\x0f\x0f", "\x0f\x0fdata:,a\x0f\x0f1x\x0f\x0f", None),
    ("\x10\x10data:,a\x10\x101x\x10\x10", "\x10\x10data:,a\x10\x101x\x10\x10", None),
    ("data:,a", A, [A]),
    ("data:,a ", A, [A]),
    ("data:,a ,", A, [A]),
    ("data:,a,", A, [A]),
    ("data:,a, ", A, [A]),
    ("data:,a,,,", A, [A]),
    ("data:,a,, , ", A, [A]),
    (" data:,a", A, [A]),
    (",,,data:,a", A, [A]),
    (" , ,,data:,a", A, [A]),
    ("\xa0data:,a", "\xa0data:,a", ["\xa0data:,a"]),  # a no-break space is no white space
    ("data:,a\xa0", "data:,a\xa0", ["data:,a\xa0"]),
    # descriptor tokenizer
    ("data:,a 1x", A, [A]),
    ("data:,a 1x ", A, [A]),
    ("data:,a 1x,", A, [A]),
    ("data:,a 1x 1x ( , data:,b 1x, ), data:,c", "data:,c", [A, "data:,c"]),  # kept
    ("data:,a 1x 1x ((( , data:,b 1x, ), data:,c", "data:,c", [A, "data:,c"]),  # kept
    ("data:,a 1x 1x [ , data:,b 1x, ], data:,c", "data:,b", [A, "data:,b", "]", "data:,c"]),
    ("data:,a 1x 1x { , data:,b 1x, }, data:,c", "data:,b", [A, "data:,b", "}", "data:,c"]),
    ('data:,a 1x 1x " , data:,b 1x, ", data:,c', "data:,b", [A, "data:,b", '"', "data:,c"]),
    ("data:,a 1x 1x \\,data:;\\,b, data:,c", "data:;\\,b", [A, "data:;\\,b", "data:,c"]),
    ("data:,a, data:,b (", A, [A, "data:,b"]),  # kept
    ("data:,a, data:,b (  ", A, [A, "data:,b"]),  # kept
    ("data:,a, data:,b (,", A, [A, "data:,b"]),  # kept
    ("data:,a, data:,b (x", A, [A, "data:,b"]),  # kept
    ("data:,a, data:,b ()", A, [A, "data:,b"]),  # kept
    ("data:,a 1x 1x (, data:,b", "", [A]),  # kept
    ("data:,a 1x 1x /*, data:,b, data:,c */", "data:,b", [A, "data:,b", "data:,c"]),
    ("data:,a 1x 1x //, data:,b", "data:,b", [A, "data:,b"]),
]
# The descriptor parser: one candidate each, data:,a, which crawlkit always takes.
# WPT expects "" (the candidate dropped) for those listed with "".
DESCRIPTORS: list[tuple[str, str]] = [
    ("foo", A),
    ("foo foo", A),
    ("foo 1x", A),
    ("foo 1x foo", A),
    ("foo 1w", A),
    ("foo 1w foo", A),
    ("1w 1w", ""),  # kept
    ("1w 1x", ""),  # kept
    ("1x 1w", ""),  # kept
    ("1w 1h", A),
    ("1h 1w", A),
    ("1h 1h", ""),  # kept
    ("1h 1x", ""),  # kept
    ("1h 1w 1x", ""),  # kept
    ("1x 1w 1h", ""),  # kept
    ("1h", ""),  # kept
    ("1h foo", ""),  # kept
    ("foo 1h", ""),  # kept
    ("0w", ""),  # kept
    ("-1w", A),
    ("1w -1w", A),
    ("1.0w", A),
    ("1w 1.0w", A),
    ("1e0w", A),
    ("1w 1e0w", A),
    ("1www", A),
    ("1w 1www", A),
    ("+1w", A),
    ("1w +1w", A),
    ("1W", A),
    ("1w 1W", A),
    ("Infinityw", A),
    ("1w Infinityw", A),
    ("NaNw", A),
    ("1w NaNw", A),
    ("1\x01w", ""),  # kept
    ("0x", A),
    ("-0x", A),
    ("1x -0x", ""),  # kept
    ("-1x", A),
    ("1x -1x", A),
    ("1e0x", A),
    ("1E0x", A),
    ("1e-1x", A),
    ("1.5e1x", A),
    ("1x 1.5e1x", ""),  # kept
    ("1x 1e1.5x", A),
    ("1.0x", A),
    ("1x 1.0x", ""),  # kept
    ("1x +1x", A),
    ("1x 1X", A),
    ("1x Infinityx", A),
    ("1x NaNx", A),
    ("1x 1\x01x", A),
    ("1w 0h", ""),  # kept
    ("1w 1h -1h", A),
    ("1w 1h 1.0h", A),
    ("1w 1h 1e0h", A),
    ("1w 1h 1hhh", A),
    ("1w 1h +1h", A),
    ("1w 1h 1H", A),
    ("1w 1h Infinityh", A),
    ("1w 1h NaNh", A),
    ("1w 1h 1\x01h", A),
]
ALL = [(s, pick, [pick] if urls is None else urls) for s, pick, urls in CASES] + [
    (f"{A} {descriptors}", pick, [A]) for descriptors, pick in DESCRIPTORS
]


@pytest.mark.parametrize(("srcset", "pick", "urls"), ALL, ids=repr)
def test_wpt_srcset_candidates(srcset: str, pick: str, urls: list[str]) -> None:
    taken = parse_srcset(srcset)
    assert taken == urls
    if pick:
        assert pick in taken  # the browser's choice is never missed


def test_wpt_srcset_through_the_extractor() -> None:
    # The same parse on a real page: the candidates as requisites, resolved.
    ex = HtmlExtractor(Canonicalizer())
    body = b"<img srcset='/a 1x 1x [ , /b 1x, ], /c'>"
    page = ex.extract(body, "http://127.0.0.1:8000/p.html")
    assert [link.url.url for link in page.requisites] == [
        "http://127.0.0.1:8000/a",
        "http://127.0.0.1:8000/b",
        "http://127.0.0.1:8000/]",  # the URL Standard leaves "]" in a path
        "http://127.0.0.1:8000/c",
    ]
