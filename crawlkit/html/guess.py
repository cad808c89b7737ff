"""A guarded guess at the legacy charset of an undeclared page that is not UTF-8.

The WHATWG rule leaves such a page to windows-1252, which is right for the common case
(an undeclared Western page) and mojibake for the rest: a Shift_JIS, GBK, EUC-KR, Big5,
windows-1251, KOI8-R or ISO-8859-7 page read as windows-1252 gives a search engine a
garbage title, text and simhash. Browsers guess (Firefox with chardetng, Chromium with
compact_enc_det), but a detector asked on every undeclared page also calls real Western
pages something else: of 1,086 (``bench/bench_charset.py``), chardetng 9 (English pages
with a few ``£`` and quotes as windows-1250), cchardet 101, chardet 153 and
charset-normalizer 337 (German as cp775, big5hkscs, cp1250). So the guess is guarded:

1. :func:`windows_1252_implausible` measures whether windows-1252 reading makes sense:
   the share of the non-ASCII bytes, outside ``<script>``, ``<style>`` and comments,
   that windows-1252 does not explain: bytes it leaves undefined, runs of three or more
   (whole words of a single-byte Cyrillic, Greek, Hebrew or Arabic encoding, and the
   byte pairs of CJK encodings back to back), and symbols it would put inside a word
   (``Ma³gorzata``, ``mo¿e``: Polish in windows-1250). Western text has its
   accented letters one or two at a time between ASCII letters.
2. Only then chardetng (Firefox's detector, by its Python binding chardetng-py) is
   asked, and its answer kept only when it decodes the page with at most a few
   replacement characters; else windows-1252.

Measured on real pages with their declarations stripped (``bench/bench_charset.py``):
no Western page of 1,086 changed, and 344 of 403 legacy pages right where windows-1252
had 2. Left windows-1252: Latin-script Central European and Turkish text (Hungarian,
Czech, Slovak, Croatian), whose letters windows-1252 mostly has too, and x-mac-cyrillic,
which chardetng does not name.

The page's top-level domain is not passed to chardetng, nor used to ask it more often
(measured with ``bench_charset.py --chardet-tld``, ``--force-tld``): passed when it is
asked, it changed no page of the benchmark and, with a .pl, .cz or .hu TLD given to the
Western pages, turned one of them wrong; asking it for every page of a Central European
or Turkish TLD got 14 (the files' own TLDs) to 41 (their language's) of the 59 legacy
pages left, but turned 296 to 318 of the 1,086 Western pages wrong had they been served
from .pl, .cz or .hu (German, French, Portuguese as windows-1250), and 3 from .tr.
"""

from __future__ import annotations

import re

from chardetng_py import EncodingDetector

from crawlkit.html.encoding import codec_for_label

__all__ = ["guess_legacy", "implausible_share", "windows_1252_implausible"]

# Bytes windows-1252 leaves undefined: no Western page has them.
_UNDEFINED = frozenset(b"\x81\x8d\x8f\x90\x9d")
# windows-1252 punctuation and spaces that Western text puts inside or between words
# (’ in "don’t", – in "A–Z", soft hyphen, nbsp, middle dot of Catalan "l·l", « »).
_WESTERN_PUNCTUATION = frozenset(b"\x85\x8b\x91\x92\x93\x94\x95\x96\x97\x9b\xa0\xab\xad\xb7\xbb")
_LETTERS = frozenset(
    byte
    for byte in range(0x80, 0x100)
    if byte not in _UNDEFINED and bytes([byte]).decode("cp1252").isalpha()
)
# A symbol here, between two ASCII letters, is no windows-1252 text.
_ODD_IN_WORD = frozenset(range(0x80, 0x100)) - _LETTERS - _WESTERN_PUNCTUATION - _UNDEFINED
_HIGH_RUN = re.compile(rb"[\x80-\xff]+")
_ASCII_LETTERS = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
# Blocks whose bytes are no text (scripts hold regex character classes of accented
# letters, obfuscated strings): skipped, each up to its end marker.
_SKIPPED = ((b"<script", b"</script"), (b"<style", b"</style"), (b"<!--", b"-->"))
_END = dict(_SKIPPED)

# The share of non-ASCII bytes windows-1252 must fail to explain before a detector is
# asked (bench/bench_charset.py). Of 1,086 Western pages one measured above it (0.32:
# blogoff.de, whose text is already mojibake, "Ã¼", and which chardetng leaves
# windows-1252), the next 0.13; Polish pages in windows-1250 0.26 to 0.36, in
# ISO-8859-2 0.31 to 0.52; CJK, Cyrillic, Greek, Hebrew, Arabic and Thai 0.79 to 1.
IMPLAUSIBLE_SHARE = 0.2
# Fewer unexplained bytes than this prove nothing (one odd symbol in a short page).
MIN_IMPLAUSIBLE = 8
# The detector's answer is kept only when it decodes the page with at most this share
# of its non-ASCII bytes turned into replacement characters.
MAX_REPLACED = 0.01
# chardetng-py's names that are no WHATWG label, by the label.
_LABELS = {"cp874": "windows-874"}
# What the guard and the detector read at most: the start of a page says its encoding
# as well as the whole, and bounds the guess to ~50 ms however large the page.
DETECT_BYTES = 1 << 20


def _text_only(body: bytes) -> bytes:
    """``body`` without its scripts, styles and comments, in linear time: each marker's
    next place is searched for again only once the scan has passed it (a block with
    no end marker runs to the end of the page)."""
    lower = body.lower()
    kept = []
    position = 0
    following = {start: lower.find(start) for start, _ in _SKIPPED}
    while True:
        for start, place in following.items():
            if 0 <= place < position:
                following[start] = lower.find(start, position)
        found = [(place, start) for start, place in following.items() if place >= 0]
        if not found:
            kept.append(body[position:])
            return b"".join(kept)
        begin, start = min(found)
        kept.append(body[position:begin])
        close = lower.find(_END[start], begin + len(start))
        if close < 0:
            return b"".join(kept)
        position = close + len(_END[start])


def implausible_share(body: bytes) -> tuple[int, int]:
    """``(unexplained, high)``: how many of the non-ASCII bytes of ``body``'s text
    (:func:`_text_only`) windows-1252 does not explain, and how many there are."""
    text = _text_only(body)
    high = unexplained = 0
    for match in _HIGH_RUN.finditer(text):
        begin, end = match.span()
        run = match.group()
        high += len(run)
        if len(run) >= 3 and not _WESTERN_PUNCTUATION.issuperset(run):
            unexplained += len(run)  # a whole word of high bytes, or CJK byte pairs
            continue
        unexplained += sum(1 for byte in run if byte in _UNDEFINED)
        in_word = (
            begin > 0
            and end < len(text)
            and text[begin - 1] in _ASCII_LETTERS
            and text[end] in _ASCII_LETTERS
        )
        if in_word:
            unexplained += sum(1 for byte in run if byte in _ODD_IN_WORD)
    return unexplained, high


def windows_1252_implausible(body: bytes) -> bool:
    """True when windows-1252 fails to explain enough of ``body``'s non-ASCII bytes
    (:data:`IMPLAUSIBLE_SHARE`, :data:`MIN_IMPLAUSIBLE`) for a detector to be asked."""
    unexplained, high = implausible_share(body)
    return unexplained >= MIN_IMPLAUSIBLE and unexplained >= high * IMPLAUSIBLE_SHARE


def _detect(sample: bytes, whole: bool) -> str | None:
    """chardetng's guess for ``sample`` (never UTF-8) as a Python codec; ``whole`` when
    the sample is the whole page (else its last bytes may be a cut character)."""
    detector = EncodingDetector()
    detector.feed(sample, last=whole)
    label = detector.guess(tld=None, allow_utf8=False)
    return codec_for_label(_LABELS.get(label, label))


def _decodes_cleanly(sample: bytes, codec: str) -> bool:
    """``sample`` decodes with ``codec`` into at most :data:`MAX_REPLACED` replacement
    characters a non-ASCII byte."""
    high = len(sample) - len(sample.translate(None, bytes(range(0x80, 0x100))))
    replaced = sample.decode(codec, "replace").count("\ufffd")
    return replaced <= high * MAX_REPLACED


def guess_legacy(body: bytes) -> str | None:
    """The Python codec of ``body``, an undeclared page that is not UTF-8 (nor UTF-8
    with a stray byte: crawlkit.html.page reads those as UTF-8 first), when
    windows-1252 is implausible for it and a detector names another encoding that
    decodes it cleanly; else None (windows-1252, the WHATWG default, stands). Reads
    the first :data:`DETECT_BYTES` of ``body`` at most."""
    sample = body[:DETECT_BYTES]
    if not windows_1252_implausible(sample):
        return None
    codec = _detect(sample, whole=len(sample) == len(body))
    if codec is None or codec == "cp1252" or not _decodes_cleanly(sample, codec):
        return None
    return codec
