"""SQLite ``IN (...)`` lists in few distinct lengths, so few statements stay prepared."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["IN_LIST_MAX", "in_lists"]

#: Values an ``IN (...)`` list holds at most (SQLite allows 32,766 parameters).
IN_LIST_MAX = 512


def in_lists(values: list[Any]) -> Iterator[tuple[str, list[Any]]]:
    """``values`` in ``IN (...)`` lists of at most :data:`IN_LIST_MAX`: ``(marks,
    params)``, each list padded with its last value to a power of two.

    sqlite3 keeps a connection's last 128 statements prepared, and one with a list of
    n parameters holds memory in proportion to n: lists of every length from 1 to 500
    kept 6.6 MiB prepared in each process that asks (128 distinct lists of 200-327
    values, glibc's mallinfo2), where ten lengths keep a tenth of that. Repeating a
    value in the list changes no answer."""
    for i in range(0, len(values), IN_LIST_MAX):
        chunk = values[i : i + IN_LIST_MAX]
        size = 1 << (len(chunk) - 1).bit_length()
        chunk += [chunk[-1]] * (size - len(chunk))
        yield ", ".join(["?"] * size), chunk
