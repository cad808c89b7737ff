"""``crawl --explain`` is exact: the printed stage commands, run in a shell over files,
fetch what ``crawl`` fetches with the same settings, with the same request headers."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import click
import orjson
import pytest
from conftest import crawlkit, start_testweb
from crawlkit_cli.app import app
from crawlkit_cli.explain import CRAWL_ONLY, STAGES, TEMPLATED
from typer.main import get_command

from crawlkit.streams import read_records

BIN = Path(sys.executable).parent


def _sent(requests: list[dict], since: int) -> dict[tuple[str, str], set[tuple]]:
    """(host, path) -> the header sets sent for it (connection details left out)."""
    out: dict[tuple[str, str], set[tuple]] = defaultdict(set)
    for rec in requests[since:]:
        headers = {
            k: v for k, v in rec["headers"].items() if k not in ("connection", "content-length")
        }
        out[(rec["host"], rec["path"])].add(tuple(sorted(headers.items())))
    return dict(out)


def _run_pipeline(explained: str, state: Path, max_cycles: int = 40) -> int:
    """Run the explained commands as a user would in a shell: the seed line once, then
    the cycle's lines, cycle after cycle, until a batch comes out empty."""
    lines = explained.splitlines()
    seed = [line for line in lines[:2] if not line.startswith("#")]
    cycle_at = next(i for i, line in enumerate(lines) if line.startswith("# one cycle of"))
    cycle = [line for line in lines[cycle_at:] if not line.startswith("#")]
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}

    def sh(command: str, c: Path) -> None:
        res = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command],
            env={**env, "C": str(c)},
            capture_output=True,
            timeout=120,
        )
        assert res.returncode == 0, (command, res.stderr.decode(errors="replace"))

    for command in seed:
        sh(command, state)
    for n in range(1, max_cycles + 1):
        c = state / "crawl" / "cycles" / f"{n:06d}"
        c.mkdir(parents=True)
        sh(cycle[0], c)  # frontier next
        if not list(read_records([c / "batch.ndjson.zst"])):
            return n - 1
        for command in cycle[1:]:
            sh(command, c)
    raise AssertionError("the pipeline did not finish")


@pytest.mark.skipif(
    not (BIN / "crawlkit").exists() or shutil.which("bash") is None,
    reason="needs the crawlkit command beside the interpreter, and bash",
)
def test_the_explained_pipeline_fetches_what_crawl_fetches(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("# pages never to fetch\n/p1[0-9]*$\n")
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "6", "--special", "none") as web:
        first, second = sorted(h for h in web.hosts if h.startswith("h"))[:2]
        cookies = tmp_path / "cookies.txt"
        cookies.write_text(f"{first}\tFALSE\t/\tFALSE\t0\tsession\tabc\n")
        netrc = tmp_path / "netrc"
        netrc.write_text(f"machine {second} login user password secret\n")
        settings = [
            "--cookies",
            str(cookies),
            "--netrc",
            str(netrc),
            str(web.seeds),
            "--scope",
            "any",
            "--min-delay",
            "0.02s",
            "--delay-factor",
            "0",
            "--per-ip",
            "3",
            "--timeout",
            "9s",
            "--agent",
            "pipetest/1.0",
            "--header",
            "X-Pipeline: same",
            "--exclude",
            r"/p3$",
            "--ignore-file",
            str(ignore),
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
        ]
        crawl_state = tmp_path / "crawl"
        res = crawlkit("crawl", *settings, "--state", str(crawl_state), timeout=180)
        assert res.code == 0, res.stderr
        by_crawl = web.requests()
        pipe_state = tmp_path / "pipe"
        explained = crawlkit("crawl", *settings, "--state", str(pipe_state), "--explain")
        assert explained.code == 0, explained.stderr
        for flag in ("--exclude", "--ignore-file", "--header", "--cookies", "--netrc"):
            assert flag in explained.text
        cycles = _run_pipeline(explained.text, pipe_state)
        assert cycles >= 2
        by_pipe = web.requests()[len(by_crawl) :]
    crawl_sent, pipe_sent = _sent(by_crawl, 0), _sent(by_pipe, 0)
    assert any(path.endswith("/p3") for _, path in _sent(by_crawl, 0)) is False
    assert len(crawl_sent) > 10
    assert set(pipe_sent) == set(crawl_sent)
    assert pipe_sent == crawl_sent  # the same headers for every URL
    for sent in crawl_sent.values():
        for headers in sent:
            names = dict(headers)
            assert names["user-agent"] == "pipetest/1.0"
            if "x-pipeline" not in names:  # robots.txt goes without request settings
                continue
            assert names["x-pipeline"] == "same"
    # the request settings went where they belong, in both runs alike
    sent_to = {host: set() for host, _ in crawl_sent}
    for (host, _), sent in crawl_sent.items():
        for headers in sent:
            sent_to[host] |= {name for name, _ in headers}
    assert "cookie" in sent_to[next(h for h in sent_to if h.startswith(first))]
    assert "authorization" in sent_to[next(h for h in sent_to if h.startswith(second))]
    assert "authorization" not in sent_to[next(h for h in sent_to if h.startswith(first))]


@pytest.mark.skipif(
    not (BIN / "crawlkit").exists() or shutil.which("bash") is None,
    reason="needs the crawlkit command beside the interpreter, and bash",
)
def test_a_cycle_that_writes_no_warc_file_runs_through(tmp_path: Path) -> None:
    """The fetcher refuses the only URL (a loopback address without --allow-net: no
    request is made), so the cycle writes no WARC file: extract and the move of its
    files still succeed, on an empty directory, and dedup reads extract's output."""
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://127.0.0.1:9/\n")
    state = tmp_path / "pipe"
    explained = crawlkit("crawl", str(seeds), "--state", str(state), "--explain")
    assert explained.code == 0, explained.stderr
    # the seed line and the cycle up to dedup (the rest is run by the test above)
    lines = [line for line in explained.lines if not line.startswith("#")]
    upto = next(i for i, line in enumerate(lines) if line.startswith("crawlkit frontier links"))
    cycle = state / "crawl" / "cycles" / "000001"
    cycle.mkdir(parents=True)
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "C": str(cycle)}
    for command in lines[:upto]:
        res = subprocess.run(
            ["bash", "-o", "pipefail", "-c", command], env=env, capture_output=True, timeout=120
        )
        assert res.returncode == 0, (command, res.stderr.decode(errors="replace"))
    (refused,) = list(read_records([cycle / "fetch.ndjson"]))
    assert refused["outcome"] == "refused"
    assert list(read_records([cycle / "pages.ndjson.zst"])) == []
    assert not list((state / "warc").rglob("*.warc.gz"))


def _checks(param: click.Option) -> tuple:
    kind = param.type
    return (type(kind).__name__, getattr(kind, "min", None), getattr(kind, "max", None))


def test_every_crawl_option_is_a_stage_option_with_the_same_checks() -> None:
    root = get_command(app)
    assert isinstance(root, click.Group)
    ctx = click.Context(root)
    crawl = root.get_command(ctx, "crawl")
    assert crawl is not None
    stages: list[click.Command] = []
    for path in STAGES.values():
        command: click.Command | None = root
        for name in path:
            assert isinstance(command, click.Group)
            command = command.get_command(ctx, name)
        assert command is not None
        stages.append(command)
    by_flag: dict[str, list[click.Option]] = defaultdict(list)
    for stage in stages:
        for p in stage.params:
            if isinstance(p, click.Option):
                for o in p.opts:
                    by_flag[o].append(p)
    for param in crawl.params:
        if not isinstance(param, click.Option):
            continue
        flag = next(o for o in param.opts if o.startswith("--"))
        if flag in TEMPLATED or flag in CRAWL_ONLY:
            continue
        assert flag in by_flag, f"crawl {flag} belongs to no stage"
        for theirs in by_flag[flag]:
            assert theirs.help == param.help, flag  # declared once: the same words
            assert _checks(theirs) == _checks(param), flag  # and the same checks


def test_defaults_shared_by_the_cli_and_the_library_agree() -> None:
    from crawlkit_cli.options import MAX_DEPTH_DEFAULT

    from crawlkit.frontier.traps import TrapLimits

    assert TrapLimits().max_depth == MAX_DEPTH_DEFAULT
    from crawlkit_cli.options import URL_LENGTH_DEFAULT

    from crawlkit.patterns import MAX_URL_LENGTH

    assert URL_LENGTH_DEFAULT == MAX_URL_LENGTH


def test_seen_merge_with_the_fetch_log_applies_crawls_link_step(tmp_path: Path) -> None:
    fetched = tmp_path / "fetch.ndjson"
    fetched.write_bytes(
        b"".join(
            orjson.dumps(r) + b"\n"
            for r in (
                {"url": "http://a.test/", "outcome": "fetched"},
                {"url": "http://a.test/s5.css", "outcome": "fetched", "requisite_hops": 5},
                {"url": "http://a.test/s1.css", "outcome": "fetched", "requisite_hops": 1},
            )
        )
    )
    links = [
        {"url": "http://a.test/next", "reason": "link", "from": "http://a.test/"},
        {"url": "http://a.test/ad", "reason": "link", "from": "http://a.test/", "nofollow": True},
        {"url": "http://cdn.test/i.png", "reason": "requisite", "from": "http://a.test/"},
        {"url": "http://a.test/s6.css", "reason": "requisite", "from": "http://a.test/s5.css"},
        {"url": "http://a.test/s2.css", "reason": "requisite", "from": "http://a.test/s1.css"},
        {"url": "http://a.test/page", "reason": "link", "from": "http://a.test/s1.css"},
    ]
    data = b"".join(orjson.dumps(r) + b"\n" for r in links)
    refused = tmp_path / "refused.ndjson"
    args = ("seen-merge", "--fetched", str(fetched), "--refused", str(refused), "--dry-run")
    res = crawlkit(*args, "--state", str(tmp_path / "S"), input=data)
    assert res.code == 0, res.stderr
    out = {r["url"]: r for r in map(orjson.loads, res.stdout.splitlines())}
    assert set(out) == {"http://a.test/next", "http://cdn.test/i.png", "http://a.test/s2.css"}
    assert out["http://cdn.test/i.png"]["requisite_hops"] == 1
    assert out["http://a.test/s2.css"]["requisite_hops"] == 2
    why = {r["url"]: r["refused"] for r in map(orjson.loads, refused.read_bytes().splitlines())}
    assert why == {
        "http://a.test/s6.css": "requisite-depth",
        "http://a.test/page": "from-requisite",
    }
    # --no-requisites passes requisites over, as crawl --no-requisites does
    res = crawlkit(*args, "--no-requisites", "--state", str(tmp_path / "S"), input=data)
    assert {r["url"] for r in map(orjson.loads, res.stdout.splitlines())} == {"http://a.test/next"}


def test_explain_passes_the_ip_table_to_fetch(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    table = tmp_path / "ip.table"
    res = crawlkit(
        "crawl", str(seeds), "--state", str(tmp_path / "S"), "--ip-table", str(table), "--explain"
    )
    assert res.code == 0, res.stderr
    (fetch_line,) = [line for line in res.text.splitlines() if line.startswith("crawlkit fetch")]
    assert f"--ip-table {table}" in fetch_line
    assert not table.exists()  # explaining opens nothing


def test_explain_refuses_a_bad_scope_as_a_run_does(tmp_path: Path) -> None:
    """--explain printed a pipeline for --scope '(a' and exited 0; the run refuses it."""
    args = ["crawl", "http://a.test/", "--state", str(tmp_path / "S"), "--scope", "(a"]
    for extra in (["--explain"], ["--for", "1s"]):
        res = crawlkit(*args, *extra)
        assert res.code == 2, (extra, res.stderr)
        [line] = res.stderr.strip().splitlines()
        assert "--scope" in line and "bad regular expression" in line
