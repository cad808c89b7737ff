"""crawlkit index: CDXJ byte for byte as cdxj-indexer writes it; SURT keys as surt's."""

from __future__ import annotations

import pytest
import surt
from archive_tools import cdxj_indexer
from conftest import crawlkit
from hypothesis import example, given, settings
from hypothesis import strategies as st
from warc_samples import crawlkit_warc, warcio_warc

from crawlkit.warc.surt import surt_key

# warcio's writer buffers payloads in SpooledTemporaryFiles it never closes.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


def test_index_is_cdxj_indexers_byte_for_byte(tmp_path):
    warcs = [
        crawlkit_warc(tmp_path / "ck"),
        warcio_warc(tmp_path / "b.warc.gz", gzip=True),
        warcio_warc(tmp_path / "c.warc", gzip=False),
    ]
    out = tmp_path / "index.cdxj"
    res = crawlkit("index", *map(str, warcs), "-o", str(out))
    assert res.code == 0, res.stderr
    ours = out.read_text()
    assert ours == cdxj_indexer(*warcs)
    keys = [line.split(" ", 1)[0] for line in ours.splitlines()]
    # IP literals as pywb writes them: v4 reversed, v6 as it is, ports kept
    assert "1,0,0,127:8080)/img/logo.png" in keys
    assert "::1:8443)/a?a=1&b=2" in keys
    assert "2001:db8::1)/x" in keys
    assert "3,2,1,10)/" in keys and "1,0,168,192)/page?a=2&b=1" in keys
    assert "com,example)/about" in keys  # www dropped, trailing slash dropped
    assert keys == sorted(keys)
    assert "17 captures indexed from 3 WARC files" in res.stderr


def test_index_to_stdout_and_errors(tmp_path):
    warc = crawlkit_warc(tmp_path / "ck")
    res = crawlkit("index", str(warc))
    assert res.code == 0 and res.text == cdxj_indexer(warc)
    bad = tmp_path / "bad.warc.gz"
    bad.write_bytes(b"this is not a WARC file\n" * 10)
    out = tmp_path / "out.cdxj"
    res = crawlkit("index", str(warc), str(bad), "-o", str(out))
    assert res.code == 1
    assert res.stderr.startswith("crawlkit index: ") and "bad.warc.gz" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()  # nothing half written
    assert crawlkit("index").code == 2  # a file is required
    cut = tmp_path / "cut.warc.gz"
    cut.write_bytes(warc.read_bytes()[:-100])  # warcio alone reads this without a word
    res = crawlkit("index", str(cut))
    assert res.code == 1 and "cut.warc.gz: WARC ends inside" in res.stderr


_label = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=8)
_hosts = st.one_of(
    st.lists(_label, min_size=1, max_size=4).map(".".join).map(lambda h: h.strip("-") or "a"),
    st.sampled_from(
        [
            "www.Example.COM",
            "WWW3.ex.org",
            "127.0.0.1",
            "[::1]",
            "[2001:DB8::A]",
            "10.0.0.255",
            "bücher.de",
            "2130706433",
            "0x7f.1",
            "a..b.",
            "%77ww.x.y",
        ]
    ),
)
_path_chars = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="#?"),
    max_size=20,
)
_query = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters="#"),
    max_size=20,
)


@settings(max_examples=400, deadline=None)
@example(scheme="http", host=".", port=None, path="", query=None, frag=None)
@example(scheme="HTTP", host="..", port=8080, path="A/../b/", query="b=1&a=2", frag=None)
@given(
    scheme=st.sampled_from(["http", "https", "HTTP"]),
    host=_hosts,
    port=st.one_of(st.none(), st.sampled_from([80, 443, 8080, 1])),
    path=_path_chars,
    query=st.one_of(st.none(), _query),
    frag=st.one_of(st.none(), st.text("abc#?", max_size=4)),
)
def test_surt_key_agrees_with_the_surt_package(scheme, host, port, path, query, frag):
    url = f"{scheme}://{host}" + (f":{port}" if port else "") + "/" + path
    if query is not None:
        url += "?" + query
    if frag is not None:
        url += "#" + frag
    try:
        expected = surt.surt(url)
    except Exception:  # surt gives up on some inputs (cdxj-indexer then keeps the URL)
        return
    assert surt_key(url) == expected, url


@pytest.mark.parametrize(
    "url",
    [
        "http://a.test/100%",  # a "%" that escapes nothing is escaped itself
        "http://a.test/a%zz/b?q=50%&r=1",
        "http://a.test/%41%2541/?x=%7e",  # decoded until nothing changes
        "http://WWW.A.test/Plain/Path/?b=2&a=1",  # every byte kept: the fast path
        "http://a.test/a b/?c d",
        "http://%77ww.a.test/x",  # an escaped host
        "http://a.test:8080/~user/(x)/[y]/",
    ],
)
def test_urls_of_plain_bytes_or_with_a_stray_percent_agree_with_surt(url):
    """Bytes that decoding and escaping leave as they are skip both (the common URL);
    a "%" anywhere takes the whole path."""
    expected = surt.surt(url)
    for _ in range(2):  # the second time with the host's part remembered
        assert surt_key(url) == expected


def test_resource_records_of_a_provenance_file_index_as_cdxj_indexer_does(tmp_path):
    """The crawl log and report crawlkit archive stores as resource records have
    opaque URIs (urn:...): their keys keep the scheme, as surt's do."""
    from crawlkit.warc.write import WarcWriter

    with WarcWriter(tmp_path) as writer:
        writer.write_resource("urn:crawlkit:crawl-log.ndjson", "application/x-ndjson", b"{}\n")
        writer.write_resource("urn:crawlkit:report.json", "application/json", b"{}")
        writer.write_metadata(
            "http://a.test/",
            [("outlink", "http://a.test/x L a")],
            refers_to=None,
            date="2026-01-01T00:00:00Z",
        )
    warc = next(tmp_path.glob("*.warc.gz"))
    out = tmp_path / "index.cdxj"
    assert crawlkit("index", str(warc), "-o", str(out)).code == 0
    ours = out.read_text()
    assert ours == cdxj_indexer(warc)
    assert ours.startswith("urn:crawlkit:crawl-log.ndjson ")


@pytest.mark.parametrize(
    "url", ["urn:crawlkit:report.json", "URN:X:Y", "mailto:a@b.c", "dns:WWW.Example.com"]
)
def test_opaque_uris_keep_their_scheme(url):
    assert surt_key(url) == surt.surt(url)


@pytest.mark.parametrize(
    "date",
    [
        "2026-12-02T15:00:00Z",
        "2026-12-02T15:00:00.123456Z",
        "2026-12-02T15:00:00.1234567Z",
        "1999-01-31T23:59:59.5Z",
        "0999-01-31T23:59:59Z",  # strftime: no zero padding below 1000
        "2026-02-30T10:00:00Z",  # no such day: warcio raises
        "2026-13-01T10:00:00Z",
        "2026-12-02T24:00:00Z",
        "2026-12-02T15:00:00",  # no Z: warcio reads it all the same
        "2026-12-02 15:00:00Z",
        "٢٠٢٦-12-02T15:00:00Z",  # Arabic-Indic digits: int() reads them
    ],
)
def test_index_timestamp_is_warcios(date):
    from warcio.timeutils import iso_date_to_timestamp

    from crawlkit.warc import cdxj

    try:
        want = iso_date_to_timestamp(date)
    except (ValueError, OverflowError) as exc:
        with pytest.raises(type(exc)):
            cdxj._iso_timestamp(date)
    else:
        assert cdxj._iso_timestamp(date) == want


@given(
    url=st.text(min_size=1, max_size=40),
    mime=st.one_of(st.none(), st.text(max_size=20)),
    filename=st.text(min_size=1, max_size=20),
)
@settings(max_examples=200, deadline=None)
def test_index_line_json_is_json_dumps(url, mime, filename):
    import json

    from crawlkit.warc import cdxj

    line = cdxj._format_line(
        url=url,
        date="20261202150000",
        mime=mime,
        status="200",
        digest="sha1:X",
        length=10,
        offset=0,
        filename=filename,
        timestamp=True,
    )
    fields = {"url": url, **({"mime": mime} if mime else {}), "status": "200", "digest": "sha1:X"}
    fields |= {"length": "10", "offset": "0", "filename": filename}
    assert line == f"{surt_key(url)} 20261202150000 {json.dumps(fields)}"


def test_index_reads_a_file_named_twice_once(tmp_path):
    warc = crawlkit_warc(tmp_path / "ck")
    link = tmp_path / "link.warc.gz"
    link.symlink_to(warc)
    alone = crawlkit("index", str(warc))
    assert alone.code == 0, alone.stderr
    # the same path twice, the path through "./", a symlink: one file, read once
    res = crawlkit("index", warc.name, f"./{warc.name}", str(link), cwd=warc.parent)
    assert res.code == 0, res.stderr
    assert res.text == alone.text  # each line once, named as the file was first given
    warned = [line for line in res.stderr.splitlines() if "read once" in line]
    assert len(warned) == 1
    assert f"./{warc.name} is {warc.name}" in warned[0] and f"{link} is {warc.name}" in warned[0]
    assert "13 captures indexed from 1 WARC files" in res.stderr


def test_index_refuses_two_files_of_one_base_name(tmp_path):
    """An index line names its WARC by base name, the name replay opens: a/x.warc.gz
    and b/x.warc.gz gave lines that all named x.warc.gz, so replay read the second
    file's captures at offsets of the first (a wrong record, or none)."""
    first = crawlkit_warc(tmp_path / "a")
    other = tmp_path / "b" / first.name
    other.parent.mkdir()
    warcio_warc(other, gzip=True)
    out = tmp_path / "index.cdxj"
    res = crawlkit("index", str(first), str(other), "-o", str(out))
    assert res.code == 2
    [line] = [line for line in res.stderr.splitlines() if "two WARC files" in line]
    assert f"two WARC files named {first.name!r} ({first}, {other})" in line
    assert not out.exists()  # nothing written
    assert crawlkit("index", str(first), "-o", str(out)).code == 0  # alone, it indexes


def test_index_refuses_to_write_over_the_warc_it_reads(tmp_path):
    """``crawlkit index a.warc.gz -o a.warc.gz`` (a completion away from -o a.cdxj)
    renamed the index over the WARC file: the archive was gone, exit 0."""
    warc = crawlkit_warc(tmp_path / "ck")
    kept = warc.read_bytes()
    link = tmp_path / "link.warc.gz"
    link.symlink_to(warc)
    for out in (str(warc), str(link)):
        res = crawlkit("index", str(warc), "-o", out)
        assert res.code == 2
        assert f"the index would replace the WARC file it indexes: {out}" in res.stderr
        assert warc.read_bytes() == kept
