"""``--warc-prefix`` is checked before any request (issue 15 item 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import crawlkit, serve_routes

from crawlkit.errors import UsageError
from crawlkit.warc.write import MAX_PREFIX, WarcWriter, check_warc_prefix


@pytest.fixture
def server() -> Iterator[tuple[str, list[str]]]:
    # a path is logged before it is answered, so a client saw what the log has
    with serve_routes({"/page": ("text/html", b"<html><body>hi</body></html>")}) as (root, hits):
        yield root + "/page", hits


def _fetch(tmp_path: Path, url: str, prefix: str):
    return crawlkit(
        "fetch",
        "--state",
        str(tmp_path / "state"),
        "--warc-dir",
        str(tmp_path / "warc"),
        "--allow-net",
        "127.0.0.1/32",
        "--min-delay",
        "0",
        "--warc-prefix",
        prefix,
        "-q",
        input=url.encode() + b"\n",
    )


@pytest.mark.parametrize(
    "prefix", ["../../x", "/tmp/abs", "a/b", "x" * (MAX_PREFIX + 1), "", ".hidden", "-x"]
)
def test_a_bad_prefix_is_a_usage_error_before_any_request(
    tmp_path: Path, server: tuple[str, list[str]], prefix: str
) -> None:
    url, hits = server
    r = _fetch(tmp_path, url, prefix)
    assert r.code == 2, r.stderr
    assert r.stderr.startswith("crawlkit fetch: --warc-prefix must be a file name")
    assert hits == []
    assert not list(tmp_path.parent.glob("x*.warc.gz*"))
    assert not (tmp_path / "warc").exists() or not list((tmp_path / "warc").rglob("*.warc*"))


def test_a_good_prefix_names_the_files(tmp_path: Path, server: tuple[str, list[str]]) -> None:
    url, hits = server
    r = _fetch(tmp_path, url, "site-2026.v1_a+b")
    assert r.code == 0, r.stderr
    assert "/page" in hits
    names = [p.name for p in (tmp_path / "warc").rglob("*.warc.gz")]
    assert names and all(n.startswith("site-2026.v1_a+b-") for n in names)


def test_the_library_refuses_too() -> None:
    assert check_warc_prefix("crawlkit") == "crawlkit"
    with pytest.raises(UsageError):
        WarcWriter("/nonexistent", prefix="../x")
