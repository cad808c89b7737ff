"""crawlkit.heap: the free heap a batch leaves is handed back to the system."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from crawlkit import heap

# In a process of its own: 200 blocks of 1 MiB freed but for the last one (which pins
# the top of the heap, so free() alone cannot shrink it), then RssAnon before and after.
_CHILD = textwrap.dedent(
    """
    import sys
    from crawlkit.heap import release_free_heap

    def anon_kib():
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("RssAnon"))

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
