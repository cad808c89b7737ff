"""The crawl process caps glibc's malloc arenas (crawl/arenas.py): threads made after
:func:`cap_arenas` share at most ``CRAWL_ARENAS`` arenas, counted by glibc's own
``malloc_info``; without the cap the same threads make one each. The trimming thread
gives back freed memory glibc keeps under a live chunk."""

from __future__ import annotations

import os
import platform
import subprocess
import sys

import pytest
from libc_probe import PRELUDE

from crawlkit.crawl.arenas import CRAWL_ARENAS

pytestmark = pytest.mark.skipif(
    platform.system() != "Linux" or platform.libc_ver()[0] != "glibc", reason="glibc only"
)

PROBE = """
import ctypes, importlib.util, os, sys, tempfile, threading
import crawlkit
# the module alone: crawlkit.crawl's package imports the whole loop (seconds)
path = os.path.join(os.path.dirname(crawlkit.__file__), "crawl", "arenas.py")
spec = importlib.util.spec_from_file_location("arenas", path)
arenas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arenas)
capped = arenas.cap_arenas() if sys.argv[1] == "cap" else False
libc = ctypes.CDLL(None)
libc.fdopen.restype = ctypes.c_void_p
libc.fdopen.argtypes = (ctypes.c_int, ctypes.c_char_p)
libc.malloc_info.argtypes = (ctypes.c_int, ctypes.c_void_p)
libc.fflush.argtypes = (ctypes.c_void_p,)
barrier = threading.Barrier(8)
def work():
    barrier.wait()  # all 8 alive at once: each wants an arena
    keep = [bytearray(200_000) for _ in range(5)]  # past pymalloc: glibc's malloc
    barrier.wait()
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with tempfile.TemporaryFile() as f:
    stream = libc.fdopen(os.dup(f.fileno()), b"w")
    libc.malloc_info(0, stream)
    libc.fflush(stream)
    f.seek(0)
    print(int(capped), f.read().decode().count("<heap nr="))
"""


def _arenas(mode: str, env: dict[str, str]) -> tuple[bool, int]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    return out[0] == "1", int(out[1])


def test_threads_share_at_most_the_capped_arenas() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    assert _arenas("cap", env) == (True, CRAWL_ARENAS)
    capped, arenas = _arenas("none", env)
    assert not capped and arenas > CRAWL_ARENAS  # the probe sees the difference
    # an operator's MALLOC_ARENA_MAX wins (glibc applies it; cap_arenas stands back)
    assert _arenas("cap", {**env, "MALLOC_ARENA_MAX": "3"}) == (False, 3)


TRIM_PROBE = (
    PRELUDE
    + """
import ctypes, importlib.util, os
import crawlkit
path = os.path.join(os.path.dirname(crawlkit.__file__), "crawl", "arenas.py")
spec = importlib.util.spec_from_file_location("arenas", path)
arenas = importlib.util.module_from_spec(spec)
spec.loader.exec_module(arenas)
blocks = [libc.malloc(4000) for _ in range(10_000)]  # 40 MB under the mmap threshold
for b in blocks:
    ctypes.memset(b, 1, 4000)
pin = libc.malloc(4000)  # one live chunk above them: glibc cannot give the heap's top back
ctypes.memset(pin, 1, 4000)
for b in blocks:
    libc.free(b)
held = anon_kib()
started = arenas.start_trimming(every=0.01)
assert arenas.trimmed.wait(30), "no trim"
print(int(started), held, anon_kib())
"""
)


def test_freed_memory_pinned_under_a_live_chunk_is_given_back() -> None:
    """40 MB freed below one live chunk stay resident (glibc trims only the heap's
    top) until the trimming thread's ``malloc_trim`` hands them back."""
    out = subprocess.run(
        [sys.executable, "-c", TRIM_PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    started, held, after = int(out[0]), int(out[1]), int(out[2])
    assert started == 1
    assert held - after > 30_000, (held, after)  # KiB: most of the 40 MB is back
