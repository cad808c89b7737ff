"""``--config FILE``: option values from a TOML file, flags winning over the file.

A stage that takes ``--config`` (``fetch``) reads the same file as ``crawl``: keys
of crawl's other options are checked as crawl would and otherwise left alone, so
``crawl --explain`` can hand its config file to the stage.

The option is eager: its callback reads the file before click reads the other
options and puts the values in ``ctx.default_map``, so a value in the file acts as
that option's default and a flag given on the command line wins. Which keys and
types the file may hold is read off the command's own options (seeds stay on the
command line, or in a seeds file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import click
import typer
from click.core import ParameterSource

from crawlkit.crawl.config import HOST_KEYS, OptionKind, load_config

__all__ = ["ConfigOption", "config_line", "value_origin"]


def _kinds(command: click.Command) -> dict[str, tuple[str, str]]:
    """long option name -> (parameter name, OptionKind) for every option but --config."""
    out: dict[str, tuple[str, str]] = {}
    for param in command.params:
        if param.name in (None, "config"):
            continue
        if not isinstance(param, click.Option):
            continue
        longs = [o for o in param.opts if o.startswith("--")]
        if not longs:
            continue
        if param.is_flag:
            kind = OptionKind.BOOL
        elif param.multiple:
            kind = OptionKind.STRINGS
        elif isinstance(param.type, click.types.IntParamType):
            kind = OptionKind.INT
        elif isinstance(param.type, click.types.FloatParamType):
            kind = OptionKind.FLOAT
        else:
            kind = OptionKind.STRING
        out[longs[0][2:]] = (param.name, kind)
    return out


def _load(ctx: click.Context, _param: click.Parameter, value: Path | None) -> Path | None:
    if value is None:
        return None
    kinds = _kinds(ctx.command)
    accepted = {k: kind for k, (_, kind) in kinds.items()}
    if ctx.command.name != "crawl":
        # A stage of the crawl reads the crawl's config file: the keys of crawl's other
        # stages are checked as crawl checks them, then left to those stages.
        root = ctx.find_root()
        crawl = getattr(root.command, "get_command", lambda *_: None)(root, "crawl")
        if isinstance(crawl, click.Command):
            accepted = {**{k: kind for k, (_, kind) in _kinds(crawl).items()}, **accepted}
    config = load_config(value, accepted)
    defaults: dict[str, Any] = dict(ctx.default_map or {})
    for key, item in config.options.items():
        if key in kinds:
            defaults[kinds[key][0]] = item
    ignored = [h for h, s in config.hosts.items() if s.get("ignore-robots")]
    if ignored and "ignore-robots-for" in kinds:
        name = kinds["ignore-robots-for"][0]
        defaults[name] = [*defaults.get(name, []), *ignored]
    ctx.default_map = defaults
    ctx.meta["crawlkit.crawl.config.hosts"] = config.hosts
    ctx.meta[_WHERE] = {kinds[key][0]: where for key, where in config.where.items() if key in kinds}
    return value


_WHERE = "crawlkit.crawl.config.where"  # parameter name -> "FILE:LINE" of its key


def config_line(ctx: click.Context | None, name: str) -> str | None:
    """ "FILE:LINE" of the config file key that gave parameter ``name`` its value, or
    None when the value came from the command line or a default."""
    if ctx is None:
        return None
    where = ctx.meta.get(_WHERE, {}).get(name)
    if where is None or ctx.get_parameter_source(name) is not ParameterSource.DEFAULT_MAP:
        return None
    return str(where)


def value_origin(flag: str) -> str:
    """How an error about ``flag``'s value (``--min-delay``) names where it came from:
    ``FILE:LINE: min-delay`` when a config file gave it, else the flag."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return flag
    name = next((p.name for p in ctx.command.params if flag in getattr(p, "opts", ())), None)
    where = config_line(ctx, name) if name else None
    return f"{where}: {flag.lstrip('-')}" if where else flag


ConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--config",
        help="Read option values from this TOML file (long option names without the "
        'dashes, e.g. min-delay = "2s"; [hosts."NAME"] tables with '
        + ", ".join(HOST_KEYS)
        + "); flags given on the command line win. An unknown key or a wrong type is an "
        "error naming the file and line.",
        is_eager=True,
        callback=_load,
        show_default=False,
    ),
]
