"""The external sort of big indexes, and the ZipNum index as cdxj-indexer writes it."""

from __future__ import annotations

import io
import random
import subprocess
import sys
from pathlib import Path

import pytest
from warc_samples import crawlkit_warc, warcio_warc, write_site_warc

from crawlkit.warc.cdxj import index_lines, write_zipnum
from crawlkit.warc.extsort import LineSorter

pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)


def test_the_external_sort_gives_plain_string_order(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [
        "".join(rng.choice("ab,)/ é中0") for _ in range(rng.randrange(1, 30))) for _ in range(5000)
    ]
    with LineSorter(tmpdir=tmp_path, max_bytes=20_000) as sorter:
        for line in lines:
            sorter.add(line)
        assert sorter.runs > 10  # it did spill to disk
        assert list(sorter) == sorted(lines)
        assert sorted(lines) == sorted(lines, key=lambda x: x.encode("utf-8"))
        assert len(list(tmp_path.iterdir())) == 0  # run files are unlinked at once
    with LineSorter(tmpdir=tmp_path) as small:
        small.add("b")
        small.add("a")
        assert list(small) == ["a", "b"] and small.runs == 0


def test_zipnum_is_cdxj_indexers_byte_for_byte(tmp_path: Path) -> None:
    site = tmp_path / "site.warc.gz"
    write_site_warc(site)
    warcs = [site, crawlkit_warc(tmp_path / "ck"), warcio_warc(tmp_path / "w.warc", gzip=False)]
    exe = Path(sys.executable).parent / "cdxj-indexer"
    theirs_data, theirs_idx = tmp_path / "theirs.cdx.gz", tmp_path / "theirs.idx"
    args = ["--sort", "--compress", str(theirs_data), "--lines", "4", "--digest-records"]
    out = subprocess.run(
        [str(exe), *args, "-o", str(theirs_idx), *map(str, warcs)], capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    data = io.BytesIO()
    idx = write_zipnum(index_lines(warcs), data, data_name="theirs.cdx.gz", block_lines=4)
    assert len(idx) > 4  # several blocks
    ours = "".join(idx).splitlines()
    theirs = theirs_idx.read_text().splitlines()
    assert ours[1:] == theirs[1:]
    assert ours[0] == '!meta 0 {"format": "cdxj-gzip-1.0", "filename": "theirs.cdx.gz"}'
    assert data.getvalue() == theirs_data.read_bytes()
