"""The flags of ``crawl --explain``'s stage commands, read off the options crawl was given.

Every option of ``crawlkit crawl`` that a stage command also has (the same long name,
declared once in :mod:`crawlkit_cli.options`) is written on that stage's command
line whenever crawl's value is not the stage's own default: so the explained
pipeline runs with everything the crawl was given (flags, and the values of its
``--config`` file), and a new option of both needs no line here. The options the
step templates write themselves (:data:`TEMPLATED`) and crawl's own (:data:`CRAWL_ONLY`)
are left out; ``tests/crawl/test_explain.py`` checks that every other crawl option
has a stage.
"""

from __future__ import annotations

import shlex
from typing import Any

import click

__all__ = ["CRAWL_ONLY", "STAGES", "TEMPLATED", "stage_flags"]

#: The stage commands whose lines take crawl's options: key in the step templates ->
#: the command path.
STAGES: dict[str, tuple[str, ...]] = {
    "fetch_flags": ("fetch",),
    "seen_flags": ("seen-merge",),
    "add_flags": ("frontier", "add"),
    "next_flags": ("frontier", "next"),
}

#: Written by the step templates from :class:`~crawlkit.crawl.CrawlOptions` (the state,
#: the scope, the shard, the batch size, the WARC directory).
TEMPLATED = frozenset(
    {
        "--state",
        "--scope",
        "--rules",  # extract's (the stages that read a state read its rules there)
        "--shard",
        "--shards",
        "--slot-map",
        "--per-host",
        "--no-budgets",
        "--warc-dir",
        "--batch",
        "--jobs",
    }
)

#: Options of crawl's loop as a whole, which no single stage has.
CRAWL_ONLY = frozenset(
    {
        "--max-pages",  # the crawl's own count over runs
        "--for",  # the whole crawl's time limit (fetch --for limits one fetch run)
        "--max-wait",  # how long the loop waits for deferred URLs
        "--sitemap",  # extra seeds
        "--workers",  # the parent of N worker crawls, no stage (--explain says so)
        "--json",
        "--explain",
        "--timeline",  # the crawl loop's own states (no stage has that loop)
    }
)


def _long(param: click.Parameter) -> str | None:
    names = [o for o in param.opts if o.startswith("--")]
    return names[0] if names else None


def _command(root: click.Context, path: tuple[str, ...]) -> click.Command | None:
    command: Any = root.command
    ctx = root
    for name in path:
        if not isinstance(command, click.Group):
            return None
        command = command.get_command(ctx, name)
        if command is None:
            return None
        ctx = click.Context(command, parent=ctx, info_name=name)
    return command if isinstance(command, click.Command) else None


def _render(param: click.Option, value: Any) -> list[str]:
    """The flags that give a stage ``value`` for ``param``."""
    flag = _long(param)
    assert flag is not None
    if param.is_flag:
        if value:
            return [flag]
        off = [o for o in param.secondary_opts if o.startswith("--")]
        return off[:1]
    values = value if isinstance(value, list | tuple) else [value]
    out: list[str] = []
    for item in values:
        out += [flag, shlex.quote(str(item))]
    return out


def _same(value: Any, default: Any) -> bool:
    if value in (None, (), []) and default in (None, (), []):
        return True
    if isinstance(value, list | tuple) and isinstance(default, list | tuple):
        return list(value) == list(default)
    return bool(value == default) or str(value) == str(default)


def stage_flags(ctx: click.Context) -> dict[str, str]:
    """For each key of :data:`STAGES`, the flags (a string starting with a space, or
    empty) that give that stage the values of crawl's options in ``ctx``."""
    root = ctx.find_root()
    out: dict[str, str] = {}
    for key, path in STAGES.items():
        stage = _command(root, path)
        assert stage is not None, path
        by_flag = {_long(p): p for p in stage.params if isinstance(p, click.Option)}
        flags: list[str] = []
        for param in ctx.command.params:
            flag = _long(param)
            if not isinstance(param, click.Option) or flag is None or flag in TEMPLATED:
                continue
            theirs = by_flag.get(flag)
            if theirs is None or param.name is None:
                continue
            value = ctx.params.get(param.name)
            if flag == "--config":
                if value is not None:
                    flags += [flag, shlex.quote(str(value))]
                continue
            if _same(value, theirs.default):
                continue
            flags += _render(theirs, value)
        out[key] = "".join(" " + f for f in flags)
    return out
