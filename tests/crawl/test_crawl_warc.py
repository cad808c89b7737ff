"""WARC files by size, not by cycle: IIPC names, --warc-size, warcinfo fields."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import crawlkit, start_testweb
from warcio.archiveiterator import ArchiveIterator

from crawlkit import streams
from crawlkit.crawl import Crawl, CrawlOptions, crawl
from crawlkit.diag import Reporter
from crawlkit.fetch.engine import FetchConfig
from crawlkit.stages.extract import ExtractWorkers
from crawlkit.state import open_state

NAME = re.compile(r"^arch-\d{14}-\d{5}-[\w.-]+-\d+\.warc\.gz$")


def test_crawl_writes_warc_files_by_size_with_warcinfo(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "25", "--special", "none", "--seed", "6")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            "--min-delay",
            "0.05s",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--warc-size",
            "300KB",
            "--warc-prefix",
            "arch",
            "--operator",
            "Ann <ann@example.org>",
            "--collection",
            "test-collection",
            "--description",
            "a test crawl",
            "--json",
            timeout=180,
        )
        assert res.code == 0, res.stderr
        manifest_pages = sum(len(h["pages"]) for h in web.hosts_of_kind("ordinary"))
    files = sorted((state / "warc").glob("*.warc.gz"))
    assert not list((state / "warc" / "new").glob("*"))  # all closed and archived
    assert all(NAME.match(f.name) for f in files), [f.name for f in files]
    total = sum(f.stat().st_size for f in files)
    # rotated by size, not by cycle: about total / 300 KB files, each but the last one
    # closed once it passed 300 KB (how many cycles there were depends on the timing)
    assert len(files) >= 2 and len(files) <= total // 300_000 + 2
    assert all(f.stat().st_size >= 300_000 for f in files[:-1]), [
        (f.name, f.stat().st_size) for f in files
    ]
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
    pages = [
        r["url"]
        for p in state.glob("crawl/cycles/*/pages.ndjson.zst")
        for r in streams.read_records([p])
    ]
    assert len(pages) == len(set(pages)) >= manifest_pages


def _crawled_cycle(tmp_path: Path) -> tuple[Path, CrawlOptions, Path, list[str]]:
    """A one-host crawl's first cycle with pages, its options, its WARC file put back
    where it was while being written (``new/NAME.open``), and its pages' URLs."""
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "6", "--special", "none") as web:
        state = tmp_path / "state"
        options = CrawlOptions(
            scope="any",
            budgets=False,
            fetch=FetchConfig(min_delay=0.05),
            allow_net=(web.info["allow_net"],),
            hosts_file=web.hosts_file,
        )
        crawl(state, web.seeds.read_text().split(), options)
    cycle = next(
        c
        for c in sorted((state / "crawl" / "cycles").iterdir())
        if any(streams.read_records([c / "pages.ndjson.zst"]))
    )
    pages = [r["url"] for r in streams.read_records([cycle / "pages.ndjson.zst"])]
    (name,) = {
        Path(r["warc"]["file"]).name
        for r in streams.read_records([cycle / "fetch.ndjson"])
        if r.get("warc")
    }
    live = state / "warc" / "new" / f"{name}.open"
    live.parent.mkdir(exist_ok=True)
    (state / "warc" / name).rename(live)
    return cycle, options, live, pages


def _extract_again(cycle: Path, options: CrawlOptions) -> str:
    """Extract ``cycle`` again in a run on its state; what the run reported."""
    said = io.StringIO()
    with open_state(cycle.parents[2]) as sdir:
        run = Crawl(sdir, options, reporter=Reporter("crawlkit crawl", stream=said))
        try:
            run.cycles.extract(cycle)
        finally:
            run.close()
    return said.getvalue()


def test_extract_reads_a_cycle_whose_warc_file_rotates_while_it_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file being written is renamed (``.open`` -> closed) when it rotates or the
    run ends, often after a cycle named it and before extract opens it: the records
    are read from the new name at once (they were lost: pages missing under load;
    then read only by a second pass, after a "No such file or directory" that each
    worker of ``crawl --workers`` printed at every stop)."""
    cycle, options, live, before = _crawled_cycle(tmp_path)
    real = ExtractWorkers.extract  # a crawl extracts in the processes it keeps
    calls: list[int] = []

    def rotate_first(*args: Any, **kwargs: Any) -> Any:
        if not calls:
            live.rename(live.with_name(live.stem))  # the writer rotates just now
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(ExtractWorkers, "extract", rotate_first)
    said = _extract_again(cycle, options)
    assert [r["url"] for r in streams.read_records([cycle / "pages.ndjson.zst"])] == before
    assert len(calls) == 1  # one pass
    assert said == ""


def test_extract_reads_a_cycle_again_when_its_file_moved_during_the_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the rename comes between extract's look for the file and its open, the
    attempt cannot read it: the cycle is read again from the new name, and the failed
    attempt's "No such file or directory" is no error to report (nothing was lost)."""
    cycle, options, live, before = _crawled_cycle(tmp_path)
    closed = live.with_name(live.stem)
    away = live.with_name("elsewhere")
    real = ExtractWorkers.extract
    calls: list[int] = []

    def moved_while_opening(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) > 1:
            return real(*args, **kwargs)
        live.rename(away)  # neither name opens during this attempt
        try:
            return real(*args, **kwargs)
        finally:
            away.rename(closed)  # then the writer's rename is done

    monkeypatch.setattr(ExtractWorkers, "extract", moved_while_opening)
    said = _extract_again(cycle, options)
    assert [r["url"] for r in streams.read_records([cycle / "pages.ndjson.zst"])] == before
    assert len(calls) == 2
    assert said == ""
