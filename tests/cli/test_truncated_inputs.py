"""Truncated compressed input keeps every complete record before the damage (issue 15, 5).

The number a stage must keep is measured independently: decode the cut file with
zlib or zstandard's one-shot decoders as far as they go, and count the complete lines.
"""

from __future__ import annotations

import gzip
import io as pyio
import zlib
from pathlib import Path

import orjson
import pytest
import zstandard
from conftest import crawlkit

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.stages.seen_merge import read_lines
from crawlkit.url import Canonicalizer

CANON = Canonicalizer()


def _lines(n: int, start: int = 0) -> bytes:
    return b"".join(
        orjson.dumps({"url": f"http://a.example/{i}", "pad": "x" * (i % 50)}) + b"\n"
        for i in range(start, start + n)
    )


def _complete_lines_gzip(data: bytes) -> int:
    """How many whole lines zlib can decode from a cut gzip member."""
    return zlib.decompressobj(31).decompress(data).count(b"\n")


def _complete_lines_zstd(data: bytes) -> int:
    """How many whole lines zstandard can decode from cut zstd frames."""
    out = b""
    while data:
        obj = zstandard.ZstdDecompressor().decompressobj()
        out += obj.decompress(data)
        data = obj.unused_data if obj.eof else b""
    return out.count(b"\n")


def _reporter() -> tuple[Reporter, pyio.StringIO]:
    buf = pyio.StringIO()
    return Reporter("crawlkit test", stream=buf), buf


def test_gzip_cut_in_half_keeps_the_decodable_half(tmp_path: Path) -> None:
    data = gzip.compress(_lines(2000))
    cut = data[: len(data) // 2]
    expected = _complete_lines_gzip(cut)
    assert 800 < expected < 1200  # the test's own premise: about half is decodable
    path = tmp_path / "cut.ndjson.gz"
    path.write_bytes(cut)
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert len(got) == expected
    assert got[-1]["url"] == f"http://a.example/{expected - 1}"
    assert rep.counts["truncated input"] == 1
    assert "gzip stream ends early" in buf.getvalue()


def test_multi_member_gzip_cut_in_the_second_member(tmp_path: Path) -> None:
    first = gzip.compress(_lines(500))
    second = gzip.compress(_lines(500, 500))
    cut = first + second[: len(second) // 2]
    path = tmp_path / "members.gz"
    path.write_bytes(cut)
    rep, _ = _reporter()
    got = list(streams.read_records([path], rep))
    assert len(got) == 500 + _complete_lines_gzip(second[: len(second) // 2])
    assert rep.counts["truncated input"] == 1


def test_whole_multi_member_gzip_with_trailing_padding_reads_whole(tmp_path: Path) -> None:
    path = tmp_path / "members.gz"
    path.write_bytes(gzip.compress(_lines(3)) + gzip.compress(_lines(2, 3)) + b"\x00" * 8)
    rep, _ = _reporter()
    assert len(list(streams.read_records([path], rep))) == 5
    assert sum(rep.counts.values()) == 0


def test_corrupt_gzip_is_reported_as_corrupt(tmp_path: Path) -> None:
    data = bytearray(gzip.compress(_lines(100)))
    data[-6] ^= 0xFF  # the CRC trailer
    path = tmp_path / "bad.gz"
    path.write_bytes(bytes(data))
    rep, buf = _reporter()
    list(streams.read_records([path], rep))
    assert rep.counts["corrupt input"] == 1
    assert "corrupt gzip data" in buf.getvalue()


def _ten_frames_cut_in_the_sixth(tmp_path: Path) -> Path:
    comp = zstandard.ZstdCompressor()
    frames = [comp.compress(_lines(100, 100 * k)) for k in range(10)]
    data = b"".join(frames[:5]) + frames[5][: len(frames[5]) // 2]
    path = tmp_path / "frames.ndjson.zst"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_seen_merge_line_reader_keeps_what_came_before_the_damage(tmp_path: Path, gz: bool) -> None:
    if gz:
        data = gzip.compress(_lines(2000))
        path = tmp_path / "cut.gz"
        path.write_bytes(data[: len(data) // 2])
        expected = _complete_lines_gzip(data[: len(data) // 2])
    else:
        path = _ten_frames_cut_in_the_sixth(tmp_path)
        expected = _complete_lines_zstd(path.read_bytes())
        assert expected >= 500  # five whole frames, and what the sixth gave before the cut
    rep, _ = _reporter()
    got = list(read_lines([path], rep))
    assert len(got) == expected
    assert rep.counts["truncated input"] == 1


def test_seen_merge_cli_keeps_the_five_whole_frames(tmp_path: Path) -> None:
    path = _ten_frames_cut_in_the_sixth(tmp_path)
    r = crawlkit("seen-merge", "--state", str(tmp_path / "s"), str(path))
    assert r.code == 1, r.stderr
    assert "zstd stream ends inside a frame" in r.stderr
    assert len(r.lines) >= 500
    assert [orjson.loads(line)["url"] for line in r.lines[:500]] == [
        CANON.canonicalize(f"http://a.example/{i}") for i in range(500)
    ]


def test_a_corrupt_zstd_frame_keeps_the_frames_before_it(tmp_path: Path) -> None:
    comp = zstandard.ZstdCompressor()
    frames = [comp.compress(_lines(100, 100 * k)) for k in range(10)]
    damaged = bytearray(frames[5])
    damaged[4:8] = b"\xff\xff\xff\xff"  # the frame header: not a valid frame
    path = tmp_path / "corrupt.ndjson.zst"
    path.write_bytes(b"".join(frames[:5]) + bytes(damaged) + b"".join(frames[6:]))
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert [r["url"] for r in got] == [f"http://a.example/{i}" for i in range(500)]
    assert rep.counts["corrupt input"] == 1
    assert "corrupt zstd data" in buf.getvalue()
    rep, _ = _reporter()
    assert len(list(read_lines([path], rep))) == 500
