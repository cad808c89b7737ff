"""simhash gives exactly the values of the original implementation, by both paths.

Simhashes are stored in dedup indexes across runs, so a faster implementation must
not change a single bit. The original module (per-byte uint64 prefix sums over the
lowercased UTF-8) is copied below, unchanged but for the names, as the reference;
since the features changed (non-ASCII separators, each distinct shingle counted
once: crawlkit/dedup/simhash.py), the reference takes the text through the module's
``separated`` first and votes with each distinct shingle once, and
``test_separators_follow_the_unicode_database`` checks ``separated`` itself. Every
check runs both the numpy passes and the C pass (crawlkit/dedup/_simhash.c).
"""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from c_toolchain import skip_without_c_toolchain
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.dedup import simhash as module
from crawlkit.dedup.simhash import DATE_WORDS, simhash, simhash_hex, simhash_numpy, word_hashes

# --- the reference: crawlkit/dedup/simhash.py as of commit 55716ae -------------------

_U64 = np.uint64
_BASE = 0x100000001B3
_BASE_INV = pow(_BASE, -1, 1 << 64)
_MUL1 = _U64(0x9E3779B97F4A7C15)
_MUL2 = _U64(0xC2B2AE3D27D4EB4F)
_MUL3 = _U64(0x165667B19E3779F9)
_FMIX1 = _U64(0xFF51AFD7ED558CCD)
_FMIX2 = _U64(0xC4CEB9FE1A85EC53)
_S33 = _U64(33)
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
_IS_WORD_TABLE = bytes(1 if c in _WORD_BYTES or c >= 0x80 else 0 for c in range(256))
_VALUE_TABLE = bytes(
    c if (c in _WORD_BYTES or c >= 0x80) and not 0x30 <= c <= 0x39 else 0 for c in range(256)
)
_POW_CACHE: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
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
    x = x ^ (x >> _S33)
    x = x * _FMIX1
    x = x ^ (x >> _S33)
    x = x * _FMIX2
    out: np.ndarray = x ^ (x >> _S33)
    return out


def reference_word_hashes(text: str) -> np.ndarray:
    hashes = _word_hashes_raw(module.separated(text))
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
    padded = np.zeros(n + 2, dtype=np.bool_)
    padded[1:-1] = np.frombuffer(lowered.translate(_IS_WORD_TABLE), dtype=np.bool_)
    edges = np.flatnonzero(padded[1:] != padded[:-1])
    starts = edges[0::2]
    ends = edges[1::2]
    inv, fwd = _powers(n + 1)
    values = np.frombuffer(lowered.translate(_VALUE_TABLE), dtype=np.uint8)
    prefix = np.zeros(n + 1, dtype=_U64)
    np.cumsum(values * inv[:n], dtype=_U64, out=prefix[1:])
    raw = (prefix[ends] - prefix[starts]) * fwd[starts]
    return _fmix(raw[raw != 0])


_LOW16 = _U64(0xFFFF)
_DATE_HASHES = np.unique(np.concatenate([_word_hashes_raw(w) for w in DATE_WORDS]))
_DATE_SET = frozenset(int(h) for h in _DATE_HASHES)
_DATE_FILTER = np.zeros(1 << 16, dtype=np.bool_)
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
    m = shingles.size
    k = -(-m // 255)
    padded = np.zeros(k * 255, dtype=_U64)
    padded[:m] = shingles
    sliced = (padded[None, :] >> _SHIFTS) & _LOW_BITS
    lanes = sliced.reshape(8, k, 255).sum(axis=2, dtype=_U64)
    counts = lanes.view(np.uint8).reshape(8, k, 8).sum(axis=1, dtype=np.int64)
    votes: np.ndarray = counts.T.reshape(64)
    return votes


def reference_simhash(text: str) -> int:
    words = reference_word_hashes(text)
    if words.size == 0:
        return 0
    shingles = np.unique(_shingle_hashes(words))
    m = shingles.size
    votes = _bit_votes(shingles)
    chosen = (2 * votes > m).astype(np.uint8)
    return int.from_bytes(np.packbits(chosen, bitorder="little").tobytes(), "little")


# --- the cases -----------------------------------------------------------------------

WORDS = ["the", "Crawler", "fetched", "page", "x", "I", "naïve", "Über", "data_set", "v2"]
NON_ASCII = (
    "·—–“”’…©®€£°½"  # no lowercase: the fast path
    "éèàüöçñßæøåœ"  # lowercase already
    "ÉÀÜÖÇÑÆØÅŒ"  # capitals: a few of them are replaced
    "\u0130\u212a\u2126\u1e9e\u01c5"  # İ (lowercases to 2 characters), Kelvin K, Ohm, ẞ, ǅ
    "ΣσςΑΒΓ"  # the capital sigma lowercases by context
    "Жжщ日本語テキスト한국어"
    "😀👍🏽\u0301\u200d\ufeff"
    "\ud800\udbff\udc00\udfff"  # lone surrogates
)
ENGLISH = "The crawler fetched the page at noon and kept what it found. " * 4
CASES = [
    "",
    " ",
    " \t\n\r\x0b\x0c ",
    "\u00a0\u3000",
    "a",
    "A",
    "one two",
    "One, Two!",
    "2024",
    "12 345 6.789",
    "2024-11-30 12:00:00",
    "Mon, 30 Nov 2026 07:31:21 GMT",
    "monday MONDAY Monday updated ago",
    "...,;:!?()[]{}<>-+*/\\|'\"`~@#$%^&=",
    "_ __ ___",
    "page2 page3 a1b2c3 ab",
    "ΟΔΥΣΣΕΥΣ ΣΑΣ σας Σ. aΣ b 'Σ' Σ'a ΣΣ",
    "\u0130stanbul \u212aelvin \u2126",
    "CAFÉ café Café ÉCOLE",
    "日本語のテキスト 中文 한국어",
    "Привет МИР мир",
    "emoji 😀 👍🏽 and e\u0301 accents",
    "lone \ud800 surrogates \udfff pair \ud83d\ude00",
    "\udfff",
    "mixed · dashes — and “quotes” ’ ©2026",
    # Mostly ASCII with a few capitals that lowercase (the replacing path), among
    # them the capital sigma, whose lowercase depends on the letters around it.
    ENGLISH + " ΣΑΣ ΟΔΟΣ aΣ b Σ. 'Σ' " + ENGLISH,
    ENGLISH + " Über ÉCOLE İstanbul K " + ENGLISH,
    ENGLISH + " ÀÉÎÕÜÇ " + ENGLISH,
    # Capitals whose lowercase is longer in UTF-8 (Ⱥ to ⱥ: 2 to 3 bytes), and 32 or
    # 33 capitals to replace, each side of where str.lower takes over.
    ENGLISH + " \u023a\u023e x\u023ay " + ENGLISH,
    ENGLISH * 8 + " É" * 32,
    ENGLISH * 8 + " É" * 33,
    "Zürich ÉCOLE " * 3 + ENGLISH * 20 + " Ørsted",
    "À" * 300 + " tail",
    "x" * 10_000,
    "word " * 3_000,
    " ".join(f"w{i % 97}x{i % 13}" for i in range(6_000)),
]


def random_text(rng: random.Random, size: int, alphabet: str) -> str:
    out: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if roll < 0.5:
            out.append(rng.choice(WORDS))
        elif roll < 0.7:
            out.append("".join(rng.choice(alphabet) for _ in range(rng.randint(1, 6))))
        elif roll < 0.8:
            out.append(str(rng.randint(0, 10**6)))
        elif roll < 0.9:
            out.append(rng.choice(DATE_WORDS).capitalize())
        else:
            out.append(rng.choice([",", ".", " - ", "\n", "  ", "'", ":", "/"]))
        out.append(rng.choice(" \n\t,.") if rng.random() < 0.9 else "")
        length += len(out[-2]) + len(out[-1])
    return "".join(out)


def assert_same(text: str) -> None:
    want = reference_word_hashes(text)
    got = word_hashes(text)
    assert got.dtype == np.uint64
    assert got.tolist() == want.tolist(), repr(text[:80])
    value = reference_simhash(text)
    assert simhash_numpy(text) == value, repr(text[:80])
    assert simhash(text) == value, repr(text[:80])
    if module._compiled is not None:
        # The C pass itself: the same value, or None exactly where the text has a
        # character whose lowercase it leaves to numpy (capital sigma, dotted capital I).
        compiled = module._compiled.simhash(text)
        if "\u03a3" in text or "\u0130" in text:
            assert compiled is None, repr(text[:80])
        else:
            assert compiled == value, repr(text[:80])


@pytest.mark.parametrize("text", CASES, ids=range(len(CASES)))
def test_listed_cases_equal_the_original(text):
    assert_same(text)
    assert simhash_hex(text) == f"{reference_simhash(text):016x}"


def test_random_texts_of_every_size_equal_the_original():
    rng = random.Random(20261201)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        "abcdefghijklmnopqrstuvwxyz·—’",
        "abcdefghijklmnopqrstuvwxyzÉÀÜéàü",
        NON_ASCII,
        "абвгдежзийклмнопрАБВГДЕЖЗИЙ",
        "日本語テキスト中文한국어",
    ]
    for i in range(400):
        size = rng.choice([1, 2, 5, 20, 100, 1_000, 3_000, 12_000, 40_000])
        assert_same(random_text(rng, size, alphabets[i % len(alphabets)]))


@pytest.mark.parametrize("words", [1, 2, 3, 4, 256, 257, 258, 512, 513, 1_000])
def test_every_count_of_shingles_equals_the_original(words):
    # 255 shingles fill one byte lane of the vote counters: both sides of that edge.
    rng = random.Random(words)
    text = " ".join(rng.choice(WORDS) + str(i) for i in range(words))
    assert_same(text)


def test_grown_power_tables_equal_the_original(monkeypatch):
    # A fresh cache, then a text longer than its first size: the tables grow.
    monkeypatch.setattr(module, "_POW_CACHE", {})
    rng = random.Random(3)
    for size in (10, 5_000, 9_000, 70_000):
        assert_same(random_text(rng, size, NON_ASCII))
    assert len(module._POW_CACHE["fwd"]) >= 70_000


def test_powers_beyond_the_cap_equal_the_original(monkeypatch):
    # Past _POW_CAP positions the powers are made from blocks of the kept tables:
    # texts across one and several blocks, and words that start at a block's edge.
    cap = 4_096
    monkeypatch.setattr(module, "_POW_CAP", cap)
    monkeypatch.setattr(module, "_POW_CACHE", {})
    rng = random.Random(5)
    for size in (cap - 40, cap + 40, 2 * cap + 7, 5 * cap + 3, 30 * cap):
        assert_same(random_text(rng, size, NON_ASCII))
    for size in range(cap - 5, cap + 2):
        assert_same("x" * size + " tail words here")
        assert_same("x" * size + " y")  # the last word starts at the edge
    for size in range(2 * cap - 5, 2 * cap + 2):
        assert_same("x" * size + " y")
    # The kept tables stop growing at the cap.
    assert len(module._POW_CACHE["inv2"]) == len(module._POW_CACHE["fwd"]) == cap


@pytest.mark.parametrize("block", [3, 255, 256, 1_000])
def test_votes_counted_in_blocks_equal_the_original(monkeypatch, block):
    # Past _VOTE_BLOCK shingles the votes are counted a block at a time: block sizes
    # on both sides of a byte lane's 255, texts of a few blocks and a partial one.
    monkeypatch.setattr(module, "_VOTE_BLOCK", block)
    rng = random.Random(block)
    for words in (block + 2, block + 3, 2 * block + 2, 3 * block + 7):
        assert_same(" ".join(rng.choice(WORDS) + str(i) for i in range(words)))
    assert_same(random_text(rng, 12_000, NON_ASCII))


def test_many_shingles_beyond_the_chunk_table_equal_the_original(monkeypatch):
    # Texts with more shingles than the cached chunk starts cover take the slow path.
    monkeypatch.setattr(module, "_CHUNKS", module._CHUNKS[:2])
    rng = random.Random(4)
    assert_same(random_text(rng, 8_000, "abcdefghij"))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=400))
def test_any_text_equals_the_original(text):
    assert_same(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([*WORDS, *DATE_WORDS, *NON_ASCII, " ", ", ", "7"]), max_size=200))
def test_any_mix_of_words_and_symbols_equals_the_original(parts):
    assert_same("".join(parts))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([*WORDS, "and", "of", "a", "7", " ", ". "]), max_size=80),
    st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(list(NON_ASCII))), max_size=4),
)
def test_ascii_text_with_a_few_other_characters_equals_the_original(words, inserts):
    text = " ".join(words)
    for at, char in inserts:
        at %= len(text) + 1
        text = text[:at] + char + text[at:]
    assert_same(text)


def test_separators_follow_the_unicode_database() -> None:
    import unicodedata

    for cp in [*range(0x80, 0x20000, 7), 0xA0, 0x200B, 0x200C, 0xAD, 0xFEFF, 0xE0001, 0x10FFFD]:
        char = chr(cp)
        if 0xD800 <= cp < 0xE000:
            continue
        category = unicodedata.category(char)
        # Alone between two letters (a dense text) and among 60 ASCII letters (the
        # sparse text's path, which looks its characters up one by one).
        for pad in ("", "x" * 30):
            got = module.separated(f"{pad}a{char}b{pad}")
            if cp == 0x200B or category[0] in "ZPS" or category in ("Cc", "Co"):
                want = "a b"
            elif category == "Cf":
                want = "ab"
            else:
                want = f"a{char}b"
            assert got == f"{pad}{want}{pad}", (hex(cp), category, len(pad))


def test_characters_past_the_c_tables_are_their_own_lowercase() -> None:
    # The C pass looks lowercases up in a table of planes 0 and 1 and takes every code
    # point above as its own lowercase: str.lower must agree.
    changed = [cp for cp in range(0x20000, 0x110000) if chr(cp).lower() != chr(cp)]
    assert changed == []


@pytest.mark.parametrize("shingles", [254, 255, 256, 510, 511])
def test_votes_across_a_lane_flush_equal_the_original(shingles):
    # The C pass adds its byte lanes up every 255 distinct shingles; a repeated
    # shingle (counted once) falls just before and after the flush.
    words = [f"w{i}" for i in range(shingles + 2)]
    assert_same(" ".join(words[:255] + words[:3] + words[255:]))


def test_the_c_pass_is_built_where_a_c_compiler_is() -> None:
    skip_without_c_toolchain("simhash runs numpy's passes only")
    assert module._compiled is not None, "crawlkit/dedup/_simhash.c was not built"
    assert module.simhash("Ünïcode TEXT here") == module.simhash_numpy("Ünïcode TEXT here")
    assert module._compiled.unicode_tables_set()


def test_long_texts_hash_while_other_threads_run() -> None:
    # The C pass lets the interpreter lock go for a long text: threads hashing at once
    # get the values one thread gets.
    texts = [random_text(random.Random(i), 50_000, NON_ASCII) for i in range(8)]
    alone = [simhash(t) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(simhash, texts * 4)) == alone * 4
