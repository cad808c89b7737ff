"""``frontier add`` whose reader of refused records goes away still queues its input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
from conftest import crawlkit

N = 3000  # URLs of each kind: ~600 KB of refused records, far more than a pipe holds


def test_head_closing_the_refusals_of_frontier_add_loses_no_url(tmp_path: Path) -> None:
    """`seen-merge | frontier add | head -1` ended 0 and quiet with nothing queued:
    frontier add stopped at the first refusal it could not write and committed
    nothing, while seen-merge had marked every URL seen, so the URLs that passed the
    trap limits were neither queued nor ever new again."""
    deep = "/".join(["x"] * 20)  # past --max-path-depth 15: refused
    links = tmp_path / "links.ndjson"
    with links.open("wb") as f:
        for i in range(N):
            for url in (f"http://h{i % 40}.test/{deep}/{i}", f"http://h{i % 40}.test/ok/{i}"):
                f.write(orjson.dumps({"url": url, "reason": "link"}) + b"\n")
    state = tmp_path / "s"
    ck = f"{sys.executable} -m crawlkit"
    line = f"{ck} seen-merge --state {state} {links} | {ck} frontier add -q --state {state}"
    proc = subprocess.run(
        ["bash", "-c", f"{line} | head -1; echo ${{PIPESTATUS[@]}} >&2"],
        capture_output=True,
        timeout=120,
    )
    err = proc.stderr.decode()
    assert "Traceback" not in err
    assert err.splitlines()[-1] == "0 0 0"  # seen-merge, frontier add, head
    assert orjson.loads(proc.stdout)["refused"] == "path-depth"

    batch_args = ("--per-host", "0", "--no-budgets", "-q")
    batch = crawlkit("frontier", "next", "--state", str(state), "--max", str(4 * N), *batch_args)
    assert batch.code == 0, batch.stderr
    queued = {orjson.loads(line)["url"] for line in batch.lines}
    assert queued == {f"http://h{i % 40}.test/ok/{i}" for i in range(N)}
    again = crawlkit("seen-merge", "--state", str(state), str(links))
    assert again.code == 0 and again.lines == []  # seen, and queued: none lost between


def test_head_closing_a_batch_hands_nothing_out_and_says_refused_was_not_written(
    tmp_path: Path,
) -> None:
    """`frontier next --refused R | head -1` ended 0 with R never written (it is
    written after the batch). Now it says so and exits 1, as `extract --links L`
    does. The batch is not committed, so the next one hands out every URL again."""
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"http://h{i % 40}.test/p/{i}\n" for i in range(N)))
    state, refused = tmp_path / "s", tmp_path / "refused.ndjson"
    added = crawlkit("frontier", "add", "-q", "--state", str(state), "--urls", str(urls))
    assert added.code == 0, added.stderr
    batch_args = ("--max", str(N), "--per-host", "0", "--no-budgets", "-q")
    ck = f"{sys.executable} -m crawlkit frontier next --state {state} {' '.join(batch_args)}"
    proc = subprocess.run(
        ["bash", "-c", f"{ck} --refused {refused} | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"crawlkit frontier next: standard output was closed before the end; not written: {refused}"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s", "urls.txt"]
    batch = crawlkit("frontier", "next", "--state", str(state), *batch_args)
    assert batch.code == 0, batch.stderr
    assert len({orjson.loads(line)["url"] for line in batch.lines}) == N
