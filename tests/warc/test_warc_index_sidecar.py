"""The index a WarcWriter keeps as it writes (``index=True``) is the one read back.

crawl's collection index adopts these per-file indexes instead of reading every WARC
again at the end of a run; they must equal what :func:`crawlkit.warc.cdxj.index_lines`
(itself checked against cdxj-indexer in test_cdxj.py) makes from the finished file, and
a file finished by salvage after a crash must not keep one.
"""

from __future__ import annotations

import contextlib
import io
import os
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.crawl.archive import INDEX_DIR, adopt_file_index, update_collection_index
from crawlkit.warc.cdxj import _HTTP_HEAD, _plain_head, index_lines
from crawlkit.warc.write import Capture, WarcWriter, index_of, salvage_open_files, sha1_digest

HEADS = [
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n\r\n",
    b"HTTP/1.1 404 Not Found\r\ncontent-type: Text/Plain ;x=1\r\n\r\n",
    b"HTTP/1.0 301\r\nLocation: /x\r\n\r\n",  # no reason phrase, no Content-Type
    b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n",
    b"HTTP/1.1 200 OK\r\nContent-Type:\r\n   application/xhtml+xml\r\n\r\n",  # folded
    b"HTTP/1.1 200 \xc3\xa9t\xc3\xa9\r\nX-Odd: \xff\xfe\r\nContent-Type: image/png\r\n\r\n",
    b"HTTP/1.1 999 Whatever\r\nContent-Type: \r\n\r\n",  # empty value
    b"HTTP/1.1 200 OK\r\nContent-Type: text/css\r\nContent-Type: text/html\r\n\r\n",
]
URLS = [
    "http://a.test/",
    "https://www.b.test:8443/p?q=1&a=2",
    "http://127.1.2.3:8080/x/y.html",
    "http://[::1]:9/z",
    "http://xn--bcher-kva.test/%C3%A9",
]


def captures(n: int) -> list[Capture]:
    out = []
    for i in range(n):
        body = b"<p>%d</p>" % i * (i % 7 + 1)
        revisit = ("http://a.test/0", "2020-01-01T00:00:00Z") if i % 5 == 4 else None
        out.append(
            Capture(
                url=URLS[i % len(URLS)] + (f"#{i}" if i % 9 == 8 else ""),
                ip="127.0.0.2",
                date=time.time() + i,
                request_head=b"GET / HTTP/1.1\r\nHost: a.test\r\n\r\n",
                response_head=HEADS[i % len(HEADS)],
                body=body,
                payload_digest=sha1_digest(body),
                truncated="length" if i % 11 == 10 else None,
                revisit_of=revisit,
                precompressed=i % 3 == 2,
                metadata={"fetchTimeMs": "5"} if i % 2 else {},
            )
        )
    return out


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_each_closed_file_has_the_index_read_back_from_it(tmp_path: Path, version: str) -> None:
    writer = WarcWriter(tmp_path, version=version, max_size=4000, index=True)
    for cap in captures(60):
        writer.write_capture(cap)
    writer.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) > 3  # rotation: each file gets its own index
    for warc in files:
        expected = "".join(f"{line}\n" for line in index_lines([warc]))
        assert index_of(warc).read_text() == expected
    assert not list(tmp_path.glob("*.open"))
    statuses = {line.split('"status": "')[1][:3] for f in files for line in index_lines([f])}
    assert {"200", "404", "301", "999"} <= statuses


def test_a_writer_without_index_leaves_no_index_file(tmp_path: Path) -> None:
    with WarcWriter(tmp_path) as writer:
        writer.write_capture(captures(1)[0])
    assert [p.name.endswith(".warc.gz") for p in tmp_path.iterdir()] == [True]


def test_a_salvaged_file_loses_its_index_and_is_indexed_from_the_file(tmp_path: Path) -> None:
    new = tmp_path / "new"
    writer = WarcWriter(new, index=True)
    last = [writer.write_capture(cap) for cap in captures(8)][-1]
    writer.flush()
    for handle in (writer._file, writer._index):  # the process dies: nothing is finished
        assert handle is not None
        handle.close()
    # The writer dies inside its last response record. (Its pid is ours, and salvage
    # leaves a live writer's file alone: name it after a dead one.)
    opened = next(new.glob("*.warc.gz.open"))
    sidecar = new / (opened.name[: -len(".open")] + ".cdxj.open")
    assert sidecar.exists()
    dead = opened.with_name(opened.name.replace(f"-{os.getpid()}.", "-999999999."))
    opened.rename(dead)
    sidecar.rename(dead.with_name(dead.name[: -len(".open")] + ".cdxj.open"))
    with open(dead, "r+b") as f:
        f.truncate(last.offset + 10)
    (done,) = salvage_open_files(new)
    assert not list(new.glob("*.cdxj*"))
    done.rename(tmp_path / done.name)
    assert update_collection_index(tmp_path) == 7  # the index names the 7 whole captures
    expected = "".join(f"{line}\n" for line in index_lines([tmp_path / done.name]))
    assert (tmp_path / "index.cdxj").read_text() == expected


def test_the_collection_index_adopts_the_writers_index(tmp_path: Path) -> None:
    new = tmp_path / "new"
    with WarcWriter(new, index=True) as writer:
        for cap in captures(12):
            writer.write_capture(cap)
    (warc,) = new.glob("*.warc.gz")
    adopt_file_index(index_of(warc), tmp_path, warc.name)
    warc.rename(tmp_path / warc.name)
    part = tmp_path / INDEX_DIR / f"{warc.name}.cdxj"
    assert part.exists() and not index_of(warc).exists()
    lines = part.read_text().splitlines(keepends=True)
    assert update_collection_index(tmp_path) == len(lines) == 12
    assert (tmp_path / "index.cdxj").read_text() == "".join(lines)


_HEAD_PIECES = [
    b"HTTP/1.1 200 OK",
    b"HTTP/1.0 404",
    b" ",
    b"\t",
    b"\r",
    b"\n",
    b"\r\n",
    b":",
    b"Content-Type",
    b"content-TYPE \t",
    b"text/html",
    b" 200",
    b"\x1c",
    b"\x0b",
    b"\xc3\xa9",
    b"Server: a",
]


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(_HEAD_PIECES), max_size=14))
def test_the_fast_head_reading_agrees_with_warcios_parser(pieces: list[bytes]) -> None:
    """The index line's status and mime come from a plain scan of the head when it is
    plain (ASCII, no folded lines), else from warcio's parser: both must agree."""
    head = b"".join(pieces)
    fast = _plain_head(head)
    if fast is None:
        return  # warcio reads it
    headers = None
    with contextlib.suppress(EOFError):
        headers = _HTTP_HEAD.parse(io.BytesIO(head)) if head else None
    assert fast == (
        headers.get_statuscode() if headers else None,
        headers.get_header("content-type") if headers else None,
    )
