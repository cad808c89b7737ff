"""What the child processes of the allocator tests share (tests/core/test_heap.py,
tests/crawl/test_arenas.py): glibc's ``malloc`` and ``free`` typed for ctypes as
``libc``, and ``anon_kib()``, the process's resident anonymous memory in KiB."""

PRELUDE = """
import ctypes

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = (ctypes.c_size_t,)
libc.free.argtypes = (ctypes.c_void_p,)


def anon_kib():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("RssAnon:"))
"""
