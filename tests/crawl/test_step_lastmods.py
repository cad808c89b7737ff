"""The step process's sitemap lastmods: a cycle's link file is read line by line only
when it holds the key, and what it yields does not depend on where the key falls
among the blocks it is first searched in."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import zstandard

from crawlkit.crawl.step_process import _lastmods
from crawlkit.diag import Reporter


class _Reports(Reporter):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def bad_record(self, source: str, lineno: int, why: str) -> None:
        self.lines.append(f"{lineno}: {why}")

    def warn(self, message: str, kind: str | None = None) -> None:
        self.lines.append(message)


def _links(path: Path, records: list[dict], compress: bool = True) -> Path:
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    path.write_bytes(zstandard.ZstdCompressor().compress(data) if compress else data)
    return path


LINKS = [{"url": f"http://h.test/p{i}", "reason": "link"} for i in range(40)]


@pytest.mark.parametrize("block", [1, 3, 8, 9, 10, 17, 64, 1 << 20])
def test_lastmods_found_wherever_the_key_falls(tmp_path: Path, block: int) -> None:
    records = [*LINKS[:25], {"url": "http://h.test/s", "lastmod": "2026-01-02"}, *LINKS[25:]]
    path = _links(tmp_path / "links.ndjson.zst", records)
    got = list(_lastmods(path, _Reports(), block=block))
    assert [(n, r["url"]) for _, n, r in got] == [(26, "http://h.test/s")]


@pytest.mark.parametrize("block", [1, 9, 1 << 20])
def test_a_file_without_the_key_yields_nothing(tmp_path: Path, block: int) -> None:
    # "lastmod" as a value, not a key, and a null lastmod: nothing to learn
    records = [
        *LINKS,
        {"url": "http://h.test/lastmod"},
        {"url": "http://h.test/x", "lastmod": None},
    ]
    path = _links(tmp_path / "links.ndjson.zst", records)
    assert list(_lastmods(path, _Reports(), block=block)) == []


def test_a_truncated_file_is_read_up_to_the_damage_and_reported(tmp_path: Path) -> None:
    # (zstd blocks hold 128 KiB: the first survives the cut, with the lastmod in it)
    many = [{"url": f"http://h.test/{i:06d}/" + "x" * 40, "reason": "link"} for i in range(6000)]
    records = [{"url": "http://h.test/s", "lastmod": "2026-01-02"}, *many]
    path = _links(tmp_path / "links.ndjson.zst", records)
    path.write_bytes(path.read_bytes()[:-12])
    reports = _Reports()
    got = list(_lastmods(path, reports, block=4096))
    assert [r["url"] for _, _, r in got] == ["http://h.test/s"]
    assert "truncated" in " ".join(reports.lines).lower()
