"""The command line as a user meets it: exit codes, one-line errors, pipes, help, man pages."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
import crawlkit_cli
import orjson
import pytest
import typer
from crawlkit_cli.app import LazyGroup
from crawlkit_cli.commands import COMMANDS
from crawlkit_cli.main import app
from crawlkit_cli.manpages import pages

ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[str]:
    root = typer.main.get_command(app)
    assert isinstance(root, click.Group)
    return root.list_commands(click.Context(root))


def test_canon_plain_keeps_lines_aligned(cli) -> None:
    res = cli("canon", input=b"HTTP://A.com/x?b=1&a=2#f\nmailto:x\n\nhttp://b.com\n")
    assert res.code == 0
    assert res.lines == ["http://a.com/x?a=2&b=1", "", "", "http://b.com/"]
    assert "crawlkit canon: <stdin>:2: scheme 'mailto'" in res.stderr
    assert "<stdin>:3: empty line" in res.stderr


def test_canon_json_and_base(cli) -> None:
    res = cli("canon", "--json", "--base", "http://a.com/d/", input=b"../x\n\xff\xfe\n")
    recs = [orjson.loads(line) for line in res.lines]
    assert recs[0]["url"] == "http://a.com/x" and recs[0]["site"] == "a.com"
    assert recs[0]["error"] is None and len(recs[0]["fp"]) == 16
    assert recs[1]["url"] is None and recs[1]["error"] == "invalid UTF-8"


def test_canon_empty_line_resolves_to_the_base_only_with_base(cli) -> None:
    # WHATWG: the empty reference parses to the base without its fragment.
    res = cli("canon", "--base", "http://a.com/d/e?q=1#frag", input=b"x\n\n  \n")
    assert res.code == 0, res.stderr
    assert res.lines == ["http://a.com/d/x", "http://a.com/d/e?q=1", "http://a.com/d/e?q=1"]
    assert "empty line" not in res.stderr
    res = cli("canon", input=b"http://a.com/\n\n")
    assert res.lines == ["http://a.com/", ""] and "<stdin>:2: empty line" in res.stderr


@pytest.mark.parametrize("base", ["not a url", "ftp://a.com/"])
def test_canon_an_unusable_base_is_a_usage_error(cli, base: str) -> None:
    """Not a blank line for every input line, absolute URLs too, and exit 0."""
    res = cli("canon", "--base", base, input=b"http://z.com/\nrel\n")
    assert res.code == 2
    assert res.lines == []
    [line] = res.stderr.strip().splitlines()
    assert line.startswith("crawlkit canon: --base: ")


def test_canon_takes_url_records_of_other_stages(cli) -> None:
    lines = b'{"url": "HTTP://B.com:80/y?utm_source=1", "depth": 2}\n{"nourl": 1}\n{bad\n'
    res = cli("canon", input=lines)
    assert res.lines == ["http://b.com/y", "", ""]
    assert '<stdin>:2: a JSON record without a "url" string' in res.stderr
    assert "<stdin>:3: a line starting with '{' is not JSON" in res.stderr


def test_usage_error_exits_2_with_one_line(cli) -> None:
    res = cli("canon", "--rules", "bogus")
    assert res.code == 2
    assert res.stderr.splitlines()[0].startswith("crawlkit canon: Invalid value for '--rules'")


def test_failure_exits_1_with_one_line_and_no_traceback(cli, tmp_path) -> None:
    res = cli("canon", str(tmp_path / "nope.txt"))
    assert res.code == 1
    assert res.stderr.strip().splitlines() == [
        f"crawlkit canon: {tmp_path / 'nope.txt'}: No such file or directory"
    ]
    assert "Traceback" not in res.stderr


def test_closed_stdout_pipe_ends_quietly(tmp_path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(f"http://a.com/{i}\n" for i in range(200000)))
    proc = subprocess.run(
        f"{sys.executable} -m crawlkit canon {urls} | head -1; echo ${{PIPESTATUS[0]}} >&2",
        shell=True,
        capture_output=True,
        timeout=120,
        executable="/bin/bash",
        check=False,
    )
    assert proc.stdout == b"http://a.com/0\n"
    assert proc.stderr == b"0\n"  # nothing said, and crawlkit's own exit status is 0


def test_every_command_has_help_with_an_example(cli) -> None:
    for name in _commands():
        res = cli(name, "--help")
        assert res.code == 0, name
        assert "Example" in res.text or "Commands:" in res.text, name


def test_man_pages_match_help() -> None:
    """Fails when help text changed without `make man` (the pages are generated)."""
    expected = pages()
    committed = {p.name: p.read_text("utf-8") for p in (ROOT / "man").glob("*.1")}
    assert set(committed) == set(expected), "run `make man`"
    for name, text in expected.items():
        assert committed[name] == text, f"man/{name} is stale: run `make man`"
    root = typer.main.get_command(app)
    for name in _commands():
        assert f"crawlkit-{name}.1" in committed
        command = root.get_command(click.Context(root), name)  # type: ignore[attr-defined]
        if isinstance(command, click.Group):
            for sub in command.list_commands(click.Context(command)):
                assert f"crawlkit-{name}-{sub}.1" in committed


def test_python_dash_m_and_console_script_agree() -> None:
    a = subprocess.run(
        [sys.executable, "-m", "crawlkit", "--help"], capture_output=True, check=True
    )
    assert b"canon" in a.stdout and b"shard" in a.stdout


# -- start-up: a command imports its own module and libraries only -----------------------
HEAVY = {
    "numpy",
    "aiohttp",
    "httpx",
    "uvloop",
    "warcio",
    "selectolax",
    "asyncio",
    "crawlkit.fetch",
    "crawlkit.crawl",
    "crawlkit.frontier",
    "crawlkit.testweb",
    *(f"crawlkit_cli.{m.name}" for m in pkgutil.iter_modules(crawlkit_cli.__path__)),
} - {
    "crawlkit_cli.app",
    "crawlkit_cli.commands",
    "crawlkit_cli.main",
    "crawlkit_cli.options",
    "crawlkit_cli.canon",
}

# Runs one command line in-process, then says which of HEAVY it imported (on stderr,
# as stdout carries the command's output).
IMPORTS = """
import json, sys
from crawlkit_cli.main import run
code = run(sys.argv[2:])
heavy = set(json.loads(sys.argv[1]))
print(json.dumps({"code": code, "heavy": sorted(m for m in sys.modules if m in heavy),
                  "canon": "crawlkit_cli.canon" in sys.modules}), file=sys.stderr)
"""


def _imports(*args: str, input: bytes = b"") -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, "-c", IMPORTS, json.dumps(sorted(HEAVY)), *args],
        input=input,
        capture_output=True,
        timeout=60,
        check=True,
    )
    return json.loads(proc.stderr.splitlines()[-1])


def test_canon_and_help_import_no_other_command() -> None:
    """`crawlkit canon` must not pay for numpy, aiohttp, ... (about 0.4 s a run)."""
    assert _imports("canon", input=b"http://a.test/\n") == {
        "code": 0,
        "heavy": [],
        "canon": True,
    }
    assert _imports("--help") == {"code": 0, "heavy": [], "canon": False}
    assert _imports("caon") == {"code": 2, "heavy": [], "canon": False}
    # and the check can see an import: `fetch` brings in its libraries
    fetch = _imports("fetch", "--help")["heavy"]
    assert isinstance(fetch, list) and {"crawlkit_cli.fetch", "crawlkit.fetch"} <= set(fetch)


def test_command_table_matches_the_commands() -> None:
    """`crawlkit --help` is printed from COMMANDS; it must say what the commands say."""
    for module in pkgutil.iter_modules(crawlkit_cli.__path__):
        importlib.import_module(f"crawlkit_cli.{module.name}")
    root = typer.main.get_command(app)
    assert isinstance(root, LazyGroup)
    assert set(root.commands) == set(COMMANDS), "add the command to cli/commands.py"
    ctx = click.Context(root, info_name="crawlkit")
    for name, entry in COMMANDS.items():
        assert root.commands[name].get_short_help_str(limit=10**6) == entry.summary, name
    for width in (40, 60, 80, 100, 200):  # the summaries are shortened to fit the width
        lazy, eager = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
        root.format_commands(ctx, lazy)
        click.Group.format_commands(root, ctx, eager)  # asks every command itself
        assert lazy.getvalue() == eager.getvalue(), width


SHARED_FETCH_OPTIONS = (
    "--concurrency",
    "--min-delay",
    "--delay-factor",
    "--per-ip",
    "--timeout",
    "--agent",
    "--max-body",
    "--backoff",
    "--max-backoff",
    "--warc-size",
    "--warc-prefix",
    "--allow-net",
    "--hosts-file",
    "--ca-file",
    "--insecure",
    "--dns-server",
    "--shards",
    "--slot-map",
)


def _options(name: str) -> dict[str, click.Option]:
    root = typer.main.get_command(app)
    assert isinstance(root, click.Group)
    command = root.get_command(click.Context(root), name)
    assert command is not None
    return {o: p for p in command.params if isinstance(p, click.Option) for o in p.opts}


def test_fetch_and_crawl_declare_their_shared_options_alike() -> None:
    """One declaration each: the same help, default, type and range in both commands."""
    fetch, crawl = _options("fetch"), _options("crawl")
    for flag in SHARED_FETCH_OPTIONS:
        a, b = fetch[flag], crawl[flag]
        assert a.to_info_dict() == b.to_info_dict(), flag


def test_fetch_and_crawl_refuse_the_same_out_of_range_politeness(cli, tmp_path) -> None:
    for flag, value in (("--concurrency", "0"), ("--per-ip", "0"), ("--delay-factor", "-1")):
        for command in (["fetch"], ["crawl", "http://127.0.0.1/"]):
            state = tmp_path / f"{command[0]}{flag}"
            res = cli(*command, "--state", str(state), flag, value, input=b"")
            assert res.code == 2, (command, flag, res.stderr)
            assert res.stderr.startswith(f"crawlkit {command[0]}: Invalid value for '{flag}'")
            assert not state.exists()  # refused before anything was touched
