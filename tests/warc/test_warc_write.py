"""crawlkit.warc.write: the WARC writer's files pass warcio's check (and FastWARC's and
cdxj-indexer's when installed), rotate, and a dead writer's open file is salvaged."""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import random
import socket
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest
import warcio.archiveiterator
from archive_tools import cdxj_indexer
from c_toolchain import skip_without_c_header
from zlib_ng import zlib_ng

from crawlkit.warc import write as warc_write
from crawlkit.warc.write import (
    Capture,
    WarcOptions,
    WarcWriter,
    gzip_member,
    named_by,
    sha1_digest,
    stored_member,
)


def capture(i: int, body: bytes, revisit=None) -> Capture:
    return Capture(
        url=f"http://a.test/{i}",
        ip="127.0.0.2",
        date=time.time(),
        request_head=f"GET /{i} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode(),
        response_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        body=body,
        payload_digest=sha1_digest(body),
        depth=3,
        revisit_of=revisit,
        metadata={"fetchTimeMs": "5"},
    )


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_warc_files_pass_warcio_check_and_rotate(tmp_path: Path, version: str) -> None:
    w = WarcWriter(tmp_path, version=version, max_size=3000)
    locs = [w.write_capture(capture(i, b"<p>%d</p>" % i * 100)) for i in range(6)]
    w.write_capture(
        capture(9, b"<p>0</p>" * 100, revisit=("http://a.test/0", "2020-01-01T00:00:00Z"))
    )
    w.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) > 1 and not list(tmp_path.glob("*.open"))
    assert all(f.name.startswith("crawlkit-") and f.name.endswith(".warc.gz") for f in files)
    warcio_bin = Path(sys.executable).parent / "warcio"
    check = subprocess.run(
        [str(warcio_bin), "check", *map(str, files)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    loc = locs[2]
    with open(tmp_path / loc.file, "rb") as fh:
        fh.seek(loc.offset)
        rec = next(iter(warcio.archiveiterator.ArchiveIterator(fh)))
        assert rec.rec_type == "response"
        assert rec.rec_headers.protocol == f"WARC/{version}"
        assert rec.rec_headers.get_header("WARC-Crawlkit-Depth") == "3"
        assert rec.content_stream().read() == b"<p>2</p>" * 100
        assert rec.http_headers.get_header("Transfer-Encoding") is None


def test_warc_reads_with_fastwarc_when_installed(tmp_path: Path) -> None:
    fastwarc = pytest.importorskip("fastwarc.warc")
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"x" * (i + 1)))
    w.close()
    (path,) = tmp_path.glob("*.warc.gz")
    with open(path, "rb") as fh:
        blocks = [
            r.verify_block_digest()
            for r in fastwarc.ArchiveIterator(fh, parse_http=False)
            if r.record_type == fastwarc.WarcRecordType.response
        ]
    with open(path, "rb") as fh:
        # (FastWARC checks the block digest only before it parses the HTTP head)
        payloads = [
            r.verify_payload_digest()
            for r in fastwarc.ArchiveIterator(fh, parse_http=True)
            if r.record_type == fastwarc.WarcRecordType.response
        ]
    assert blocks == payloads == [True, True, True]


def test_warc_indexes_with_cdxj_indexer_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("cdxj_indexer")
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"y" * (i + 1)))
    w.close()
    (path,) = tmp_path.glob("*.warc.gz")
    lines = [line for line in cdxj_indexer(path, sort=False).splitlines() if line.strip()]
    assert sum('"status": "200"' in line for line in lines) == 3


def test_open_file_of_a_dead_writer_is_salvaged(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"z" * 500))
    w.flush()
    (open_file,) = tmp_path.glob("*.open")
    data = open_file.read_bytes()
    w._file.close()  # the writer "dies" without renaming
    w._file = None
    name = open_file.name.rsplit("-", 1)[0] + "-999999999.warc.gz.open"  # a pid that is gone
    open_file.unlink()
    (tmp_path / name).write_bytes(data[:-7])  # and the last record is cut short
    w2 = WarcWriter(tmp_path)
    w2.write_capture(capture(9, b"new"))
    w2.close()
    assert not list(tmp_path.glob("*.open"))
    salvaged = tmp_path / name[: -len(".open")]
    assert w2.salvaged == [salvaged]
    with open(salvaged, "rb") as fh:
        kinds = [r.rec_type for r in warcio.archiveiterator.ArchiveIterator(fh)]
    # warcinfo + 3 x (response, request, metadata), minus the cut metadata record
    assert kinds.count("response") == 3 and len(kinds) == 1 + 3 * 3 - 1


def test_a_shared_directory_writer_salvages_only_its_own_prefix(tmp_path: Path) -> None:
    """Writers that share a directory (crawl --workers) each recover their own files:
    a peer's dead file is its owner's to finish, or both would race for it (the
    loser crashed on a file renamed under it)."""
    dead = WarcWriter(tmp_path, prefix="crawlkit-w0")
    dead.write_capture(capture(1, b"z" * 500))
    dead.flush()
    (open_file,) = tmp_path.glob("*.open")
    dead._file.close()  # the writer "dies" without renaming
    dead._file = None
    gone = tmp_path / (open_file.name.rsplit("-", 1)[0] + "-999999999.warc.gz.open")
    open_file.rename(gone)

    peer = WarcWriter.from_options(tmp_path, WarcOptions(prefix="crawlkit-w1", shared=True))
    peer.write_capture(capture(2, b"peer"))
    peer.close()
    assert peer.salvaged == [] and gone.exists()
    # "crawlkit-w1" is not "crawlkit-w10"'s nor "crawlkit"'s: names end at the time
    assert not named_by(gone.name, "crawlkit") and not named_by(gone.name, "crawlkit-w")

    owner = WarcWriter.from_options(tmp_path, WarcOptions(prefix="crawlkit-w0", shared=True))
    owner.write_capture(capture(3, b"owner"))
    owner.close()
    assert owner.salvaged == [gone.with_name(gone.name[: -len(".open")])]
    assert not list(tmp_path.glob("*.open"))


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_gzip_member_is_one_member_that_inflates_back(level: int) -> None:
    rng = random.Random(level)
    for size in (0, 1, 200, 511, 512, 513, 4096, 20_000, 40_000, 100_000):
        raw = bytes(rng.choice(b"abcdefgh <>/=\r\n") for _ in range(size))
        member = gzip_member(raw, level)
        # CPython's zlib reads zlib-ng's members: gzip only, one member
        inflate = zlib.decompressobj(31)
        assert inflate.decompress(member) == raw and inflate.eof and not inflate.unused_data
        # a window sized to the record loses nothing (stored blocks: a few bytes), with
        # the compressor that made it (the system's zlib for a small record, when built)
        held = size <= warc_write.HELD_MEMBER_MAX and warc_write._held_gzip_member
        compress = zlib.compress if held and level else zlib_ng.compress
        full = len(compress(raw, level, wbits=31))
        assert len(member) <= full + full // 1000 + 8


def test_small_records_are_deflated_by_the_c_member_and_large_ones_by_zlib_ng() -> None:
    """A record of at most HELD_MEMBER_MAX bytes is made by crawlkit/warc/_gzip.c (the
    system's zlib, keeping the interpreter lock), a larger one by zlib-ng: each is one
    gzip member that inflates back, and which one made it shows in its bytes."""
    skip_without_c_header("zlib.h", "zlib1g-dev", "zlib-ng makes every member")
    assert warc_write._held_gzip_member is not None, "crawlkit/warc/_gzip.c was not built"
    rng = random.Random(7)
    limit = warc_write.HELD_MEMBER_MAX
    for size in (0, 1, 300, 600, limit - 1, limit, limit + 1, 9_000):
        raw = bytes(rng.choice(b"GET /HTTP1.1 Host: a.test\r\n") for _ in range(size))
        bits, mem_level = warc_write.member_window(size)
        member = gzip_member(raw, 6)
        inflate = zlib.decompressobj(31)
        assert inflate.decompress(member) == raw and inflate.eof and not inflate.unused_data
        packer = zlib_ng.compressobj(6, zlib_ng.DEFLATED, 16 + bits, mem_level)
        by_zlib_ng = packer.compress(raw) + packer.flush()
        if size <= limit:
            assert member == warc_write._held_gzip_member(raw, 6, bits, mem_level)
            assert size < 600 or member != by_zlib_ng  # (the two are told apart)
        else:
            assert member == by_zlib_ng


def test_the_c_member_refuses_what_zlib_refuses() -> None:
    skip_without_c_header("zlib.h", "zlib1g-dev", "zlib-ng makes every member")
    held = warc_write._held_gzip_member
    assert held is not None, "crawlkit/warc/_gzip.c was not built"
    with pytest.raises(ValueError, match="deflateInit2"):
        held(b"x", 12, 9, 1)  # no level 12
    with pytest.raises(ValueError, match="deflateInit2"):
        held(b"x", 6, 16, 1)  # no window of 2**16
    with pytest.raises(TypeError):
        held("text", 6, 9, 1)


def test_a_batch_of_captures_is_on_disk_only_after_the_flush(tmp_path: Path) -> None:
    """The file's buffer (WRITE_BUFFER) holds a batch of captures until the archiver's
    flush, which must then put all of them on disk: a reader of the open file (a
    recovery after kill -9, extract) sees every capture the flush covered."""
    writer = WarcWriter(tmp_path)
    body = random.Random(3).randbytes(30_000)  # incompressible: larger than 8 KiB stored
    locations = [writer.write_capture(capture(i, body)) for i in range(3)]
    open_file = tmp_path / (writer.name + ".open")
    assert open_file.stat().st_size < locations[-1].offset + locations[-1].length
    writer.flush()
    data = open_file.read_bytes()
    for loc in locations:
        inflate = zlib.decompressobj(31)
        record = inflate.decompress(data[loc.offset : loc.offset + loc.length])
        assert inflate.eof and body in record
    writer.close()


def test_stored_members_are_zlibs_level_0_and_cross_block_boundaries() -> None:
    """Level 0 is framed by hand (stored blocks of at most 65,535 bytes): any gzip
    reader inflates it, and a small record's is zlib's own level-0 member (zlib cuts
    larger ones into more blocks)."""
    rng = random.Random(0)
    for size in (0, 1, 300, 65_534, 65_535, 65_536, 131_070, 131_071, 200_000):
        raw = rng.randbytes(size)
        member = stored_member(raw)
        inflate = zlib.decompressobj(31)
        assert inflate.decompress(member) == raw and inflate.eof and not inflate.unused_data
        assert len(member) == 18 + size + 5 * max(1, -(-size // 65_535))
        if size <= 300:
            packer = zlib.compressobj(0, zlib.DEFLATED, 31, 1)
            assert member == packer.compress(raw) + packer.flush()
    assert gzip_member(b"<p>x</p>", 0) == stored_member(b"<p>x</p>")


def test_writers_opened_in_the_same_second_name_their_files_apart(tmp_path: Path) -> None:
    """``crawlkit crawl`` opens a writer per fetch run, and two runs can start within
    one second: the second file must not take the first one's name (it would then be
    left behind, unarchived, next to it)."""
    names = []
    for i in range(3):
        w = WarcWriter(tmp_path)
        names.append(w.write_capture(capture(i, b"<p>x</p>")).file)
        w.close()
    assert len(set(names)) == 3
    assert len(list(tmp_path.glob("*.warc.gz"))) == 3


def test_a_writer_never_takes_the_name_of_a_file_that_is_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pid reused by a later process could otherwise name (and truncate) a file of
    an earlier one: the writer moves on to the next serial."""
    monkeypatch.setattr(warc_write, "_SERIALS", itertools.count(1))
    # The name's second is the writer's clock: held still, so a loaded machine's pause
    # between here and the writer cannot move it past the names made for it (the test
    # failed so once in CI, the writer a second later than both stamps made here).
    now = time.gmtime()
    real_gmtime = time.gmtime
    monkeypatch.setattr(time, "gmtime", lambda *secs: real_gmtime(*secs) if secs else now)
    host = socket.gethostname().split(".")[0] or "localhost"
    stamp = time.strftime("%Y%m%d%H%M%S", now)
    there = set()
    for serial, suffix in ((1, ""), (2, ".open")):
        path = tmp_path / f"crawlkit-{stamp}-{serial:05d}-{host}-{os.getpid()}.warc.gz{suffix}"
        path.write_bytes(b"earlier")
        there.add(path)
    with WarcWriter(tmp_path) as w:
        name = w.write_capture(capture(0, b"<p>x</p>")).file
    assert "-00003-" in name
    assert all(p.read_bytes() == b"earlier" for p in there)


@pytest.mark.parametrize("size", [0, 1, 19, 20, 300, 5000])
def test_sha1_digest_is_base64s_base32_of_the_sha1(size: int) -> None:
    rng = random.Random(size)
    for _ in range(200):
        data = rng.randbytes(size)
        want = "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode("ascii")
        assert sha1_digest(data) == want


def test_a_resource_record_carries_its_data_s_sha1_as_both_digests(tmp_path: Path) -> None:
    data = b'{"url": "http://a.test/"}\n' * 40
    w = WarcWriter(tmp_path)
    w.write_resource("urn:x-crawlkit:log", "application/x-ndjson", data)
    w.close()
    [path] = tmp_path.glob("*.warc.gz")
    expected = "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()
    with open(path, "rb") as f:
        records = list(warcio.archiveiterator.ArchiveIterator(f, check_digests="raise"))
        [resource] = [r for r in records if r.rec_type == "resource"]
    assert resource.rec_headers.get_header("WARC-Block-Digest") == expected
    assert resource.rec_headers.get_header("WARC-Payload-Digest") == expected
