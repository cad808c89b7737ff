"""index, extract and wacz on WARC files other writers wrote (Heritrix, wget, wpull,
warcprox, Webrecorder, ArchiveWeb.page, warcit, Common Crawl): the test data of public
projects, listed in tests/data/real-warcs/MANIFEST.tsv with source, commit and licence.

Each file's sha256 is checked against the manifest, then: ``index`` is cdxj-indexer's
byte for byte, ``extract`` gives one page per HTTP 200 HTML response or HTML resource
record warcio sees, and one WACZ of them all passes ``wacz validate``; a damaged or
unsupported file is a one-line error saying what is wrong. A file not present is
skipped (see the README there: the files themselves are placed by the lead engineer);
CRAWLKIT_REAL_WARCS names another directory holding them.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from archive_tools import cdxj_indexer, wacz_validate
from conftest import ROOT, crawlkit
from warcio.archiveiterator import ArchiveIterator

_HERE = ROOT / "tests" / "data" / "real-warcs"
_DIR = Path(os.environ.get("CRAWLKIT_REAL_WARCS", _HERE))


def _manifest() -> list[dict[str, str]]:
    """The rows of MANIFEST.tsv (tab-separated, a ``#`` header line)."""
    lines = (_HERE / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()
    names = lines[0].lstrip("# ").split("\t")
    return [dict(zip(names, line.split("\t"), strict=True)) for line in lines[1:] if line]


_ROWS = _manifest()
_GOOD = [row["file"] for row in _ROWS if row["expect"] == "ok"]
_BAD = {row["file"]: row["expect"] for row in _ROWS if row["expect"] != "ok"}


def _real(name: str) -> Path:
    """The file, its bytes those the manifest names; skips the test if it is absent."""
    path = _DIR / name
    if not path.exists():
        pytest.skip(f"{name} not in {_DIR} (tests/data/real-warcs/README.md)")
    want = next(row["sha256"] for row in _ROWS if row["file"] == name)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == want, f"{path} is another file"
    return path


def _html_200s(path: Path) -> int:
    """The HTTP 200 text/html response records of the file, and its text/html resource
    records of http(s) URIs (pages as archived, as warcit writes them; pywb replays
    them), as warcio reads them. (warcio takes any protocol: pywb's example-extra.warc
    has an "HTTPX/1.1 200 OK" response, which extract counts as a non-200, as it is no
    HTTP response.)"""
    count = 0
    with open(path, "rb") as f:
        for record in ArchiveIterator(f):
            if record.rec_type == "resource":
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                mime = record.rec_headers.get_header("Content-Type") or ""
                count += uri.startswith(("http:", "https:")) and "html" in mime
                continue
            http = record.http_headers
            if record.rec_type != "response" or http is None:
                continue
            if not http.protocol.upper().startswith("HTTP/"):
                continue
            mime = http.get_header("Content-Type") or ""
            count += http.get_statuscode() == "200" and "html" in mime
    return count


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.parametrize("name", _GOOD)
def test_a_real_warc_is_indexed_and_extracted(tmp_path: Path, name: str) -> None:
    warc = _real(name)
    res = crawlkit("index", str(warc))
    assert res.code == 0, res.stderr
    assert res.text == cdxj_indexer(warc)
    links = tmp_path / "links.ndjson"
    res = crawlkit("extract", str(warc), "--links", str(links))
    assert res.code == 0, res.stderr
    pages = [json.loads(line) for line in res.text.splitlines()]
    assert len(pages) == _html_200s(warc), res.stderr
    assert all(p["status"] == 200 and p["url"].startswith("http") for p in pages)
    for line in links.read_text().splitlines():
        assert json.loads(line)["url"].startswith("http")


def test_real_warcs_make_a_valid_wacz(tmp_path: Path) -> None:
    warcs = [_real(name) for name in _GOOD]
    wacz = tmp_path / "real.wacz"
    res = crawlkit("wacz", *map(str, warcs), "-o", str(wacz))
    assert res.code == 0, res.stderr
    check = wacz_validate(wacz)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("name", sorted(_BAD))
@pytest.mark.parametrize("stage", ["index", "wacz"])
def test_a_damaged_real_warc_is_a_one_line_error(tmp_path: Path, name: str, stage: str) -> None:
    warc = _real(name)
    out = tmp_path / ("x.wacz" if stage == "wacz" else "x.cdxj")
    res = crawlkit(stage, str(warc), "-o", str(out))
    assert res.code == 1, res.stderr
    assert res.stderr.startswith(f"crawlkit {stage}: {warc}: "), res.stderr
    assert _BAD[name] in res.stderr and len(res.stderr.strip().splitlines()) == 1
    assert not out.exists()
