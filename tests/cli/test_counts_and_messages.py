"""Counts that match what was reported, and messages that say where (issue 15 item 11)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import crawlkit

from crawlkit.fetch.netpolicy import NetPolicy

# 11 lines that are not page records: 6 the reader rejects, 5 dedup rejects.
BAD_PAGES = (
    b'not json\n[1, 2]\n"a string"\n{broken\n\xff\xfe\n42\n'
    + b'{"nourl": 1}\n{"url": ""}\n{"url": 7}\n{"site": "a.example"}\n{"url": null}\n'
)
GOOD_PAGE = b'{"url": "http://a.example/", "simhash": "0123456789abcdef", "digest": "sha1:X"}\n'


def test_dedup_counts_every_bad_line_it_reported(tmp_path: Path) -> None:
    path = tmp_path / "pages.ndjson"
    path.write_bytes(GOOD_PAGE + BAD_PAGES)
    r = crawlkit("dedup", "--state", str(tmp_path / "s"), str(path))
    assert r.code == 0, r.stderr
    reported = [line for line in r.stderr.splitlines() if re.match(rf".*{path}:\d+: ", line)]
    assert len(reported) == 11
    assert r.stderr.splitlines()[-1].endswith("; 11 records skipped")


def test_shard_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "urls.ndjson"
    path.write_bytes(b'{"url": "http://a.example/"}\n\n{"nourl": 1}\n{"url": "notaurl"}\n')
    r = crawlkit("shard", "--shards", "2", "--out-dir", str(tmp_path / "out"), str(path))
    assert r.code == 0, r.stderr
    assert f"crawlkit shard: {path}:3: record has neither 'site' nor 'url'" in r.stderr
    assert f"crawlkit shard: {path}:4: cannot parse URL 'notaurl'" in r.stderr
    assert "record 3" not in r.stderr


def test_audit_names_file_and_line_in_plain_words(tmp_path: Path) -> None:
    log = tmp_path / "requests.ndjson"
    log.write_bytes(
        b'{"host": "a", "path": "/", "t_start": 1.0, "t_end": 1.5, "status": 200}\n'
        b'{"host": "a", "path": "/x", "t_start": "soon", "t_end": 1}\n'
        b'{"host": "a", "path": "/y", "t_end": 3.0}\n'
    )
    r = crawlkit("audit", "--server-log", str(log))
    assert f"crawlkit audit: {log}:2: \"t_start\" is not a number: 'soon'; skipped" in r.stderr
    assert f'crawlkit audit: {log}:3: no "t_start"; skipped' in r.stderr
    assert "Error(" not in r.stderr
    fetch_log = tmp_path / "fetched.ndjson"
    fetch_log.write_bytes(
        b'{"url": "http://a/", "fetched_at": 5, "elapsed_ms": "slow"}\n'
        b'{"url": "http://a/e", "fetched_at": 9, "elapsed_ms": null, "bytes": null}\n'
    )
    r = crawlkit("audit", "--fetch-log", str(fetch_log), "--json")
    assert f"{fetch_log}:1: \"elapsed_ms\" is not a number: 'slow'; skipped" in r.stderr
    assert f"{fetch_log}:2" not in r.stderr  # null sizes and times are allowed
    assert "internal error" not in r.stderr
    assert b'"requests": 1' in r.stdout or b'"requests":1' in r.stdout


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("::1", "loopback address ::1"),
        ("::", "unspecified address ::"),
        ("::127.0.0.1", "IPv4-embedding IPv6 address ::7f00:1"),
        ("::ffff:127.0.0.1", "IPv4-mapped address ::ffff:7f00:1"),
    ],
)
def test_ipv6_refusals_name_the_right_kind(address: str, reason: str) -> None:
    refusal = NetPolicy().refusal(address)
    assert refusal is not None and refusal.startswith(reason)
