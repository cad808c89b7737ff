"""The typer application object and the shared state of one invocation.

Command modules import ``app`` from here and register themselves; ``main`` imports
every command module, so the order of registration is the order of ``--help``.
"""

from __future__ import annotations

import typer
import typer.core

from crawlkit.diag import Reporter

# Plain click help everywhere. With rich installed (typer depends on it), typer 0.20
# escapes "[default: ...]" as "\\[default: ...]" even when rich markup is off
# (`crawlkit canon --help` showed it), and rich output would also differ from the man
# pages generated from the same text.
typer.core.HAS_RICH = False

app = typer.Typer(
    name="crawlkit",
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


invocation = Invocation()


def reporter() -> Reporter:
    """The stderr reporter of the running command (``crawlkit <command>: ...``)."""
    name = f"crawlkit {invocation.command}".strip()
    return Reporter(name)


@app.callback()
def _root(
    debug: bool = typer.Option(
        False, "--debug", help="Show a full traceback when a command fails.", is_eager=True
    ),
) -> None:
    invocation.debug = debug
