"""The one WARC salvage: a file cut anywhere is cut back to its last whole record."""

from __future__ import annotations

import io as pyio
import random
import time
from pathlib import Path

import pytest
from archive_tools import cdxj_indexer
from fastwarc.warc import ArchiveIterator as FastIterator
from warcio.archiveiterator import ArchiveIterator
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from crawlkit.warc.read import iter_responses
from crawlkit.warc.salvage import cut_to_whole_records, whole_records_length
from crawlkit.warc.write import Capture, WarcWriter, sha1_digest


def _capture(i: int, body: bytes) -> Capture:
    return Capture(
        url=f"http://a.test/{i}",
        ip="127.0.0.2",
        date=time.time(),
        request_head=f"GET /{i} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode(),
        response_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
        body=body,
        payload_digest=sha1_digest(body),
        metadata={"fetchTimeMs": "5"},
    )


def _crawlkit_warc(directory: Path) -> Path:
    rng = random.Random(1)
    writer = WarcWriter(directory)
    for i in range(8):
        size = rng.choice([10, 300, 5000, 40000])
        writer.write_capture(_capture(i, bytes(rng.randrange(256) for _ in range(size))))
    writer.close()
    (path,) = directory.glob("*.warc.gz")
    return path


def _warcio_warc(path: Path, *, gzip: bool) -> Path:
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=gzip)
        for i in range(6):
            body = b"<p>%d</p>" % i * (1 + 700 * (i % 3))
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html")], "HTTP/1.1")
            rec = writer.create_warc_record(
                f"http://b.test/{i}",
                "response",
                payload=pyio.BytesIO(body),
                http_headers=headers,
                length=len(body),
            )
            writer.write_record(rec)
    return path


def _record_ends(path: Path) -> list[int]:
    """End offsets of every record of a whole file: where warcio finds the next one
    (its lengths leave out the closing CRLFs of an uncompressed record)."""
    with open(path, "rb") as fh:
        it = ArchiveIterator(fh)
        starts = []
        for rec in it:
            starts.append(it.get_record_offset())
            rec.content_stream().read()
    return [*starts[1:], path.stat().st_size]


def _cut_points(size: int, ends: list[int], n: int) -> list[int]:
    rng = random.Random(size)
    near = {e + d for e in ends for d in (-5, -1, 0, 1, 2, 30)}
    points = near | {rng.randrange(1, size) for _ in range(n)}
    return sorted(p for p in points if 0 < p < size)


def _read_by_all(path: Path) -> tuple[int, int, int]:
    """Records seen by warcio, FastWARC and cdxj-indexer; each must read without error."""
    with open(path, "rb") as fh:
        n_warcio = 0
        for rec in ArchiveIterator(fh):
            rec.content_stream().read()
            n_warcio += 1
    with open(path, "rb") as fh:
        n_fast = sum(1 for _ in FastIterator(fh, parse_http=False))
    n_cdx = len([line for line in cdxj_indexer(path, sort=False).splitlines() if line.strip()])
    return n_warcio, n_fast, n_cdx


@pytest.mark.parametrize("kind", ["crawlkit", "warcio-gz", "warcio-plain"])
def test_a_file_cut_anywhere_keeps_its_whole_records(tmp_path: Path, kind: str) -> None:
    if kind == "crawlkit":
        whole = _crawlkit_warc(tmp_path / "w")
    else:
        plain = kind == "warcio-plain"
        whole = _warcio_warc(tmp_path / f"b.warc{'' if plain else '.gz'}", gzip=not plain)
    data = whole.read_bytes()
    ends = _record_ends(whole)
    assert whole_records_length(whole) == len(data) == ends[-1]
    cut = tmp_path / ("cut" + "".join(whole.suffixes))
    checked = 0
    for point in _cut_points(len(data), ends, 120):
        cut.write_bytes(data[:point])
        expected = max((e for e in ends if e <= point), default=0)
        assert cut_to_whole_records(cut) == expected, point
        assert cut.stat().st_size == expected
        kept = sum(1 for e in ends if e <= point)
        # the project's own reader reads it to the end without complaint
        responses = list(iter_responses(cut)) if expected else []
        assert len(responses) <= kept
        if expected and checked < 12 and point in {e + 1 for e in ends} | {e - 1 for e in ends}:
            assert _read_by_all(cut) == (kept, kept, _cdx_lines(kept, whole, ends)), point
            checked += 1
    assert checked >= 4


def _cdx_lines(kept: int, whole: Path, ends: list[int]) -> int:
    """cdxj-indexer's lines for the first ``kept`` records of ``whole``."""
    prefix = whole.with_name("prefix" + "".join(whole.suffixes))
    prefix.write_bytes(whole.read_bytes()[: ends[kept - 1]])
    index = cdxj_indexer(prefix, sort=False, check=False)
    return len([line for line in index.splitlines() if line.strip()])


def test_a_file_cut_inside_its_first_record_keeps_nothing(tmp_path: Path) -> None:
    whole = _crawlkit_warc(tmp_path / "w")
    cut = tmp_path / "c.warc.gz"
    cut.write_bytes(whole.read_bytes()[:40])
    assert cut_to_whole_records(cut) == 0
    assert cut.stat().st_size == 0
