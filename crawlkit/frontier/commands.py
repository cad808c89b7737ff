"""Operator commands (``frontier block`` / ``unblock``) posted to ``DIR/frontier/inbox/``.

A command is one small JSON file, ``{"op", "target", "at"}``, written atomically under a
fresh name, so it can be posted without the state directory's lock while another
process owns the frontier. The owner reads the inbox (:func:`read_commands`) when it
opens the frontier and before each batch, and deletes the files it applied after the
commit that made them durable (a crash in between applies them again: harmless).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from crawlkit.streams import atomic_write_json

__all__ = [
    "Commands",
    "blocked_record",
    "commands_waiting",
    "is_blocked",
    "normalize_target",
    "post_command",
    "read_commands",
]


def normalize_target(target: str) -> str:
    """A block target (site, host, or a URL naming a host) in the form records use."""
    text = target.strip().lower()
    if "://" in text:
        text = text.split("://", 1)[1]
        text = text.split("/", 1)[0].split("?", 1)[0].rpartition("@")[2]
    return text.rstrip(".")


def is_blocked(blocks: set[str], site: str, host: str) -> bool:
    """Whether a record of ``site`` and ``host`` is blocked: its site, its host, or its
    host without the port."""
    if not blocks:
        return False
    return site in blocks or host in blocks or host.partition(":")[0] in blocks


def blocked_record(blocks: set[str]) -> Callable[[Mapping[str, Any]], bool]:
    """Whether a URL record (its ``site`` and ``host``) is blocked by ``blocks``."""
    return lambda rec: is_blocked(blocks, str(rec.get("site", "")), str(rec.get("host", "")))


def commands_waiting(inbox: Path) -> bool:
    """Whether ``inbox`` holds a command not applied yet (the owner deletes the files
    it applied once they are committed; a file that is no command stays, ignored)."""
    return bool(read_commands(inbox, set()).files)


def post_command(directory: str | os.PathLike[str], op: str, target: str) -> Path:
    """Write an operator command (``block``/``unblock``) to ``directory/inbox``; returns
    its path. No lock needed (see the module doc)."""
    inbox = Path(directory) / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    name = f"{time.time_ns():020d}-{os.getpid()}-{op}.json"
    path = inbox / name
    atomic_write_json(path, {"op": op, "target": normalize_target(target), "at": time.time()})
    return path


@dataclass
class Commands:
    """What the inbox says: the blocks after applying it, whether a target was newly
    blocked (its queued URLs must be purged), and the command files read."""

    blocks: set[str]
    new_block: bool = False
    files: list[Path] = field(default_factory=list)


def read_commands(inbox: Path, blocks: set[str]) -> Commands:
    """Apply the inbox's commands, oldest first, to a copy of ``blocks``."""
    out = Commands(set(blocks))
    if not inbox.is_dir():
        return out
    for path in sorted(inbox.glob("*.json")):
        try:
            command = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError):
            continue  # a half-written command cannot exist (atomic rename); skip junk
        if not isinstance(command, dict):
            continue  # junk too
        target = normalize_target(str(command.get("target", "")))
        if not target:
            continue
        if command.get("op") == "block":
            if target not in out.blocks:
                out.blocks.add(target)
                out.new_block = True
        elif command.get("op") == "unblock":
            out.blocks.discard(target)
        out.files.append(path)
    return out
