"""The collection's index.cdxj: brought up to date by merging only the new WARC files'
lines while merged.json says what it holds, and from scratch whenever it does not."""

from __future__ import annotations

import json
import time
from pathlib import Path

from crawlkit.crawl.archive import (
    INDEX_DIR,
    INDEX_NAME,
    MERGED_NAME,
    adopt_file_index,
    update_collection_index,
)
from crawlkit.warc.cdxj import index_lines
from crawlkit.warc.write import Capture, WarcWriter, index_of, sha1_digest


def add_warc(warc_dir: Path, run: int, pages: int) -> Path:
    """One closed WARC file of ``pages`` captures in ``warc_dir``, with its index
    adopted as a crawl adopts it."""
    new = warc_dir / f"new-{run}"
    with WarcWriter(new, prefix=f"run{run}", index=True) as writer:
        for i in range(pages):
            body = b"<p>run %d page %d</p>" % (run, i)
            writer.write_capture(
                Capture(
                    url=f"http://h{(i * 7 + run) % 13}.test/p{i}",
                    ip="127.0.0.2",
                    date=time.time(),
                    request_head=b"GET / HTTP/1.1\r\n\r\n",
                    response_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n",
                    body=body,
                    payload_digest=sha1_digest(body),
                )
            )
    (warc,) = new.glob("*.warc.gz")
    adopt_file_index(index_of(warc), warc_dir, warc.name)
    warc = warc.rename(warc_dir / warc.name)
    new.rmdir()
    return warc


def from_scratch(warc_dir: Path) -> str:
    """The index of every WARC file in ``warc_dir``, read from the files themselves."""
    return "".join(sorted(f"{line}\n" for line in index_lines(sorted(warc_dir.glob("*.warc.gz")))))


def test_new_files_are_merged_into_the_index(tmp_path: Path) -> None:
    add_warc(tmp_path, 1, 30)
    assert update_collection_index(tmp_path) == 30
    first = add_warc(tmp_path, 2, 25)
    assert update_collection_index(tmp_path) == 55
    index = tmp_path / INDEX_NAME
    assert index.read_text() == from_scratch(tmp_path)
    record = json.loads((tmp_path / INDEX_DIR / MERGED_NAME).read_text())
    assert record["lines"] == 55 and len(record["parts"]) == 2
    # Only the new file's lines were merged: a held file's index changed in place (same
    # size) is not read again. (A crawl never rewrites one; this shows the path taken.)
    part = tmp_path / INDEX_DIR / f"{first.name}.cdxj"
    lines = part.read_bytes().splitlines(keepends=True)
    part.write_bytes(b"".join(lines[1:]) + b"~" * (len(lines[0]) - 1) + b"\n")
    add_warc(tmp_path, 3, 10)
    assert update_collection_index(tmp_path) == 65
    assert b"~~~" not in index.read_bytes()
    assert index.read_text() == from_scratch(tmp_path)


def test_nothing_new_leaves_the_index_as_it_is(tmp_path: Path) -> None:
    add_warc(tmp_path, 1, 20)
    assert update_collection_index(tmp_path) == 20
    index = tmp_path / INDEX_NAME
    before = index.stat().st_mtime_ns
    assert update_collection_index(tmp_path) == 20
    assert index.stat().st_mtime_ns == before


def test_a_removed_file_an_edited_index_or_no_record_merge_all_again(tmp_path: Path) -> None:
    add_warc(tmp_path, 1, 20)
    second = add_warc(tmp_path, 2, 20)
    update_collection_index(tmp_path)
    index = tmp_path / INDEX_NAME
    second.unlink()  # a WARC file removed: its lines go
    assert update_collection_index(tmp_path) == 20
    assert index.read_text() == from_scratch(tmp_path)
    with index.open("a") as f:  # the index edited by hand: made again
        f.write("zzz stray line\n")
    add_warc(tmp_path, 3, 5)
    assert update_collection_index(tmp_path) == 25
    assert index.read_text() == from_scratch(tmp_path)
    (tmp_path / INDEX_DIR / MERGED_NAME).write_text("{not json")  # a damaged record
    add_warc(tmp_path, 4, 5)
    assert update_collection_index(tmp_path) == 30
    assert index.read_text() == from_scratch(tmp_path)
