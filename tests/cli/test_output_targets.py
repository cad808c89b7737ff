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


def test_an_output_through_a_symlink_is_written_where_it_leads(tmp_path: Path) -> None:
    """As the shell's > and sort -o do: the link stays a link, its target is new."""
    (tmp_path / "real.txt").write_text("old\n")
    link = tmp_path / "out.txt"
    link.symlink_to("real.txt")
    res = crawlkit("canon", "-o", str(link), input=URLS)
    assert res.code == 0, res.stderr
    assert link.is_symlink() and (tmp_path / "real.txt").read_bytes() == URLS


@pytest.mark.parametrize(
    ("redirect", "code", "said"),
    [
        ("-o {out} >&-", 0, ""),  # stdout not needed: closed is fine
        (">&-", 1, "crawlkit canon: standard output is closed"),
        ("-o {out} - <&-", 1, "crawlkit canon: standard input is closed"),
    ],
)
def test_a_closed_standard_stream_is_a_one_line_error_only_when_used(
    tmp_path: Path, redirect: str, code: int, said: str
) -> None:
    """A closed stdout ended in a traceback (even with -o FILE written), a closed stdin
    in "internal error: AttributeError"."""
    urls = tmp_path / "urls.txt"
    urls.write_bytes(URLS)
    out = tmp_path / "out.txt"
    source = "" if "<&-" in redirect else str(urls)
    line = f"{sys.executable} -m crawlkit canon {source} {redirect.format(out=out)}"
    proc = subprocess.run(["bash", "-c", line], capture_output=True, text=True, timeout=60)
    assert proc.returncode == code, proc.stderr
    assert proc.stderr.strip() == said, proc.stderr
    if code == 0:
        assert out.read_bytes() == URLS


def test_head_closing_stdout_is_an_error_when_another_output_is_lost(tmp_path: Path) -> None:
    """`extract W --links L | head -1` ended 0 with L never written; `canon | head -1`
    is still a normal end (0, nothing said)."""
    page = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<title>t</title><a href=/x>x</a>"
    records = []
    for i in range(3000):
        head = (
            f"WARC/1.1\r\nWARC-Type: response\r\nWARC-Target-URI: http://a.test/{i}\r\n"
            f"WARC-Date: 2026-12-02T01:02:03Z\r\nWARC-Record-ID: <urn:uuid:{i}>\r\n"
            "Content-Type: application/http; msgtype=response\r\n"
            f"Content-Length: {len(page)}\r\n\r\n"
        )
        records.append(head.encode() + page + b"\r\n\r\n")
    warc = tmp_path / "many.warc"
    warc.write_bytes(b"".join(records))
    links = tmp_path / "links.ndjson"
    cmd = f"{sys.executable} -m crawlkit extract {warc} --links {links} | head -1 >/dev/null"
    proc = subprocess.run(
        ["bash", "-c", cmd + "; exit ${PIPESTATUS[0]}"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1, proc.stderr
    assert f"not written: {links}" in proc.stderr and not links.exists()
    urls = tmp_path / "urls.txt"
    urls.write_bytes(b"".join(b"http://a.test/%d\n" % i for i in range(100_000)))
    cmd = f"{sys.executable} -m crawlkit canon {urls} | head -1 >/dev/null"
    proc = subprocess.run(
        ["bash", "-c", cmd + "; exit ${PIPESTATUS[0]}"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
