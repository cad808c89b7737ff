"""crawlkit index (and wacz) on damaged and odd WARCs: one-line errors, never internal
errors, never a silent rc 0 on a cut record; odd URIs keyed as cdxj-indexer keys them."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from archive_tools import cdxj_indexer
from conftest import crawlkit
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

# warcio's writer buffers payloads in SpooledTemporaryFiles it never closes.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)

_HTTP = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 5\r\n\r\nhello"


def _record(*headers: str, block: bytes = _HTTP, length: int | None = None) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    size = len(block) if length is None else length
    return f"WARC/1.1\r\n{head}Content-Length: {size}\r\n\r\n".encode() + block + b"\r\n\r\n"


_GOOD = (
    "WARC-Type: response",
    "WARC-Target-URI: http://example.com/",
    "WARC-Date: 2026-12-02T01:02:03Z",
    "WARC-Record-ID: <urn:uuid:1>",
    "Content-Type: application/http; msgtype=response",
)


def _without(name: str, *extra: str) -> tuple[str, ...]:
    return tuple(h for h in _GOOD if not h.startswith(name)) + extra


def _index(path: Path) -> tuple[int, str, str]:
    res = crawlkit("index", str(path))
    return res.code, res.text, res.stderr


CASES = {
    "empty-date": (_record(*_without("WARC-Date", "WARC-Date: ")), "no WARC-Date"),
    "no-date": (_record(*_without("WARC-Date")), "no WARC-Date"),
    "bad-date": (_record(*_without("WARC-Date", "WARC-Date: yesterday")), "is not a date"),
    "no-uri": (_record(*_without("WARC-Target-URI")), "no WARC-Target-URI"),
    "cut-in-headers": (_record(*_GOOD)[:40], "ends inside the headers of record 2"),
    "cut-record": (_record(*_GOOD) + _record(*_GOOD)[:-30], "ends inside record 2"),
    "huge-length": (_record(*_GOOD, length=10**15), "ends inside record 2"),
    "not-a-warc": (b"GET / HTTP/1.1\r\n\r\n", "not a WARC record"),
    "20mb-header-line": (
        b"WARC/1.1\r\nWARC-Type: response\r\nX-Long: " + b"a" * (20 << 20) + b"\r\n\r\n",
        "WARC headers longer than",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_damaged_warc_is_a_one_line_error(tmp_path: Path, case: str) -> None:
    data, why = CASES[case]
    warc = tmp_path / f"{case}.warc"
    warc.write_bytes(_record(*_GOOD) + data if case != "cut-record" else data)
    out = tmp_path / "out.cdxj"
    res = crawlkit("index", str(warc), "-o", str(out))
    assert res.code == 1, (case, res.stderr)
    assert res.stderr.startswith(f"crawlkit index: {warc}: "), res.stderr
    assert why in res.stderr and "internal error" not in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()


def test_a_warc_on_standard_input_is_refused(tmp_path: Path) -> None:
    """Each line names its WARC file ("filename"), which replay opens: "-" is none."""
    res = crawlkit("index", "-", "-o", str(tmp_path / "out.cdxj"), input=_record(*_GOOD))
    assert res.code == 2 and "standard input" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and not (tmp_path / "out.cdxj").exists()


def test_a_200_mb_header_line_is_refused_at_once(tmp_path: Path) -> None:
    """(Before: a 20 MB line took 7.9 s, a 200 MB one never ended.) The file is sparse:
    200 MB of NUL bytes with no line end, of which the reader reads 256 KiB."""
    warc = tmp_path / "long.warc"
    with open(warc, "wb") as f:
        f.write(_record(*_GOOD) + b"WARC/1.1\r\nWARC-Type: response\r\nX-Long: ")
        f.truncate(200 << 20)
    for stage in ("index", "wacz"):
        extra = ("-o", str(tmp_path / "x.wacz")) if stage == "wacz" else ()
        res = crawlkit(stage, str(warc), *extra)
        assert res.code == 1 and "WARC headers longer than" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1


def test_a_year_only_date_is_indexed_from_its_first_second(tmp_path: Path) -> None:
    warc = tmp_path / "year.warc"
    warc.write_bytes(
        _record(*_without("WARC-Date", "WARC-Date: 2026"))
        + _record(*_without("WARC-Date", "WARC-Date: 2026-12"))
    )
    code, text, err = _index(warc)
    assert code == 0, err
    assert [line.split(" ")[1] for line in text.splitlines()] == [
        "20260101000000",
        "20261201000000",
    ]


def test_a_metadata_record_without_a_uri_is_keyed_as_cdxj_indexer_does(tmp_path: Path) -> None:
    warc = tmp_path / "meta.warc"
    meta = _record(
        "WARC-Type: metadata",
        "WARC-Date: 2026-12-02T01:02:03Z",
        "Content-Type: text/plain",
        block=b"a crawl log",
    )
    warc.write_bytes(_record(*_GOOD) + meta)
    code, text, err = _index(warc)
    assert code == 0, err
    assert text == cdxj_indexer(warc)
    assert text.splitlines()[0].startswith('- 20261202010203 {"mime": "text/plain"')


ODD_URIS = [
    "dns:example.com",
    "DNS:Example.COM",
    "data:text/plain,hello",
    "data:,",
    "data:image/png;base64,iVBORw0KGgo=",
    "file:///etc/passwd",
    "file://host/share/x",
    "file:/tmp/x",
    "urn:uuid:6e8bc430-9c3a-11d9-9669-0800200c9a66",
    "urn:ISBN:0451450523",
    "javascript:void(0)",
    "javascript:alert('x')",
    "mailto:a@b.c",
    "about:blank",
    "http://",
    "https://",
    "http:///",
    "http://:80/",
    "http://example.com:",
    "http://example.com:abc/",
    "http://example.com:99999/",
    "http://example.com:-1/",
    "http://example.com:0/",
    "http://example.com:80:80/",
    "http://[::1",
    "http://[::1]:x/",
    "http://user:pw@example.com:8080/p",
    "ftp://ftp.example.com/pub/",
    "ws://example.com/chat",
    "whois://whois.example.com/example.com",
    "HTTP://EXAMPLE.COM:080/",
    "https://example.com:80/",
    "blob:http://example.com/uuid",
    "tel:+123",
    "x-ms:foo",
]


def test_odd_uris_are_keyed_as_cdxj_indexer_keys_them(tmp_path: Path) -> None:
    """Before: 9 of these 35 got other keys (dns:, data:, file:, urn:, javascript:,
    bare http://, bad ports)."""
    warc = tmp_path / "odd.warc.gz"
    with open(warc, "wb") as f:
        w = WARCWriter(f, gzip=True)
        for uri in ODD_URIS:
            w.write_record(
                w.create_warc_record(
                    uri, "resource", payload=io.BytesIO(b"x"), warc_content_type="text/plain"
                )
            )
            if uri.lower().startswith("http"):
                head = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], "HTTP/1.1")
                w.write_record(
                    w.create_warc_record(
                        uri, "response", payload=io.BytesIO(b"<p>"), http_headers=head
                    )
                )
    code, text, err = _index(warc)
    assert code == 0, err
    assert text == cdxj_indexer(warc)
    assert len(text.splitlines()) > len(ODD_URIS)


def test_a_zstd_warc_that_starts_with_a_skippable_frame_is_read(tmp_path: Path) -> None:
    """pzstd writes a skippable frame first: the file was taken for a plain WARC and
    refused ("not a WARC record (starts b'P*M\\x18...')")."""
    import zstandard

    plain = tmp_path / "a.warc"
    plain.write_bytes(_record(*_GOOD) * 3)
    skippable = (0x184D2A50).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"\0" * 4
    packed = tmp_path / "a.warc.zst"
    frames = [zstandard.ZstdCompressor().compress(_record(*_GOOD)) for _ in range(3)]
    packed.write_bytes(skippable + b"".join(frames))  # a frame a record, as WARC's zstd is
    code, text, err = _index(packed)
    assert code == 0, err
    assert len(text.splitlines()) == 3 and "example.com" in text


def test_a_warc_gzipped_whole_is_refused_for_an_index(tmp_path: Path) -> None:
    """gzip over the whole file, not record by record: every line said offset 0 and
    the file's length, and pywb replayed the warcinfo record for any page (500)."""
    import gzip

    whole = tmp_path / "whole.warc.gz"
    whole.write_bytes(gzip.compress(_record(*_GOOD) * 3))
    code, text, err = _index(whole)
    assert code == 1 and text == ""
    assert "not compressed record by record" in err and "1 whole records before it" in err


def test_a_record_cut_into_two_gzip_members_is_refused_for_an_index(tmp_path: Path) -> None:
    """warcio's example-wrong-chunks.warc.gz: a record's WARC head in one gzip member,
    its block in the next. The index said offset 0 and both members' length, and pywb
    replayed the page as an empty 200 (it reads one member at an offset)."""
    import gzip

    record = _record(*_GOOD)
    body_at = record.index(b"HTTP/1.1")
    good = gzip.compress(_record(*_GOOD))
    split = tmp_path / "split.warc.gz"
    split.write_bytes(good + gzip.compress(record[:body_at]) + gzip.compress(record[body_at:]))
    code, text, err = _index(split)
    assert code == 1 and text == "", err
    assert "a record spans 2 gzip members" in err and "1 whole records before it" in err
    assert len(err.strip().splitlines()) == 1
    res = crawlkit("wacz", str(split), "-o", str(tmp_path / "x.wacz"))
    assert res.code == 1 and "a record spans 2 gzip members" in res.stderr, res.stderr
    assert not (tmp_path / "x.wacz").exists()
    # extract reads the bytes, not offsets: the page is there
    res = crawlkit("extract", str(split))
    assert res.code == 0 and res.text.count('"text_bytes":5') == 2, res.stderr


def test_a_content_length_too_short_is_pointed_at(tmp_path: Path) -> None:
    """pywb's example.warc: record 5 says 320 bytes for a block of 323, so record 6
    "starts" with the block's last bytes. The error said only "record 6: not a WARC
    record (starts b'm\\r\\n')", which sent the user looking at record 6."""
    warc = tmp_path / "edited.warc"
    record = _record(*_GOOD)
    short = _record(*_GOOD, length=len(_HTTP) - 3)  # "llo\r\n\r\n" left over
    warc.write_bytes(record + short + record)
    for stage in ("index", "extract"):
        res = crawlkit(stage, str(warc))
        assert res.code == 1, res.stderr
        first = res.stderr.splitlines()[0]
        assert "record 3: not a WARC record (starts b'llo\\r\\n')" in first, first
        assert "where record 2 ends by its Content-Length, which may be wrong" in first


_ARC = (
    b"filedesc://live-web-example.arc.gz 127.0.0.1 20140216050221 text/plain 75\n"
    b"1 0 LiveWeb Capture\nURL IP-address Archive-date Content-type Archive-length\n\n"
    b"http://example.com/ 93.184.216.119 20140216050221 text/html 72\n" + _HTTP + b"\n"
)


@pytest.mark.parametrize("name", ["old.arc", "old.arc.gz"])
@pytest.mark.parametrize("stage", ["index", "extract", "wacz"])
def test_an_arc_file_is_named_as_one(tmp_path: Path, name: str, stage: str) -> None:
    """pywb's and warcio's example.arc(.gz): "record 1: not a WARC record (starts
    b'filedesc://live-web-')", which did not say the file is an ARC file."""
    import gzip

    arc = tmp_path / name
    arc.write_bytes(gzip.compress(_ARC) if name.endswith(".gz") else _ARC)
    extra = ("-o", str(tmp_path / "x.wacz")) if stage == "wacz" else ()
    res = crawlkit(stage, str(arc), *extra)
    assert res.code == 1, res.stderr
    first = res.stderr.splitlines()[0]
    assert first.startswith(f"crawlkit {stage}: {arc}: an ARC file, not a WARC"), first
    assert "warcio recompress" in first
    assert not (tmp_path / "x.wacz").exists()


@pytest.mark.parametrize("cut", [2, 40])
def test_a_warc_cut_in_a_records_head_counts_the_records_kept(tmp_path: Path, cut: int) -> None:
    """Cut 2 or 40 bytes into record 4's head: three whole records before it (extract
    said two), and a cut inside "WARC/" is the file ending, not a record that is no
    WARC record."""
    record = _record(*_GOOD)
    path = tmp_path / "cut.warc"
    path.write_bytes(record * 3 + record[:cut])
    for command in ("extract", "index"):
        res = crawlkit(command, str(path))
        assert res.code == 1
        assert "ends inside the headers of record 4" in res.stderr, res.stderr
        assert "3 whole records" in res.stderr or "the 3 records" in res.stderr, res.stderr


def test_a_bracketed_or_spaced_target_uri_is_indexed_as_cdxj_indexer_does(tmp_path: Path) -> None:
    """wget (1.19 and later) writes WARC-Target-URI in angle brackets: the index keyed
    "<http)/..." with no mime or status, and pywb and ReplayWeb.page found no page."""
    warc = tmp_path / "wget.warc"
    records = [
        _record(*_without("WARC-Target-URI", "WARC-Target-URI: <http://example.com/a>")),
        _record(*_without("WARC-Target-URI", "WARC-Target-URI: http://example.com/b c")),
    ]
    warc.write_bytes(b"".join(records))
    code, text, err = _index(warc)
    assert code == 0, err
    assert text == cdxj_indexer(warc)
    assert text.startswith("com,example)/a ") and '"status": "200"' in text


def test_a_target_uri_not_in_utf8_is_read_as_warcio_reads_it(tmp_path: Path) -> None:
    """A header line that is not UTF-8 is Latin-1 to warcio; it was U+FFFD here, so the
    index's url differed from cdxj-indexer's."""
    record = _record(*_GOOD).replace(b"http://example.com/", b"http://example.com/caf\xe9")
    warc = tmp_path / "latin.warc"
    warc.write_bytes(record)
    code, text, err = _index(warc)
    assert code == 0, err
    assert text == cdxj_indexer(warc) and "\ufffd" not in text
