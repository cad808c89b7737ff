"""64-bit simhash over word 3-shingles, vectorised with numpy.

Contract:

* :func:`simhash` maps a text to a 64-bit integer; the same text gives the same value
  in every process and on every run (no Python ``hash``, no per-process tables).
* Words are maximal runs of letters, digits, ``_`` and any non-ASCII character, after
  lowercasing. Digits add nothing to a word, so words made only of digits vanish, and
  the English names of days and months and clock words (:data:`DATE_WORDS`) are left
  out too: timestamps, counters and view counts are what changes most often between
  two copies of one page, and leaving them out keeps such copies 0–3 bits apart.
* Features are the 3-shingles of the remaining words (each counted as often as it
  occurs); a text of one or two words has one feature (those words), an empty text
  has the simhash 0.
* :func:`hamming` is the number of differing bits; it is symmetric and a metric.

How it is fast: the text is lowercased and encoded once, word boundaries come from a
256-entry byte table (``bytes.translate``), and every word is hashed at once with a
polynomial prefix sum (``np.cumsum`` wraps modulo 2**64, and multiplying by the
inverse power makes a word's hash independent of where it occurs). Shingles are
mixed from three word hashes with a 64-bit finaliser, and the 64 votes are counted
bit-sliced (see :func:`_bit_votes`). No Python loop runs per word or per bit.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DATE_WORDS", "hamming", "simhash", "simhash_hex", "word_hashes"]

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

# Per byte: the value it adds to a word's hash (0 for separators and digits) and
# whether it belongs to a word. Bytes >= 0x80 (UTF-8 of any non-ASCII character) are
# word bytes, so every script forms words. Digits are part of a word but add nothing
# to its hash, so "page2" and "page3" are one word and "2024" is no word at all.
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
_IS_WORD_TABLE = bytes(1 if c in _WORD_BYTES or c >= 0x80 else 0 for c in range(256))
_VALUE_TABLE = bytes(
    c if (c in _WORD_BYTES or c >= 0x80) and not 0x30 <= c <= 0x39 else 0 for c in range(256)
)

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
    out: np.ndarray = x ^ (x >> _S33)
    return out


def word_hashes(text: str) -> np.ndarray:
    """64-bit hashes of the words of ``text`` in order (digit-only words left out)."""
    hashes = _word_hashes_raw(text)
    # Leave out date and time words: a 16-bit table screens, an exact test confirms.
    maybe = np.flatnonzero(_DATE_FILTER[hashes & _LOW16])
    if maybe.size:
        found = hashes[maybe].tolist()
        drop = [int(i) for i, h in zip(maybe, found, strict=True) if h in _DATE_SET]
        if drop:
            hashes = np.delete(hashes, drop)
    return hashes


def _word_hashes_raw(text: str) -> np.ndarray:
    lowered = text.lower().encode("utf-8", "surrogatepass")
    n = len(lowered)
    if n == 0:
        return np.zeros(0, dtype=_U64)
    # bytes.translate is a C loop: cheaper than a numpy table lookup here.
    padded = np.zeros(n + 2, dtype=np.bool_)
    padded[1:-1] = np.frombuffer(lowered.translate(_IS_WORD_TABLE), dtype=np.bool_)
    # Word starts and ends are the edges of runs of word bytes.
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts = edges[0::2]
    ends = edges[1::2]
    inv, fwd = _powers(n + 1)
    # uint64 array arithmetic wraps modulo 2**64 without warnings (only numpy scalar
    # arithmetic warns), which is what the polynomial hash wants.
    # prefix[i] = sum_{j<i} value(byte_j) * BASE**-j
    values = np.frombuffer(lowered.translate(_VALUE_TABLE), dtype=np.uint8)
    prefix = np.zeros(n + 1, dtype=_U64)
    np.cumsum(values * inv[:n], dtype=_U64, out=prefix[1:])
    # Multiply by BASE**start: the hash of a word does not depend on its position.
    raw = (prefix[ends] - prefix[starts]) * fwd[starts]
    # A word of digits only sums to 0 (any other word does so with odds 2**-64).
    return _fmix(raw[raw != 0])


# Names of days and months and clock words: with digits ignored, these are all that
# is left of a timestamp ("Mon, 30 Nov 2026 07:31:21 GMT"), the most common change
# between two copies of one page.
DATE_WORDS = (
    "monday",
    "tuesday",
    "wednesday",
    "thursday",
    "friday",
    "saturday",
    "sunday",
    "mon",
    "tue",
    "tues",
    "wed",
    "thu",
    "thur",
    "thurs",
    "fri",
    "sat",
    "sun",
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
    "am",
    "pm",
    "utc",
    "gmt",
    "cet",
    "cest",
    "est",
    "edt",
    "pst",
    "pdt",
    "z",
    "t",
    "th",
    "st",
    "nd",
    "rd",
    "today",
    "yesterday",
    "tomorrow",
    "ago",
    "updated",
)
_LOW16 = _U64(0xFFFF)
_DATE_HASHES = np.zeros(0, dtype=_U64)
_DATE_FILTER = np.zeros(1 << 16, dtype=np.bool_)
_DATE_SET: frozenset[int] = frozenset()


def _init_date_words() -> None:
    global _DATE_HASHES, _DATE_SET
    _DATE_HASHES = np.unique(np.concatenate([_word_hashes_raw(w) for w in DATE_WORDS]))
    _DATE_SET = frozenset(int(h) for h in _DATE_HASHES)
    _DATE_FILTER[(_DATE_HASHES & _LOW16).astype(np.intp)] = True


def _shingle_hashes(words: np.ndarray) -> np.ndarray:
    n = words.size
    if n >= 3:
        mixed = words[:-2] * _MUL1 + words[1:-1] * _MUL2 + words[2:] * _MUL3
    elif n == 2:
        mixed = words[:1] * _MUL1 + words[1:] * _MUL2
    else:
        mixed = words * _MUL1
    return _fmix(mixed)


_SHIFTS = np.arange(8, dtype=_U64)[:, None]
_LOW_BITS = _U64(0x0101010101010101)


def _bit_votes(shingles: np.ndarray) -> np.ndarray:
    """How many of the hashes have bit j set, for j in 0..63.

    Bit-sliced: ``(h >> b) & 0x0101...01`` puts bits b, b+8, ..., b+56 in the eight
    byte lanes of a uint64, and summing 255 of those cannot carry out of a lane, so
    the counting is a handful of contiguous numpy reductions.
    """
    m = shingles.size
    k = -(-m // 255)
    padded = np.zeros(k * 255, dtype=_U64)
    padded[:m] = shingles
    sliced = (padded[None, :] >> _SHIFTS) & _LOW_BITS  # (8, k*255)
    lanes = sliced.reshape(8, k, 255).sum(axis=2, dtype=_U64)  # (8, k)
    counts = lanes.view(np.uint8).reshape(8, k, 8).sum(axis=1, dtype=np.int64)  # [b, byte]
    votes: np.ndarray = counts.T.reshape(64)
    return votes


def simhash(text: str) -> int:
    """The 64-bit simhash of ``text`` (see the module docstring for the features)."""
    words = word_hashes(text)
    if words.size == 0:
        return 0
    shingles = _shingle_hashes(words)
    m = shingles.size
    votes = _bit_votes(shingles)
    # A bit is set when more than half of the shingles have it (ties clear it).
    chosen = (2 * votes > m).astype(np.uint8)
    return int.from_bytes(np.packbits(chosen, bitorder="little").tobytes(), "little")


def simhash_hex(text: str) -> str:
    """:func:`simhash` as 16 lowercase hex digits (the page record's ``simhash``)."""
    return f"{simhash(text):016x}"


_init_date_words()


def hamming(a: int, b: int) -> int:
    """Number of bits in which two 64-bit simhashes differ."""
    return (a ^ b).bit_count()
