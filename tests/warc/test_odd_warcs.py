"""index, extract and wacz on WARCs in shapes other tools' files have (small copies
written here, see tests/data/real-warcs/ for the real ones): the lines of a WARC head
and an HTTP head ended ``\\r\\r\\n`` (a CRLF conversion run twice: pywb's
missing-status-text.warc), a record whose Content-Length stops short of its block
(warcio's example-trunc.warc), and HTML stored as a ``resource`` record (warcit).
Each is read as warcio and cdxj-indexer read it, or refused in one line naming the
record, as they are not."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest
from archive_tools import cdxj_indexer, wacz_validate
from conftest import crawlkit
from warcio.archiveiterator import ArchiveIterator

# warcio's reader leaves its decompressors' files to the collector.
pytestmark = pytest.mark.filterwarnings("ignore::ResourceWarning")

_PAGE = b"<html><head><title>Twice</title></head><body><a href=/next>next</a></body></html>"


def _record(rec_type: str, url: str, block: bytes, *, length: int | None = None) -> bytes:
    """One WARC record with CRLF line ends; ``length`` overrides its Content-Length."""
    ctype = "application/http; msgtype=response" if rec_type == "response" else "text/html"
    head = (
        f"WARC/1.0\r\nWARC-Type: {rec_type}\r\nWARC-Target-URI: {url}\r\n"
        f"WARC-Date: 2014-01-27T17:12:38Z\r\nWARC-Record-ID: <urn:uuid:{abs(hash(url))}>\r\n"
        f"Content-Type: {ctype}\r\nContent-Length: {len(block) if length is None else length}"
        "\r\n\r\n"
    )
    return head.encode() + block + b"\r\n\r\n"


def _http(status: bytes, body: bytes, ctype: bytes = b"text/html") -> bytes:
    head = b"HTTP/1.0 " + status + b"\r\nContent-Type: " + ctype + b"\r\n"
    return head + b"Content-Length: %d\r\n\r\n" % len(body) + body


def _doubled(record: bytes, block: bytes, *, length_before: bool) -> bytes:
    """``record`` with every CRLF outside ``block``'s body made CR CR LF. With
    ``length_before``, the Content-Length counts the block as it was before (so the
    CRs it gained spill past the record's end, as in pywb's file)."""
    head_end = block.index(b"\r\n\r\n") + 4
    doubled_head = block[:head_end].replace(b"\r\n", b"\r\r\n")
    new_block = doubled_head + block[head_end:]
    warc_head, rest = record.split(b"\r\n\r\n", 1)
    if not length_before:
        old = b"Content-Length: %d" % len(block)
        warc_head = warc_head.replace(old, b"Content-Length: %d" % len(new_block))
    assert rest.startswith(block)
    return (warc_head + b"\r\n\r\n").replace(b"\r\n", b"\r\r\n") + new_block + b"\r\r\n\r\r\n"


def _warcio_bodies(path: Path) -> dict[str, bytes]:
    """{url: payload} of the response and resource records, as warcio reads them."""
    with open(path, "rb") as f:
        return {
            r.rec_headers.get_header("WARC-Target-URI"): r.content_stream().read()
            for r in ArchiveIterator(f)
            if r.rec_type in ("response", "resource")
        }


def test_lines_ended_cr_cr_lf_are_read_as_warcio_reads_them(tmp_path: Path) -> None:
    page = _http(b"200 OK", _PAGE)
    moved = _http(b"302 ", b"")  # pywb's: no reason phrase, no body
    warc = tmp_path / "twice.warc"
    warc.write_bytes(
        _doubled(_record("response", "http://a.example/", page), page, length_before=False)
        + _doubled(_record("response", "http://a.example/old", moved), moved, length_before=True)
    )
    res = crawlkit("index", str(warc))
    assert res.code == 0, res.stderr
    assert res.text == cdxj_indexer(warc) and res.text.count("\n") == 2
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links))
    assert res.code == 0, res.stderr
    (only,) = [json.loads(line) for line in res.text.splitlines()]
    assert (only["url"], only["status"], only["title"]) == ("http://a.example/", 200, "Twice")
    assert [json.loads(x)["url"] for x in links.read_text().splitlines()] == [
        "http://a.example/next"
    ]
    assert _warcio_bodies(warc)["http://a.example/"] == _PAGE
    res = crawlkit("wacz", str(warc), "-o", str(tmp_path / "twice.wacz"))
    assert res.code == 0, res.stderr
    check = wacz_validate(tmp_path / "twice.wacz")
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_content_length_short_of_a_cr_cr_lf_block_with_a_body_is_an_error(
    tmp_path: Path,
) -> None:
    """The CRs a conversion added push the body's end past the Content-Length: the
    record's last bytes would be lost, so it is refused, naming the record."""
    page = _http(b"200 OK", _PAGE)
    warc = tmp_path / "cut.warc"
    warc.write_bytes(
        _doubled(_record("response", "http://a.example/", page), page, length_before=True)
    )
    for stage in ("index", "wacz"):
        res = crawlkit(stage, str(warc), "-o", str(tmp_path / f"out.{stage}"))
        assert res.code == 1, (stage, res.stderr)
        assert "record 2: not a WARC record" in res.stderr, res.stderr
        assert "where record 1 ends by its Content-Length" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_an_html_resource_record_is_a_page_as_a_response_is(tmp_path: Path) -> None:
    """warcit stores a site's files as resource records; pywb replays each as the page
    (HTTP 200, the record's Content-Type): extract gives it the page record a response
    with the same body gets, index keys it as cdxj-indexer does, wacz lists it."""
    warc = tmp_path / "resource.warc"
    warc.write_bytes(
        _record("response", "http://a.example/", _http(b"200 OK", _PAGE))
        + _record("resource", "http://b.example/", _PAGE)
        + _record("resource", "urn:x-log:crawl", b"not a page")
    )
    res = crawlkit("index", str(warc))
    assert res.code == 0, res.stderr
    assert res.text == cdxj_indexer(warc)
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links))
    assert res.code == 0, res.stderr
    response, resource = (json.loads(line) for line in res.text.splitlines())
    assert resource["url"] == "http://b.example/" and resource["status"] == 200
    site = {"url", "host", "site", "fp"}
    assert {k: v for k, v in resource.items() if k not in site} == {
        k: v for k, v in response.items() if k not in site
    }
    assert [json.loads(x)["url"] for x in links.read_text().splitlines()] == [
        "http://a.example/next",
        "http://b.example/next",
    ]
    assert _warcio_bodies(warc)["http://b.example/"] == _PAGE
    wacz = tmp_path / "resource.wacz"
    res = crawlkit("wacz", str(warc), "-o", str(wacz))
    assert res.code == 0, res.stderr
    check = wacz_validate(wacz)
    assert check.returncode == 0, check.stdout + check.stderr
    with zipfile.ZipFile(wacz) as z:
        pages = z.read("pages/pages.jsonl").decode().splitlines()[1:]
    assert [json.loads(p)["url"] for p in pages] == ["http://a.example/", "http://b.example/"]


def _trunc_shape(tmp_path: Path, after: bytes) -> Path:
    """warcio's example-trunc.warc: record 2's Content-Length stops 2 bytes short of its
    block (the last 2 bytes of its gzip body, NULs, fall after it), then ``after``."""
    body = b"\x1f\x8b" + bytes(range(1, 40)) + b"\x00\x00"
    http = _http(b"200 OK", body, b"application/gzip")
    warc = tmp_path / "trunc.warc"
    warc.write_bytes(
        _record("response", "http://a.example/", _http(b"200 OK", _PAGE))
        + _record("response", "http://a.example/z", http, length=len(http) - 2)[:-6]
        + b"\x00\x00\r\n\r\n"
        + after
    )
    return warc


@pytest.mark.parametrize("after", [b"", _record("resource", "urn:x:log", b"log")])
def test_nul_bytes_after_a_content_length_are_an_error_naming_the_record(
    tmp_path: Path, after: bytes
) -> None:
    """warcio and cdxj-indexer warn ("Record not followed by newline") and read on;
    passing over NULs would keep quiet that record 2 lost its last bytes (or, at a
    file's end, that a crash left zeros where records were), so it is an error, after
    the records before it, naming the record."""
    warc = _trunc_shape(tmp_path, after)
    for stage in ("index", "wacz"):
        res = crawlkit(stage, str(warc), "-o", str(tmp_path / f"out.{stage}"))
        assert res.code == 1, (stage, res.stderr)
        assert res.stderr.startswith(f"crawlkit {stage}: {warc}: record 3: not a WARC record")
        assert "where record 2 ends by its Content-Length" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1, res.stderr
        assert not (tmp_path / f"out.{stage}").exists()
    res = crawlkit("extract", str(warc))
    assert [json.loads(line)["url"] for line in res.text.splitlines()] == ["http://a.example/"]
    assert "record 3: not a WARC record" in res.stderr, res.stderr
