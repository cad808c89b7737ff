"""Giving the heap a batch freed back to the system before the next batch.

glibc's malloc keeps what a process frees for its next allocations, and after a large
block is freed it raises its threshold for mapping blocks of their own, so the big
buffers of one batch (a cycle's response bodies and parse trees) come from the heap
and stay resident, free, between batches. After each cycle, an extract process of a
crawl held ~120 MiB of free heap in a ~150 MiB arena, for the whole run (mallinfo2 in
a 120-s few-seed crawl, issue 27); the step process's free heap grew with its indexes.

:func:`release_free_heap` hands those free pages back (``malloc_trim(0)``: 0.6 ms
median a call in the same crawl, 21 ms at most). The processes that work in batches
call it after each one; the crawl process every 10 s (``crawlkit/crawl/arenas.py``).
Elsewhere than glibc it does nothing.
"""

from __future__ import annotations

import ctypes
import sys
from collections.abc import Callable

__all__ = ["can_release_free_heap", "release_free_heap"]


def _malloc_trim() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):  # CDLL(None) is not defined everywhere
        return None
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):  # not glibc (musl): nothing to hand back
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


def can_release_free_heap() -> bool:
    """Whether :func:`release_free_heap` does anything here (glibc's ``malloc_trim``)."""
    return _TRIM is not None


def release_free_heap() -> None:
    """Return the pages of free heap memory to the system (glibc; elsewhere a no-op)."""
    if _TRIM is not None:
        _TRIM(0)
