"""Outputs that are not regular files, and outputs that cannot be written (issue 15).

Item 0: ``/dev/null``, a FIFO, ``/dev/stdout`` and ``/dev/fd/N`` are written straight
through; the atomic writer's rename must never replace them with a plain file.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import crawlkit

from crawlkit import streams

URLS = b"http://a.example/x\nhttp://b.example/y\n"


def _null_device(directory: Path) -> Path:
    """A character device with /dev/null's numbers (only root may make one)."""
    if os.geteuid() != 0:
        pytest.skip("making a character device needs root")
    dev = directory / "null"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)
    return dev


def test_a_device_output_stays_a_device(tmp_path: Path) -> None:
    dev = _null_device(tmp_path)
    inode = dev.stat().st_ino
    (tmp_path / "urls.txt").write_bytes(URLS)
    r = crawlkit("canon", str(tmp_path / "urls.txt"), "-o", str(dev))
    assert r.code == 0, r.stderr
    assert stat.S_ISCHR(dev.stat().st_mode)
    assert dev.stat().st_ino == inode
    # no temporary file left beside it
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "urls.txt"]


# warcio's writer buffers payloads in SpooledTemporaryFiles it never closes.
@pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
def test_extract_pages_and_links_to_the_same_device(tmp_path: Path) -> None:
    from warc_samples import write_warcio

    dev = _null_device(tmp_path)
    warc = tmp_path / "in.warc.gz"
    write_warcio(warc, gzip_records=True)
    r = crawlkit("extract", str(warc), "--pages", str(dev), "--links", str(dev), "-q")
    assert r.code == 0, r.stderr
    assert stat.S_ISCHR(dev.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.warc.gz", "null"]


def test_a_fifo_output_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def drain() -> None:
        with open(fifo, "rb") as f:
            got.append(f.read())

    reader = threading.Thread(target=drain)
    reader.start()
    (tmp_path / "urls.txt").write_bytes(URLS)
    r = crawlkit("canon", str(tmp_path / "urls.txt"), "-o", str(fifo))
    reader.join(timeout=60)
    assert r.code == 0, r.stderr
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert got and got[0].splitlines() == [b"http://a.example/x", b"http://b.example/y"]


def test_a_symlink_to_this_process_stdout_is_written_through(tmp_path: Path) -> None:
    # What /dev/stdout is: a symlink through /proc. With stdout redirected to a
    # regular file, the target is a regular file, yet the name must not be replaced.
    link = tmp_path / "stdout"
    link.symlink_to("/proc/self/fd/1")
    captured = tmp_path / "captured.ndjson"
    (tmp_path / "urls.txt").write_bytes(URLS)
    with open(captured, "wb") as sink:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "crawlkit",
                "canon",
                str(tmp_path / "urls.txt"),
                "-o",
                str(link),
            ],
            stdout=sink,
            stderr=subprocess.PIPE,
            timeout=120,
        )
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink()
    assert len(captured.read_bytes().splitlines()) == 2


def test_process_substitution_output(tmp_path: Path) -> None:
    # bash's >(cmd) hands the command a /dev/fd/N path that is a pipe.
    (tmp_path / "urls.txt").write_bytes(URLS)
    out = tmp_path / "counted"
    script = f"{sys.executable} -m crawlkit canon {tmp_path / 'urls.txt'} -o >(wc -l > {out}); wait"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().strip() == "2"


def test_writes_through_is_false_for_plain_and_missing_files(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    (tmp_path / "link").symlink_to(plain)
    assert not streams.writes_through(plain)
    assert not streams.writes_through(tmp_path / "link")
    assert not streams.writes_through(tmp_path / "missing")
    if os.geteuid() == 0:  # the machine's /dev/null may itself have been clobbered
        assert streams.writes_through(_null_device(tmp_path))
    assert streams.writes_through("/dev/stdout") or not os.path.exists("/dev/stdout")


def test_atomic_write_to_a_device_keeps_it(tmp_path: Path) -> None:
    dev = _null_device(tmp_path)
    streams.atomic_write_bytes(dev, b"discarded\n")
    assert stat.S_ISCHR(dev.stat().st_mode)
