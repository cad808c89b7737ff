"""Each site's recent page counts in dedup's store: ``[pages, exact, near]``.

A crawl's step process keeps the counts of every site it met for the whole run, so
their bytes a site are part of its memory slope (issue 27). A count is kept packed in
one int, ``pages | exact << 32 | near << 64``: a site of fewer than 257 pages and no
copies is then one of the interpreter's shared small ints, and any other 32 to 40
bytes, where a list of three counts was 80 bytes and more (178 bytes a site in all
against 130 now at 10,000 sites, 196 against 148 at 100,000, names included:
``bench/bench_host_memory.py``). Counts are halved
at ``2 * window`` pages, so each stays far below 2**32 (:data:`MAX_WINDOW`). On disk
they are JSON, ``{site: [pages, exact, near]}``, as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson

__all__ = ["MAX_WINDOW", "SiteCounts"]

#: The largest ``window``: counts stay below 2 * window, within a packed field.
MAX_WINDOW = 1 << 30
_FIELD = 32
_MASK = (1 << _FIELD) - 1
_EXACT = 1 << _FIELD
_NEAR = 1 << (2 * _FIELD)


def _unpack(packed: int) -> list[int]:
    return [packed & _MASK, (packed >> _FIELD) & _MASK, packed >> (2 * _FIELD)]


def _pack(counts: Any) -> int | None:
    """The packed form of ``[pages, exact, near]``; None unless it is three counts."""
    if not isinstance(counts, list) or len(counts) != 3:
        return None
    if not all(type(c) is int and 0 <= c <= _MASK for c in counts):
        return None
    return counts[0] | counts[1] << _FIELD | counts[2] << (2 * _FIELD)


class SiteCounts:
    """``{site: [pages, exact, near]}`` as dedup counts them (module doc); reads give
    lists, as the JSON has them."""

    def __init__(self) -> None:
        self._packed: dict[str, int] = {}

    def __len__(self) -> int:
        return len(self._packed)

    def __contains__(self, site: object) -> bool:
        return site in self._packed

    def __getitem__(self, site: str) -> list[int]:
        return _unpack(self._packed[site])

    def get(self, site: str, default: list[int] | None = None) -> list[int] | None:
        packed = self._packed.get(site)
        return default if packed is None else _unpack(packed)

    def items(self) -> Iterator[tuple[str, list[int]]]:
        for site, packed in self._packed.items():
            yield site, _unpack(packed)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SiteCounts):
            return self._packed == other._packed
        if isinstance(other, Mapping):
            return dict(self.items()) == dict(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def update(self, counts: Mapping[str, Any]) -> str | None:
        """Take ``counts`` as read from JSON over these; the first site whose value is
        not three counts (None when all are): nothing is taken then."""
        packed: dict[str, int] = {}
        for site, value in counts.items():
            p = _pack(value)
            if p is None:
                return str(site)
            packed[site] = p
        self._packed.update(packed)
        return None

    def count(self, site: str, kind: str, window: int) -> None:
        """One page of ``site``, ``unique``, ``exact`` or ``near``; at ``2 * window``
        pages every count of the site is halved."""
        packed = self._packed.get(site, 0) + 1
        if kind == "exact":
            packed += _EXACT
        elif kind == "near":
            packed += _NEAR
        if packed & _MASK >= 2 * window:
            pages, exact, near = _unpack(packed)
            packed = pages // 2 | (exact // 2) << _FIELD | (near // 2) << (2 * _FIELD)
        self._packed[site] = packed

    def to_json(self, sites: Iterable[str] | None = None) -> bytes:
        """``{site: [pages, exact, near]}`` of ``sites`` (None: all of them)."""
        names = self._packed if sites is None else sites
        return orjson.dumps({site: _unpack(self._packed[site]) for site in names})
