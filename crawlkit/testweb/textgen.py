"""Deterministic filler text: a Zipf-distributed vocabulary of pseudo-words.

The words are built from syllables with a fixed generator, so every process produces
the same vocabulary; word frequencies follow Zipf's law like natural text, which
keeps simhash and dedup behaviour realistic.
"""

from __future__ import annotations

import itertools
import random
from functools import lru_cache

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


def words(rng: random.Random, n: int) -> list[str]:
    vocab, cum = vocabulary()
    return rng.choices(vocab, cum_weights=cum, k=n)


def sentence(rng: random.Random, lo: int = 6, hi: int = 18) -> str:
    ws = words(rng, rng.randint(lo, hi))
    ws[0] = ws[0].capitalize()
    return " ".join(ws) + rng.choice((".", ".", ".", "?", "!"))


def title(rng: random.Random) -> str:
    return " ".join(w.capitalize() for w in words(rng, rng.randint(2, 5)))


def paragraph(rng: random.Random) -> str:
    return " ".join(sentence(rng) for _ in range(rng.randint(3, 7)))
