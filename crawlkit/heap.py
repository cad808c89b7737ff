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

Trimming gives back only whole free pages: a page that still holds part of a live
chunk stays, and a long run's heap fills with such pages when large blocks come and go
among small ones. :func:`map_large_blocks` fixes glibc's threshold (``M_MMAP_THRESHOLD``) at
:data:`MMAP_THRESHOLD`, so every block that large is a mapping of its own, unmapped when
freed, instead of letting the threshold rise to the largest block freed so far (up to
32 MiB), which puts every response body and batch buffer back in the heap.

Fixing that threshold turns off glibc's adjusting of the other one, the free memory at
the heap's top past which ``free()`` gives it back (``M_TRIM_THRESHOLD``), which then
stays at its 128 KiB default. Each parse tree (Lexbor takes ~1 MiB for a document, even a
tiny one) was then given back when freed and faulted in again, page by page, by the
next page's parse: 214 against 176 µs of CPU a parse on average over 1,500 testweb
pages (21 KB median; medians of 3 runs of the minimum of 3), and 33.7 against 27.3
minor faults a parse. So :func:`map_large_blocks` fixes that threshold too, at
:data:`TRIM_THRESHOLD`: a process keeps at most that much free at its heap's top
between the trims above, which hand it back all the same (``malloc_trim`` does not
read the threshold).
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable
from typing import Any, cast

__all__ = [
    "MMAP_THRESHOLD",
    "TRIM_THRESHOLD",
    "can_release_free_heap",
    "map_large_blocks",
    "release_free_heap",
    "set_malloc_option",
]

#: Blocks of this many bytes or more are mapped apart (glibc's default starts at 128 KiB).
MMAP_THRESHOLD = 256 * 1024
#: Free memory at the heap's top that ``free()`` keeps for the next allocations.
TRIM_THRESHOLD = 16 * 1024 * 1024
_M_TRIM_THRESHOLD = -1  # glibc's malloc.h
_M_MMAP_THRESHOLD = -3


def _libc_function(name: str) -> Any | None:
    """glibc's function ``name``; None where there is none (not Linux, or musl)."""
    if not sys.platform.startswith("linux"):  # CDLL(None) is not defined everywhere
        return None
    try:
        return getattr(ctypes.CDLL(None), name)
    except (OSError, AttributeError):
        return None


def _malloc_trim() -> Callable[[int], int] | None:
    trim = _libc_function("malloc_trim")
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return cast(Callable[[int], int], trim)


_TRIM = _malloc_trim()


def can_release_free_heap() -> bool:
    """Whether :func:`release_free_heap` does anything here (glibc's ``malloc_trim``)."""
    return _TRIM is not None


def release_free_heap() -> None:
    """Return the pages of free heap memory to the system (glibc; elsewhere a no-op)."""
    if _TRIM is not None:
        _TRIM(0)


def map_large_blocks(threshold: int = MMAP_THRESHOLD, keep: int = TRIM_THRESHOLD) -> bool:
    """From now on, glibc maps every block of ``threshold`` bytes or more apart and
    unmaps it when freed, and ``free()`` keeps up to ``keep`` bytes free at the heap's
    top (see the module docstring). False, and nothing done, where there is no
    ``mallopt`` or the environment sets ``MALLOC_MMAP_THRESHOLD_`` (the operator's
    setting wins, as ``MALLOC_TRIM_THRESHOLD_`` does for ``keep``)."""
    if "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ:
        set_malloc_option(_M_TRIM_THRESHOLD, keep)
    return set_malloc_option(_M_MMAP_THRESHOLD, threshold)


def set_malloc_option(option: int, value: int) -> bool:
    """glibc's ``mallopt(option, value)`` (options from its malloc.h); False where it
    failed or there is none."""
    mallopt = _libc_function("mallopt")
    if mallopt is None:
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    return bool(mallopt(option, value))
