"""Config files for ``crawlkit crawl`` (TOML, read with the standard library's tomllib).

One job: read a file of option values, check every key and type against what the
command accepts, and say where a mistake is (``FILE:LINE: ...``). The command line
layer decides what the values mean and lets flags win over the file.

The file holds any option of ``crawl`` by its long name without the dashes, plus a
table of per-host settings::

    scope = "site"
    min-delay = "2s"
    exclude = ["/calendar/", "\\\\?replytocom="]
    requisites = true

    [hosts."www.example.org"]        # one exact host (or IP address), every port
    min-delay = "0.2s"            # this host's smallest gap instead of --min-delay
    ignore-robots = true          # as --ignore-robots-for www.example.org
    headers = { "X-Archive" = "yes" }

A key the command does not have, a value of the wrong type (a string where a number
belongs, one value where a list belongs), a ``[hosts."KEY"]`` whose KEY is not a host
name or IP address (``name:port``, a URL, a wildcard), or a host setting other than
the ones :data:`HOST_KEYS` lists is a :class:`~crawlkit.errors.UsageError` naming the
file and the line of the key. tomllib reports syntax errors with their line; those are
passed on the same way.
"""

from __future__ import annotations

import ipaddress
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crawlkit.errors import UsageError

__all__ = ["HOST_KEYS", "ConfigFile", "OptionKind", "load_config"]


class OptionKind:
    """What type an option's value has in the file."""

    STRING = "a string"
    INT = "an integer"
    FLOAT = "a number"
    BOOL = "true or false"
    STRINGS = "a list of strings"
    TABLE = "a table of strings"


#: Per-host settings and their kinds.
HOST_KEYS: dict[str, str] = {
    "min-delay": OptionKind.STRING,
    "ignore-robots": OptionKind.BOOL,
    "headers": OptionKind.TABLE,
}


@dataclass
class ConfigFile:
    """The checked values: ``options`` by long option name, ``hosts`` by host name."""

    path: Path
    options: dict[str, Any] = field(default_factory=dict)
    hosts: dict[str, dict[str, Any]] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)  # option -> "FILE:LINE" of its key


_TABLE = re.compile(r"^\s*\[\s*(.+?)\s*\]\s*(?:#.*)?$")
_KEY = re.compile(r"""^\s*("(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)\s*(?:\.|=)""")


def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """Where each key is (table path + key -> 1-based line), for error messages.

    A light scanner, not a TOML parser: enough to point at the line of a key that
    tomllib has already accepted.
    """
    lines: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        m = _TABLE.match(line)
        if m and not line.lstrip().startswith("[["):
            parts = re.findall(r""""((?:[^"\\]|\\.)*)"|'([^']*)'|([A-Za-z0-9_-]+)""", m.group(1))
            table = tuple(a or b or c for a, b, c in parts)
            lines.setdefault(table, number)
            continue
        k = _KEY.match(line)
        if k:
            lines.setdefault((*table, k.group(1).strip("\"'")), number)
    return lines


def _kind_ok(value: Any, kind: str) -> bool:
    if kind == OptionKind.BOOL:
        return isinstance(value, bool)
    if kind == OptionKind.INT:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == OptionKind.FLOAT:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == OptionKind.STRING:
        return isinstance(value, str)
    if kind == OptionKind.STRINGS:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == OptionKind.TABLE:
        return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
    raise AssertionError(kind)


def load_config(path: str | Path, options: dict[str, str]) -> ConfigFile:
    """Read and check ``path`` against ``options`` (long option name -> OptionKind)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"--config {path}: cannot read it ({exc})") from exc
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib says "... (at line 3, column 7)": keep its words, lead with file:line
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        where = f"{path}:{m.group(1)}" if m else str(path)
        raise UsageError(f"{where}: not valid TOML: {exc}") from exc
    lines = _key_lines(text)

    def at(*key: str) -> str:
        line = lines.get(tuple(key))
        return f"{path}:{line}" if line else str(path)

    out = ConfigFile(path)
    for key, value in data.items():
        if key == "hosts":
            if not isinstance(value, dict):
                raise UsageError(f'{at(key)}: hosts must be a table of [hosts."name"] tables')
            for host, settings in value.items():
                name = _host_name(host)
                if name is None:
                    # a table that names no host would match nothing, silently
                    raise UsageError(
                        f'{at(key, host)}: [hosts."{host}"] is not a host name (one exact '
                        "host such as www.example.org or an IP address, covering every "
                        "port; no scheme, port, path or wildcard)"
                    )
                if not isinstance(settings, dict):
                    raise UsageError(f'{at(key, host)}: [hosts."{host}"] must be a table')
                for hkey, hvalue in settings.items():
                    kind = HOST_KEYS.get(hkey)
                    if kind is None:
                        raise UsageError(
                            f"{at(key, host, hkey)}: unknown host setting {hkey!r} "
                            f"(known: {', '.join(HOST_KEYS)})"
                        )
                    if not _kind_ok(hvalue, kind):
                        raise UsageError(f"{at(key, host, hkey)}: {hkey} must be {kind}")
                out.hosts[name] = dict(settings)
            continue
        kind = options.get(key)
        if kind is None:
            close = [
                k for k in options if k.replace("-", "") == key.replace("-", "").replace("_", "")
            ]
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise UsageError(f"{at(key)}: unknown option {key!r}{hint}")
        if not _kind_ok(value, kind):
            raise UsageError(f"{at(key)}: {key} must be {kind}, not {_describe(value)}")
        out.options[key] = value
        out.where[key] = at(key)
    return out


_HOST_NAME = re.compile(r"[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?")


def _host_name(key: str) -> str | None:
    """A [hosts."KEY"] table's host as requests are matched to it (lowercase, no
    trailing dot, an IPv6 address without brackets), or None when KEY is no host."""
    name = key.strip().lower().rstrip(".")
    try:
        return str(ipaddress.ip_address(name.removeprefix("[").removesuffix("]")))
    except ValueError:
        pass
    return name if _HOST_NAME.fullmatch(name) and ".." not in name else None


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__
