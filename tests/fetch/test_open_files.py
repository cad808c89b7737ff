"""The open-file limit (issue 25 item 9): fetching from many hosts under a low soft
limit (raised to the hard one at start) and under a hard limit that cannot be raised
(the connection pool, in use and idle, stays under it).

Each run is a subprocess whose RLIMIT_NOFILE is lowered before it starts. Before the
fix both ended with 'crawlkit fetch: WARC_DIR/new: too many open files' (exit 1)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from collections import Counter

import pytest
from conftest import ROOT, start_testweb

HOSTS = 200


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("web")
    with start_testweb(tmp, "--hosts", str(HOSTS), "--pages", "1", "--special", "none") as w:
        yield w


@pytest.mark.parametrize(
    ("soft", "hard"),
    [
        (48, resource.getrlimit(resource.RLIMIT_NOFILE)[1]),  # the soft limit is raised
        (100, 100),  # a hard limit: connections are kept under it
    ],
)
def test_fetching_many_hosts_stays_under_the_open_file_limit(web, tmp_path, soft, hard):
    if hard != resource.RLIM_INFINITY and hard < soft:
        pytest.skip(f"the hard limit here is {hard}")

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))

    args = [sys.executable, "-m", "crawlkit", "fetch", "--state", str(tmp_path / "s")]
    args += [str(web.info["seeds"]), "--warc-dir", str(tmp_path / "warc")]
    args += ["--min-delay", "0", "--allow-net", web.info["allow_net"]]
    args += ["--hosts-file", str(web.hosts_file)]
    done = subprocess.run(
        args,
        preexec_fn=lower,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert Counter(r["outcome"] for r in records) == {"fetched": HOSTS}, [
        r.get("error") for r in records if r["outcome"] != "fetched"
    ][:3]


def test_a_segment_that_cannot_be_opened_is_not_called_missing(tmp_path, monkeypatch):
    """With more concurrency the old message was 'frontier segment ... is missing'."""
    import errno
    from pathlib import Path

    from crawlkit.errors import StateError, describe_os_error
    from crawlkit.frontier.queues import SegmentStore

    store = SegmentStore(tmp_path)
    seg = store.write([b'{"url": "http://a.test/"}\n'])
    assert store.read(seg) == [b'{"url": "http://a.test/"}\n']

    def emfile(self: Path) -> bytes:
        raise OSError(errno.EMFILE, "Too many open files", str(self))

    monkeypatch.setattr(Path, "read_bytes", emfile)
    with pytest.raises(OSError) as caught:
        store.read(seg)
    assert not isinstance(caught.value, StateError)
    assert ": too many open files (the open-file limit" in describe_os_error(caught.value)
    monkeypatch.undo()
    store.path(seg).unlink()
    with pytest.raises(StateError, match="is missing"):
        store.read(seg)
