"""A pipe's reads, for tests and benchmarks that read a document as ``curl URL |
crawlkit ... -`` gives it: each read returns at most ``size`` bytes, what was written
so far (a first read of ``<?xml v`` hides the declaration's encoding)."""

from __future__ import annotations

import io


class Trickle(io.RawIOBase):
    """``data`` read at most ``size`` bytes at a time (wrap in io.BufferedReader)."""

    def __init__(self, data: bytes, size: int):
        self._data = memoryview(data)
        self._size = size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._size, len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n
