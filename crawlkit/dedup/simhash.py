"""64-bit simhash over word 3-shingles, vectorised with numpy.

Contract:

* :func:`simhash` maps a text to a 64-bit integer; the same text gives the same value
  in every process and on every run (no Python ``hash``, no per-process tables).
* Words are maximal runs of letters, digits, ``_`` and any non-ASCII character but
  white space, punctuation, symbols, controls and private-use glyphs (which separate
  words, as ASCII's do: a no-break space, "·", "–", an emoji, an icon font's glyph)
  and invisible format characters (a soft hyphen, a zero-width joiner: left out, so
  they join), after lowercasing (:func:`separated`). Digits add nothing to a word,
  so words made only of digits vanish, and the English names of days and months and
  clock words (:data:`DATE_WORDS`) are left out too: timestamps, counters and view
  counts are what changes most often between two copies of one page, and leaving
  them out keeps such copies 0–3 bits apart.
* Features are the distinct 3-shingles of the remaining words (each counted once);
  a text of one or two words has one feature (those words), an empty text has the
  simhash 0. Counted as often as they occurred, the shingles of a sidebar repeated
  down a page (an archive list of 36 months "October 2019 (3)", of which digits and
  month names leave "&nbsp;" each time, or "(3 posts)") outvoted a 2.5 KB article:
  different articles of one blog were near copies, and its budget was cut.
* :func:`hamming` is the number of differing bits; it is symmetric and a metric.

How it is fast (1.4 times the first version's speed on 1 KB of text, twice on 20 KB,
with the same values; ``bench/bench_simhash.py`` measures it): no Python loop runs
per word or per bit, and every numpy call runs over as few elements as it can. The
text is UTF-8 encoded once; ``str.lower`` (slow on any text that is not pure ASCII)
runs only when a non-ASCII character would change, because the byte tables fold
ASCII capitals themselves (see :func:`_folded_utf8`). A 65,536-entry table gives
each two-byte pair its word flags and its two terms of a polynomial hash, so the
prefix sum (which wraps modulo 2**64) runs over half as many elements as there are
bytes, and multiplying by the power of a word's start makes its hash independent of
where it occurs. One table lookup drops words of digits only and date words.
Shingles are mixed from three word hashes with a 64-bit finaliser, in place, and the
64 votes are counted bit-sliced (see :func:`_bit_votes`). Numpy views of uint64 as
bytes assume a little-endian machine, as the first version did.

:func:`simhash` runs the same features in C where the package was built with a C
compiler (``crawlkit/dedup/_simhash.c``: one pass over the code points, a quarter to
a third of this module's CPU, the same values); :func:`simhash_numpy` is the path
without it, and the reference the tests hold the C pass to. The C pass leaves a text
with a capital sigma or a dotted capital I (whose lowercases are not one code point
of their own) to numpy.
"""

from __future__ import annotations

import unicodedata

import numpy as np

try:
    from crawlkit.dedup import _simhash as _compiled
except ImportError:  # built without a C compiler: numpy's passes do it all
    _compiled = None  # type: ignore[assignment]

__all__ = [
    "DATE_WORDS",
    "hamming",
    "separated",
    "simhash",
    "simhash_hex",
    "simhash_numpy",
    "word_hashes",
]

_U64 = np.uint64


def _const(value: int) -> np.ndarray:
    """A 0-d uint64 array: ufuncs take it in less time than a numpy scalar."""
    return np.array(value, dtype=_U64)


# The polynomial base must be odd so it has an inverse modulo 2**64.
_BASE = 0x100000001B3  # the FNV-64 prime
_BASE_INV = pow(_BASE, -1, 1 << 64)
_MUL1 = _const(0x9E3779B97F4A7C15)
_MUL2 = _const(0xC2B2AE3D27D4EB4F)
_MUL3 = _const(0x165667B19E3779F9)
_FMIX1 = _const(0xFF51AFD7ED558CCD)
_FMIX2 = _const(0xC4CEB9FE1A85EC53)
_S33 = _const(33)

# Per byte: whether it belongs to a word, and the value it adds to a word's hash (0
# for separators and digits). Bytes >= 0x80 (UTF-8 of any non-ASCII character) are
# word bytes, so every script forms words. Digits are part of a word but add nothing
# to its hash, so "page2" and "page3" are one word and "2024" is no word at all.
# ASCII capitals have the value of their small letter, so the text's ASCII need not
# be lowercased first (see _folded_utf8).
_WORD_BYTES = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789"
_IS_WORD_TABLE = bytes(1 if c in _WORD_BYTES or c >= 0x80 else 0 for c in range(256))


def _byte_value(c: int) -> int:
    if not _IS_WORD_TABLE[c] or 0x30 <= c <= 0x39:
        return 0
    return c | 0x20 if 0x41 <= c <= 0x5A else c


# Two bytes at once, read as one little-endian uint16 ``b0 | b1 << 8``: the pair's
# two terms of the polynomial, value(b0) + value(b1) * BASE**-1 (so the prefix sum
# runs over half as many elements), and its two word flags, one per byte (so the
# lookup, viewed as bytes, is the flag of every byte).
_VALUES = np.array([_byte_value(c) for c in range(256)], dtype=_U64)
_PAIR_VALUES = (_VALUES[None, :] + _VALUES[:, None] * _U64(_BASE_INV)).ravel()
_FLAGS = np.frombuffer(_IS_WORD_TABLE, dtype=np.uint8).astype("<u2")
_PAIR_FLAGS = (_FLAGS[None, :] | _FLAGS[:, None] << 8).ravel()
_CAPITAL_SIGMA = "\u03a3"  # the one character whose lowercase depends on its neighbours
_ASCII = bytes(range(128))
_UTF8 = ("utf-8", "surrogatepass")
_MAX_REPLACED = 32  # characters to replace, beyond which str.lower costs less

# Powers of the base are kept for positions below the longest text seen, up to
# _POW_CAP (8 MB a table); a longer text makes its powers from blocks of the kept ones.
# (Uncapped, the tables held 16 bytes a byte of the longest text for good: 84 MB in
# every extract process after one 5 MB page, and 0.35 s to build them.)
_POW_CAP = 1 << 20
_M64 = 1 << 64
_INV2_STEP = pow(_BASE_INV, 2, _M64)
_POW_CACHE: dict[str, np.ndarray] = {}


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**(-2*i) and BASE**i (mod 2**64) for i < min(n, _POW_CAP) at least, grown
    geometrically and kept."""
    have = _POW_CACHE.get("inv2")
    if have is None or len(have) < min(n, _POW_CAP):
        size = min(_POW_CAP, max(n, 2 * (len(have) if have is not None else 4096)))
        with np.errstate(over="ignore"):
            inv2 = np.full(size, _INV2_STEP, dtype=_U64)
            inv2[0] = 1
            fwd = np.full(size, _BASE, dtype=_U64)
            fwd[0] = 1
            _POW_CACHE["inv2"] = np.cumprod(inv2, dtype=_U64)
            _POW_CACHE["fwd"] = np.cumprod(fwd, dtype=_U64)
    return _POW_CACHE["inv2"], _POW_CACHE["fwd"]


def _block_powers(step: int, block: int, blocks: int) -> np.ndarray:
    """``(step**block)**k`` (mod 2**64) for k < blocks."""
    big = pow(step, block, _M64)
    return np.array([pow(big, k, _M64) for k in range(blocks)], dtype=_U64)


def _inv2_powers(m: int) -> np.ndarray:
    """BASE**(-2*i) (mod 2**64) for i < m."""
    inv2, _ = _powers(m)
    if m <= len(inv2):
        return inv2[:m]
    blocks = _block_powers(_INV2_STEP, len(inv2), -(-m // len(inv2)))
    return np.multiply.outer(blocks, inv2).ravel()[:m]


def _fwd_powers_2(at: np.ndarray) -> np.ndarray:
    """BASE**(p + 2) (mod 2**64) for each p of ``at`` (non-negative, ascending)."""
    last = int(at[-1]) + 3 if at.size else 0
    _, fwd = _powers(last)
    if last <= len(fwd):
        return fwd[2:].take(at)
    high, low = np.divmod(at + 2, len(fwd))
    return _block_powers(_BASE, len(fwd), int(high[-1]) + 1).take(high) * fwd.take(low)


def _fmix(x: np.ndarray, scratch: np.ndarray | None = None) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser of ``x``, in place (``scratch``, as long as ``x``,
    is clobbered): every input bit affects every output bit."""
    t = np.right_shift(x, _S33, out=scratch)
    x ^= t
    x *= _FMIX1
    np.right_shift(x, _S33, out=t)
    x ^= t
    x *= _FMIX2
    np.right_shift(x, _S33, out=t)
    x ^= t
    return x


def _folded_utf8(text: str) -> bytes:
    """UTF-8 (with lone surrogates passed through) of ``text.lower()``, except that
    ASCII capitals may be left as they are (the byte tables fold them).

    ``str.lower`` is slow on any text that is not pure ASCII, while most pages are
    ASCII but for a few dashes, quotes, symbols or accented letters. ``str.lower``
    maps each character on its own, except the capital sigma (its lowercase depends
    on the letters around it). So when the non-ASCII characters are at most one byte
    in eight, there is no capital sigma, and at most :data:`_MAX_REPLACED` of them
    change (each into one character), encoding the text as it is and replacing those
    few characters' bytes gives the same bytes.
    """
    data = text.encode("utf-8", "surrogatepass")
    extra = len(data) - len(text)
    if extra == 0:
        return data
    if extra * 8 > len(data):
        return text.lower().encode("utf-8", "surrogatepass")
    # Below 4 KB a C loop beats numpy's call overheads at finding the non-ASCII bytes.
    if len(data) < 4096 and (chars := data.translate(None, _ASCII).decode(*_UTF8)) == chars.lower():
        return data
    codes = np.frombuffer(data, dtype=np.uint8)
    at = (codes >= 0x80).nonzero()[0]  # every byte of every non-ASCII character
    others = codes[at]
    chars = others.tobytes().decode(*_UTF8)
    lowered = chars.lower()
    if lowered == chars:
        return data
    if len(lowered) != len(chars) or _CAPITAL_SIGMA in chars:
        return text.lower().encode(*_UTF8)
    before = np.frombuffer(chars.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    after = np.frombuffer(lowered.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    which = (before != after).nonzero()[0].tolist()
    if len(which) > _MAX_REPLACED:
        return text.lower().encode(*_UTF8)
    # Character k of ``chars`` starts at the k-th lead byte (0xC0 and up) of the text.
    starts = at[others >= 0xC0].take(which).tolist()
    pieces: list[bytes] = []
    done = 0
    for k, start in zip(which, starts, strict=True):
        pieces += (data[done:start], lowered[k].encode(*_UTF8))
        done = start + len(chars[k].encode(*_UTF8))
    pieces.append(data[done:])
    return b"".join(pieces)


# What a non-ASCII character is to words, by code point: a word character, a separator
# (as a space), or left out. Built on the first non-ASCII text from the Unicode
# database (planes 0 and 1, and the tags of plane 14: about 40 ms once); other code
# points are word characters, but planes 15 and 16 (private use: a glyph, no word).
_WORD, _SPACE, _DROP = 0, 1, 2
_TABLE_END = 0x20000
_TAGS = (0xE0000, 0xE1000)
_PRIVATE_PLANES = 0xF0000
_KINDS: tuple[np.ndarray, np.ndarray] | None = None


def _kind(char: str) -> int:
    category = unicodedata.category(char)
    if char == "\u200b" or category[0] in "ZPS" or category in ("Cc", "Co"):
        return _SPACE  # (the zero-width space is a word break in Thai and Khmer)
    return _DROP if category == "Cf" else _WORD


def _kind_tables() -> tuple[np.ndarray, np.ndarray]:
    global _KINDS
    if _KINDS is None:
        low = np.array([_kind(chr(cp)) if cp >= 0x80 else 0 for cp in range(_TABLE_END)], np.uint8)
        low[0xD800:0xE000] = _WORD  # lone surrogates: what they were
        tags = np.array([_kind(chr(cp)) for cp in range(*_TAGS)], np.uint8)
        _KINDS = (low, tags)
    return _KINDS


def separated(text: str) -> str:
    """``text`` with its non-ASCII separators as spaces and its invisible format
    characters left out (see the module docstring); ASCII text is returned as it is.

    Most pages are ASCII but for a few dashes, quotes and no-break spaces: their
    distinct non-ASCII characters are looked up one by one and each separator replaced
    with ``str.replace`` (a C scan), 5 to 10 times faster than the vectorised pass
    over every code point (:func:`_separated_by_code_point`), which takes text whose
    non-ASCII bytes are more than one in eight (a regular expression of the classes
    took 30 times the whole simhash's time on a page of 10,000 characters)."""
    if text.isascii():
        return text
    head = text[:1024]  # a cheap guess first: encoding a dense text twice costs more
    if (len(head.encode(*_UTF8)) - len(head)) * 8 > len(head):
        return _separated_by_code_point(text)
    data = text.encode(*_UTF8)
    others = data.translate(None, _ASCII)
    if len(others) * 8 > len(data):
        return _separated_by_code_point(text)
    distinct = set(others.decode(*_UTF8))
    if len(distinct) > _MAX_DISTINCT:
        return _separated_by_code_point(text)
    for char in distinct:
        kind = _kind_of_point(ord(char))
        if kind != _WORD:
            text = text.replace(char, " " if kind == _SPACE else "")
    return text


_MAX_DISTINCT = 64  # non-ASCII characters, beyond which one pass costs less than many


def _kind_of_point(point: int) -> int:
    low, tags = _kind_tables()
    if point < _TABLE_END:
        return int(low[point])
    if _TAGS[0] <= point < _TAGS[1]:
        return int(tags[point - _TAGS[0]])
    return _SPACE if point >= _PRIVATE_PLANES else _WORD


def _separated_by_code_point(text: str) -> str:
    """:func:`separated`, vectorised over the code points (UTF-32)."""
    low, tags = _kind_tables()
    points = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype="<u4")
    kinds = low.take(np.minimum(points, _TABLE_END - 1))
    high = points >= _TABLE_END
    if high.any():
        at = high.nonzero()[0]
        far = points[at]
        in_tags = (far >= _TAGS[0]) & (far < _TAGS[1])
        kinds[at] = np.where(
            in_tags,
            tags.take(np.where(in_tags, far - _TAGS[0], 0)),
            np.where(far >= _PRIVATE_PLANES, _SPACE, _WORD),
        )
    if not kinds.any():
        return text
    kept = np.where(kinds == _SPACE, np.uint32(0x20), points)[kinds != _DROP]
    return kept.astype("<u4").tobytes().decode("utf-32-le", "surrogatepass")


def word_hashes(text: str) -> np.ndarray:
    """64-bit hashes of the words of ``text`` in order (digit-only words and
    :data:`DATE_WORDS` left out)."""
    raw = _word_sums(separated(text))
    # One test leaves out both digit-only words (sum 0) and date words.
    buckets = np.bitwise_and(raw, _DATE_BITS).view(np.intp)
    return _fmix(raw[_DATE_TABLE.take(buckets) != raw])


def _word_sums(text: str) -> np.ndarray:
    """Every word's polynomial hash, before mixing (0 for a word of digits only)."""
    data = _folded_utf8(text)
    n = len(data)
    if n == 0:
        return np.zeros(0, dtype=_U64)
    # Two spaces before the text and one or two after: the text's first and last
    # words have edges, and the bytes split evenly into pairs (read as one uint16).
    pairs = np.frombuffer(b"  " + data + b"  "[n % 2 :], dtype="<u2")
    flags = _PAIR_FLAGS.take(pairs).view(np.bool_)
    # Word starts and ends are the edges of runs of word bytes: (s0, e0, s1, e1, ...),
    # positions in the text (the slices skip the first padding byte).
    edges = (flags[2:] != flags[1:-1]).nonzero()[0]
    # sums[k] = sum over bytes j < 2k + 2 of the padded text of value(byte) * BASE**-j.
    # uint64 array arithmetic wraps modulo 2**64 without warnings (only numpy scalar
    # arithmetic warns), which is what the polynomial hash wants.
    sums = _PAIR_VALUES.take(pairs)
    sums *= _inv2_powers(pairs.size)
    np.add.accumulate(sums, out=sums)
    # The word at text bytes [s, e) is padded bytes [s + 2, e + 2): pairs s // 2 + 1 to
    # (e + 1) // 2 inclusive (the other byte of a pair at either end is a separator,
    # which adds 0), so its sum is sums[(e + 1) // 2] - sums[s // 2]; it starts at the
    # padded position s + 2.
    bounds = edges.reshape(-1, 2).T.copy()
    shift = _fwd_powers_2(bounds[0])
    bounds[1] += 1
    bounds >>= 1
    ends = sums.take(bounds)
    words = ends[1]
    words -= ends[0]
    # Multiply by BASE**start: the hash of a word does not depend on its position.
    words *= shift
    # A word of digits only sums to 0 (any other word does so with odds 2**-64).
    return words


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
# Buckets by a word sum's low 14 bits: the sum of the date word in that bucket, else
# 0 (the sum of a word of digits only), so a word is left out when its sum equals its
# bucket's. Date words' sums differ in their low 14 bits and none of those is 0;
# _init_date_words checks it.
_DATE_BITS = _const((1 << 14) - 1)
_DATE_TABLE = np.zeros(1 << 14, dtype=_U64)


def _init_date_words() -> None:
    sums = np.concatenate([_word_sums(w) for w in DATE_WORDS])
    buckets = sums & _DATE_BITS
    if len(set(buckets.tolist()) - {0}) != len(DATE_WORDS):
        raise RuntimeError(
            "simhash: two date words share a bucket, or one is bucket 0: widen _DATE_BITS"
        )
    _DATE_TABLE[buckets.astype(np.intp)] = sums


def _shingle_hashes(words: np.ndarray, out: np.ndarray, scratch: np.ndarray) -> None:
    """Hashes of the word 3-shingles (or of the one feature of 1 or 2 words) into
    ``out`` (``max(1, words.size - 2)`` long); ``scratch`` is as long and is clobbered."""
    if words.size >= 3:
        np.multiply(words[:-2], _MUL1, out=out)
        np.multiply(words[1:-1], _MUL2, out=scratch)
        out += scratch
        np.multiply(words[2:], _MUL3, out=scratch)
        out += scratch
    elif words.size == 2:
        np.multiply(words[:1], _MUL1, out=out)
        out += words[1:] * _MUL2
    else:
        np.multiply(words, _MUL1, out=out)
    _fmix(out, scratch)


_LOW_BITS = _const(0x0101010101010101)
_ONE, _TWO, _FOUR = _const(1), _const(2), _const(4)
_CHUNKS = np.arange(0, 1 << 20, 255)
_VOTE_BLOCK = 1 << 16  # shingles counted at once (see simhash)


def _bit_votes(sliced: np.ndarray) -> np.ndarray:
    """How many of the hashes in ``sliced[0]`` have bit ``8 * byte + b`` set, as an
    (8, 8) array indexed ``[b, byte]``; ``sliced`` is an (8, m) array whose other
    rows are clobbered.

    Bit-sliced: row b becomes ``(h >> b) & 0x0101...01``, which puts bits b, b+8, ...,
    b+56 in the eight byte lanes of a uint64, and summing 255 of those cannot carry
    out of a lane, so the counting is a handful of contiguous numpy reductions. The
    rows are shifted 1, then 2 at once, then 4 at once: three long shifts cost less
    than seven short ones.
    """
    m = sliced.shape[1]
    np.right_shift(sliced[0], _ONE, out=sliced[1])
    np.right_shift(sliced[:2], _TWO, out=sliced[2:4])
    np.right_shift(sliced[:4], _FOUR, out=sliced[4:])
    sliced &= _LOW_BITS
    if m <= 255:
        return np.add.reduce(sliced, axis=1).view(np.uint8).reshape(8, 8)
    k = -(-m // 255)
    starts = _CHUNKS[:k] if k <= _CHUNKS.size else np.arange(0, m, 255)
    lanes = np.add.reduceat(sliced, starts, axis=1)  # (8, k), 255 hashes each at most
    counts: np.ndarray = np.add.reduce(
        lanes.view(np.uint8).reshape(8, k, 8), axis=1, dtype=np.uint32
    )
    return counts


def simhash(text: str) -> int:
    """The 64-bit simhash of ``text`` (see the module docstring for the features)."""
    if _compiled is not None:
        if not (text.isascii() or _compiled.unicode_tables_set()):
            _compiled.set_unicode_tables(*_unicode_tables())
        value = _compiled.simhash(text)
        if value is not None:
            return value
    return simhash_numpy(text)


def simhash_numpy(text: str) -> int:
    """:func:`simhash` by numpy's passes (the reference the compiled pass must equal)."""
    words = word_hashes(text)
    if words.size == 0:
        return 0
    n = max(1, words.size - 2)
    shingles = np.empty(n, dtype=_U64)
    _shingle_hashes(words, shingles, np.empty(n, dtype=_U64))
    shingles = _distinct(shingles)  # each distinct shingle once (module docstring)
    m = shingles.size
    if m <= _VOTE_BLOCK:
        sliced = np.empty((8, m), dtype=_U64)
        sliced[0] = shingles
        votes = _bit_votes(sliced)
    else:
        # A long text's shingles are counted a block at a time: eight rows of a
        # block stay in cache, eight rows of the whole text (64 bytes a shingle, 45 MB
        # for a 5 MB page) did not, and the counts add up to the same votes.
        votes = np.zeros((8, 8), dtype=np.int64)
        block = np.empty((8, _VOTE_BLOCK), dtype=_U64)
        for start in range(0, m, _VOTE_BLOCK):
            part = block[:, : min(_VOTE_BLOCK, m - start)]
            part[0] = shingles[start : start + part.shape[1]]
            votes += _bit_votes(part)
    # A bit is set when more than half of the shingles have it (ties clear it).
    chosen = votes > m // 2
    # Byte j of the result packs bits b = 0..7 of column j.
    return int.from_bytes(np.packbits(chosen, axis=0, bitorder="little").tobytes(), "little")


def _distinct(values: np.ndarray) -> np.ndarray:
    """``values`` sorted, each once (np.unique took 8 times as long here: 145 against
    18 µs for 1,700 shingles)."""
    values.sort()
    if values.size < 2:
        return values
    keep = np.empty(values.size, dtype=np.bool_)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values if keep.all() else values[keep]


def simhash_hex(text: str) -> str:
    """:func:`simhash` as 16 lowercase hex digits (the page record's ``simhash``)."""
    return f"{simhash(text):016x}"


_init_date_words()


# --- the C pass's tables ------------------------------------------------------------

if _compiled is not None:
    _compiled.set_tables(_VALUES.tobytes(), _IS_WORD_TABLE, _DATE_TABLE.tobytes())

_NO_LOWER = 0xFFFFFFFF  # in the lowercase table: the C pass leaves the text to numpy


def _lower_table() -> np.ndarray:
    """Each code point's lowercase below ``_TABLE_END``, or :data:`_NO_LOWER` where
    ``str.lower`` does not map it to one code point on its own (the dotted capital I;
    the capital sigma, final or not by its neighbours). Above the table no character
    has a lowercase other than itself (a test checks)."""
    points = range(0x80, _TABLE_END)
    table = np.arange(_TABLE_END, dtype=np.uint32)
    lowered = [chr(cp).lower() for cp in points]
    table[0x80:] = [ord(c) if len(c) == 1 else _NO_LOWER for c in lowered]
    table[0x03A3] = _NO_LOWER
    return table


def _unicode_tables() -> tuple[bytes, bytes, bytes]:
    """What the C pass needs for text that is not ASCII (built on the first such text:
    ~60 ms, the classes' tables shared with :func:`separated`)."""
    low, tags = _kind_tables()
    return low.tobytes(), tags.tobytes(), _lower_table().tobytes()


def hamming(a: int, b: int) -> int:
    """Number of bits in which two 64-bit simhashes differ."""
    return (a ^ b).bit_count()
