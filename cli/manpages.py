"""Generate man/*.1 from the click command tree, the same source as ``--help``.

``python -m crawlkit_cli.manpages man`` rewrites the pages; the test suite renders
them again and fails when a committed page differs (the help text changed and the
pages were not regenerated with ``make man``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
import typer
from crawlkit_cli.main import app

from crawlkit import __version__

DATE = "2026"  # fixed, so regenerating pages does not churn them


def _roff(text: str) -> str:
    out = []
    for line in text.replace("\\", "\\\\").splitlines():
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line.replace("-", "\\-"))
    return "\n".join(out)


def _paragraphs(text: str) -> str:
    """Help text to roff: blank-line paragraphs, indented blocks kept verbatim."""
    blocks: list[str] = []
    for para in text.strip().split("\n\n"):
        lines = [line for line in para.split("\n") if line != "\b"]  # click's no-rewrap mark
        if all(line.startswith("    ") for line in lines if line.strip()):
            body = "\n".join(line[4:] for line in lines)
            blocks.append(".PP\n.RS 4\n.nf\n" + _roff(body) + "\n.fi\n.RE")
        else:
            body = " ".join(line.strip() for line in lines)
            blocks.append(".PP\n" + _roff(body))
    return "\n".join(blocks)


def _options(ctx: click.Context, command: click.Command) -> str:
    parts = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            if isinstance(param, click.Argument):
                record = (param.make_metavar(ctx), getattr(param, "help", "") or "")
            else:
                continue
        name, help_text = record
        parts.append(f".TP\n.B {_roff(name)}\n{_roff(help_text)}")
    return "\n".join(parts)


def render(path: list[str], command: click.Command, parent: click.Context | None) -> str:
    name = " ".join(path)
    ctx = click.Context(command, info_name=path[-1], parent=parent)
    title = "-".join(path).upper()
    lines = [
        f'.TH {title} 1 "{DATE}" "crawlkit {__version__}" "crawlkit manual"',
        ".SH NAME",
        f"{_roff('-'.join(path))} \\- {_roff(command.get_short_help_str(limit=200))}",
        ".SH SYNOPSIS",
        f".B {_roff(name)}",
        _roff(" ".join(command.collect_usage_pieces(ctx))),
        ".SH DESCRIPTION",
        _paragraphs(command.help or ""),
        ".SH OPTIONS",
        _options(ctx, command),
    ]
    if isinstance(command, click.Group):
        for sub_name in command.list_commands(ctx):
            sub = command.get_command(ctx, sub_name)
            assert sub is not None
            sub_ctx = click.Context(sub, info_name=sub_name, parent=ctx)
            lines += [
                f".SH {_roff((name + ' ' + sub_name).upper())}",
                f".B {_roff(name + ' ' + sub_name)}",
                _roff(" ".join(sub.collect_usage_pieces(sub_ctx))),
                _paragraphs(sub.help or ""),
                _options(sub_ctx, sub),
            ]
    lines += [
        ".SH EXIT STATUS",
        "0 success, 1 failure, 2 usage error. Bad input records are reported on stderr "
        "with their line number and skipped.",
        ".SH SEE ALSO",
        "crawlkit(1)",
    ]
    return "\n".join(line for line in lines if line) + "\n"


def pages() -> dict[str, str]:
    """File name → page text, for the program, every command and every subcommand."""
    root = typer.main.get_command(app)
    root_ctx = click.Context(root, info_name="crawlkit")
    out = {"crawlkit.1": render(["crawlkit"], root, None)}
    assert isinstance(root, click.Group)
    for name in root.list_commands(root_ctx):
        command = root.get_command(root_ctx, name)
        assert command is not None
        out[f"crawlkit-{name}.1"] = render(["crawlkit", name], command, root_ctx)
        if isinstance(command, click.Group):  # man crawlkit-frontier-add, too
            group_ctx = click.Context(command, info_name=name, parent=root_ctx)
            for sub_name in command.list_commands(group_ctx):
                sub = command.get_command(group_ctx, sub_name)
                assert sub is not None
                out[f"crawlkit-{name}-{sub_name}.1"] = render(
                    ["crawlkit", name, sub_name], sub, group_ctx
                )
    return out


def write(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for filename, text in pages().items():
        target = directory / filename
        target.write_text(text, encoding="utf-8")
        written.append(target)
    for stale in directory.glob("*.1"):
        if stale not in written:
            stale.unlink()
    return written


if __name__ == "__main__":
    for p in write(Path(sys.argv[1] if len(sys.argv) > 1 else "man")):
        print(p)
