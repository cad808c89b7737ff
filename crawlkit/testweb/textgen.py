"""Deterministic filler text: a Zipf-distributed vocabulary of pseudo-words.

The words are built from syllables with a fixed generator, so every process produces
the same vocabulary; word frequencies follow Zipf's law like natural text, which
keeps simhash and dedup behaviour realistic.
"""

from __future__ import annotations

import itertools
import random
from bisect import bisect_right
from functools import lru_cache
from itertools import repeat, starmap

_ONSETS = [
    "",
    "b",
    "br",
    "c",
    "ch",
    "d",
    "f",
    "g",
    "gr",
    "h",
    "k",
    "l",
    "m",
    "n",
    "p",
    "pr",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "w",
    "z",
]
_VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "io", "ou"]
_CODAS = ["", "", "n", "r", "s", "t", "l", "m", "nd", "st"]


@lru_cache(maxsize=1)
def vocabulary() -> tuple[list[str], list[float]]:
    """(words, cumulative Zipf weights); the same in every process."""
    rng = random.Random(20261130)
    syllables = ["".join(t) for t in itertools.product(_ONSETS, _VOWELS, _CODAS)]
    rng.shuffle(syllables)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < 4000:
        n = rng.choice((1, 1, 2, 2, 2, 3, 3, 4))
        word = "".join(rng.choice(syllables) for _ in range(n))
        if 2 <= len(word) <= 14 and word not in seen:
            seen.add(word)
            words.append(word)
    cum: list[float] = []
    total = 0.0
    for rank in range(1, len(words) + 1):
        total += 1.0 / rank
        cum.append(total)
    return words, cum


# Why a table: rendering a page draws ~2,000 words, and ``Random.choices`` (a bisect
# over 4,000 weights a word, plus its argument checks on every call of ~12 words)
# was most of the test web's CPU per request.
#
# ``choices`` draws one u = ``random()`` a word and bisects u * total. CPython's u is
# a 53-bit integer over 2**53, so int(u * 2**16) (exact: a power of two) is its top 16
# bits: a bucket of [0, 1). Most buckets hold draws that all select one word, read
# from a table; the others bisect only the few indexes their draws can select, with
# the same u * total. Same words, same generator state after: every page stays
# byte-identical (tests/testweb/test_textgen.py checks it against ``choices``).
_BUCKETS = 1 << 16
_table: tuple[list[str | None], list[tuple[int, int]], list[str], list[float], float] | None
_table = None


def _build_table() -> tuple[list[str | None], list[tuple[int, int]], list[str], list[float], float]:
    """(the word of each bucket or None, index range of each bucket, words, cum, total)."""
    vocab, cum = vocabulary()
    total = cum[-1] + 0.0
    hi = len(cum) - 1  # like choices(): the last index is never bisected past
    direct: list[str | None] = []
    ranges: list[tuple[int, int]] = []
    top = (1 << 53) - 1
    for t in range(_BUCKETS):
        # The smallest and largest u of bucket t: u * total is monotone in u, so every
        # draw of the bucket selects an index between what these two select.
        u_lo = (t << 37) / 9007199254740992.0
        u_hi = (((t + 1) << 37) - 1 & top) / 9007199254740992.0
        lo_i = bisect_right(cum, u_lo * total, 0, hi)
        hi_i = bisect_right(cum, u_hi * total, 0, hi)
        ranges.append((lo_i, hi_i))
        direct.append(vocab[lo_i] if lo_i == hi_i else None)
    return direct, ranges, vocab, cum, total


def _slow(u: float) -> str:
    """The word for draw ``u`` when its bucket has more than one (see above)."""
    assert _table is not None
    _, ranges, vocab, cum, total = _table
    lo, hi = ranges[int(u * 65536.0)]
    return vocab[bisect_right(cum, u * total, lo, hi)]


def words(rng: random.Random, n: int) -> list[str]:
    """``n`` Zipf-distributed words: exactly ``rng.choices(vocab, cum_weights=cum,
    k=n)``, leaving ``rng`` in the same state."""
    global _table
    if _table is None:
        _table = _build_table()
    direct = _table[0]
    # Words are never empty, so ``or`` falls through only for a bucket without one.
    return [direct[int(u * 65536.0)] or _slow(u) for u in starmap(rng.random, repeat((), n))]


# randint(a, b) and choice(seq) are a + _randbelow(b - a + 1) and
# seq[_randbelow(len(seq))] in CPython (3.11 to 3.13), and _randbelow(n) draws
# getrandbits(n.bit_length()) until the value is below n. Written out here (the
# calls cost as much as the words): same numbers drawn, same generator state.
_ENDS = (".", ".", ".", "?", "!")


def sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    bits = rng.getrandbits
    span = hi - lo + 1
    k = span.bit_length()
    r = bits(k)
    while r >= span:
        r = bits(k)
    ws = words(rng, lo + r)
    ws[0] = ws[0].capitalize()
    r = bits(3)  # choice() of the 5 endings
    while r >= 5:
        r = bits(3)
    return " ".join(ws) + _ENDS[r]


def title(rng: random.Random) -> str:
    bits = rng.getrandbits
    r = bits(3)  # randint(2, 5): 4 values
    while r >= 4:
        r = bits(3)
    return " ".join([w.capitalize() for w in words(rng, 2 + r)])


def paragraph(rng: random.Random) -> str:
    bits = rng.getrandbits
    r = bits(3)  # randint(3, 7): 5 values
    while r >= 5:
        r = bits(3)
    return " ".join([sentence(rng) for _ in range(3 + r)])
