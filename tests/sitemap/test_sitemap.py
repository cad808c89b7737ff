"""Sitemaps: every format, gzip, the protocol limits, flat memory, hostile and broken XML."""

from __future__ import annotations

import contextlib
import gzip
import io
import random
import tracemalloc
import zlib
from pathlib import Path
from urllib.parse import quote

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from trickle import Trickle

from crawlkit.diag import Reporter
from crawlkit.errors import UsageError
from crawlkit.sitemap.parse import (
    MAX_SITEMAP_BYTES,
    MAX_SITEMAP_URLS,
    SitemapError,
    SitemapReader,
    normalize_lastmod,
    parse_sitemap,
)
from crawlkit.url import fingerprint

DATA = Path(__file__).parents[1] / "data" / "sitemap"


def read(name: str, base: str | None = None) -> tuple[list[dict], str]:
    """Records of a fixture and what was reported on stderr."""
    out = io.StringIO()
    records = list(parse_sitemap((DATA / name).read_bytes(), base, reporter=Reporter("t", out)))
    return records, out.getvalue()


def test_urlset() -> None:
    recs, err = read("urlset.xml", "https://www.example.com/sitemap.xml")
    assert [r["url"] for r in recs] == [
        "https://www.example.com/",
        "https://www.example.com/catalog?desc=vacation_hawaii&item=12",
        "https://www.example.com/caf%C3%A9/menu",
        "https://www.example.com/odd-fields",
        "https://www.example.com/de/catalog",  # an hreflang alternate: at the end
    ]
    assert recs.pop(4)["priority"] == 0.5
    first = recs[0]
    assert first == {
        "url": "https://www.example.com/",
        "host": "www.example.com",
        "site": "example.com",
        "fp": fingerprint("https://www.example.com/"),
        "depth": 0,
        "priority": 1.0,
        "reason": "sitemap",
        "lastmod": "2024-05-01T00:00:00Z",
        "changefreq": "daily",
        "via": "https://www.example.com/sitemap.xml",
    }
    assert recs[1]["lastmod"] == "2024-05-01T08:30:00Z"  # +02:00 to UTC
    assert recs[1]["changefreq"] == "weekly" and recs[1]["priority"] == 0.8
    assert recs[2]["lastmod"] == "2024-05-01T23:59:59Z" and recs[2]["priority"] == 0.5
    odd = recs[3]
    assert "lastmod" not in odd and "changefreq" not in odd and odd["priority"] == 0.5
    # the image:loc inside <url> is not taken for a page
    assert not any("cdn.example.com" in r["url"] for r in recs)
    # each problem is reported with its line
    assert "t: https://www.example.com/sitemap.xml:28: invalid URL skipped: scheme 'ftp'" in err
    assert ":31: invalid URL skipped: relative URL '/relative/page'" in err
    assert "unreadable lastmod 'yesterday'" in err and "'sometimes'" in err
    assert "priority 'high'" in err and "entry without a URL" in err


def test_sitemap_index_children_are_sitemap_records() -> None:
    recs, err = read("index.xml")
    assert err == ""
    assert [(r["kind"], r["url"], r.get("lastmod")) for r in recs] == [
        ("sitemap", "https://www.example.com/sitemap1.xml.gz", "2004-10-01T18:23:17Z"),
        ("sitemap", "https://www.example.com/sitemap2.xml.gz", "2005-01-01T00:00:00Z"),
        ("sitemap", "https://www.example.com/sitemap3.xml", None),
    ]
    assert all(r["reason"] == "sitemap" and r["depth"] == 0 and "via" not in r for r in recs)


def test_rss() -> None:
    recs, err = read("feed.rss")
    assert [(r["url"], r.get("lastmod")) for r in recs] == [
        ("https://news.example.com/2024/first", "2003-06-10T04:00:00Z"),
        ("https://news.example.com/2024/second", "2003-06-11T07:39:21Z"),
        ("https://news.example.com/2024/fourth", "2024-02-29T17:00:00Z"),
    ]
    assert "entry without a URL" in err  # the item whose guid is not a permalink


def test_atom_resolves_relative_links_against_base() -> None:
    recs, _ = read("feed.atom", "https://blog.example.com/feed.atom")
    assert [(r["url"], r.get("lastmod")) for r in recs] == [
        ("https://blog.example.com/2003/12/13/atom03", "2003-12-13T18:30:02Z"),
        ("https://blog.example.com/posts/2", "2003-12-14T07:00:00Z"),
    ]


def test_atom_03_entries_are_dated_by_modified_else_issued() -> None:
    # Atom 0.3 (Blogger's feeds of the 2000s, in Big5 here as one was) dates entries
    # by <modified> and <issued>: they were not read, and no entry had a lastmod
    doc = """<?xml version="1.0" encoding="BIG5" standalone="yes"?>
<feed xmlns="http://purl.org/atom/ns#" version="0.3" xml:lang="zh-TW">
<title mode="escaped" type="text/html">我的部落格</title>
<modified>2005-10-21T00:12:34Z</modified>
<entry xmlns="http://purl.org/atom/ns#">
<link href="https://www.blogger.com/atom/1/2" rel="service.edit" type="application/atom+xml"/>
<issued>2005-10-21T08:11:00+08:00</issued>
<modified>2005-10-21T00:12:34Z</modified>
<created>2005-10-21T00:12:34Z</created>
<link href="http://blog.example.com.tw/2005/10/11.html" rel="alternate" type="text/html"/>
<title mode="escaped" type="text/html">十月</title>
</entry>
<entry xmlns="http://purl.org/atom/ns#">
<issued>2005-10-20T23:31:00+08:00</issued>
<link href="/2005/10/blog-post.html" rel="alternate" type="text/html"/>
</entry>
</feed>""".encode("big5")
    out = io.StringIO()
    base = "http://blog.example.com.tw/atom.xml"
    records = parse_sitemap(doc, base, reporter=Reporter("t", out))
    assert [(r["url"], r.get("lastmod")) for r in records] == [
        ("http://blog.example.com.tw/2005/10/11.html", "2005-10-21T00:12:34Z"),
        ("http://blog.example.com.tw/2005/10/blog-post.html", "2005-10-20T15:31:00Z"),
    ]
    assert out.getvalue() == ""


def test_google_news_publication_date_stands_in_for_lastmod() -> None:
    doc = b"""<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">
      <url><loc>https://news.example.com/a</loc>
        <news:news><news:publication>
          <news:name>Example</news:name><news:language>en</news:language>
        </news:publication>
        <news:publication_date>2024-03-01T10:00:00+01:00</news:publication_date>
        <news:title>A</news:title></news:news></url>
      <url><loc>https://news.example.com/b</loc><lastmod>2024-03-02</lastmod>
        <news:news><news:publication_date>2024-03-01</news:publication_date></news:news></url>
    </urlset>"""
    assert [(r["url"], r["lastmod"]) for r in parse_sitemap(doc)] == [
        ("https://news.example.com/a", "2024-03-01T09:00:00Z"),
        ("https://news.example.com/b", "2024-03-02T00:00:00Z"),  # <lastmod> wins
    ]


def test_rss1_rdf() -> None:
    recs, _ = read("feed.rdf")
    assert [(r["url"], r.get("lastmod")) for r in recs] == [
        ("https://old.example.com/a", "2002-09-01T00:00:00Z")
    ]


def test_rss_090_items_are_read() -> None:
    # RSS 0.90 (Netscape's, an rdf:RDF root) has its items in its own namespace: a
    # feed so written gave 0 URLs, exit 0, nothing said
    doc = """<?xml version="1.0" encoding="big5" ?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"
  xmlns="http://my.netscape.com/rdf/simple/0.9/">
  <channel><title>沙發新聞</title><link>http://www.example.com.tw</link></channel>
  <item><title>設計</title><link>http://www.example.com.tw/news.php?story_id=268</link></item>
  <item><title>生活</title><link>news.php?story_id=267</link></item>
</rdf:RDF>""".encode("big5")
    records = parse_sitemap(doc, "http://www.example.com.tw/rss.php")
    assert [r["url"] for r in records] == [
        "http://www.example.com.tw/news.php?story_id=268",
        "http://www.example.com.tw/news.php?story_id=267",
    ]


def test_rss_2_in_userland_s_namespace_is_read() -> None:
    # <rss xmlns="http://backend.userland.com/rss2"> (Russian news sites wrote it for
    # Yandex): its items were in no namespace crawlkit knew, 0 URLs and nothing said
    doc = """<?xml version="1.0" encoding="koi8-r"?>
<rss version="2.0" xmlns="http://backend.userland.com/rss2" xmlns:yandex="http://news.yandex.ru">
<channel><title>Новости</title><link>http://news.example.ru/</link>
<item><title>Первая</title><link>http://news.example.ru/ru/news/1329</link>
<pubDate>Fri, 30 Dec 2005 14:18:00 +0500</pubDate><yandex:full-text>Текст</yandex:full-text>
</item>
<item><title>Вторая</title><guid>http://news.example.ru/ru/news/1331</guid></item>
</channel></rss>""".encode("koi8-r")
    records = parse_sitemap(doc, "http://news.example.ru/rss.xml")
    assert [(r["url"], r.get("lastmod")) for r in records] == [
        ("http://news.example.ru/ru/news/1329", "2005-12-30T09:18:00Z"),
        ("http://news.example.ru/ru/news/1331", None),
    ]


def test_plain_text() -> None:
    recs, err = read("urls.txt")
    assert [r["url"] for r in recs] == [
        "https://www.example.com/one",
        "https://www.example.com/two",
        "https://www.example.com/three",
    ]
    assert ":4: invalid URL skipped" in err


@pytest.mark.parametrize("name", ["urlset.xml", "index.xml", "feed.rss", "feed.atom", "urls.txt"])
def test_gzip_gives_the_same_records(name: str) -> None:
    data = (DATA / name).read_bytes()
    base = "https://blog.example.com/feed.atom"
    assert list(parse_sitemap(gzip.compress(data), base)) == list(parse_sitemap(data, base))


@pytest.mark.parametrize(
    ("encoding", "path"),
    [
        ("windows-1252", "/café–menu"),
        ("shift_jis", "/メニュー"),
        ("ISO-8859-1", "/café"),
        ("utf-16", "/ツ"),
        ("UTF8", "/ツ"),
    ],
)
def test_declared_encodings(encoding: str, path: str) -> None:
    doc = (
        f'<?xml version="1.0" encoding="{encoding}"?>\n'
        f"<urlset><url><loc>https://e.com{path}</loc></url></urlset>\n"
    )
    data = doc.encode("utf-16" if encoding == "utf-16" else encoding)
    (record,) = parse_sitemap(data)
    assert record["url"] == "https://e.com" + quote(path.encode("utf-8"), safe="/")


@pytest.mark.parametrize(
    ("encoding", "title"),
    [("euc-jp", "日記"), ("big5", "部落格"), ("euc-kr", "뉴스"), ("iso-8859-1", "€uro")],
)
def test_a_feed_read_a_few_bytes_at_a_time_keeps_its_encoding(encoding: str, title: str) -> None:
    # a pipe (curl URL | crawlkit sitemap -) whose first read was "<?xml v": the
    # declaration was not seen whole, expat was left the encoding and crashed on a
    # multi-byte one (ValueError), and read iso-8859-1 as Latin-1, not windows-1252
    codec = "windows-1252" if encoding == "iso-8859-1" else encoding
    doc = f"""<?xml version="1.0" encoding="{encoding}"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
 xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel rdf:about="http://diary.example.jp/"><title>{title}</title></channel>
<item rdf:about="http://diary.example.jp/?200601a#1"><title>{title}</title>
<link>http://diary.example.jp/{title}?200601a#1</link><dc:date>2006-01-03T06:40:14+09:00</dc:date>
</item></rdf:RDF>""".encode(codec)
    whole = list(parse_sitemap(doc))
    assert [(r["url"], r["lastmod"]) for r in whole] == [
        (f"http://diary.example.jp/{quote(title)}?200601a", "2006-01-02T21:40:14Z")
    ]
    for size in (1, 7, 30):
        reader = SitemapReader(reporter=Reporter("t", io.StringIO()))
        assert list(reader.read(io.BufferedReader(Trickle(doc, size)))) == whole


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_text_sitemap_with_a_bom_is_read_as_text(codec: str) -> None:
    """A byte order mark names the encoding beyond doubt: such a text sitemap (what a
    Windows editor saves as "Unicode") was refused as malformed XML, every URL lost."""
    doc = "\ufeffhttps://e.com/a\r\n\r\nhttps://e.com/caf\u00e9\r\nhttps://e.com/ツ"
    reader = SitemapReader(reporter=Reporter("t", io.StringIO()))
    recs = list(reader.read(io.BytesIO(doc.encode(codec))))
    assert [r["url"] for r in recs] == [
        "https://e.com/a",
        "https://e.com/caf%C3%A9",
        "https://e.com/%E3%83%84",
    ]
    assert reader.stats.format == "text"
    # the same cut into 64 KiB reads, a character split between two of them
    many = "\ufeff" + "".join(f"https://e.com/é{i}\n" for i in range(5000))
    assert len(list(parse_sitemap(gzip.compress(many.encode(codec))))) == 5000


def test_invalid_utf16_text_keeps_the_urls_before_and_names_the_encoding() -> None:
    data = "\ufeffhttps://e.com/a\nhttps://e.com/b\n".encode("utf-16-le") + b"\x00\xd8x\x00"
    got: list[dict] = []
    with pytest.raises(SitemapError, match=r"invalid UTF-16 text \(illegal UTF-16 surrogate\)"):
        got.extend(parse_sitemap(data))
    assert [r["url"] for r in got] == ["https://e.com/a", "https://e.com/b"]


def test_unknown_encoding_is_an_error() -> None:
    with pytest.raises(SitemapError, match="unknown encoding 'klingon'"):
        list(parse_sitemap(b'<?xml version="1.0" encoding="klingon"?><urlset/>'))


def test_corrupt_gzip_is_an_error() -> None:
    data = gzip.compress((DATA / "urls.txt").read_bytes())
    with pytest.raises(SitemapError, match="gzip"):
        list(parse_sitemap(data[:-12]))


def _urlset(n: int) -> bytes:
    head = b'<?xml version="1.0"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    body = b"".join(b"<url><loc>https://e.com/p/%d</loc></url>\n" % i for i in range(n))
    return head + body + b"</urlset>\n"


def test_50000_urls_are_all_read() -> None:
    out = io.StringIO()
    recs = list(parse_sitemap(_urlset(MAX_SITEMAP_URLS), reporter=Reporter("t", out)))
    assert len(recs) == MAX_SITEMAP_URLS == 50_000
    assert recs[-1]["url"] == "https://e.com/p/49999"
    assert len({r["fp"] for r in recs}) == 50_000
    assert out.getvalue() == ""


def test_beyond_50000_urls_is_reported_and_counted() -> None:
    out = io.StringIO()
    reader = SitemapReader(reporter=Reporter("t", out))
    recs = list(reader.read(io.BytesIO(gzip.compress(_urlset(MAX_SITEMAP_URLS + 7)))))
    assert len(recs) == 50_000 and recs[-1]["url"] == "https://e.com/p/49999"
    assert reader.stats.over_limit == 7
    assert "7 URLs beyond the first 50,000 (the sitemap protocol limit) were ignored" in (
        out.getvalue()
    )


def test_byte_limit_stops_reading_and_says_so() -> None:
    out = io.StringIO()
    reader = SitemapReader(reporter=Reporter("t", out), max_bytes=10_000)
    recs = list(reader.read(io.BytesIO(_urlset(1000))))
    assert 0 < len(recs) < 1000 and reader.stats.truncated and reader.stats.bytes == 10_000
    assert "larger than 10,000 bytes uncompressed" in out.getvalue()


def test_gzip_bomb_stops_at_50_mb_uncompressed() -> None:
    # 200 MiB of spaces compress to ~200 KB; only 50 MiB may be inflated.
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)  # 31: gzip framing
    parts = [packer.compress(b"<urlset><url><loc>https://e.com/x</loc></url>")]
    spaces = b" " * (1 << 20)
    parts += [packer.compress(spaces) for _ in range(200)]
    parts.append(packer.compress(b"</urlset>") + packer.flush())
    bomb = b"".join(parts)
    assert len(bomb) < 1_000_000
    reader = SitemapReader()
    recs = list(reader.read(io.BytesIO(bomb)))
    assert len(recs) == 1 and reader.stats.truncated
    assert reader.stats.bytes == MAX_SITEMAP_BYTES


def test_memory_stays_flat_on_a_50_mb_file(tmp_path: Path) -> None:
    # 45,000 URLs, each with 1.2 KB of extension data: ~55 MB, over the 50 MiB limit.
    path = tmp_path / "big.xml"
    pad = b"<image:image><image:caption>" + b"x" * 1150 + b"</image:caption></image:image>"
    with path.open("wb") as f:
        f.write(
            b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
            b'xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">\n'
        )
        for i in range(45_000):
            f.write(b"<url><loc>https://e.com/%d</loc>%s</url>\n" % (i, pad))
        f.write(b"</urlset>\n")
    assert path.stat().st_size > MAX_SITEMAP_BYTES
    reader = SitemapReader()
    tracemalloc.start()
    try:
        count = 0
        with path.open("rb") as stream:
            for _ in reader.read(stream):
                count += 1
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert reader.stats.truncated and 40_000 < count < 45_000
    assert peak < 8 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB while reading a 55 MB file"


# ---- hostile and malformed XML


def test_billion_laughs_is_refused() -> None:
    with pytest.raises(SitemapError, match="entity declarations are refused"):
        list(parse_sitemap((DATA / "billion-laughs.xml").read_bytes()))


def test_external_entity_is_refused_and_nothing_is_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET")
    doc = (
        f'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        "<urlset><url><loc>https://e.com/&xxe;</loc></url></urlset>"
    ).encode()
    with pytest.raises(SitemapError, match="hostile XML refused") as info:
        list(parse_sitemap(doc))
    assert "TOP-SECRET" not in str(info.value)


def test_parameter_entity_is_refused() -> None:
    doc = (
        b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY % p SYSTEM "http://127.0.0.1:9/x.dtd">'
        b"%p;]><urlset/>"
    )
    with pytest.raises(SitemapError, match="refused"):
        list(parse_sitemap(doc))


def test_drupal_s_unreferenced_parameter_entity_is_let_be() -> None:
    # Drupal 4.7 to 6 began each RSS feed so: an external parameter entity declared,
    # never referenced, never loaded. Every such feed was refused whole as hostile.
    doc = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE rss [<!ENTITY % HTMLlat1 PUBLIC "-//W3C//ENTITIES Latin 1 for XHTML//EN"
 "http://127.0.0.1:9/xhtml-lat1.ent">]>
<rss version="2.0" xml:base="http://weblap.example.hu" xmlns:dc="http://purl.org/dc/elements/1.1/">
<channel><title>Hírek</title><link>http://weblap.example.hu</link>
<item><title>Árvíztűrő tükörfúrógép</title>
<link>http://weblap.example.hu/hirek/20060104/árvíztűrő</link>
<pubDate>Wed, 04 Jan 2006 13:35:31 +0100</pubDate></item>
</channel></rss>""".encode()
    assert [(r["url"], r["lastmod"]) for r in parse_sitemap(doc)] == [
        (
            "http://weblap.example.hu/hirek/20060104/%C3%A1rv%C3%ADzt%C5%B1r%C5%91",
            "2006-01-04T12:35:31Z",
        )
    ]
    # referenced, it is refused as before: expat would skip it unloaded, and then
    # skip undefined entities too (&eacute; gone from a URL with nothing said)
    referenced = doc.replace(b'-lat1.ent">]>', b'-lat1.ent"> %HTMLlat1; ]>')
    with pytest.raises(SitemapError, match="parameter entity references are refused"):
        list(parse_sitemap(referenced))


def test_external_dtd_is_never_fetched() -> None:
    # Port 9 (discard) on loopback: a fetch would fail or hang; expat must not try.
    doc = (
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/s.dtd">'
        b"<urlset><url><loc>https://e.com/ok</loc></url></urlset>"
    )
    assert [r["url"] for r in parse_sitemap(doc)] == ["https://e.com/ok"]


def test_10000_deep_nesting_is_refused() -> None:
    doc = b"<urlset>" + b"<a>" * 10_000 + b"</a>" * 10_000 + b"</urlset>"
    with pytest.raises(SitemapError, match="nested deeper than 64"):
        list(parse_sitemap(doc))


def test_malformed_xml_keeps_records_before_the_damage() -> None:
    got: list[dict] = []
    with pytest.raises(SitemapError, match=r"malformed XML at line 4.*mismatched tag"):
        got.extend(parse_sitemap((DATA / "malformed.xml").read_bytes()))
    assert [r["url"] for r in got] == ["https://www.example.com/before-the-damage"]


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        (DATA / "not-a-sitemap.html", "root element is <html>"),
        (b"<urlset><url><loc>https://e.com/</loc></url>", "no element found"),
        (b"<urlset>\xff\xfe</urlset>", "malformed XML"),
        (b"<urlset>&nbsp;</urlset>", "undefined entity"),
    ],
)
def test_broken_documents(doc: Path | bytes, message: str) -> None:
    data = doc.read_bytes() if isinstance(doc, Path) else doc
    with pytest.raises(SitemapError, match=message):
        list(parse_sitemap(data))


def test_overlong_loc_is_reported_not_kept() -> None:
    out = io.StringIO()
    doc = b"<urlset><url><loc>https://e.com/" + b"a" * 200_000 + b"</loc></url>"
    doc += b"<url><loc>https://e.com/ok</loc></url></urlset>"
    recs = list(parse_sitemap(doc, reporter=Reporter("t", out)))
    assert [r["url"] for r in recs] == ["https://e.com/ok"]
    assert "URL longer than 64 KiB" in out.getvalue()


def test_empty_input_gives_nothing() -> None:
    out = io.StringIO()
    assert list(parse_sitemap(b" \n", reporter=Reporter("t", out))) == []
    assert "empty sitemap" in out.getvalue()


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_give_records_or_a_sitemap_error(data: bytes) -> None:
    try:
        for record in parse_sitemap(data):
            assert record["reason"] == "sitemap"
    except SitemapError:
        pass


_xmlish = st.lists(
    st.sampled_from(
        [
            "<urlset>",
            "</urlset>",
            "<url>",
            "</url>",
            "<loc>",
            "</loc>",
            "https://e.com/a",
            "<lastmod>",
            "</lastmod>",
            "2024-01-01",
            "&amp;",
            "<sitemapindex>",
            "<sitemap>",
            "</sitemap>",
            "<rss>",
            "<item>",
            "<link>",
            "</link>",
            "</item>",
            "<![CDATA[x]]>",
            "<!-- c -->",
            " ",
            "\n",
            "&x;",
        ]
    ),
    max_size=30,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_xmlish)
def test_xml_like_input_gives_records_or_a_sitemap_error(doc: str) -> None:
    with contextlib.suppress(SitemapError):
        list(parse_sitemap(doc.encode()))


# ---- lastmod


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024", "2024-01-01T00:00:00Z"),
        ("2024-05", "2024-05-01T00:00:00Z"),
        ("2024-05-06", "2024-05-06T00:00:00Z"),
        ("2024-05-06T07:08Z", "2024-05-06T07:08:00Z"),
        ("2024-05-06T07:08:09+01:30", "2024-05-06T05:38:09Z"),
        ("2024-05-06T07:08:09.999-05:00", "2024-05-06T12:08:09Z"),
        ("2024-05-06 07:08:09", "2024-05-06T07:08:09Z"),
        ("2024-05-06T07:08:09+0000", "2024-05-06T07:08:09Z"),
        ("Tue, 10 Jun 2003 04:00:00 GMT", "2003-06-10T04:00:00Z"),
        ("Tue, 10 Jun 2003 04:00:00 +0200", "2003-06-10T02:00:00Z"),
        ("2024-13-01", None),
        ("2024-02-30", None),
        ("2024-05-06T25:00:00Z", None),
        ("soon", None),
        ("", None),
    ],
)
def test_lastmod_normalised_to_utc(text: str, expected: str | None) -> None:
    assert normalize_lastmod(text) == expected


# ---- the command line


def test_cli_reads_files_of_every_format(cli, tmp_path: Path) -> None:
    gz = tmp_path / "index.xml.gz"
    gz.write_bytes(gzip.compress((DATA / "index.xml").read_bytes()))
    res = cli("sitemap", str(DATA / "urls.txt"), str(gz), str(DATA / "feed.rss"))
    assert res.code == 0, res.stderr
    recs = [orjson.loads(line) for line in res.lines]
    assert len(recs) == 3 + 3 + 3
    assert sum(r.get("kind") == "sitemap" for r in recs) == 3
    assert "6 URLs, 3 sitemaps, 2 invalid and 0 foreign skipped" in res.stderr


def test_cli_stdin_base_and_via(cli) -> None:
    res = cli(
        "sitemap",
        "--base",
        "https://blog.example.com/feed.atom",
        "-q",
        input=(DATA / "feed.atom").read_bytes(),
    )
    assert res.code == 0 and res.stderr == ""
    recs = [orjson.loads(line) for line in res.lines]
    assert {r["via"] for r in recs} == {"https://blog.example.com/feed.atom"}


def test_cli_hostile_file_fails_but_other_files_are_read(cli) -> None:
    res = cli(
        "sitemap",
        str(DATA / "billion-laughs.xml"),
        str(DATA / "malformed.xml"),
        str(DATA / "index.xml"),
    )
    assert res.code == 1
    assert "billion-laughs.xml: hostile XML refused" in res.stderr
    assert "malformed.xml: malformed XML at line 4" in res.stderr
    assert len(res.lines) == 1 + 3  # before-the-damage, and the index
    assert "2 failed" in res.stderr


def test_cli_text_after_the_end_of_a_feed_is_skipped_and_said(cli, tmp_path: Path) -> None:
    # a PHP warning printed after </rss>: every item was read, yet the file failed
    # (exit 1) as malformed XML
    feed = tmp_path / "rss.xml"
    feed.write_bytes(
        """<?xml version="1.0" encoding="windows-1251"?>
<rss version="2.0"><channel><title>Новини</title><link>http://www.example.bg/</link>
<item><title>Първа</title><link>http://www.example.bg/news.php?id=1</link></item>
<item><title>Втора</title><link>http://www.example.bg/news.php?id=2</link></item>
</channel></rss>
<br />
<b>Warning</b>:  Unknown: Your script possibly relies on a session side-effect.<br />
""".encode("windows-1251")
    )
    res = cli("sitemap", str(feed))
    assert res.code == 0, res.stderr
    assert [orjson.loads(line)["url"] for line in res.lines] == [
        "http://www.example.bg/news.php?id=1",
        "http://www.example.bg/news.php?id=2",
    ]
    assert "rss.xml: text after the end of the document (from line 6) skipped" in res.stderr
    # text before the end is damage as before
    feed.write_bytes(feed.read_bytes().replace(b"</channel>", b"<br>\n</channel>"))
    res = cli("sitemap", str(feed))
    assert res.code == 1 and "malformed XML at line 6, column 2: mismatched tag" in res.stderr


@pytest.mark.parametrize("cut", [3_000, 30_000])
def test_cli_cut_gzip_keeps_every_entry_before_the_damage(cli, tmp_path: Path, cut: int) -> None:
    """A gzip sitemap cut short: every whole entry before the cut comes out, then the
    error and exit 1 (a small file gave none, a larger one lost up to 64 KiB)."""
    data = gzip.compress(_urlset(20_000))[:cut]
    readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data).count(b"</url>")
    assert readable > 1_000
    (tmp_path / "cut.xml.gz").write_bytes(data)
    res = cli("sitemap", str(tmp_path / "cut.xml.gz"))
    assert res.code == 1
    assert len(res.lines) == readable
    assert "cut.xml.gz: gzip stream ends early" in res.stderr


def test_cut_gzip_bytes_keep_the_entries_before_the_damage() -> None:
    """The same from bytes (a sitemap the crawl fetched): the records come before the
    error."""
    data = gzip.compress(_urlset(20_000))[:3_000]
    readable = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data).count(b"</url>")
    reader = SitemapReader(reporter=Reporter("t", io.StringIO()))
    got = []
    with pytest.raises(SitemapError, match="gzip"):
        for rec in reader.read(io.BytesIO(data)):
            got.append(rec)
    assert len(got) == readable


def test_same_host_skips_and_reports_foreign_urls() -> None:
    doc = b"https://www.example.com/a\nhttps://evil.example.net/b\nhttps://WWW.example.com/c\n"
    out = io.StringIO()
    reader = SitemapReader(
        base="https://www.example.com/s.txt", same_host=True, reporter=Reporter("t", out)
    )
    recs = list(reader.read(io.BytesIO(doc)))
    assert [r["url"] for r in recs] == ["https://www.example.com/a", "https://www.example.com/c"]
    assert reader.stats.foreign == 1 and ":2: URL on another host" in out.getvalue()
    with pytest.raises(UsageError):
        SitemapReader(same_host=True)


def test_cli_same_host(cli) -> None:
    res = cli(
        "sitemap",
        "--same-host",
        "--base",
        "https://news.example.com/feed.rss",
        str(DATA / "feed.rss"),
    )
    assert res.code == 0 and len(res.lines) == 3
    res = cli(
        "sitemap",
        "--same-host",
        "--base",
        "https://other.example.com/feed.rss",
        str(DATA / "feed.rss"),
    )
    assert res.code == 0 and res.lines == [] and "3 foreign skipped" in res.stderr
    res = cli("sitemap", "--same-host", str(DATA / "feed.rss"))
    assert res.code == 2 and "--same-host needs --base" in res.stderr


def test_cli_vouched_host_keeps_cross_submitted_urls(tmp_path, cli) -> None:
    """sitemaps.org cross-submission: a host whose robots.txt names the sitemap may be
    listed in it; --vouched-host says so, and every other host is still skipped."""
    doc = tmp_path / "s.txt"
    doc.write_bytes(b"https://a.example/1\nhttps://b.example:8080/2\nhttps://c.example/3\n")
    base = ("--same-host", "--base", "https://a.example/s.txt")
    res = cli("sitemap", *base, "--vouched-host", "B.example:8080", str(doc))
    assert res.code == 0, res.stderr
    assert [orjson.loads(line)["url"] for line in res.lines] == [
        "https://a.example/1",
        "https://b.example:8080/2",
    ]
    assert "1 foreign skipped" in res.stderr and "c.example/3" in res.stderr
    res = cli("sitemap", "--vouched-host", "b.example", str(doc))
    assert res.code == 2 and "--vouched-host needs --same-host" in res.stderr


def test_cli_limit_options(cli) -> None:
    res = cli("sitemap", "--max-urls", "2", str(DATA / "index.xml"))
    assert res.code == 0 and len(res.lines) == 2
    assert "1 URLs beyond the first 2" in res.stderr
    res = cli("sitemap", "--default-priority", "2", str(DATA / "index.xml"))
    assert res.code == 2


def _urls(data: bytes) -> tuple[list[str], str]:
    out = io.StringIO()
    records = list(parse_sitemap(data, None, reporter=Reporter("t", out)))
    return [r["url"] for r in records], out.getvalue()


@pytest.mark.parametrize(
    "data",
    [
        # scrapy's wrong-namespace fixture: <url xmlns=""> under the 0.84 namespace
        b'<?xml version="1.0"?>\n<urlset xmlns="http://www.google.com/schemas/sitemap/0.84">'
        b'<url xmlns=""><loc>http://www.example.com/</loc></url>'
        b'<url xmlns=""><loc>http://www.example.com/2</loc></url></urlset>',
        # a prefixed root, its records plain
        b'<sm:urlset xmlns:sm="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://www.example.com/</loc></url>"
        b"<url><loc>http://www.example.com/2</loc></url></sm:urlset>",
    ],
)
def test_records_in_another_sitemap_namespace_are_read(data: bytes) -> None:
    # each gave 0 URLs, exit 0, nothing said
    urls, _ = _urls(data)
    assert urls == ["http://www.example.com/", "http://www.example.com/2"]


def test_text_printed_before_the_xml_is_skipped_and_said() -> None:
    # a PHP notice before the declaration: read as a text sitemap, it gave one invented
    # URL (the schema's) and lost the real ones
    data = (
        b"Deprecated: Function create_function() is deprecated in /var/www/x.php\n"
        b'<?xml version="1.0" encoding="UTF-8"?>\n<urlset\n'
        b'  xsi:schemaLocation="http://www.sitemaps.org/schemas/sitemap/0.9\n'
        b'  http://www.sitemaps.org/schemas/sitemap/0.9/sitemap.xsd"\n'
        b'  xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"\n'
        b'  xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<url><loc>https://example.com/a</loc></url>"
        b"<url><loc>https://example.com/b</loc></url></urlset>\n"
    )
    urls, err = _urls(data)
    assert urls == ["https://example.com/a", "https://example.com/b"]
    assert "71 bytes before the XML declaration skipped" in err
    # a text sitemap that lists a URL with "<?xml " in it stays one
    assert _urls(b"https://example.com/x\nhttps://example.com/?q=<?xml \n")[0][:1] == [
        "https://example.com/x"
    ]


def test_a_text_sitemap_with_cr_line_ends_is_one_url_a_line() -> None:
    # split on LF only, its URLs were glued into one (the URL parser drops the CRs)
    urls, _ = _urls(b"https://t.example.com/1\rhttps://t.example.com/2\rhttps://t.example.com/3\r")
    assert urls == ["https://t.example.com/1", "https://t.example.com/2", "https://t.example.com/3"]


def test_an_rss_feed_s_links_resolve_against_its_xml_base() -> None:
    # Drupal puts xml:base on every feed's <rss>; it was read for Atom only, and a
    # relative <link> resolved against the feed's own URL, a URL the feed never named
    doc = """<?xml version="1.0" encoding="iso-8859-2"?>
<rss version="2.0" xml:base="http://www.example.hu/portal/">
<channel><title>Hírek</title><link>http://www.example.hu/portal/</link>
<item><title>Első</title><link>node/5</link><guid isPermaLink="false">5 at www.example.hu</guid>
</item>
<item xml:base="http://archiv.example.hu/"><title>Második</title><link>/2005/ő</link></item>
<item><title>Harmadik</title><guid>17@www.example.hu</guid></item>
</channel></rss>""".encode("iso-8859-2")
    out = io.StringIO()
    records = parse_sitemap(doc, "https://feeds.example.net/rss.xml", reporter=Reporter("t", out))
    assert [r["url"] for r in records] == [
        "http://www.example.hu/portal/node/5",
        "http://archiv.example.hu/2005/%C5%91",
    ]
    # a guid is no URL for a base: the third item has none, and is reported
    assert ":7: entry without a URL skipped" in out.getvalue()


def test_an_atom_feed_s_links_resolve_against_its_xml_base() -> None:
    # xml:base was ignored: relative links resolved against the feed's own URL, URLs the
    # feed never named (and without a base they were lost as unparsable)
    data = (
        b'<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://atom.example.com/blog/">'
        b'<entry><link rel="alternate" href="posts/two"/></entry>'
        b'<entry xml:base="https://other.example.com/x/"><link href="three"/></entry>'
        b'<entry xml:base="sub/"><link href="four"/></entry>'
        b'<entry><link href="/five"/></entry></feed>'
    )
    out = io.StringIO()
    records = parse_sitemap(data, "https://feeds.example.net/feed.xml", reporter=Reporter("t", out))
    assert [r["url"] for r in records] == [
        "https://atom.example.com/blog/posts/two",
        "https://other.example.com/x/three",
        "https://atom.example.com/blog/sub/four",
        "https://atom.example.com/five",
    ]


def test_a_record_of_the_other_sitemap_kind_is_said_skipped() -> None:
    # a <url> in a sitemap index (or a <sitemap> in a urlset) was dropped in silence
    data = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>https://www.example.com/sm1.xml</loc></sitemap>"
        b"<url><loc>https://www.example.com/page</loc></url></sitemapindex>"
    )
    urls, err = _urls(data)
    assert urls == ["https://www.example.com/sm1.xml"]
    assert "1 <url> records in a <sitemapindex> skipped" in err


def test_an_iso_8859_1_sitemap_is_read_as_the_web_reads_it() -> None:
    # the label means windows-1252 on the web: expat's own latin-1 read 0x80 as a C1
    # control, a URL the site never linked
    data = (
        b'<?xml version="1.0" encoding="ISO-8859-1"?>'
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<url><loc>http://www.example.com/caf\xe9</loc></url>"
        b"<url><loc>http://www.example.com/\x80</loc></url></urlset>"
    )
    urls, _ = _urls(data)
    assert urls == ["http://www.example.com/caf%C3%A9", "http://www.example.com/%E2%82%AC"]


HREFLANG = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://www.example.com/en/page</loc>
    <lastmod>2024-05-01</lastmod>
    <priority>0.9</priority>
    <xhtml:link rel="alternate" hreflang="en" href="https://www.example.com/en/page"/>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/page"/>
    <xhtml:link rel="alternate" hreflang="fr" href="https://evil.example.net/fr/page"/>
    <xhtml:link rel="alternate" hreflang="x-default" href="https://www.example.com/"/>
    <xhtml:link rel="stylesheet" href="https://www.example.com/not-a-language"/>
    <xhtml:link rel="alternate" hreflang="it" href="/relative/it"/>
  </url>
  <url>
    <loc>https://www.example.com/de/page</loc>
    <xhtml:link rel="alternate" hreflang="en" href="https://www.example.com/en/page"/>
    <xhtml:link rel="alternate" hreflang="de" href="https://www.example.com/de/page"/>
    <xhtml:link rel="alternate" hreflang="x-default" href="https://www.example.com/"/>
  </url>
</urlset>
"""


def test_hreflang_alternates_are_urls_each_once_under_the_loc_rules() -> None:
    """Search engines crawl a <url>'s hreflang alternates; they were dropped. Each URL
    comes out once, another host's and a relative one are skipped as a <loc> is."""
    out = io.StringIO()
    reader = SitemapReader(
        base="https://www.example.com/sitemap.xml", same_host=True, reporter=Reporter("t", out)
    )
    recs = list(reader.read(io.BytesIO(HREFLANG)))
    assert [r["url"] for r in recs] == [
        "https://www.example.com/en/page",
        "https://www.example.com/de/page",
        "https://www.example.com/",
    ]
    assert recs[0]["priority"] == 0.9 and recs[0]["lastmod"] == "2024-05-01T00:00:00Z"
    assert recs[1]["priority"] == 0.5 and "lastmod" not in recs[1]  # the <loc>'s fields
    assert reader.stats.urls == 3 and reader.stats.foreign == 1 and reader.stats.invalid == 1
    assert ":10: URL on another host" in out.getvalue()
    assert ":13: invalid URL skipped: relative URL" in out.getvalue()
    limited = SitemapReader(max_urls=2, reporter=Reporter("t", io.StringIO()))
    assert len(list(limited.read(io.BytesIO(HREFLANG)))) == 2


CLUSTER = b"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"
        xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url><loc>https://a.org/en/</loc><lastmod>2024-05-01</lastmod>
    <xhtml:link rel="alternate" hreflang="en" href="https://a.org/en/"/>
    <xhtml:link rel="alternate" hreflang="de" href="https://a.org/de/"/>
    <xhtml:link rel="alternate" hreflang="fr" href="https://a.org/fr/"/></url>
  <url><loc>https://a.org/de/</loc><lastmod>2026-12-01</lastmod><priority>0.9</priority>
    <changefreq>daily</changefreq>
    <xhtml:link rel="alternate" hreflang="en" href="https://a.org/en/"/>
    <xhtml:link rel="alternate" hreflang="de" href="https://a.org/de/"/></url>
  <url><loc>https://a.org/de/</loc><lastmod>2020-01-01</lastmod></url>
"""


@pytest.mark.parametrize("whole", [True, False])
def test_a_loc_listed_first_as_an_alternate_keeps_its_own_fields(whole: bool) -> None:
    """Google's hreflang form lists the whole cluster in every <url>: the second
    page's <loc> (its lastmod, priority, changefreq) came after it was given as an
    alternate of the first, and was dropped as a repeat, so every page of a cluster
    but the first lost its lastmod. Each URL still comes out once; an alternate no
    <loc> lists comes out at the end, also of a document cut short."""
    body = CLUSTER + b"</urlset>\n" if whole else CLUSTER
    out = io.StringIO()
    reader = SitemapReader(base="https://a.org/sitemap.xml", reporter=Reporter("t", out))
    recs = []
    with contextlib.suppress(SitemapError):
        recs.extend(reader.read(io.BytesIO(body)))
    assert [r["url"] for r in recs] == [
        "https://a.org/en/",
        "https://a.org/de/",
        "https://a.org/fr/",
    ]
    de = recs[1]
    assert de["lastmod"] == "2026-12-01T00:00:00Z" and de["priority"] == 0.9
    assert de["changefreq"] == "daily"
    assert recs[2]["priority"] == 0.5 and "lastmod" not in recs[2]
    assert reader.stats.urls == 3


def test_alternates_held_to_the_end_cost_their_urls_only(tmp_path: Path) -> None:
    """A per-language sitemap lists each page's alternates, whose <loc>s are in
    another file: all of them are held to the end of this one, as URLs (and every
    URL's fingerprint is kept once alternates are seen): ~10 MB at the peak for
    25,000 pages and their 25,000 alternates; held as records, ~20 MB."""
    path = tmp_path / "en.xml"
    with path.open("wb") as f:
        f.write(b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" ')
        f.write(b'xmlns:xhtml="http://www.w3.org/1999/xhtml">\n')
        for i in range(25_000):
            f.write(b"<url><loc>https://a.org/en/page-%d</loc>" % i)
            f.write(
                b'<xhtml:link rel="alternate" hreflang="de" href="https://a.org/de/page-%d"/>' % i
            )
            f.write(b"</url>\n")
        f.write(b"</urlset>\n")
    reader = SitemapReader(base="https://a.org/en.xml")
    tracemalloc.start()
    try:
        with path.open("rb") as stream:
            seen = {i: rec["url"] for i, rec in enumerate(reader.read(stream)) if i % 24_999 < 2}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (
        seen[24_999] == "https://a.org/en/page-24999" and seen[25_000] == "https://a.org/de/page-0"
    )
    assert max(seen) == 49_999 and reader.stats.urls == 50_000
    assert peak < 12 * 1024 * 1024, f"peak {peak / 1e6:.1f} MB"


def test_each_loc_of_a_record_with_several_is_a_record_of_its_own() -> None:
    # a generator that never closes one <sitemap> and opens the next: only the first
    # <loc> was kept, the other sitemaps (and all their URLs) lost with nothing said
    data = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<sitemap>\n"
        b"<loc>https://shop.example.net/sm-a.xml</loc><lastmod>2023-03-04</lastmod>\n"
        b"<loc>https://shop.example.net/sm-b.xml</loc>\n"
        b"<loc>https://shop.example.net/sm-c.xml</loc><lastmod>2023-05-06</lastmod>\n"
        b"</sitemap>\n"
        b"<sitemap><loc>https://shop.example.net/sm-d.xml</loc></sitemap>\n"
        b"</sitemapindex>"
    )
    out = io.StringIO()
    records = list(parse_sitemap(data, None, reporter=Reporter("t", out)))
    # each <loc> with the fields that follow it, none of another's
    assert [(r["url"], r.get("lastmod"), r["kind"]) for r in records] == [
        ("https://shop.example.net/sm-a.xml", "2023-03-04T00:00:00Z", "sitemap"),
        ("https://shop.example.net/sm-b.xml", None, "sitemap"),
        ("https://shop.example.net/sm-c.xml", "2023-05-06T00:00:00Z", "sitemap"),
        ("https://shop.example.net/sm-d.xml", None, "sitemap"),
    ]
    assert "2 <loc> after the first in a <sitemap> record, each read as a record" in out.getvalue()
    # the same in a urlset, with each URL's own priority and line
    urlset = (
        b"<urlset>\n<url><loc>https://shop.example.net/p1</loc><priority>0.9</priority>\n"
        b"<loc>https://shop.example.net/p2</loc>\n<changefreq>daily</changefreq></url></urlset>"
    )
    out = io.StringIO()
    got = [
        (r["url"], r["priority"], r.get("changefreq"))
        for r in parse_sitemap(urlset, None, reporter=Reporter("t", out))
    ]
    assert got == [
        ("https://shop.example.net/p1", 0.9, None),
        ("https://shop.example.net/p2", 0.5, "daily"),
    ]
    assert "1 <loc> after the first in a <url> record" in out.getvalue()


def test_a_record_whose_own_text_is_its_url_has_it_for_its_loc() -> None:
    # <sitemap>URL</sitemap> without <loc>: each was "entry without a URL skipped",
    # the index gave no sitemap at all
    data = (
        b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        b"<sitemap>\n  https://maps.example.org/part.xml?n=1&amp;hl=fr\n</sitemap>\n"
        b"<sitemap><![CDATA[ https://maps.example.org/part.xml?n=2 ]]>"
        b"<lastmod>2022-02-02</lastmod></sitemap>\n"
        b"<sitemap>no URL here</sitemap>\n"
        b"<sitemap>ignored text<loc>https://maps.example.org/part.xml?n=3</loc></sitemap>\n"
        b"</sitemapindex>"
    )
    out = io.StringIO()
    records = list(parse_sitemap(data, None, reporter=Reporter("t", out)))
    assert [(r["url"], r.get("lastmod")) for r in records] == [
        ("https://maps.example.org/part.xml?hl=fr&n=1", None),
        ("https://maps.example.org/part.xml?n=2", "2022-02-02T00:00:00Z"),
        ("https://maps.example.org/part.xml?n=3", None),  # a <loc> wins over text
    ]
    err = out.getvalue()
    assert "2 <sitemap> records without <loc> give their URL as text" in err
    assert "t: <sitemap>:6: entry without a URL skipped" in err  # text that is no URL
    # a urlset's <url> the same
    urls, err = _urls(b"<urlset><url>https://maps.example.org/page</url></urlset>")
    assert urls == ["https://maps.example.org/page"]
    assert "1 <url> records without <loc>" in err


_CUT_INDEX = (
    b'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
    b"<sitemap><loc>https://cut.example.com/sm-1.xml</loc></sitemap>\n"
    b"<sitemap><loc>https://cut.example.com/sm-2.xml</loc><lastmod>2021-07-08</lastmod>"
    b"<lastmod>2021-07-0"  # the damage: bytes end here, or junk follows
)


@pytest.mark.parametrize(
    "how", ["cut", "junk", "size limit", "cut gzip", "loc still open", "cut in the loc"]
)
def test_a_record_cut_after_its_loc_stands_with_the_records_before(how: str) -> None:
    # the open record was lost with the damage though its <loc> (and lastmod) had been
    # read whole: a cut index lost the sitemap, and every URL it lists
    data, max_bytes, sm2 = _CUT_INDEX, MAX_SITEMAP_BYTES, True
    if how == "junk":
        data += b"</sitemap></sitemapindex>"
    elif how == "size limit":
        data, max_bytes = data + b"8</lastmod></sitemap></sitemapindex>", len(data)
    elif how == "cut gzip":
        padding = random.Random(5).randbytes(20_000).hex().encode()  # hardly compresses
        data = gzip.compress(data + b"8</lastmod><!-- " + padding + b" -->")[:-5_000]
    elif how == "loc still open":  # a URL maybe cut short: never taken
        data, sm2 = data.split(b"<loc>https://cut.example.com/sm-2")[0] + b"<loc>https://cut", False
    elif how == "cut in the loc":
        data, sm2 = data.split(b".xml</loc><lastmod>")[0], False
    reader = SitemapReader(reporter=Reporter("t", io.StringIO()), max_bytes=max_bytes)
    got: list[dict] = []
    with contextlib.suppress(SitemapError):
        got.extend(reader.read(io.BytesIO(data)))
    want = [("https://cut.example.com/sm-1.xml", None)]
    if sm2:  # with the fields closed before the damage
        want.append(("https://cut.example.com/sm-2.xml", "2021-07-08T00:00:00Z"))
    assert [(r["url"], r.get("lastmod")) for r in got] == want


def test_sitemap_elements_in_another_case_are_read_and_said() -> None:
    # <Url><Loc>: the records were skipped with nothing said (0 URLs, exit 0); an
    # upper-case root was refused as no sitemap
    urls, err = _urls(
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        b' xmlns:image="http://www.google.com/schemas/sitemap-image/1.1">'
        b"<Url><Loc>https://case.example.com/a</Loc><LastMod>2020-01-02</LastMod>"
        b"<image:image><image:Loc>https://case.example.com/a.png</image:Loc></image:image>"
        b"</Url></urlset>"
    )
    assert urls == ["https://case.example.com/a"]  # an extension's <image:Loc> is not it
    assert "3 elements named in another case than the sitemap protocol's" in err
    out = io.StringIO()
    records = list(
        parse_sitemap(
            b"<SITEMAPINDEX><SITEMAP><LOC>https://case.example.com/sm.xml</LOC>"
            b"<LASTMOD>2020-01-02</LASTMOD></SITEMAP></SITEMAPINDEX>",
            reporter=Reporter("t", out),
        )
    )
    assert [(r["url"], r["kind"], r["lastmod"]) for r in records] == [
        ("https://case.example.com/sm.xml", "sitemap", "2020-01-02T00:00:00Z")
    ]
    # a feed's names are its own: an RSS <Link> is not its <link>
    urls, err = _urls(
        b'<rss version="2.0"><channel><item><Link>https://case.example.com/x</Link>'
        b"<link>https://case.example.com/y</link></item></channel></rss>"
    )
    assert urls == ["https://case.example.com/y"] and "another case" not in err


def test_a_tab_ends_a_text_sitemap_line_s_url() -> None:
    # "URL<TAB>date" (a spreadsheet's export) gave the invented URL ".../p12024-03-04":
    # the URL parser drops tabs, as it does in a wrapped HTML attribute
    urls, err = _urls(
        b"https://tsv.example.com/p1\t2024-03-04\n"
        b"https://tsv.example.com/p2\t\n"
        b"\thttps://tsv.example.com/p3\n"
        b"https://tsv.example.com/my file.pdf\n"
    )
    assert urls == [
        "https://tsv.example.com/p1",
        "https://tsv.example.com/p2",
        "https://tsv.example.com/p3",
        "https://tsv.example.com/my%20file.pdf",  # a space may be the URL's own
    ]
    assert "t: <sitemap>:1: text after a tab left out: '2024-03-04'" in err
    assert err.count("left out") == 1


_NETSCAPE_DTD = (
    b'<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" '
    b'"http://my.netscape.com/publish/formats/rss-0.91.dtd">'
)


def test_html_entities_of_a_never_read_dtd_are_their_characters() -> None:
    """An RSS 0.91 feed names Netscape's DTD, which defines HTML's entities; it is never
    read, and expat skipped ``&eacute;`` in silence: the link came out as another URL
    (``/caf``, a page the feed never named). An HTML named entity is its character."""
    doc = (
        b'<?xml version="1.0" encoding="ISO-8859-1"?>' + _NETSCAPE_DTD + b'<rss version="0.91">'
        b"<channel><item><title>caf&eacute;&nbsp;menu</title>"
        b"<link>http://a.test/caf&eacute;</link></item>"
        b"<item><link>http://a.test/two</link></item></channel></rss>"
    )
    assert [r["url"] for r in parse_sitemap(doc)] == [
        "http://a.test/caf%C3%A9",
        "http://a.test/two",
    ]


def test_an_entity_no_dtd_read_defines_ends_the_document() -> None:
    doc = (
        b'<?xml version="1.0"?><!DOCTYPE urlset SYSTEM "http://a.test/x.dtd"><urlset>'
        b"<url><loc>http://a.test/1</loc></url><url><loc>http://a.test/&own;x</loc></url>"
        b"<url><loc>http://a.test/3</loc></url></urlset>"
    )
    got: list[dict] = []
    with pytest.raises(SitemapError, match=r"undefined entity &own;"):
        got.extend(parse_sitemap(doc))
    assert [r["url"] for r in got] == ["http://a.test/1"]  # never http://a.test/x
