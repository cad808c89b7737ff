"""Environment faults in plain words, checked before the work (issue 15 items 10, 12).

A full disk is a small tmpfs this test mounts, a read-only state a read-only bind
mount; both need root (the tests are skipped, saying so, only if mount is refused).
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from conftest import crawlkit, serve_routes

from crawlkit import streams
from crawlkit.seen.runs import write_run


def _mount(args: list[str], target: Path) -> None:
    proc = subprocess.run(["mount", *args, str(target)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount here ({proc.stderr.strip() or 'not root'})")


def _umount(target: Path) -> None:
    subprocess.run(["umount", "-l", str(target)], check=False)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs: room for a lock file and a little more."""
    target = tmp_path / "full"
    target.mkdir()
    _mount(["-t", "tmpfs", "-o", "size=64k", "tmpfs"], target)
    try:
        yield target
    finally:
        _umount(target)


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(writable source, read-only bind mount of it)."""
    source, target = tmp_path / "rw", tmp_path / "ro"
    source.mkdir()
    target.mkdir()
    _mount(["--bind", str(source)], target)
    try:
        _mount(["-o", "remount,bind,ro"], target)
        yield source, target
    finally:
        _umount(target)


def _urls(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "urls.txt"
    # random paths, so that even compressed the URLs fill the small disk
    path.write_text("".join(f"http://a{i % 50}.example/{os.urandom(8).hex()}\n" for i in range(n)))
    return path


def _no_internal_error(stderr: str) -> None:
    assert "internal error" not in stderr
    assert "Errno" not in stderr


def test_a_full_disk_output_says_no_space_left(tmp_path: Path, full_disk: Path) -> None:
    urls = _urls(tmp_path, 20000)
    for name in ("out.txt", "out.txt.zst", "out.txt.gz"):
        r = crawlkit("canon", str(urls), "-o", str(full_disk / name))
        assert r.code == 1
        assert r.stderr.strip() == f"crawlkit canon: {full_disk / name}: no space left on device"
    assert list(full_disk.iterdir()) == []  # no temporary file left behind


def test_a_frontier_add_on_a_full_disk_leaves_no_segments(tmp_path: Path, full_disk: Path) -> None:
    state = full_disk / "state"
    small = _urls(tmp_path, 20)
    assert crawlkit("frontier", "add", "--state", str(state), "--urls", str(small)).code == 0
    before = sorted(p.name for p in (state / "frontier").iterdir())
    assert any(n.startswith("seg-") for n in before)
    urls = _urls(tmp_path, 30000)
    r = crawlkit("frontier", "add", "--state", str(state), "--urls", str(urls))
    assert r.code == 1
    assert r.stderr.strip() == "crawlkit frontier add: no space left on device"
    # item 12: the new segment files are gone, the committed ones are all there
    assert sorted(p.name for p in (state / "frontier").iterdir()) == before
    r = crawlkit("frontier", "stats", "--state", str(state))
    assert b'"queued":20' in r.stdout


def test_seen_merge_on_a_full_disk_is_an_error_not_a_crash(tmp_path: Path, full_disk: Path) -> None:
    # The Bloom filter is written through a memory map: a sparse file on a full disk
    # ended the process with SIGBUS.
    urls = _urls(tmp_path, 1000)
    r = crawlkit("seen-merge", "--state", str(full_disk / "s"), str(urls))
    assert r.code == 1, r.stderr
    assert r.stderr.strip() == "crawlkit seen-merge: no space left on device"


def test_a_short_write_of_an_array_is_a_full_disk(full_disk: Path) -> None:
    # numpy's tofile said "N requested and M written" with no errno.
    keys = np.arange(100_000, dtype=np.uint64)
    with pytest.raises(OSError) as info:
        write_run(full_disk / "run", keys)
    assert info.value.errno == errno.ENOSPC
    assert list(full_disk.iterdir()) == []


def test_a_read_only_state_is_said_plainly(tmp_path: Path, read_only: tuple[Path, Path]) -> None:
    source, ro = read_only
    urls = _urls(tmp_path, 10)
    assert crawlkit("frontier", "add", "--state", str(source / "s"), "--urls", str(urls)).code == 0
    r = crawlkit("frontier", "add", "--state", str(ro / "s"), "--urls", str(urls))
    assert r.code == 1
    _no_internal_error(r.stderr)
    assert r.stderr.strip() == (
        f"crawlkit frontier add: state directory {ro / 's'} cannot be locked for writing: "
        "read-only file system"
    )
    r = crawlkit("canon", str(urls), "-o", str(ro / "out.txt"))
    assert r.code == 1
    assert "read-only file system" in r.stderr
    _no_internal_error(r.stderr)


def test_an_output_that_is_a_directory_is_refused_before_the_work(tmp_path: Path) -> None:
    urls = _urls(tmp_path, 10)
    target = tmp_path / "adir"
    target.mkdir()
    r = crawlkit("canon", str(urls), "-o", str(target))
    assert r.code == 2
    assert r.stderr.strip() == f"crawlkit canon: output {target} is a directory; give a file name"
    # dedup opens --sites only after its work: it is checked first, and the state
    # directory is not even created.
    r = crawlkit("dedup", "--state", str(tmp_path / "d"), "--sites", str(target), input=b"")
    assert r.code == 2
    assert f"--sites {target} is a directory" in r.stderr
    assert not (tmp_path / "d").exists()
    r = crawlkit("recrawl", "--state", str(tmp_path / "r"), "-o", str(target), input=b"")
    assert (r.code, r.stderr.strip()) == (
        2,
        f"crawlkit recrawl: --out {target} is a directory; give a file name",
    )
    assert not (tmp_path / "r").exists()
    r = crawlkit("extract", "--pages", str(target), input=b"")
    assert (r.code, r.stderr.strip()) == (
        2,
        f"crawlkit extract: output {target} is a directory; give a file name",
    )


def test_an_out_dir_or_warc_dir_that_is_a_file(tmp_path: Path) -> None:
    urls = _urls(tmp_path, 10)
    r = crawlkit("shard", "--shards", "2", "--out-dir", str(urls), str(urls))
    assert r.code == 2
    assert r.stderr.strip() == f"crawlkit shard: --out-dir {urls} is a file; give a directory"
    r = crawlkit(
        "fetch", "--state", str(tmp_path / "s"), "--warc-dir", str(urls / "sub"), input=b""
    )
    assert r.code == 2
    assert f"--warc-dir {urls / 'sub'} is under {urls}, which is a file" in r.stderr
    r = crawlkit(
        "crawl", "http://a.example/", "--state", str(tmp_path / "c"), "--warc-dir", str(urls)
    )
    assert r.code == 2
    assert f"--warc-dir {urls} is a file" in r.stderr
    assert not (tmp_path / "c").exists()


def test_check_output_passes_what_can_be_written(tmp_path: Path) -> None:
    streams.check_output("-")
    streams.check_output(tmp_path / "new" / "deeper" / "x.ndjson")
    streams.check_output("/dev/null")
    streams.check_output_dir(tmp_path / "new-dir", "--out-dir")
    assert os.listdir(tmp_path) == []  # checking makes nothing


def test_a_frontier_next_that_fails_to_write_leaves_no_new_segments(tmp_path: Path) -> None:
    # next() rotates queues into new segment files before its batch is written; when
    # the write fails they must go, and the URLs stay queued (at least once).
    from crawlkit.frontier.store import NextOptions
    from crawlkit.stages.frontier import frontier_next

    state = tmp_path / "s"
    urls = "".join(f"http://h{i % 40}.example/{i}\n" for i in range(4000)).encode()
    assert crawlkit("frontier", "add", "--state", str(state), "--urls", input=urls).code == 0
    before = sorted(p.name for p in (state / "frontier").iterdir())

    def failing_write(batch: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OSError):
        frontier_next(state, NextOptions(max_urls=500), write=failing_write)
    assert sorted(p.name for p in (state / "frontier").iterdir()) == before
    r = crawlkit("frontier", "stats", "--state", str(state))
    assert b'"queued":4000' in r.stdout


def test_a_full_disk_behind_a_store_error_is_named_as_the_disk() -> None:
    # A run that met a full disk in the WARC writer, then failed again in a store's
    # write while shutting down, said "internal error: OperationalError: database or
    # disk is full": the first cause in the chain is named now, and SQLite's own
    # "disk is full" is a full disk too.
    import errno
    import sqlite3

    from crawlkit.errors import environment_error

    def shut_down_after_a_full_disk() -> None:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "S/warc/new/a.warc.gz")
        finally:
            raise sqlite3.OperationalError("database or disk is full")

    try:
        shut_down_after_a_full_disk()
    except sqlite3.OperationalError as exc:
        assert environment_error(exc) == "S/warc/new/a.warc.gz: no space left on device"
    full = sqlite3.OperationalError("database or disk is full")
    assert environment_error(full).startswith("no space left on device")
    assert environment_error(ValueError("a bug")) is None


def test_too_few_open_files_names_the_limit(tmp_path: Path) -> None:
    # Under `ulimit -n 64` a crawl failed "S/crawl/cycles: too many open files",
    # naming the file it failed on last, not the cause.
    import resource
    import subprocess
    import sys

    from conftest import ROOT

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))

    with serve_routes({"/": ("text/html", b"<a href='/a'>a</a>")}) as (root, _log):
        out = subprocess.run(
            [
                *(sys.executable, "-m", "crawlkit", "crawl", f"{root}/"),
                *("--state", str(tmp_path / "s"), "--allow-net", "127.0.0.0/8", "--for", "20s"),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=ROOT,
            preexec_fn=limit,
        )
    assert out.returncode == 1, out.stderr
    assert "too many open files (the open-file limit, ulimit -n, is 40" in out.stderr
    assert "Traceback" not in out.stderr
