"""The shell examples in examples/, run as a user would, against `crawlkit testweb`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from conftest import ROOT, crawlkit, start_testweb, wait_until_locked
from warcio.archiveiterator import ArchiveIterator

from crawlkit import streams
from crawlkit.url import Canonicalizer

EXAMPLES = ROOT / "examples"


def _env() -> dict[str, str]:
    # The examples call `crawlkit`: put this interpreter's bin directory first.
    return {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}


def _run(*args: str, env: dict[str, str] | None = None, timeout: float = 180):
    return subprocess.run(
        list(args), capture_output=True, text=True, env=env or _env(), timeout=timeout, check=False
    )


def _net(web) -> list[str]:
    """crawl flags for the test web (with --tls, its CA as well)."""
    return [
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--min-delay",
        "0.05s",
        *(["--ca-file", web.info["ca_file"]] if "ca_file" in web.info else []),
    ]


def _audit_ok(web) -> None:
    web.flush()  # every request answered so far is in the log
    res = crawlkit("audit", "--server-log", str(web.log_path), "--min-gap", "0.05s", "--json")
    report = orjson.loads(res.stdout)
    assert res.code == 0 and report["ok"], report["violations"][:3]


def test_archive_site_collects_one_site_into_warc(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "12", "--special", "none") as web:
        out = tmp_path / "collection"
        res = _run(str(EXAMPLES / "archive-site.sh"), web.url("h1.test"), str(out), *_net(web))
        assert res.returncode == 0, res.stderr
        _audit_ok(web)
        wanted = set(web.host("h1.test")["pages"])
        other_hosts = {q["host"].split(":")[0] for q in web.requests()} - {"h1.test"}
    got: set[str] = set()
    for warc in out.glob("warc/*.warc.gz"):
        with open(warc, "rb") as f:
            got |= {
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(f)
                if r.rec_type == "response"
            }
    # the web lists its pages by the default rules; an archive stores them as linked
    canon = Canonicalizer()
    assert wanted <= {canon.canonicalize(url) for url in got}
    assert not other_hosts  # --scope site: the other hosts were never asked
    assert (out / "report.html").exists()
    assert orjson.loads((out / "report.json").read_text())["fetches"] >= len(wanted)


def test_cron_script_continues_and_skips_when_still_running(tmp_path: Path) -> None:
    web_args = ("--hosts", "3", "--pages", "12", "--special", "none", "--tls")  # over HTTPS
    with start_testweb(tmp_path, *web_args) as web:
        assert web.seeds.read_text().startswith("https://")
        d = tmp_path / "cron"
        env = {**_env(), "CRAWL_FOR": "30s"}
        script = str(EXAMPLES / "cron-crawl.sh")
        # a 1 s gap keeps the first run going while the second one tries
        first = subprocess.Popen(
            [script, str(d), str(web.seeds), "--scope", "any", *_net(web), "--min-delay", "1s"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_until_locked(d / "state" / "LOCK", first)
            second = _run(script, str(d), str(web.seeds), "--scope", "any", *_net(web), env=env)
            assert second.returncode == 0, second.stderr
            assert "previous run still going; skipped" in second.stderr
        finally:
            _, err = first.communicate(timeout=120)
        assert first.returncode == 0, err
        totals = streams.read_json(d / "state" / "crawl" / "totals.json")
        assert totals["runs"] == 1
        summary = orjson.loads((d / "last-run.json").read_text())
        assert summary["fetched"] >= 1
        again = _run(script, str(d), str(web.seeds), "--scope", "any", *_net(web), env=env)
        assert again.returncode == 0, again.stderr
        totals = streams.read_json(d / "state" / "crawl" / "totals.json")
        assert totals["runs"] == 2
        # The second run went on from the first: between them, the 36 pages. (How many
        # the first run's 30 s reach depends on the machine's load: 24 on a busy one.)
        assert totals["fetched"] >= 36
        _audit_ok(web)


def test_one_cycle_as_stage_commands(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "8", "--special", "none") as web:
        state, work = tmp_path / "S", tmp_path / "W"
        work.mkdir()
        (work / "seeds.txt").write_text(web.seeds.read_text())
        fetched: set[str] = set()
        for _ in range(3):
            res = _run(str(EXAMPLES / "one-cycle.sh"), str(state), str(work), *_net(web))
            assert res.returncode == 0, res.stderr
            stats = orjson.loads(res.stdout)
            fetched |= {
                r["url"]
                for r in streams.read_records([work / "fetched.ndjson.zst"])
                if r["outcome"] == "fetched"
            }
        _audit_ok(web)
        for name in ("h0.test", "h1.test"):
            pages = web.host(name)["pages"]
            # three cycles reach at least the pages within two links of the root
            assert len(set(pages) & fetched) >= min(len(pages), 3)
    assert "queued" in stats
    assert list((state / "warc" / "done").glob("*.warc.gz"))


def test_cron_script_skipping_a_run_leaves_the_running_ones_files(tmp_path: Path) -> None:
    # The running job is played by this process holding the state's lock; the last
    # run's files must be as they were, not truncated by the skipped run's redirects.
    from crawlkit.state import open_state

    d = tmp_path / "cron"
    (d / "state").mkdir(parents=True)
    (d / "last-run.json").write_text('{"fetched": 7}\n')
    (d / "last-run.err").write_text("crawlkit crawl: cycle 1 ...\n")
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://example.invalid/\n")
    with open_state(d / "state"):
        res = _run(str(EXAMPLES / "cron-crawl.sh"), str(d), str(seeds))
    assert res.returncode == 0, res.stderr
    assert "previous run still going; skipped" in res.stderr
    assert (d / "last-run.json").read_text() == '{"fetched": 7}\n'
    assert (d / "last-run.err").read_text() == "crawlkit crawl: cycle 1 ...\n"
    assert sorted(p.name for p in d.iterdir()) == ["last-run.err", "last-run.json", "state"]


def test_archive_site_keeps_every_requisite_and_replays_in_pywb(tmp_path: Path) -> None:
    """A site whose pages carry every requisite kind, some from another site: each
    requisite of each page is in the archive, the WACZ validates, and pywb replays every
    page and requisite with the bytes the server sent."""
    import hashlib
    import shutil
    import zipfile

    from archive_tools import pywb_replay, wacz_validate

    web_args = ("--hosts", "1", "--pages", "3", "--special", "requisites", "--tls")  # as most sites
    with start_testweb(tmp_path, *web_args) as web:
        site = web.hosts_of_kind("requisites")[0]
        assert site["root"].startswith("https://")
        out = tmp_path / "collection"
        res = _run(str(EXAMPLES / "archive-site.sh"), site["root"], str(out), *_net(web))
        assert res.returncode == 0, res.stderr
        _audit_ok(web)
        needed = {u for urls in site["notes"]["requisites"].values() for u in urls}
        wanted = needed | set(site["pages"])
        served = {u: hashlib.sha256(web.get(u)[2]).hexdigest() for u in sorted(wanted)}
    warcs = sorted(out.glob("warc/*.warc.gz"))
    assert res.stderr.rstrip().splitlines()[-1] == (
        f"crawlkit archive: {len(warcs)} WARC files in {out}/warc; "
        f"report: {out}/report.html; package: {out}/collection.wacz"
    )
    archived: set[str] = set()
    for warc in warcs:
        with open(warc, "rb") as f:
            archived |= {
                r.rec_headers.get_header("WARC-Target-URI")
                for r in ArchiveIterator(f)
                if r.rec_type in ("response", "revisit")
            }
    assert wanted - archived == set()  # (the images share bytes: most are revisits)
    report = orjson.loads((out / "report.json").read_text())["collection"]
    assert report["seeds"] == [site["root"]]
    assert report["audit"]["ok"], report["audit"]["violations"][:3]
    assert report["requisites"]["fetched"] >= len(needed)
    # the only requisite missing is the import chain, cut at its bound
    assert {m["why"].split(" (")[0] for m in report["requisites"]["missing_examples"]} == {
        "refused: requisite-depth"
    }
    assert {w["name"] for w in report["warc_files"]} == {w.name for w in warcs}
    wacz = out / "collection.wacz"
    check = wacz_validate(wacz)
    assert check.returncode == 0, check.stdout
    # replay from the package's own archive/ and index, as a reader of the WACZ would
    root = tmp_path / "pywb"
    coll = root / "collections" / "c"
    (coll / "archive").mkdir(parents=True)
    (coll / "indexes").mkdir()
    with zipfile.ZipFile(wacz) as zf:
        assert {"reports/report.data.json", "reports/report.html"} <= set(zf.namelist())
        for name in zf.namelist():
            if name.startswith("archive/"):
                with zf.open(name) as src, open(coll / name, "wb") as dst:
                    shutil.copyfileobj(src, dst)
        (coll / "indexes" / "index.cdxj").write_bytes(zf.read("indexes/index.cdx"))
    got = pywb_replay(root, "c", *sorted(wanted))
    for url, digest in served.items():
        assert got[url]["status"] == 200, url
        assert got[url]["sha256"] == digest, url


def test_archive_site_without_crawlkit_on_path(tmp_path: Path) -> None:
    """A new shell without crawlkit on PATH: the checkout's .venv, else a clear error."""
    import shutil

    script = tmp_path / "examples" / "archive-site.sh"
    script.parent.mkdir()
    shutil.copy(EXAMPLES / "archive-site.sh", script)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    if shutil.which("crawlkit", path=env["PATH"]):
        pytest.skip("crawlkit is installed system-wide here")
    res = _run("sh", str(script), "http://x.test/", str(tmp_path / "c"), env=env)
    assert res.returncode == 127
    assert "crawlkit is not on PATH: install it" in res.stderr
    venv = tmp_path / ".venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "crawlkit").write_text('#!/bin/sh\necho "called: $*"\n')
    (venv / "crawlkit").chmod(0o755)
    res = _run("sh", str(script), "http://x.test/", "c", "--for", "1h", env=env)
    assert res.returncode == 0 and res.stdout == "called: archive http://x.test/ c --for 1h\n"
