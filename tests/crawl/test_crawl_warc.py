"""WARC files by size, not by cycle: IIPC names, --warc-size, warcinfo fields."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

from crawlkit import io

NAME = re.compile(r"^arch-\d{14}-\d{5}-[\w.-]+-\d+\.warc\.gz$")


def test_crawl_writes_warc_files_by_size_with_warcinfo(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "25", "--special", "none", "--seed", "6")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        res = crawlkit("crawl", str(web.seeds), "--state", str(state), "--scope", "any",
                       "--min-delay", "0.05s", "--allow-net", web.info["allow_net"],
                       "--hosts-file", str(web.hosts_file), "--warc-size", "300KB",
                       "--warc-prefix", "arch", "--operator", "Ann <ann@example.org>",
                       "--collection", "test-collection", "--description", "a test crawl",
                       "--json", timeout=180)  # fmt: skip
        assert res.code == 0, res.stderr
        manifest_pages = sum(len(h["pages"]) for h in web.hosts_of_kind("ordinary"))
    summary = orjson.loads(res.stdout)
    files = sorted((state / "warc").glob("*.warc.gz"))
    assert not list((state / "warc" / "new").glob("*"))  # all closed and archived
    assert all(NAME.match(f.name) for f in files), [f.name for f in files]
    total = sum(f.stat().st_size for f in files)
    # rotated by size: about total / 300 KB files, far fewer than cycles
    assert len(files) >= 2 and len(files) <= total // 300_000 + 2
    assert len(files) < summary["cycles"]
    warcio_bin = Path(sys.executable).parent / "warcio"
    check = subprocess.run([str(warcio_bin), "check", *map(str, files)], capture_output=True)
    assert check.returncode == 0, check.stdout + check.stderr
    for f in files:
        with open(f, "rb") as fh:
            info = next(iter(ArchiveIterator(fh)))
            assert info.rec_type == "warcinfo"
            fields = info.content_stream().read().decode()
        assert "operator: Ann <ann@example.org>" in fields
        assert "isPartOf: test-collection" in fields
        assert "description: a test crawl" in fields
    # every cycle's records were read from the shared files: each page parsed once
    pages = [r["url"] for p in state.glob("crawl/cycles/*/pages.ndjson.zst")
             for r in io.read_records([p])]  # fmt: skip
    assert len(pages) == len(set(pages)) >= manifest_pages
