"""A Bloom filter over 64-bit fingerprints, kept in a memory-mapped file.

Sizing (docs/design.md "Numbers"): for a design count ``n`` and a false-positive rate
``p`` the filter has ``m = -n ln p / (ln 2)^2`` bits (rounded up to whole 64-bit
words) and ``k = round((m / n) ln 2)`` probes: 14.4 bits and 10 probes per URL at
0.1 %.

Probes (double hashing): ``h1`` is the fingerprint itself (xxh3-64 is already a good
hash), ``h2`` is the splitmix64 finalizer of it, forced odd; probe ``i`` tests bit
``(h1 mod m + i * (h2 mod m)) mod m``. Every step is a whole-array numpy operation,
so a batch costs ``k`` vectorised gathers, not a Python loop per key.

File format (little-endian)::

    offset 0     8s   magic b"CKBLOOM1"
           8     u32  format version (1)
           12    u32  k, probes per key
           16    u64  m, bits (a multiple of 64)
           24    u64  capacity, the design count n
           32    f64  fp_rate, the design rate p
           40    u64  reserved (0)
    offset 4096  m/8 bytes of bits: bit j is bit (j mod 64) of little-endian word j // 64

The bits start on a page boundary so the array maps cleanly. Bits are only ever set,
never cleared, so a crash while bits are being written leaves a *superset* of the
committed bits: the filter may answer "maybe" a little more often (every "maybe" is
confirmed against the exact runs anyway, invariant 4) but never "new" for a committed
fingerprint.
"""

from __future__ import annotations

import contextlib
import math
import os
import struct
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import numpy.typing as npt

from crawlkit.durable import temp_path
from crawlkit.errors import StateError, UsageError
from crawlkit.streams import atomic_file, write_array

__all__ = ["BloomFilter", "bloom_size"]

MAGIC = b"CKBLOOM1"
VERSION = 1
HEADER = struct.Struct("<8sIIQQdQ")
DATA_OFFSET = 4096
_CHUNK = 1 << 20
_ADD_CHUNK = 1 << 17
_PROBE_CHUNK = 1 << 18
# Building a filter from scratch uses one byte per bit (a plain scatter, several times
# faster than setting bits in words) while that costs at most this much memory.
BUILD_IN_RAM_BITS = 1 << 31

Fingerprints = npt.NDArray[np.uint64]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_ONE = np.uint64(1)


def bloom_size(capacity: int, fp_rate: float) -> tuple[int, int]:
    """``(m_bits, k)`` for ``capacity`` keys at ``fp_rate`` (m rounded up to 64 bits)."""
    if capacity < 1:
        raise UsageError(f"filter capacity must be at least 1, not {capacity}")
    if not 0.0 < fp_rate < 0.5:
        raise UsageError(f"false-positive rate must be between 0 and 0.5, not {fp_rate}")
    exact = -capacity * math.log(fp_rate) / (math.log(2) ** 2)
    m = max(64, math.ceil(exact / 64) * 64)
    k = max(1, round(exact / capacity * math.log(2)))
    return m, k


def second_hash(fps: Fingerprints) -> Fingerprints:
    """splitmix64's finalizer of each fingerprint, forced odd (``h2`` of double hashing)."""
    with np.errstate(over="ignore"):
        z = fps + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
        z ^= z >> np.uint64(31)
    z |= _ONE
    return z


def _start(fps: Fingerprints, m: int) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Probe 0's position and the step, both reduced mod m (m < 2**61: int64 is safe)."""
    mm = np.uint64(m)
    return (fps % mm).astype(np.int64), (second_hash(fps) % mm).astype(np.int64)


def _advance(a: npt.NDArray[np.int64], b: npt.NDArray[np.int64], m: int) -> None:
    """Next probe: ``a = (a + b) mod m`` in place (both < m, so one subtraction does)."""
    a += b
    np.subtract(a, m, out=a, where=a >= m)


def _probe_positions(fps: Fingerprints, m: int, k: int) -> Iterator[npt.NDArray[np.int64]]:
    """The ``k`` bit positions of each key, one array per probe."""
    a, b = _start(fps, m)
    for i in range(k):
        yield a.copy()
        if i + 1 < k:
            _advance(a, b, m)


class BloomFilter:
    """A Bloom filter file, memory-mapped; read-only unless opened ``writable``.

    ``probe`` answers per key "maybe seen" (True) or "certainly new" (False).
    ``add`` sets bits in the mapping; they reach the disk on ``flush``, which a caller
    must do before it records the keys as committed elsewhere.
    """

    def __init__(self, path: Path, *, writable: bool = False):
        self.path = path
        try:
            with open(path, "rb") as f:
                header = f.read(HEADER.size)
                size = os.fstat(f.fileno()).st_size
        except OSError as exc:
            raise StateError(f"cannot read Bloom filter {path}: {exc.strerror}") from exc
        if len(header) < HEADER.size:
            raise StateError(f"Bloom filter {path} is truncated")
        magic, version, k, m, capacity, fp_rate, _ = HEADER.unpack(header)
        if magic != MAGIC or version != VERSION:
            raise StateError(f"{path} is not a crawlkit Bloom filter (version {VERSION})")
        if m % 64 or m == 0 or k < 1 or size != DATA_OFFSET + m // 8:
            raise StateError(f"Bloom filter {path} is damaged (size or header)")
        self.k = int(k)
        self.m = int(m)
        self.capacity = int(capacity)
        self.fp_rate = float(fp_rate)
        self.writable = writable
        self._words: np.memmap = np.memmap(
            path,
            dtype="<u8",
            mode="r+" if writable else "r",
            offset=DATA_OFFSET,
            shape=(self.m // 64,),
        )
        # ufunc.at and take are several times slower on the memmap subclass.
        self._bits = self._words.view(np.ndarray)
        # What flush fsyncs: the mapping is shared, so its dirty pages are the file's.
        self._fd = os.open(path, os.O_RDONLY) if writable else -1

    @classmethod
    def create(cls, path: Path, capacity: int, fp_rate: float) -> BloomFilter:
        """Write an empty filter to ``path`` atomically (temp name, fsync, rename)."""
        m, k = bloom_size(capacity, fp_rate)
        with atomic_file(path, tmp=temp_path(path)) as f:
            f.write(HEADER.pack(MAGIC, VERSION, k, m, capacity, fp_rate, 0))
            f.truncate(DATA_OFFSET + m // 8)
            f.flush()
            # Reserve the blocks now. The filter is written through a memory map, and
            # a sparse file on a full disk would end the process with SIGBUS when a bit
            # lands in a page the file system cannot allocate; here it is ENOSPC.
            os.posix_fallocate(f.fileno(), 0, DATA_OFFSET + m // 8)
        return cls(path, writable=True)

    @classmethod
    def build(
        cls, path: Path, capacity: int, fp_rate: float, chunks: Iterable[Fingerprints]
    ) -> BloomFilter:
        """Write a filter holding every key of ``chunks`` to ``path`` atomically."""
        m, k = bloom_size(capacity, fp_rate)
        if m > BUILD_IN_RAM_BITS:
            bloom = cls.create(path, capacity, fp_rate)
            for chunk in chunks:
                bloom.add(chunk)
            bloom.flush()
            return bloom
        flags = np.zeros(m, dtype=np.uint8)
        for chunk in chunks:
            chunk = np.ascontiguousarray(chunk, dtype=np.uint64)
            for start in range(0, len(chunk), _CHUNK):
                for positions in _probe_positions(chunk[start : start + _CHUNK], m, k):
                    flags[positions] = 1
        # Bit j of the filter is bit j % 8 of byte j // 8 (little-endian words).
        bits = np.packbits(flags, bitorder="little")
        del flags
        with atomic_file(path, tmp=temp_path(path)) as f:
            f.write(HEADER.pack(MAGIC, VERSION, k, m, capacity, fp_rate, 0))
            f.seek(DATA_OFFSET)
            write_array(f, bits)
        return cls(path, writable=True)

    @property
    def nbytes(self) -> int:
        """Bytes of bits (what probing keeps resident)."""
        return self.m // 8

    def probe(self, fps: Fingerprints) -> npt.NDArray[np.bool_]:
        """True where a key may be in the set, False where it certainly is not."""
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        if len(fps) <= _PROBE_CHUNK:
            return self._probe(fps)
        # Chunks bound the temporaries (a few arrays of 8 bytes a key) at no cost in speed.
        return np.concatenate(
            [self._probe(fps[i : i + _PROBE_CHUNK]) for i in range(0, len(fps), _PROBE_CHUNK)]
        )

    def _probe(self, fps: Fingerprints) -> npt.NDArray[np.bool_]:
        n = len(fps)
        result = np.zeros(n, dtype=bool)
        if n == 0:
            return result
        words = self._bits
        a, b = _start(fps, self.m)
        alive = np.arange(n)
        for i in range(self.k):
            got = np.take(words, a >> 6)
            got >>= (a & 63).astype(np.uint64)
            hit = (got & _ONE).astype(bool)
            if i == self.k - 1:
                result[alive[hit]] = True
                break
            # Keys already known to be new drop out, so new keys cost ~2 probes.
            if not hit.all():
                a, b, alive = a[hit], b[hit], alive[hit]
                if len(alive) == 0:
                    break
            _advance(a, b, self.m)
        return result

    def add(self, fps: Fingerprints) -> None:
        """Set the ``k`` bits of every key (in the mapping; see :meth:`flush`)."""
        if not self.writable:
            raise StateError(f"Bloom filter {self.path} is open read-only")
        fps = np.ascontiguousarray(fps, dtype=np.uint64)
        words = self._bits
        # Chunks keep the k position arrays small (k * 8 bytes a key while they live),
        # and at most half as many positions as words keeps collisions rare.
        chunk = min(_ADD_CHUNK, max(1024, len(words) // (2 * self.k)))
        for start in range(0, len(fps), chunk):
            positions = np.concatenate(
                list(_probe_positions(fps[start : start + chunk], self.m, self.k))
            )
            index = positions >> 6
            bits = _ONE << (positions & 63).astype(np.uint64)
            if len(positions) * 2 > len(words):
                np.bitwise_or.at(words, index, bits)  # exact with many repeats
                continue
            # A fancy-index |= keeps only the last write to a repeated word, so check
            # and redo the lost bits; each round is a small fraction of the one before.
            # (With few repeats this is several times faster than ufunc.at.)
            while len(index):
                words[index] |= bits
                lost = (np.take(words, index) & bits) == 0
                index, bits = index[lost], bits[lost]

    def flush(self) -> None:
        """Write dirty pages to the file and wait for the disk.

        ``fsync`` of the file, not ``msync`` (``memmap.flush``): on Linux both write
        back the mapping's dirty pages (msync with MS_SYNC is an fsync of the range),
        but CPython's ``mmap.flush`` holds the interpreter lock while the disk works,
        and in ``crawl`` that stopped the event loop and the WARC writer for every
        flush of the seen set (5% of the post thread's hold of the lock, in py-spy).
        """
        if self._fd >= 0:
            os.fsync(self._fd)

    def bits_set(self) -> int:
        """How many bits are set (reads the whole filter)."""
        total = 0
        step = 1 << 20
        for start in range(0, len(self._bits), step):
            total += int(np.bitwise_count(self._bits[start : start + step]).sum())
        return total

    def fill(self) -> float:
        """The fraction of bits set; the expected false-positive rate is ``fill ** k``."""
        return self.bits_set() / self.m

    def close(self) -> None:
        """Drop the mapping (flushing first when writable)."""
        self.flush()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        mm = getattr(self._words, "_mmap", None)
        del self._words, self._bits
        if mm is not None:
            with contextlib.suppress(BufferError, ValueError):
                mm.close()
