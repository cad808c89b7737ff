"""canon, audit and robots check on damaged input (issue 15 items 7 and 8).

Item 7: a truncated compressed input makes every stage exit 1 (the records before
the damage are kept). Item 8: canon and robots check answer every input line, so a
line over the 16 MiB cap gets an error line in its place and later lines stay aligned.
"""

from __future__ import annotations

import gzip
from pathlib import Path

import orjson
import pytest
import zstandard
from conftest import crawlkit

from crawlkit.streams import DEFAULT_MAX_LINE


def _cut_zstd(path: Path, data: bytes) -> Path:
    comp = zstandard.ZstdCompressor().compress(data)
    path.write_bytes(comp[: len(comp) * 2 // 3])
    return path


def test_canon_exits_1_on_a_truncated_input(tmp_path: Path) -> None:
    urls = b"".join(f"http://a.example/{i}\n".encode() for i in range(20000))
    r = crawlkit("canon", str(_cut_zstd(tmp_path / "u.txt.zst", urls)))
    assert r.code == 1, r.stderr
    assert "zstd stream ends inside a frame" in r.stderr
    assert len(r.lines) > 1000
    assert r.lines[0] == "http://a.example/0"


def test_canon_exits_0_on_a_whole_input(tmp_path: Path) -> None:
    (tmp_path / "u.txt.gz").write_bytes(gzip.compress(b"http://a.example/\n"))
    r = crawlkit("canon", str(tmp_path / "u.txt.gz"))
    assert (r.code, r.lines) == (0, ["http://a.example/"])


def test_audit_exits_1_on_a_truncated_log(tmp_path: Path) -> None:
    records = b"".join(
        orjson.dumps(
            {
                "host": "a.example",
                "addr": "127.0.0.1",
                "path": f"/{i}",
                "t_start": 1000.0 + 5 * i,
                "t_end": 1000.1 + 5 * i,
                "status": 200,
                "conn": i,
                "user_agent": "crawlkit",
            }
        )
        + b"\n"
        for i in range(5000)
    )
    whole = tmp_path / "whole.ndjson"
    whole.write_bytes(records)
    ok = crawlkit("audit", "--server-log", str(whole), "--json")
    assert ok.code == 0, ok.stderr + ok.text
    cut = _cut_zstd(tmp_path / "cut.ndjson.zst", records)
    r = crawlkit("audit", "--server-log", str(cut), "--json")
    assert r.code == 1, r.stderr
    assert "zstd stream ends inside a frame" in r.stderr
    assert orjson.loads(r.stdout)["ok"] is True  # the report itself found nothing wrong


def _with_huge_line(path: Path) -> Path:
    with open(path, "wb") as f:
        f.write(b"http://a.example/before\n")
        f.write(b"http://a.example/" + b"x" * (DEFAULT_MAX_LINE + 10) + b"\n")
        f.write(b"http://a.example/after\n")
    return path


@pytest.mark.parametrize("as_json", [False, True])
def test_canon_answers_an_overlong_line_in_its_place(tmp_path: Path, as_json: bool) -> None:
    path = _with_huge_line(tmp_path / "urls.txt")
    r = crawlkit("canon", str(path), *(["--json"] if as_json else []))
    assert r.code == 0, r.stderr
    assert f"{path}:2: line longer than {DEFAULT_MAX_LINE} bytes" in r.stderr
    if as_json:
        recs = [orjson.loads(line) for line in r.lines]
        assert [rec["url"] for rec in recs] == [
            "http://a.example/before",
            None,
            "http://a.example/after",
        ]
        assert recs[1]["error"] == f"line longer than {DEFAULT_MAX_LINE} bytes"
    else:
        assert r.lines == ["http://a.example/before", "", "http://a.example/after"]


def test_robots_check_answers_an_overlong_line_in_its_place(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /after\n")
    path = _with_huge_line(tmp_path / "urls.txt")
    r = crawlkit(
        "robots", "check", "--robots", str(robots), "--agent", "FooBot", input=path.read_bytes()
    )
    assert r.code == 0, r.stderr
    recs = [orjson.loads(line) for line in r.lines]
    assert len(recs) == 3
    assert recs[0] == {"url": "http://a.example/before", "allowed": True, "rule": None}
    assert recs[1]["url"] is None and "longer than" in recs[1]["error"]
    assert recs[2] == {
        "url": "http://a.example/after",
        "allowed": False,
        "rule": "Disallow: /after",
    }
    assert "<stdin>:2: line longer than" in r.stderr


def test_robots_check_exits_1_on_truncated_stdin(tmp_path: Path) -> None:
    robots = tmp_path / "robots.txt"
    robots.write_text("User-agent: *\nDisallow: /x\n")
    urls = b"".join(f"http://a.example/{i}\n".encode() for i in range(20000))
    cut = _cut_zstd(tmp_path / "u.zst", urls)
    r = crawlkit(
        "robots", "check", "--robots", str(robots), "--agent", "FooBot", input=cut.read_bytes()
    )
    assert r.code == 1, r.stderr
    assert len(r.lines) > 1000
