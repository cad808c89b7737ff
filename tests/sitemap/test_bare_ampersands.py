"""A bare "&" in a sitemap or feed is read as "&amp;", as search engines and feed
readers read it: expat stopped at the first, and a sitemap whose every URL has a
query written unescaped gave no URL at all."""

from __future__ import annotations

import gzip
import io
import random
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.diag import Reporter
from crawlkit.sitemap.ampersands import BareAmpersands
from crawlkit.sitemap.parse import SitemapError, SitemapReader

URLSET = b'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'


def _read(doc: bytes) -> tuple[list[str], str]:
    """The URLs of ``doc`` and what was said (an error that ended it too)."""
    out = io.StringIO()
    reader = SitemapReader(reporter=Reporter("t", out))
    urls: list[str] = []
    try:
        urls.extend(r["url"] for r in reader.read(io.BytesIO(doc)))
    except SitemapError as exc:
        out.write(f"error: {exc}\n")
    return urls, out.getvalue()


def test_a_sitemap_of_unescaped_queries_gives_every_url() -> None:
    doc = URLSET + b"".join(
        b"<url><loc>http://a.test/p?id=%d&amp;x=1&lang=de</loc></url>\n" % i for i in range(3)
    )
    urls, said = _read(doc + b"</urlset>\n")
    # (canonical: the query's parameters sorted)
    assert urls == [f"http://a.test/p?id={i}&lang=de&x=1" for i in range(3)]
    assert (
        "t: <sitemap>: 3 bare & (beginning no entity or character reference) read as &amp;" in said
    )


def test_a_feed_title_with_an_ampersand_keeps_the_items_after_it() -> None:
    feed = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Tom & Jerry's news</title>
<item><title>Cats & dogs</title><link>http://news.test/cats?a=1&b=2</link></item>
<item><title>R&D</title><link>http://news.test/rd</link></item>
</channel></rss>"""
    urls, said = _read(feed)
    assert urls == ["http://news.test/cats?a=1&b=2", "http://news.test/rd"]
    assert "4 bare &" in said  # Tom & Jerry, Cats & dogs, a=1&b=2, R&D


def test_an_alternate_link_attribute_with_a_bare_ampersand_is_read() -> None:
    doc = (
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
        b'xmlns:xhtml="http://www.w3.org/1999/xhtml">'
        b'<url><loc>http://a.test/en</loc><xhtml:link rel="alternate" hreflang="de" '
        b'href="http://a.test/?p=1&l=de"/></url></urlset>'
    )
    urls, said = _read(doc)
    assert urls == ["http://a.test/en", "http://a.test/?l=de&p=1"]
    assert "1 bare &" in said


def test_a_well_formed_document_is_read_as_before_and_nothing_is_said() -> None:
    doc = URLSET + (
        b"<url><loc>http://a.test/?a=1&amp;b=2&#38;c=3&#x26;d=4</loc></url>"
        b"<url><loc><![CDATA[http://a.test/?e=5&f=6]]></loc></url>"
        b"<!-- a & b --><url><loc>http://a.test/&#233;</loc></url></urlset>"
    )
    urls, said = _read(doc)
    assert urls == [
        "http://a.test/?a=1&b=2&c=3&d=4",
        "http://a.test/?e=5&f=6",
        "http://a.test/%C3%A9",
    ]
    assert said == ""
    fix = BareAmpersands()
    assert fix.feed(doc, final=True) == doc and fix.repaired == 0


def test_an_undefined_entity_is_still_an_error() -> None:
    # "&nbsp;" is a reference, not a bare "&": XML without a DTD does not define it
    doc = URLSET + b"<url><loc>http://a.test/a</loc></url><url><loc>x&nbsp;</loc></url></urlset>"
    urls, said = _read(doc)
    assert urls == ["http://a.test/a"]
    assert "error: <sitemap>: malformed XML at line 2" in said and "undefined entity" in said


_PIECES = [
    b"&",
    b"&amp;",
    b"&#38;",
    b"&#x26;",
    b"&lt;",
    b"&name",
    b"&#12",
    b";",
    b"a",
    b"=",
    b" ",
    b"<![CDATA[",
    b"]]>",
    b"<!--",
    b"-->",
    b"<",
    b"!",
    b"]",
    b"-",
    b"\xc3\xa9",
    b"x" * 300,
]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from(_PIECES), max_size=40),
    st.lists(st.integers(min_value=1, max_value=12), min_size=1, max_size=8),
)
def test_cutting_the_bytes_anywhere_gives_the_same_output(
    pieces: list[bytes], sizes: list[int]
) -> None:
    data = b"".join(pieces)
    whole = BareAmpersands()
    expected = whole.feed(data, final=True)
    cut, pos, out = BareAmpersands(), 0, []
    for size in sizes * (len(data) // max(1, sum(sizes)) + 1):
        out.append(cut.feed(data[pos : pos + size]))
        pos += size
        if pos >= len(data):
            break
    out.append(cut.feed(b"", final=True))
    assert b"".join(out) == expected
    assert cut.repaired == whole.repaired


def test_ampersands_across_64_kib_reads_of_a_large_gzipped_sitemap(tmp_path: Path) -> None:
    # 20,000 URLs with a bare "&" each cross many of the reader's 64 KiB chunks, cut
    # at every offset of a reference; read by the command, gzip-compressed, as a user would
    rng = random.Random(7)
    lines = [
        b"<url><loc>http://a.test/%d?%s=1&b=2</loc></url>" % (i, b"q" * rng.randrange(1, 40))
        for i in range(20_000)
    ]
    path = tmp_path / "sitemap.xml.gz"
    path.write_bytes(gzip.compress(URLSET + b"\n".join(lines) + b"</urlset>"))
    done = subprocess.run(
        [sys.executable, "-m", "crawlkit", "sitemap", str(path)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 20_000
    assert "20,000 bare &" in done.stderr
