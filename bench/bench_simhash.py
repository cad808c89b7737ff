"""Benchmark: simhash per page text, this tree's module against a baseline revision.

Run on demand (never in CI):
    .venv/bin/python bench/bench_simhash.py [--baseline REV] [--repeats 15] [--number 200]
        [--real DIR ...]

The baseline is ``crawlkit/dedup/simhash.py`` as it is at git revision ``--baseline``
(default: the commit before simhash was made faster), loaded as a separate module.
Texts are what ``crawlkit extract`` hashes: the visible text of ``crawlkit testweb``
pages of several sizes (HtmlExtractor's ``raw_text``), plus synthetic texts that
stress the other paths (accented Latin with capitals, Cyrillic, CJK, numbers and
dates); with ``--real``, the visible text of every saved page in each directory
(``bench/real_corpus.py`` builds them), timed as one row (µs a page). This tree is
timed twice: its numpy passes (``simhash_numpy``) and ``simhash``, which runs the C
pass (``crawlkit/dedup/_simhash.c``). Each timing is the median over ``--repeats``
rounds of ``--number`` calls, the three interleaved so that load on a shared machine
hits them alike. All are first checked to give the same simhash for every text.
"""

from __future__ import annotations

import argparse
import importlib.util
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from crawlkit.dedup import simhash as new
from crawlkit.html.page import HtmlExtractor
from crawlkit.testweb import textgen
from crawlkit.testweb.graph import WebConfig, build_web
from crawlkit.testweb.pages import page_path, render_page
from crawlkit.url import Canonicalizer

ROOT = Path(__file__).resolve().parent.parent
# The last commit with the original (translate + per-byte uint64 prefix sum) module.
DEFAULT_BASELINE = "55716ae"


def load_baseline(rev: str) -> ModuleType:
    source = subprocess.run(
        ["git", "show", f"{rev}:crawlkit/dedup/simhash.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "simhash_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("simhash_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def testweb_text(kb: float, page: int = 1) -> str:
    web = build_web(WebConfig(hosts=2, pages=10, page_kb=kb))
    host = web.hosts[0]
    body = render_page(web, host, page, 8080)
    url = f"http://{host.name}:8080{page_path(page)}"
    return HtmlExtractor(Canonicalizer()).extract(body, url, content_type="text/html").raw_text


def synthetic(size: int, seed: int, alphabet: str = "", share: float = 0.2) -> str:
    """English-like words with numbers, dates and punctuation; words from
    ``alphabet`` (if given) mixed in, a ``share`` of them."""
    rng = random.Random(seed)
    out: list[str] = []
    length = 0
    while length < size:
        roll = rng.random()
        if alphabet and roll < share:
            word = "".join(rng.choice(alphabet) for _ in range(rng.randint(2, 9)))
        elif roll < 0.25:
            word = rng.choice(["Mon, 30 Nov 2026 07:31:21 GMT", "3 hours ago", "12:45 pm", "#42"])
        elif roll < 0.3:
            word = f"{rng.randint(0, 99999):,}"
        else:
            word = textgen.sentence(rng)
        out.append(word)
        length += len(word) + 1
    return " ".join(out)


def texts() -> list[tuple[str, str]]:
    latin = "abcdefghijklmnopqrstuvwxyzéèàüöçñßÉÀÜ"
    cyrillic = "".join(chr(c) for c in range(0x410, 0x450))
    cjk = "".join(chr(0x4E00 + 37 * i) for i in range(300))
    return [
        ("testweb 1 KB page", testweb_text(1)),
        ("testweb 5 KB page", testweb_text(5)),
        ("testweb 20 KB page", testweb_text(20)),
        ("testweb 30 KB page", testweb_text(30)),
        ("English 2 KB", synthetic(2_000, 1)),
        ("English 10 KB", synthetic(10_000, 2)),
        ("typographic 5 KB", synthetic(5_000, 6, "’“”—…©", 0.03)),
        ("typographic 20 KB", synthetic(20_000, 7, "’“”—…©", 0.03)),
        ("accented 10 KB", synthetic(10_000, 3, latin, 0.1)),
        ("accented 1/5 10 KB", synthetic(10_000, 3, latin)),
        ("Cyrillic 10 KB", synthetic(10_000, 4, cyrillic)),
        ("CJK 10 KB", synthetic(10_000, 5, cjk)),
        ("one line", "Hello, world: 3 new comments"),
    ]


def real_texts(folder: Path) -> list[str]:
    """The visible text of each saved page (``*.html``) in ``folder``."""
    extractor = HtmlExtractor(Canonicalizer())
    return [
        extractor.extract(path.read_bytes(), f"http://real.example/{path.name}").raw_text
        for path in sorted(folder.glob("*.html"))
    ]


def timed(fn: Callable[[str], int], texts: list[str], number: int) -> float:
    """CPU µs a call, ``number`` calls of each text, per text."""
    start = time.thread_time()
    for _ in range(number):
        for text in texts:
            fn(text)
    return (time.thread_time() - start) / number / len(texts) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="git revision")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--number", type=int, default=200)
    parser.add_argument("--real", type=Path, action="append", default=[], help="pages dir")
    args = parser.parse_args()
    old = load_baseline(args.baseline)
    if new._compiled is None:
        sys.exit("bench_simhash: the C pass is not built (pip install -e . with a C compiler)")
    rows = [(label, [text], args.number) for label, text in texts()]
    for folder in args.real:
        pages = real_texts(folder)
        rows.append((f"{folder.name} ({len(pages)} pages)", pages, max(1, args.number // 100)))
    print(f"baseline {args.baseline}; median of {args.repeats} rounds")
    print(f"{'text':26} {'bytes':>8} {'old us':>8} {'numpy us':>9} {'C us':>8} {'C/old':>8}")
    for label, group, number in rows:
        for text in group:
            want = old.simhash(text)
            if new.simhash_numpy(text) != want or new.simhash(text) != want:
                sys.exit(f"bench_simhash: {label}: the simhashes differ")
        olds, numpys, cs = [], [], []
        for _ in range(args.repeats):
            olds.append(timed(old.simhash, group, number))
            numpys.append(timed(new.simhash_numpy, group, number))
            cs.append(timed(new.simhash, group, number))
        o, p, c = (statistics.median(t) for t in (olds, numpys, cs))
        size = sum(len(t.encode("utf-8", "surrogatepass")) for t in group) // len(group)
        print(f"{label:26} {size:8} {o:8.1f} {p:9.1f} {c:8.1f} {c / o:8.2f}")


if __name__ == "__main__":
    main()
