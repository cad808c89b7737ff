"""--ip-table: two ``crawlkit fetch`` processes, hosts of one address split between
them, keep ``--per-ip`` together, judged from the test web's request log.

The six link-farm hosts of ``crawlkit testweb`` share one address; each process gets
three of them. Both read their batch from a FIFO, written only once both have opened
it (they have started up and opened their state by then), so their requests overlap
in time: without the table each keeps the limit alone and together they break it,
which the second half of the test shows (so the first half can fail).
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from pathlib import Path

from conftest import ROOT, TestWeb, start_testweb
from test_fetch_testweb import url_records

GAP = 0.08  # --per-ip-delay


def _fetch_both(web: TestWeb, tmp: Path, halves: list[list[str]], table: Path | None) -> None:
    """Run one fetch per half at once (see the module docstring)."""
    procs, fifos, outs = [], [], []
    for n, urls in enumerate(halves):
        fifo = tmp / f"batch-{n}"
        os.mkfifo(fifo)
        out = open(tmp / f"out-{n}.ndjson", "wb")  # noqa: SIM115 - closed below
        args = [sys.executable, "-m", "crawlkit", "fetch", str(fifo)]
        args += ["--state", str(tmp / f"state-{n}"), "--hosts-file", str(web.hosts_file)]
        args += ["--allow-net", web.info["allow_net"], "--concurrency", "10"]
        args += ["--min-delay", "0s", "--delay-factor", "0"]
        args += ["--per-ip", "1", "--per-ip-delay", f"{GAP}s"]
        if table is not None:
            args += ["--ip-table", str(table)]
        procs.append(
            subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.PIPE,
                cwd=ROOT,
            )
        )
        fifos.append(fifo)
        outs.append((out, urls))
    try:
        # Opening a FIFO for writing returns once its reader has opened it: the event
        # that both processes are ready.
        with ThreadPoolExecutor(len(fifos)) as pool:
            opening = [pool.submit(os.open, f, os.O_WRONLY) for f in fifos]
            _, pending = wait_futures(opening, timeout=60)
            if pending:  # a fetch died early: unblock the writers, then report it
                for f in fifos:
                    os.close(os.open(f, os.O_RDONLY | os.O_NONBLOCK))
        fds = [f.result() for f in opening]
        assert not pending, [p.communicate(timeout=30)[1] for p in procs]
        for fd, (_, urls) in zip(fds, outs, strict=True):
            os.write(fd, url_records(urls))
        for fd in fds:
            os.close(fd)
        for p in procs:
            _, err = p.communicate(timeout=60)
            assert p.returncode == 0, err.decode(errors="replace")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        for out, _ in outs:
            out.close()


def _to(web: TestWeb, addr: str, mark: int) -> list[dict]:
    return sorted(
        (r for r in web.requests()[mark:] if r["addr"] == addr), key=lambda r: r["t_start"]
    )


def test_two_fetches_keep_per_ip_together_through_one_table(tmp_path: Path) -> None:
    with start_testweb(
        tmp_path / "web", "--hosts", "1", "--pages", "2", "--special", "none,link-farm:6"
    ) as web:
        farm = [h for h in web.manifest["hosts"] if h["kind"] == "link-farm"]
        (addr,) = {h["addr"] for h in farm}
        urls = [
            [f"{h['root']}page-{i}.html" for h in part for i in range(4)]
            for part in (farm[:3], farm[3:])
        ]
        expected = sum(len(u) for u in urls) + len(farm)  # and a robots.txt per host

        shared = tmp_path / "shared"
        shared.mkdir()
        mark = len(web.requests())
        _fetch_both(web, shared, urls, shared / "ip.table")
        together = _to(web, addr, mark)
        assert len(together) == expected
        # never two requests in flight to the address; each starts at least the gap
        # after the last one ended (the table's rule, which the log can prove: the
        # client had the response after t_end, the server saw the request after it
        # was sent), hence also after it started
        for a, b in itertools.pairwise(together):
            assert b["t_start"] - a["t_end"] >= GAP, (a, b)
        gaps = [b["t_start"] - a["t_end"] for a, b in itertools.pairwise(together)]
        print("with the table: smallest gap", min(gaps))

        alone = tmp_path / "alone"
        alone.mkdir()
        mark = len(web.requests())
        _fetch_both(web, alone, urls, None)
        apart = _to(web, addr, mark)
        assert len(apart) == expected
        gaps = [b["t_start"] - a["t_start"] for a, b in itertools.pairwise(apart)]
        print("without: smallest gap", min(gaps))
        # each process alone keeps the gap; together they break it
        assert min(gaps) < GAP / 2
