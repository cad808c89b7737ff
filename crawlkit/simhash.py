"""64-bit simhash over word 3-shingles, vectorised with numpy.

Contract:

* :func:`simhash` maps a text to a 64-bit integer; the same text gives the same value
  in every process and on every run (no Python ``hash``, no per-process tables).
* Words are maximal runs of letters, digits, ``_`` and any non-ASCII character, after
  lowercasing. Words made only of ASCII digits are left out: dates, times, counters and
  view counts are what changes most often between two copies of one page, and leaving
  them out keeps such copies 0–3 bits apart.
* Features are the 3-shingles of the remaining words (each counted as often as it
  occurs); a text of one or two words has one feature (those words), an empty text
  has the simhash 0.
* :func:`hamming` is the number of differing bits; it is symmetric and a metric.

How it is fast: the text is lowercased and encoded once, word boundaries come from a
256-entry byte class table, and every word is hashed at once with a polynomial prefix
sum (``np.cumsum`` wraps modulo 2**64, and multiplying by the inverse power makes a
word's hash independent of where it occurs). Shingles are mixed from three word hashes
with a 64-bit finaliser, and the 64 votes are counted by unpacking the shingle hashes
into bits. No Python loop runs per word or per bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["hamming", "simhash", "simhash_hex", "word_hashes"]

_U64 = np.uint64
# The polynomial base must be odd so it has an inverse modulo 2**64.
_BASE = 0x100000001B3  # the FNV-64 prime
_BASE_INV = pow(_BASE, -1, 1 << 64)
_MUL1 = _U64(0x9E3779B97F4A7C15)
_MUL2 = _U64(0xC2B2AE3D27D4EB4F)
_MUL3 = _U64(0x165667B19E3779F9)
_FMIX1 = _U64(0xFF51AFD7ED558CCD)
_FMIX2 = _U64(0xC4CEB9FE1A85EC53)
_S33 = _U64(33)

# Byte classes: 1 = word byte, 2 = digit, 0 = separator. Bytes >= 0x80 (UTF-8 of any
# non-ASCII character) count as word bytes, so every script forms words.
_CLASS = np.zeros(256, dtype=np.uint8)
for _c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_":
    _CLASS[_c] = 1
for _c in b"0123456789":
    _CLASS[_c] = 2
_CLASS[0x80:] = 1
_IS_WORD = _CLASS > 0

_POW_CACHE: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**-i and BASE**i for i < n (mod 2**64), grown geometrically and cached."""
    have = _POW_CACHE.get("inv")
    if have is None or len(have) < n:
        size = max(n, 2 * (len(have) if have is not None else 4096))
        with np.errstate(over="ignore"):
            inv = np.full(size, _BASE_INV, dtype=_U64)
            inv[0] = 1
            fwd = np.full(size, _BASE, dtype=_U64)
            fwd[0] = 1
            _POW_CACHE["inv"] = np.cumprod(inv, dtype=_U64)
            _POW_CACHE["fwd"] = np.cumprod(fwd, dtype=_U64)
    return _POW_CACHE["inv"], _POW_CACHE["fwd"]


def _fmix(x: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser: every input bit affects every output bit."""
    x = x ^ (x >> _S33)
    x = x * _FMIX1
    x = x ^ (x >> _S33)
    x = x * _FMIX2
    return x ^ (x >> _S33)


def word_hashes(text: str) -> np.ndarray:
    """64-bit hashes of the words of ``text`` in order (digit-only words left out)."""
    data = np.frombuffer(text.lower().encode("utf-8", "surrogatepass"), dtype=np.uint8)
    n = data.size
    if n == 0:
        return np.zeros(0, dtype=_U64)
    cls = _CLASS[data]
    is_word = cls > 0
    # Word starts and ends from the edges of runs of word bytes.
    edges = np.flatnonzero(np.diff(is_word.view(np.int8), prepend=0, append=0))
    starts = edges[0::2]
    ends = edges[1::2]
    if starts.size == 0:
        return np.zeros(0, dtype=_U64)
    # Leave out words made only of digits: count the non-digit word bytes per word.
    letters = np.concatenate(([0], np.cumsum(cls == 1, dtype=np.int64)))
    keep = letters[ends] > letters[starts]
    starts = starts[keep]
    ends = ends[keep]
    if starts.size == 0:
        return np.zeros(0, dtype=_U64)
    inv, fwd = _powers(n + 1)
    with np.errstate(over="ignore"):
        # prefix[i] = sum_{j<i} (byte_j + 1) * BASE**-j  (mod 2**64); +1 so NUL counts.
        terms = (data.astype(_U64) + _U64(1)) * inv[:n]
        prefix = np.zeros(n + 1, dtype=_U64)
        np.cumsum(terms, dtype=_U64, out=prefix[1:])
        # Multiply by BASE**start: the hash of a word does not depend on its position.
        raw = (prefix[ends] - prefix[starts]) * fwd[starts]
        raw = raw + (ends - starts).astype(_U64)
        return _fmix(raw)


def _shingle_hashes(words: np.ndarray) -> np.ndarray:
    n = words.size
    with np.errstate(over="ignore"):
        if n >= 3:
            mixed = words[:-2] * _MUL1 + words[1:-1] * _MUL2 + words[2:] * _MUL3
        elif n == 2:
            mixed = words[:1] * _MUL1 + words[1:] * _MUL2
        else:
            mixed = words * _MUL1
        return _fmix(mixed)


def simhash(text: str) -> int:
    """The 64-bit simhash of ``text`` (see the module docstring for the features)."""
    words = word_hashes(text)
    if words.size == 0:
        return 0
    shingles = _shingle_hashes(words).astype("<u8", copy=False)
    m = shingles.size
    # Bit j of every shingle hash, as an (m, 64) matrix of 0/1 bytes, little-endian
    # bit order so column j is bit j of the integer.
    bits = np.unpackbits(shingles.view(np.uint8), bitorder="little").reshape(m, 64)
    votes = bits.sum(axis=0, dtype=np.int32)
    # A bit is set when more than half of the shingles have it (ties clear it).
    chosen = (2 * votes > m).astype(np.uint8)
    return int(np.packbits(chosen, bitorder="little").view("<u8")[0])


def simhash_hex(text: str) -> str:
    """:func:`simhash` as 16 lowercase hex digits (the page record's ``simhash``)."""
    return f"{simhash(text):016x}"


def hamming(a: int, b: int) -> int:
    """Number of bits in which two 64-bit simhashes differ."""
    return (a ^ b).bit_count()
