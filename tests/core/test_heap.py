"""crawlkit.heap: the free heap a batch leaves is handed back to the system."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from libc_probe import PRELUDE

from crawlkit import heap

# In a process of its own: 200 blocks of 1 MiB freed but for the last one (which pins
# the top of the heap, so free() alone cannot shrink it), then RssAnon before and after.
_CHILD = PRELUDE + textwrap.dedent(
    """
    import sys
    from crawlkit.heap import release_free_heap

    # The first large block freed raises glibc's mmap threshold: the rest are heap.
    del bytearray(2 << 20)[:]
    blocks = [bytearray(b"x" * (1 << 20)) for _ in range(200)]
    last = blocks.pop()
    del blocks
    before = anon_kib()
    release_free_heap()
    print(before, anon_kib(), len(last))
    """
)


@pytest.mark.skipif(
    not heap.can_release_free_heap(), reason="not glibc: release_free_heap is a no-op"
)
def test_release_free_heap_returns_the_freed_pages() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CHILD], capture_output=True, text=True, check=True, timeout=60
    )
    before, after, _ = map(int, out.stdout.split())
    # 199 MiB were free in the heap; at least 150 of them go back
    assert before - after > 150 * 1024, (before, after)


# glibc's mallinfo2() in a child, as libc.mallinfo2() (fields from its malloc.h).
_MALLINFO2 = textwrap.dedent(
    """
    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd",
            "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    libc.mallinfo2.restype = MallInfo2
    """
)


# In a process of its own: glibc's threshold first raised the way a run raises it (a
# 4 MiB block freed), then 40 blocks of 300 KB made, each with a live 100 KB chunk
# after it (so free() alone cannot shrink the heap), and the blocks freed. Printed:
# how many blocks were mapped apart while they lived (mallinfo2's hblks, less those
# of before), and how much RssAnon the free gave back.
_MAPPED_CHILD = (
    PRELUDE
    + _MALLINFO2
    + textwrap.dedent(
        """
    import sys
    from crawlkit.heap import map_large_blocks

    mapped = map_large_blocks() if sys.argv[1] == "map" else False
    libc.free(libc.malloc(4 << 20))  # glibc's own threshold rises to 4 MiB here
    mapped_before = libc.mallinfo2().hblks
    blocks, pins = [], []
    for _ in range(40):
        blocks.append(libc.malloc(300_000))
        ctypes.memset(blocks[-1], 1, 300_000)
        pins.append(libc.malloc(100_000))  # under both thresholds: in the heap
        ctypes.memset(pins[-1], 1, 100_000)
    live_mapped = libc.mallinfo2().hblks - mapped_before
    held = anon_kib()
    for block in blocks:
        libc.free(block)
    print(int(mapped), live_mapped, held - anon_kib())
    """
    )
)


@pytest.mark.skipif(not heap.can_release_free_heap(), reason="not glibc: no mallopt to set")
def test_large_blocks_are_mapped_apart_and_freed_at_once() -> None:
    def run(mode: str, env: dict[str, str]) -> tuple[int, int, int]:
        mapped, live_mapped, given_back = _numbers_of(_MAPPED_CHILD, mode, env)
        return mapped, live_mapped, given_back

    env = {k: v for k, v in os.environ.items() if k != "MALLOC_MMAP_THRESHOLD_"}
    mapped, live_mapped, given_back = run("map", env)
    assert mapped == 1
    assert live_mapped >= 40  # every 300 KB block its own mapping
    assert given_back > 10_000  # KiB: most of the 12 MB went back with free() alone
    # glibc's own rising threshold keeps them in the heap, pinned under the small chunk
    mapped, live_mapped, given_back = run("none", env)
    assert (mapped, live_mapped) == (0, 0)
    assert given_back < 2_000, given_back
    # an operator's MALLOC_MMAP_THRESHOLD_ wins: map_large_blocks stands back
    mapped, _, _ = run("map", {**env, "MALLOC_MMAP_THRESHOLD_": str(8 << 20)})
    assert mapped == 0


# In a process of its own: a parse tree's worth of chunks under the mapping threshold
# (8 of 120 KB, at the heap's top) made and freed, as each page's parse does; then
# malloc_trim. Printed: the heap's size (mallinfo2's arena) while they live, after the
# free, and after the trim.
_TOP_CHILD = (
    PRELUDE
    + _MALLINFO2
    + textwrap.dedent(
        """
    import sys
    from crawlkit.heap import map_large_blocks, release_free_heap

    assert map_large_blocks(keep=int(sys.argv[1]))
    release_free_heap()
    chunks = [libc.malloc(120_000) for _ in range(8)]
    for chunk in chunks:
        ctypes.memset(chunk, 1, 120_000)
    live = libc.mallinfo2().arena
    for chunk in reversed(chunks):
        libc.free(chunk)
    freed = libc.mallinfo2().arena
    release_free_heap()
    print(live, freed, libc.mallinfo2().arena)
    """
    )
)


@pytest.mark.skipif(not heap.can_release_free_heap(), reason="not glibc: no mallopt to set")
def test_a_freed_tree_stays_for_the_next_page_until_the_trim() -> None:
    def run(keep: int) -> tuple[int, int, int]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")
        }
        live, freed, trimmed = _numbers_of(_TOP_CHILD, str(keep), env)
        return live, freed, trimmed

    live, freed, trimmed = run(heap.TRIM_THRESHOLD)
    assert freed == live  # free() kept the ~960 KB at the top for the next parse
    assert live - trimmed > 900_000  # and the trim gave them back
    # at glibc's 128 KiB default (fixed once the mapping threshold is set), free()
    # gives them back at once: the next parse faults them in again
    live, freed, _ = run(128 * 1024)
    assert live - freed > 800_000


def _numbers_of(child: str, arg: str, env: dict[str, str]) -> list[int]:
    """The numbers ``child`` (a script) prints, run with ``arg`` in ``env``."""
    out = subprocess.run(
        [sys.executable, "-c", child, arg],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=env,
    )
    return [int(n) for n in out.stdout.split()]
