"""How well undeclared legacy pages get their charset: crawlkit's rule against detectors.

Run on demand (never in CI). Two sets of real pages, every declaration stripped (BOM,
``<meta charset>``, ``<meta http-equiv=Content-Type>``, an XML declaration's encoding):

* western: pages that must stay windows-1252 when undeclared. The Latin-script pages
  of the ``bench/real_corpus.py`` folders (German, English, Spanish, French, ...),
  transcoded to windows-1252 (characters it lacks become numeric references, as a
  real windows-1252 page writes them), plus chardet's ``tests/windows-1252`` and
  ``tests/iso-8859-1`` files.
* legacy: pages in other legacy encodings. The non-Latin and Central European pages of
  those folders transcoded to their usual legacy encodings (Japanese to Shift_JIS and
  EUC-JP, Chinese to GBK, Korean to EUC-KR, Russian to windows-1251 and KOI8-R,
  Polish and Hungarian to windows-1250 and ISO-8859-2), plus chardet's test files of
  the WHATWG encodings (real feeds and pages saved in Big5, EUC-JP, GB2312, KOI8-R,
  windows-1251, ISO-8859-7, windows-1255, ...; git clone chardet/chardet).

A guess is right when it decodes the bytes to the same text as the true encoding
(``gbk`` for ``gb18030``, ``iso-8859-7`` for ``windows-1253`` on bytes where they agree).

Each page has the top-level domain of its URL where the corpus knows it (a folder's
``urls.tsv``), for chardetng's TLD hint. chardet's files are named by encoding folder
and, many of them, by the host of the feed they were saved from: ``--chardet-tld name``
takes the last label of that host that is a country or generic TLD
(``hirtv.hu.xml``: hu; ``shamalt.uw.hu.mk.xml``: mk, a page number, wrongly),
``lang`` the country of the folder's language (``windows-1250-hungarian``: hu; an upper
bound: real Hungarian pages are on .com too), ``none`` (the default) no TLD.
``--force-tld pl`` gives every Western page that TLD: what a variant does to Western
pages served from a Central European domain, which the corpus has none of.

Usage::

    python bench/bench_charset.py --real DIR [DIR ...] --chardet /path/to/chardet.git \
        [--chardet-tld none|name|lang] [--force-tld TLD] [--only crawlkit ...]
"""

from __future__ import annotations

import argparse
import codecs
import re
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from chardetng_py import EncodingDetector

from crawlkit.html import guess as legacy
from crawlkit.html.encoding import codec_for_label
from crawlkit.html.page import detect_charset

# Declarations to strip, so the page is left to the undeclared rule.
_META = re.compile(
    rb"<meta[^>]*(?:charset|content-type)[^>]*>",
    re.IGNORECASE,
)
_XML_ENCODING = re.compile(rb"""(<\?xml[^>]*?)\s+encoding\s*=\s*["'][^"']*["']""", re.I)

# Language of a corpus page -> the legacy encodings its pages were written in.
_LEGACY_BY_LANG = {
    "ja": ["cp932", "euc_jp"],
    "zh": ["gbk"],
    "ko": ["cp949"],
    "ru": ["cp1251", "koi8_r"],
    "uk": ["cp1251"],
    "pl": ["cp1250", "iso8859_2"],
    "hu": ["cp1250", "iso8859_2"],
    "cs": ["cp1250", "iso8859_2"],
}
# chardet's test folders of WHATWG encodings -> the Python codec.
_CHARDET_LEGACY = {
    "Big5": "big5hkscs",
    "CP932": "cp932",
    "CP949": "cp949",
    "EUC-JP": "euc_jp",
    "EUC-KR": "cp949",
    "GB2312": "gb18030",
    "IBM866": "cp866",
    "KOI8-R": "koi8_r",
    "MacCyrillic": "mac_cyrillic",
    "SHIFT_JIS": "cp932",
    "TIS-620": "cp874",
    "iso-8859-2-croatian": "iso8859_2",
    "iso-8859-2-czech": "iso8859_2",
    "iso-8859-2-hungarian": "iso8859_2",
    "iso-8859-2-polish": "iso8859_2",
    "iso-8859-2-slovak": "iso8859_2",
    "iso-8859-2-slovene": "iso8859_2",
    "iso-8859-5-bulgarian": "iso8859_5",
    "iso-8859-5-russian": "iso8859_5",
    "iso-8859-6-arabic": "iso8859_6",
    "iso-8859-7-greek": "iso8859_7",
    "iso-8859-9-turkish": "cp1254",
    "windows-1250-croatian": "cp1250",
    "windows-1250-czech": "cp1250",
    "windows-1250-hungarian": "cp1250",
    "windows-1250-polish": "cp1250",
    "windows-1250-romanian": "cp1250",
    "windows-1250-slovak": "cp1250",
    "windows-1250-slovene": "cp1250",
    "windows-1251-bulgarian": "cp1251",
    "windows-1251-russian": "cp1251",
    "windows-1254-turkish": "cp1254",
    "windows-1255-hebrew": "cp1255",
    "windows-1256-arabic": "cp1256",
}
_CHARDET_WESTERN = {"windows-1252": "cp1252", "iso-8859-1": "cp1252"}
_LANG = re.compile(r"""<html[^>]*\blang\s*=\s*["']?([a-zA-Z]{2})""", re.IGNORECASE)

Page = tuple[str, bytes, str, str | None]  # (name, undeclared bytes, true codec, TLD)
Detector = Callable[[bytes, str | None], str | None]  # (body, TLD) -> codec or label

# Top-level domains of Central European and Turkish text, for the widened variant.
_CENTRAL_TLDS = frozenset({"cz", "sk", "pl", "hu", "si", "hr", "ro", "tr"})
# chardet's folder language -> the country TLD its pages would have (--chardet-tld lang).
_LANG_TLDS = {
    "arabic": "sa",
    "bulgarian": "bg",
    "croatian": "hr",
    "czech": "cz",
    "greek": "gr",
    "hebrew": "il",
    "hungarian": "hu",
    "polish": "pl",
    "romanian": "ro",
    "russian": "ru",
    "slovak": "sk",
    "slovene": "si",
    "turkish": "tr",
}
_TLD = re.compile(r"[a-z]{2,6}")
_GENERIC_TLDS = frozenset({"com", "org", "net", "info", "edu", "gov"})


def url_tld(url: str) -> str | None:
    """The last label of ``url``'s host, lower-case, when it is letters only."""
    host = re.match(r"[a-z]+://([^/:?#]+)", url.lower())
    label = host.group(1).rstrip(".").rsplit(".", 1)[-1] if host else ""
    return label if _TLD.fullmatch(label) else None


def name_tld(path: str) -> str | None:
    """The TLD in a chardet test file's name (the host its feed came from), if any."""
    base = path.rsplit("/", 1)[-1]
    if base.startswith("_"):
        return None
    labels = re.sub(r"\.(xml|txt|html?|srt)$", "", base).lower().split(".")
    for label in reversed(labels[1:]):
        if (len(label) == 2 and label.isalpha()) or label in _GENERIC_TLDS:
            return label
    return None


def chardet_tld(path: str, how: str) -> str | None:
    """The TLD a chardet test file gets by ``--chardet-tld`` ``how``."""
    if how == "name":
        return name_tld(path)
    if how == "lang":
        language = path.split("/")[1].rsplit("-", 1)[-1]
        return _LANG_TLDS.get(language) or name_tld(path)
    return None


def strip_declarations(body: bytes) -> bytes:
    """``body`` without a BOM, charset ``<meta>`` tags or an XML declaration's encoding."""
    for bom in (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff"):
        body = body.removeprefix(bom)
    return _XML_ENCODING.sub(rb"\1", _META.sub(b"", body))


def _undeclared(name: str, text: str, codec: str, tld: str | None) -> Page | None:
    """The page as ``codec`` bytes without declarations, if it is left undeclared and
    is not valid UTF-8 (else the rule under test never sees it)."""
    body = strip_declarations(text.encode(codec, "xmlcharrefreplace"))
    if detect_charset(body)[1] not in ("default", "guess"):
        return None
    return name, body, codec, tld


def _is_latin(text: str) -> bool:
    """Most of the non-ASCII letters are windows-1252's."""
    letters = [c for c in text if not c.isascii() and c.isalpha()]
    if not letters:
        return True
    outside = sum(1 for c in letters if c.encode("cp1252", "ignore") == b"")
    return outside <= len(letters) * 0.02


def corpus_pages(folders: list[Path]) -> tuple[list[Page], list[Page]]:
    """(western, legacy) pages transcoded from the real-page folders."""
    western: list[Page] = []
    legacy: list[Page] = []
    for folder in folders:
        urls = folder / "urls.tsv"
        tlds = {}
        if urls.exists():
            for line in urls.read_text("utf-8").splitlines():
                name, _, url = line.partition("\t")
                tlds[name] = url_tld(url)
        for path in sorted(folder.glob("*.htm*")):
            raw = path.read_bytes()
            codec, _, bom = detect_charset(raw)
            text = raw[bom:].decode(codec, "replace")
            match = _LANG.search(text[:20000])
            lang = match.group(1).lower() if match else "?"
            if lang in _LEGACY_BY_LANG or not _is_latin(text):
                for target in _LEGACY_BY_LANG.get(lang, []):
                    page = _undeclared(f"{path.name}:{target}", text, target, tlds.get(path.name))
                    if page:
                        legacy.append(page)
                continue
            page = _undeclared(path.name, text, "cp1252", tlds.get(path.name))
            if page:
                western.append(page)
    return western, legacy


def chardet_pages(gitdir: str, tld_how: str = "none") -> tuple[list[Page], list[Page]]:
    """(western, legacy) pages from chardet's test files, kept in their own bytes."""
    western: list[Page] = []
    legacy: list[Page] = []
    for folder, codec in [*_CHARDET_WESTERN.items(), *_CHARDET_LEGACY.items()]:
        names = subprocess.run(
            ["git", f"--git-dir={gitdir}", "ls-tree", "--name-only", "HEAD", f"tests/{folder}/"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        for name in names:
            raw = subprocess.run(
                ["git", f"--git-dir={gitdir}", "show", f"HEAD:{name}"],
                check=True,
                capture_output=True,
            ).stdout
            body = strip_declarations(raw)
            if detect_charset(body)[1] not in ("default", "guess"):
                continue  # (pure ASCII or valid UTF-8: not the case under test)
            page = (name, body, codec, chardet_tld(name, tld_how))
            (western if folder in _CHARDET_WESTERN else legacy).append(page)
    return western, legacy


def _right(body: bytes, truth: str, guess: str | None) -> bool:
    if not guess:
        return False
    # a detector's label as a browser reads it (Shift_JIS is windows-31j, EUC-KR is
    # windows-949): Python's strict codecs of those names would count it wrong
    guess = codec_for_label(guess) or guess
    try:
        codecs.lookup(guess)
    except LookupError:
        return False
    return body.decode(guess, "replace") == body.decode(truth, "replace")


def _chardetng(sample: bytes, whole: bool, tld: str | None) -> str | None:
    detector = EncodingDetector()
    detector.feed(sample, last=whole)
    label = detector.guess(tld=tld.encode() if tld else None, allow_utf8=False)
    return codec_for_label({"cp874": "windows-874"}.get(label, label))


def _crawlkit_tld(body: bytes, tld: str | None, widen: bool) -> str | None:
    """crawlkit's rule with the TLD passed to chardetng when it is asked and, when
    ``widen``, chardetng asked too for every page of a Central European or Turkish
    TLD that windows-1252 could explain (variants measured, not adopted)."""
    codec, source, _ = detect_charset(body)
    if source not in ("default", "guess") or codec == "utf-8":
        return codec
    sample = body[: legacy.DETECT_BYTES]
    asked = legacy.windows_1252_implausible(sample) or (widen and tld in _CENTRAL_TLDS)
    if not asked:
        return "cp1252"
    found = _chardetng(sample, len(sample) == len(body), tld)
    if found is None or found == "cp1252" or not legacy._decodes_cleanly(sample, found):
        return "cp1252"
    return found


def _detectors() -> dict[str, Detector]:
    found: dict[str, Detector] = {
        "crawlkit": lambda body, tld: detect_charset(body)[0],
        "crawlkit, tld": lambda body, tld: _crawlkit_tld(body, tld, widen=False),
        "crawlkit, tld widened": lambda body, tld: _crawlkit_tld(body, tld, widen=True),
        "cp1252 always": lambda body, tld: "cp1252",
        "chardetng": lambda body, tld: _chardetng(body, True, None),
        "chardetng, tld": lambda body, tld: _chardetng(body, True, tld),
    }
    try:
        import charset_normalizer

        def normalizer(body: bytes) -> str | None:
            best = charset_normalizer.from_bytes(body).best()
            return best.encoding if best else None

        found["charset-normalizer"] = lambda body, tld: normalizer(body)
    except ImportError:
        pass
    try:
        import cchardet

        found["cchardet"] = lambda body, tld: cchardet.detect(body)["encoding"]
    except ImportError:
        pass
    try:
        import chardet

        found["chardet"] = lambda body, tld: chardet.detect(body)["encoding"]
    except ImportError:
        pass
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", nargs="*", type=Path, default=[])
    parser.add_argument("--chardet", help="chardet's git dir (its tests/ folders)")
    parser.add_argument("--chardet-tld", choices=["none", "name", "lang"], default="none")
    parser.add_argument("--force-tld", help="this TLD for every Western page (a stress)")
    parser.add_argument("--only", nargs="*", help="these detectors only")
    parser.add_argument("--wrong", action="store_true", help="list each wrong guess")
    args = parser.parse_args()
    western, legacy = corpus_pages(args.real)
    if args.chardet:
        more_western, more_legacy = chardet_pages(args.chardet, args.chardet_tld)
        western += more_western
        legacy += more_legacy
    if args.force_tld:
        western = [(name, body, codec, args.force_tld) for name, body, codec, _ in western]
    print(f"western {len(western)} pages, legacy {len(legacy)} pages")
    print(Counter(codec for _, _, codec, _ in legacy).most_common())
    print("TLDs known:", sum(tld is not None for *_, tld in western + legacy))
    for label, detect in _detectors().items():
        if args.only and label not in args.only:
            continue
        started = time.perf_counter()
        wrong: dict[str, list[tuple[str, str, str | None]]] = {"western": [], "legacy": []}
        for kind, pages in (("western", western), ("legacy", legacy)):
            for name, body, truth, tld in pages:
                named = detect(body, tld)
                if not _right(body, truth, named):
                    wrong[kind].append((name, truth, named))
        seconds = time.perf_counter() - started
        print(
            f"{label:20} western right {len(western) - len(wrong['western'])}/{len(western)}"
            f"  legacy right {len(legacy) - len(wrong['legacy'])}/{len(legacy)}"
            f"  {seconds:.2f} s"
        )
        if args.wrong:
            for kind, rows in wrong.items():
                for row in rows:
                    print(f"    {kind} wrong: {row}")


if __name__ == "__main__":
    main()
