"""The command line as a user meets it: exit codes, one-line errors, pipes, help, man pages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import orjson
import typer
from crawlkit_cli.main import app
from crawlkit_cli.manpages import pages

ROOT = Path(__file__).resolve().parent.parent


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
        shell=True, capture_output=True, timeout=120, executable="/bin/bash",
        check=False,
    )  # fmt: skip
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
