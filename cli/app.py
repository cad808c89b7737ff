"""The typer application object and the shared state of one invocation.

Command modules import ``app`` from here and register themselves on it. Nothing
imports them all: the root group (:class:`LazyGroup`) imports a command's module the
first time that command is asked for, and lists commands from the table in
:mod:`crawlkit_cli.commands`.
"""

from __future__ import annotations

import importlib
from difflib import get_close_matches

import click
import typer
import typer.core
from click.utils import make_default_short_help
from crawlkit_cli.commands import COMMANDS

from crawlkit.diag import Reporter

# Plain click help everywhere. With rich installed (typer depends on it), typer 0.20
# escapes "[default: ...]" as "\\[default: ...]" even when rich markup is off
# (`crawlkit canon --help` showed it), and rich output would also differ from the man
# pages generated from the same text.
typer.core.HAS_RICH = False


class LazyGroup(typer.core.TyperGroup):
    """The root ``crawlkit`` group, importing one command module on demand.

    ``crawlkit canon`` imports ``crawlkit_cli.canon`` and its libraries only, and
    ``crawlkit --help`` imports no command module at all; importing all of them
    (numpy, aiohttp, warcio, selectolax, ...) cost about half a second per run.
    What the user sees is the same as with every module imported: names in the
    table's order, the same summaries, the same help and errors.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The click command NAME (importing its module once), or None if unknown."""
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            importlib.import_module(f"crawlkit_cli.{COMMANDS[cmd_name].module}")
            # The module registered itself on `app`; let typer build the click
            # commands as it would for the whole app, and keep the ones not held yet.
            built = typer.main.get_command(app)
            assert isinstance(built, click.Group)
            for name, command in built.commands.items():
                if name not in self.commands:
                    self.commands[name] = _verbatim_blocks(_without_envvar_hints(command))
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # click's own version asks every command for its summary, which would import
        # them all; the table holds the same first sentences, shortened the same way.
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [(name, make_default_short_help(COMMANDS[name].summary, limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        # TyperGroup suggests close names from the commands already built (here,
        # usually none); suggest from the whole table, in typer's words.
        try:
            return click.Group.resolve_command(self, ctx, args)
        except click.UsageError as exc:
            matches = get_close_matches(args[0], self.list_commands(ctx)) if args else []
            if self.suggest_commands and matches:
                suggestions = ", ".join(f"{m!r}" for m in matches)
                exc.message = f"{exc.message.rstrip('.')}. Did you mean {suggestions}?"
            raise


def _verbatim_blocks(command: click.Command) -> click.Command:
    """Keep each indented block of a help text (an example's lines) line by line.

    click rewraps an indented paragraph to the terminal's width, so on a wide one
    the two example commands of `crawlkit crawl --help` ran into one line; a
    paragraph that starts with click's no-rewrap mark (a line of "\\b") is kept.
    """
    if command.help:
        paras = command.help.split("\n\n")
        for i, para in enumerate(paras):
            lines = [line for line in para.split("\n") if line.strip()]
            if lines and all(line.startswith("    ") for line in lines):
                paras[i] = "\b\n" + para
        command.help = "\n\n".join(paras)
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _verbatim_blocks(sub)
    return command


def _without_envvar_hints(command: click.Command) -> click.Command:
    """Turn off the env var hint of options that have no env var, in the whole tree.

    typer marks every option ``show_envvar``, and click then ends each error about it
    with "(env var: 'None')" (`crawlkit canon --rules bogus`). crawlkit reads no
    environment variables, so no hint is ever wanted.
    """
    for param in command.params:
        if isinstance(param, click.Option) and not param.envvar:
            param.show_envvar = False
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _without_envvar_hints(sub)
    return command


app = typer.Typer(
    name="crawlkit",
    cls=LazyGroup,
    help="A polite, durable web crawler as composable Unix-style stages.\n\n"
    "Each command reads and writes NDJSON records (zstd when a file ends in .zst) or "
    "WARC files, so a crawl is a pipeline of pipes or files. Run 'crawlkit COMMAND "
    "--help' for one command.",
    # Rich tracebacks print local variables, which can hold cookies or auth headers.
    pretty_exceptions_enable=False,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)


class Invocation:
    """What the exit point needs to know about the running command."""

    command: str = ""
    debug: bool = False
    argv: tuple[str, ...] = ()  # the words after "crawlkit" as given (for provenance)
    # The command's reporters: the exit point asks them whether a damaged input was
    # read when the command ends early, its reader of stdout gone.
    reporters: list[Reporter]

    def __init__(self) -> None:
        self.reporters = []

    @property
    def input_damaged(self) -> bool:
        """Whether the command has read a truncated or corrupt input (and said so)."""
        return any(rep.input_damaged for rep in self.reporters)


invocation = Invocation()


def reporter() -> Reporter:
    """The stderr reporter of the running command (``crawlkit <command>: ...``)."""
    name = f"crawlkit {invocation.command}".strip()
    rep = Reporter(name)
    invocation.reporters.append(rep)
    return rep


@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", help="Show a full traceback when a command fails.", is_eager=True
    ),
) -> None:
    invocation.debug = debug
