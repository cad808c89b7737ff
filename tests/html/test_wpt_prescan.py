"""The ``<meta>`` charset a page declares, against the browsers' own conformance
cases: the reftests of web-platform-tests' html/syntax/charset/ (a page with
``<meta charset="windows-1251">`` somewhere and the byte 0xE6, which is "ж" when the
declaration takes effect: ``rel=match``, and must not be when it does not:
``rel=mismatch``) and its testharness files meta-charset-*.html and
meta-http-equiv-*.html (``document.characterSet`` is ISO-8859-5, never the
ISO-8859-8 of a commented-out declaration). Retyped as pages built here, each case
naming the WPT file it mirrors; the 1 KiB cases keep WPT's byte offsets.

Not here: document-write.html (a declaration only a script writes; crawlkit runs
none, and reads none), the inheritance-*.html and xhr.html cases (a frame's or an
XHR's encoding, which a crawler reading one page at a time has no parent for).
"""

from __future__ import annotations

import pytest

from crawlkit.html.page import detect_charset
from crawlkit.html.prescan import prescan

DIR = "html/syntax/charset/"
META = b'<meta charset="windows-1251">'
TAIL = b"\n<p>Test: \xe6</p>\n<p>If &#x0436;, meta takes effect</p>\n</body>\n"


def _page(name: str, head: bytes, body: bytes = b"") -> bytes:
    """A page as the WPT reftest ``name`` is written: its link to the reference, its
    head, then a body with the test byte."""
    start = b'<!DOCTYPE html>\n<head>\n<link rel="match" href="references/%s-ref.html">\n' % (
        name.encode()
    )
    return start + head + b"\n</head>\n<body>\n" + body + TAIL


def _at(prefix: bytes, offset: int, rest: bytes, *, crlf: bool = False) -> bytes:
    """``prefix``, newlines up to byte ``offset`` (one of them a CRLF when ``crlf``), then
    ``rest``: the padded "1kb" cases, whose declaration starts at byte 1023 or 1024."""
    pad = offset - len(prefix)
    newlines = b"\r\n" + b"\n" * (pad - 2) if crlf else b"\n" * pad
    page = prefix + newlines + rest
    assert page.index(rest) == offset
    return page


_KB_HEAD = b'<!DOCTYPE html>\n<head>\n<link rel="match" href="references/x-ref.html">\n'

# (WPT file, page, whether the declaration takes effect)
REFTESTS: list[tuple[str, bytes, bool]] = [
    ("baseline.html", _page("baseline", META), True),
    ("after-bogus.html", _page("after-bogus", b"<bogus>" + META), True),
    ("in-object.html", _page("in-object", b"<object>" + META + b"</object>"), True),
    ("in-svg.html", _page("in-svg", b"", b"<svg>" + META + b"</svg>"), True),
    ("in-template.html", _page("in-template", b"<template>" + META + b"</template>"), True),
    ("ncr.html", _page("ncr", b'<meta charset="&#119;indows-1251">'), True),
    ("non-ascii-in-comment-before.html", _page("x", b"<!-- \xe6 -->\n" + META), True),
    ("non-ascii-in-title-before.html", _page("x", b"<title>\xe6</title>\n" + META), True),
    ("in-comment.html", _page("in-comment", b"<!--" + META + b"-->"), False),
    ("in-script.html", _page("in-script", b"<script>" + META + b"</script>"), False),
    ("in-style.html", _page("in-style", b"<style>" + META + b"</style>"), False),
    ("in-title.html", _page("in-title", b"<title>" + META + b"</title>"), False),
    ("in-svg-in-cdata.html", _page("x", b"", b"<svg><![CDATA[" + META + b"]]></svg>"), False),
    # Past the first 1,024 bytes a declaration counts while the page is still in its
    # head: not after </head>, nor after a tag that is no head's (<bogus>, <template>).
    ("after-1kb.html", _at(_KB_HEAD, 1024, META + TAIL), True),
    ("after-head-in-1kb.html", _at(_KB_HEAD + b"</head>\n", 1023, META + TAIL), True),
    ("after-head-after-1kb.html", _at(_KB_HEAD + b"</head>\n", 1024, META + TAIL), False),
    (
        "after-head-in-1kb-crlf.html",
        _at(_KB_HEAD + b"</head>\n", 1023, META + TAIL, crlf=True),
        True,
    ),
    (
        "after-head-after-1kb-crlf.html",
        _at(_KB_HEAD + b"</head>\n", 1024, META + TAIL, crlf=True),
        False,
    ),
    ("after-bogus-after-1kb.html", _at(_KB_HEAD + b"<bogus>", 1024, META + TAIL), False),
    (
        "in-template-after-1kb.html",
        _at(_KB_HEAD, 1130, b"<template>" + META + b"</template>\n</head>" + TAIL),
        False,
    ),
    (
        "in-noscript-after-template-after-1kb.html",
        _at(_KB_HEAD + b"<noscript><template></template>", 1024, META + b"</noscript>" + TAIL),
        False,
    ),
]


@pytest.mark.parametrize(("wpt", "page", "effect"), REFTESTS, ids=[c[0] for c in REFTESTS])
def test_wpt_charset_reftests(wpt: str, page: bytes, effect: bool) -> None:
    codec, source, _ = detect_charset(page, "text/html")
    if effect:
        assert (codec, source) == ("cp1251", "meta")
    else:
        assert codec != "cp1251"


_HARNESS = b"""<!DOCTYPE html>
<html>
  <head>
      <!--%s-->
      %s
      <script src="/resources/testharness.js"></script>
  </head>
  <body><p>caf\xe9</p></body>
</html>
"""
_CHARSET_8 = b'<meta charset="ISO-8859-8">'
_EQUIV_8 = b'<meta http-equiv="Content-Type" content="text/html;charset=ISO-8859-8">'

# (WPT file, the commented-out declaration, the real one or none)
HARNESS: list[tuple[str, bytes, bytes]] = [
    ("meta-charset-double-quotes.html", _CHARSET_8, b'<meta charset  =\n      "ISO-8859-5"/>'),
    ("meta-charset-no-quotes.html", _CHARSET_8, b"<META CHARSET  =  ISO-8859-5  >"),
    ("meta-charset-single-quotes.html", _CHARSET_8, b"<meta charset\n      =  'ISO-8859-5'  >"),
    (
        "meta-http-equiv-double-quotes.html",
        _EQUIV_8,
        b'<meta http-equiv="Content-Type" content="text/html;charset=ISO-8859-5">',
    ),
    (
        "meta-http-equiv-no-quotes.html",
        _EQUIV_8,
        b"<meta http-equiv=Content-Type content=text/html;charset=ISO-8859-5>",
    ),
    (
        "meta-http-equiv-single-quotes.html",
        _EQUIV_8,
        b"<meta http-equiv='Content-Type' content='text/html;charset=ISO-8859-5'>",
    ),
    (
        "meta-http-equiv-attribute-order.html",
        _EQUIV_8,
        b'<meta content="text/html;charset=ISO-8859-5" http-equiv="Content-Type"/>',
    ),
    ("meta-commented-out.html", _CHARSET_8, b""),
]


@pytest.mark.parametrize(("wpt", "commented", "real"), HARNESS, ids=[c[0] for c in HARNESS])
def test_wpt_charset_declarations(wpt: str, commented: bytes, real: bytes) -> None:
    codec, source, _ = detect_charset(_HARNESS % (commented, real), "text/html")
    assert codec != "iso8859-8"
    if real:
        assert (codec, source) == ("iso8859-5", "meta")


def test_a_noscript_in_the_head_does_not_end_it() -> None:
    """Not a WPT case, a real page's shape (minusl.de, go-trafilatura's test data):
    Google Tag Manager's ``<noscript><iframe>`` in the head, then the ``<meta charset>``
    past the first KiB. With scripting on, browsers parse a head's ``<noscript>`` as
    raw text, so the ``<iframe>`` in it does not end the head, and the declaration
    counts; a ``<div>`` there (no raw text) still ends it."""
    scripts = b"<script>" + b"var a = 1;\n" * 120 + b"</script>"
    tag_manager = b"<noscript><iframe src='https://www.googletagmanager.com/ns.html'></iframe>"
    meta = b"<meta charset='windows-1251'><title>x</title></head><body></body></html>"
    page = b"<html><head>" + scripts + tag_manager + b"</noscript>" + meta
    assert prescan(page) == "cp1251"
    assert prescan(page.replace(b"<noscript>", b"<div>")) is None
