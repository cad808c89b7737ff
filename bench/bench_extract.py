"""Benchmark: extract (parse, links, text, simhash) per core, against a bare parse.

Run on demand (never in CI):  .venv/bin/python bench/bench_extract.py [--pages 400]
    [--hostile] [--real DIR ... [--baseline-python OTHER/.venv/bin/python]]

Generates realistic pages of about 20 KB and 100 KB (head with scripts and styles,
site navigation repeated on every page of a site, article text from a Zipf
vocabulary, content links to the same and other sites, footer), then measures on one
core, in the same run:

* baseline: a bare selectolax Lexbor parse plus a walk of the links
  (``tree.css(...)`` and each node's href), the least any extractor must do;
* extract: ``process_chunk`` as the workers run it: charset, parse, links resolved
  and canonicalized, meta robots, visible text, simhash, NDJSON page and link
  records (a fresh resolver cache per repeat);
* simhash alone on the pages' visible text, and the naive 64-step Python vote loop;
* WARC reading: crawlkit.warc.read against warcio's ArchiveIterator (and FastWARC's
  when it is installed) over the same .warc.gz;
* the command: ``crawlkit extract -j 1`` and ``-j 2`` wall clock over that WARC.

With ``--hostile`` (also run first without it): one page of each hostile shape
(5 MB: deep nesting of several tags, unclosed tags, a huge number of attributes,
repeated ``<body>`` tags, huge text; and the shapes of issue 23 at 100,000 tags),
each extracted as ``crawlkit extract`` does it (in a worker, under the CPU deadline):
CPU seconds of the worker for that page and what its record says (capped, error).
The goal is under 1 s; a shape the guard does not know ends at the deadline
("capped": ["time"]).

With ``--real DIR``: a folder of saved real pages (``*.html``, and ``urls.tsv``: file
name, tab, page URL; see ``bench/real_corpus.py`` for the corpora used and how to
rebuild them) becomes one WARC, and ``crawlkit extract -j 1`` runs on it, in turns
with ``--baseline-python`` (another venv's interpreter: an older crawlkit, e.g.
9650e7f in ``git worktree add``). For each: CPU per page (all processes, minus the
start-up measured on a one-page WARC), pages dropped, capped and with an error, and
the recall of ``<a href>`` links against a reference: lxml's parse of the same bytes,
hrefs resolved by ada (WHATWG) against ``<base href>`` and the page URL, both sides
canonicalized by crawlkit's rules; the misses are listed by kind.

Reports pages per CPU second of one process (median of --repeat runs, baseline and
extract measured in turns) and the ratio to the baseline; the command lines are wall
clock, including interpreter start-up.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from selectolax.lexbor import LexborHTMLParser

from crawlkit.dedup.simhash import simhash, word_hashes
from crawlkit.html.page import MAX_HTML_BYTES, HtmlExtractor
from crawlkit.stages.extract import process_chunk
from crawlkit.url import Canonicalizer
from crawlkit.warc.read import iter_responses

SYL = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "po", "ve", "da", "ri", "on", "el", "an"]


def vocabulary(n: int = 5000, seed: int = 3) -> tuple[list[str], list[float]]:
    rng = random.Random(seed)
    words = sorted({"".join(rng.choice(SYL) for _ in range(rng.randint(1, 4))) for _ in range(n)})
    rng.shuffle(words)
    weights = [1.0 / (rank + 1) for rank in range(len(words))]
    return words, weights


WORDS, WEIGHTS = vocabulary()
# Share of sentences that carry a link: with the site chrome (about 40 links of
# navigation, related articles and footer on every page) this gives about 60 links on
# a 20 KB page and 160 on a 100 KB page.
LINK_SHARE = 0.15


def sentence(rng: random.Random) -> str:
    words = rng.choices(WORDS, WEIGHTS, k=rng.randint(8, 20))
    return " ".join(words).capitalize() + "."


def make_page(rng: random.Random, site: int, index: int, size: int) -> tuple[str, bytes]:
    """(url, html) of about ``size`` bytes (see LINK_SHARE for the links)."""
    host = f"www.site{site}.example.com"
    url = f"https://{host}/section{index % 7}/article-{index}.html"
    nav = "".join(f'<li><a href="/section{i}/">Section {i}</a></li>' for i in range(12)) + "".join(
        f'<li><a href="https://{host}/about/{i}">About {i}</a></li>' for i in range(8)
    )
    head = (
        f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>Article {index} of "
        f"site {site}</title><meta name=viewport content='width=device-width'>"
        f"<link rel=canonical href='{url}'><link rel=stylesheet href='/s.css'>"
        "<style>" + "body{margin:0;padding:0}.nav li{display:inline}" * 20 + "</style>"
        "<script>" + "window.dataLayer=window.dataLayer||[];function gtag(){}" * 20 + "</script>"
        "</head><body>"
        f"<header><a href='/'><img src='/logo.png' alt=logo></a><nav><ul class=nav>{nav}</ul>"
        "</nav></header><main><article>"
    )
    foot = (
        "</article></main><aside><h3>Related</h3>"
        + "".join(
            f"<a href='/section{index % 7}/article-{index + j}.html'>More {j}</a>"
            for j in range(1, 8)
        )
        + "</aside><footer>"
        + "".join(f"<a href='/legal/{j}'>Legal {j}</a> " for j in range(10))
        + "</footer></body></html>"
    )
    parts = [head]
    total = len(head) + len(foot)
    while total < size:
        para = "<p>"
        for _ in range(rng.randint(3, 6)):
            para += sentence(rng) + " "
            if rng.random() < LINK_SHARE:
                target = rng.random()
                if target < 0.5:
                    href = f"/section{rng.randrange(7)}/article-{rng.randrange(100000)}.html"
                elif target < 0.8:
                    href = (
                        f"https://www.site{rng.randrange(5000)}.example.org/p/{rng.randrange(999)}"
                    )
                else:
                    href = f"article-{rng.randrange(100000)}.html?ref=home&utm_source=x"
                para += f'<a href="{href}">{sentence(rng)[:30]}</a> '
        para += "</p>\n"
        parts.append(para)
        total += len(para)
    parts.append(foot)
    return url, "".join(parts).encode()


def jobs_for(pages: list[tuple[str, bytes]]) -> list[tuple]:
    return [
        (
            url,
            "2026-11-30T00:00:00Z",
            "sha1:X",
            200,
            "text/html; charset=utf-8",
            None,
            1,
            body,
            None,
            "html",
        )
        for url, body in pages
    ]


def median_rate(fn: Callable[[], object], count: int, repeat: int) -> float:
    """Median items per CPU second of this process (the machine is shared, so CPU
    time, not wall time, is what one core does)."""
    rates = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        rates.append(count / (time.process_time() - t0))
    return statistics.median(rates)


def interleaved(fns: list[Callable[[], object]], count: int, repeat: int) -> list[float]:
    """Median rates of several functions measured in turns, so load drifts hit all."""
    rates: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for i, fn in enumerate(fns):
            t0 = time.process_time()
            fn()
            rates[i].append(count / (time.process_time() - t0))
    return [statistics.median(r) for r in rates]


def naive_simhash(text: str) -> int:
    """The textbook loop: hash each shingle, then 64 Python steps per shingle."""
    hashes = [int(h) for h in word_hashes(text)]
    votes = [0] * 64
    for i in range(len(hashes) - 2):
        f = hash((hashes[i], hashes[i + 1], hashes[i + 2])) & ((1 << 64) - 1)
        for bit in range(64):
            votes[bit] += 1 if f >> bit & 1 else -1
    return sum(1 << bit for bit in range(64) if votes[bit] > 0)


def write_warc(
    path: Path, pages: list[tuple[str, bytes]], content_type: str = "text/html; charset=utf-8"
) -> None:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for url, body in pages:
            headers = StatusAndHeaders(
                "200 OK", [("Content-Type", content_type)], protocol="HTTP/1.1"
            )
            writer.write_record(
                writer.create_warc_record(
                    url, "response", payload=io.BytesIO(body), http_headers=headers
                )
            )


def bench_size(size: int, n: int, repeat: int) -> None:
    rng = random.Random(size)
    pages = [make_page(rng, site=i % 40, index=i, size=size) for i in range(n)]
    avg = sum(len(b) for _, b in pages) / n
    jobs = jobs_for(pages)
    canon = Canonicalizer()
    links_per_page = (
        len(process_chunk(jobs[:50], HtmlExtractor(Canonicalizer()))[1].splitlines()) / 50
    )

    def baseline() -> None:
        for _, body in pages:
            tree = LexborHTMLParser(body)
            for node in tree.css("a[href], area[href], link[href], frame[src], iframe[src]"):
                node.attributes.get("href")

    def extract() -> None:
        # A fresh link cache per repeat (the Canonicalizer, built once per worker in
        # real runs, is shared: loading its rules is not per-page work).
        ex = HtmlExtractor(canon)
        for start in range(0, n, 64):
            process_chunk(jobs[start : start + 64], ex)

    texts = [HtmlExtractor(Canonicalizer()).extract(b, u).text for u, b in pages[:200]]

    def sim() -> None:
        for t in texts:
            simhash(t)

    base, full = interleaved([baseline, extract], n, repeat)
    sim_rate = median_rate(sim, len(texts), repeat)
    naive_n = 20
    naive_rate = median_rate(lambda: [naive_simhash(t) for t in texts[:naive_n]], naive_n, 1)
    print(
        f"\n{avg / 1024:.0f} KB pages ({n} pages, {links_per_page:.0f} links/page, "
        f"{sum(len(t) for t in texts) / len(texts) / 1024:.1f} KB visible text):"
    )
    print(f"  baseline parse + link walk   {base:9,.0f} pages/s")
    print(f"  extract (text, simhash, URLs){full:9,.0f} pages/s   {base / full:.2f}x the baseline")
    print(f"  simhash alone                {sim_rate:9,.0f} pages/s")
    print(f"  naive 64-step simhash loop   {naive_rate:9,.0f} pages/s")

    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "bench.warc.gz"
        write_warc(warc, pages)
        mb = warc.stat().st_size / 1e6

        def ours() -> None:
            for _ in iter_responses(warc):
                pass

        def warcio_read() -> None:
            from warcio.archiveiterator import ArchiveIterator

            with open(warc, "rb") as f:
                for rec in ArchiveIterator(f):
                    if rec.rec_type == "response":
                        rec.content_stream().read()

        print(
            f"  WARC read, crawlkit.warc.read {median_rate(ours, n, repeat):9,.0f} records/s "
            f"({mb:.1f} MB gzip)"
        )
        print(
            f"  WARC read, warcio            {median_rate(warcio_read, n, repeat):9,.0f} records/s"
        )
        try:
            from fastwarc.warc import ArchiveIterator as FastIterator  # type: ignore

            def fast() -> None:
                with open(warc, "rb") as f:
                    for rec in FastIterator(f, parse_http=True):
                        rec.reader.read()

            print(f"  WARC read, FastWARC          {median_rate(fast, n, repeat):9,.0f} records/s")
        except ImportError:
            print("  WARC read, FastWARC          (not installed)")
        for jobs_n in ("1", "2"):
            times = []
            cpus = []
            for _ in range(max(1, repeat // 2)):
                t0 = time.perf_counter()
                c0 = child_cpu()
                pages_out, links_out = str(Path(tmp) / "p.ndjson"), str(Path(tmp) / "l.ndjson")
                cmd = [sys.executable, "-m", "crawlkit", "extract", "-q", "-j", jobs_n]
                subprocess.run(
                    [*cmd, str(warc), "--pages", pages_out, "--links", links_out], check=True
                )
                times.append(time.perf_counter() - t0)
                cpus.append(child_cpu() - c0)
            rate = n / statistics.median(times)
            cpu_rate = n / statistics.median(cpus)
            print(
                f"  command -j {jobs_n}: {rate:7,.0f} pages/s wall, {cpu_rate:7,.0f} pages per "
                "CPU s (all processes, with start-up)"
            )


def child_cpu() -> float:
    """CPU seconds used by finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def hostile_pages(cap: int = MAX_HTML_BYTES) -> dict[str, bytes]:
    """One page per hostile shape: 5 MB ones filled to the --max-html cap, and the
    shapes of issue 23 at 100,000 tags."""
    head = b"<html><body>"

    def fill(unit: bytes, prefix: bytes = b"") -> bytes:
        room = cap - len(head) - len(prefix) - len(b"hello")
        return head + prefix + unit * (room // len(unit)) + b"hello"

    deep = b"<div>" * 128
    n = 100_000
    return {
        "div nested": fill(b"<div>"),
        "span nested": fill(b"<span>"),
        "b unclosed": fill(b"<b>"),
        "a nested": fill(b'<a href="/x">'),
        "ul > li nested": fill(b"<ul><li>"),
        "table > tr > td nested": fill(b"<table><tr><td>"),
        "font > p": fill(b"<font><p>x"),
        "li at depth 128": fill(b"<li>", deep),
        "div pairs at depth 128": fill(b"<div></div>", deep),
        "svg paths": fill(b'<path d="M0 0"/>', b"<svg>"),
        "svg breakout, paths": fill(b"<path/>", b"<svg><div/>"),
        "one tag, 500k attributes": head
        + b"<div "
        + b" ".join(b"a%d=1" % i for i in range(500_000))[: cap - 40]
        + b">hello",
        "tags of 1,000 attributes": fill(
            b"<i " + b" ".join(b"a%d" % i for i in range(1000)) + b">x</i>"
        ),
        "body repeated with new attributes": head
        + b"".join(b"<body a%d>" % i for i in range(600_000))[: cap - 40]
        + b"hello",
        "huge text": fill(b"hello world "),
        "unclosed comments": fill(b"<!--"),
        # issue 23: ordinary markup the first guard walked past
        "svg > script > div x 100k": head + b"<svg><script>" + b"<div>" * n + b"hi</script>",
        "textareaz > div x 100k": head + b"<textareaz>" + b"<div>" * n + b"hi",
        "svg > title > div x 100k": head + b"<svg><title>" + b"<div>" * n + b"hi",
        "comment ended --!>, div x 100k": head + b"<!-- x --!>" + b"<div>" * n + b"hi",
        "<div></x> x 100k": head + b"<div></x>" * n + b"hi",
        "script never closed, 6 MB": head + b"<a href=/x>x</a><script>" + b"x" * 6_000_000,
        "comment never closed, 1 MB": head + b"<a href=/x>x</a><!--" + b"x" * 1_000_000,
        "script string <style>, div x 100k": head
        + b"<script>var s='<style>a{}<\\/style>';</script>"
        + b"<div>" * n,
        "<a title='<script>'>, div x 100k": head + b'<a title="<script>">' + b"<div>" * n,
        # not known to the guard: ended by the CPU deadline
        "attributes holding <b>, 100k": head
        + b'<div a0=">" '
        + b" ".join(b'a%d="<b>"' % i for i in range(1, n))
        + b">hi",
    }


def _extract_cpu(pages: list[tuple[str, bytes]]) -> tuple[float, list[dict]]:
    """CPU seconds of ``extract_warcs`` (its worker included) over ``pages``, and the
    page records."""
    from crawlkit.stages.extract import extract_warcs

    with tempfile.TemporaryDirectory() as tmp:
        warc = Path(tmp) / "h.warc.gz"
        write_warc(warc, pages)
        out: list[bytes] = []
        c0, k0 = time.process_time(), child_cpu()
        extract_warcs([str(warc)], out.append)
        cpu = time.process_time() - c0 + child_cpu() - k0
    return cpu, [json.loads(line) for line in b"".join(out).splitlines()]


def bench_hostile(repeat: int) -> None:
    """CPU seconds of one page of each hostile shape, extracted as ``crawlkit extract``
    does it (the slowest of ``repeat`` runs, minus a run on a small page: the worker's
    start-up): the goal is under 1 s for every shape."""
    small = [("http://hostile.example/", b"<title>t</title><p>small</p>")]
    base = min(_extract_cpu(small)[0] for _ in range(3))
    print(
        f"hostile pages, CPU seconds of extract (worker included, start-up of {base:.2f} s "
        f"taken off; worst of {repeat}):"
    )
    worst = 0.0
    for name, body in hostile_pages().items():
        times = []
        for _ in range(repeat):
            cpu, records = _extract_cpu([("http://hostile.example/", body)])
            times.append(cpu - base)
        worst = max(worst, max(times))
        rec = records[0] if records else {}
        said = ",".join(rec.get("capped", [])) or "-"
        if rec.get("error"):
            said += f" error: {rec['error'][:60]}"
        print(
            f"  {name:36s} {len(body) / 1e6:4.1f} MB {max(times):6.2f} s  "
            f"{len(records)} record, capped: {said}, links: {rec.get('links')}"
        )
    print(f"  worst: {worst:.2f} s")


# ---------------------------------------------------------------- real pages


def real_pages(folder: Path) -> list[tuple[str, bytes]]:
    """(URL, bytes) of the saved pages in ``folder``: the URL from ``urls.tsv``, else
    the page's absolute ``<link rel=canonical>``, else one made from the file name;
    each URL once (a repeat gets ``?copy=N``)."""
    known: dict[str, str] = {}
    tsv = folder / "urls.tsv"
    if tsv.exists():
        for line in tsv.read_text().splitlines():
            name, _, url = line.partition("\t")
            known[name] = url
    canonical = re.compile(
        rb"""<link[^>]{0,200}?rel=["']?canonical["']?[^>]{0,200}?href=["'](https?://[^"'\s>]+)""",
        re.IGNORECASE,
    )
    pages = []
    seen: set[str] = set()
    for path in sorted(folder.iterdir()):
        if path.name == "urls.tsv" or not path.is_file():
            continue
        body = path.read_bytes()
        url = known.get(path.name)
        if url is None:
            m = canonical.search(body, 0, 65536)
            url = m.group(1).decode("ascii", "replace") if m else None
        if url is None:
            url = "http://real-pages.invalid/" + urllib.parse.quote(path.name)
        n = 1
        while url in seen:
            n += 1
            url = url.split("?copy=")[0] + f"?copy={n}"
        seen.add(url)
        pages.append((url, body))
    return pages


def reference_links(pages: list[tuple[str, bytes]], canon: Canonicalizer) -> dict[str, set[str]]:
    """Each page's ``<a href>`` links by lxml's parse and ada's WHATWG resolution,
    canonicalized: {canonical page URL: {canonical link URL}}."""
    import ada_url
    import lxml.html

    out: dict[str, set[str]] = {}
    for url, body in pages:
        page = canon.parse(url).url
        links: set[str] = set()
        try:
            doc = lxml.html.document_fromstring(body)
        except Exception:  # lxml refuses some (empty) documents
            out[page] = links
            continue
        base = url
        for node in doc.iter("base"):
            href = node.get("href")
            if href and href.strip():
                with contextlib.suppress(ValueError):
                    base = ada_url.join_url(url, href.strip())
                break
        for node in doc.iter("a"):
            href = node.get("href")
            if href is None or not href.strip():
                continue
            try:
                parsed = canon.parse(ada_url.join_url(base, href))
            except Exception:
                continue
            links.add(parsed.url)
        out[page] = links
    return out


def _miss_kind(url: str) -> str:
    if "%" in url:
        return "percent-escapes"
    if any(ord(c) > 127 for c in url):
        return "non-ASCII"
    if "&" in url or ";" in url:
        return "entities / separators"
    return "other"


def run_extract(python: str, warc: Path, out: Path) -> tuple[float, Path, Path, str]:
    """Run ``crawlkit extract -j 1`` of ``python``'s venv on ``warc``: (CPU seconds of
    all its processes, pages file, links file, stderr)."""
    pages, links = out / "pages.ndjson", out / "links.ndjson"
    c0 = child_cpu()
    cmd = [python, "-m", "crawlkit", "extract", "-j", "1", str(warc)]
    done = subprocess.run(
        [*cmd, "--pages", str(pages), "--links", str(links)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{python}: extract failed: {done.stderr[-500:]}")
    return child_cpu() - c0, pages, links, done.stderr


def bench_real(folder: Path, baseline: str | None, repeat: int) -> None:
    pages = real_pages(folder)
    canon = Canonicalizer()
    mean = sum(len(b) for _, b in pages) / len(pages)
    print(f"\nreal pages: {folder} ({len(pages)} pages, {mean / 1024:.0f} KB mean)")
    reference = reference_links(pages, canon)
    versions = [("this tree", sys.executable)] + ([("baseline", baseline)] if baseline else [])
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        warc, tiny = tmp / "real.warc.gz", tmp / "tiny.warc.gz"
        write_warc(warc, pages, content_type="text/html")
        write_warc(tiny, pages[:1], content_type="text/html")
        cpu: dict[str, list[float]] = {name: [] for name, _ in versions}
        for _ in range(repeat):  # in turns, so load drifts hit both
            for name, python in versions:
                out = tmp / name.replace(" ", "-")
                out.mkdir(exist_ok=True)
                full = run_extract(python, warc, out)[0]
                start = run_extract(python, tiny, out)[0]
                cpu[name].append((full - start) / (len(pages) - 1))
        for name, python in versions:
            out = tmp / name.replace(" ", "-")
            _, page_file, link_file, _stderr = run_extract(python, warc, out)
            _report(name, pages, reference, page_file, link_file, cpu[name], canon)
        if baseline:
            ratio = statistics.median(cpu["this tree"]) / statistics.median(cpu["baseline"])
            print(f"  CPU per page, this tree / baseline: {ratio:.2f} (median of {repeat})")


def _report(
    name: str,
    pages: list[tuple[str, bytes]],
    reference: dict[str, set[str]],
    page_file: Path,
    link_file: Path,
    cpu: list[float],
    canon: Canonicalizer,
) -> None:
    records = [json.loads(line) for line in page_file.read_bytes().splitlines()]
    found: dict[str, set[str]] = {}
    for line in link_file.read_bytes().splitlines():
        rec = json.loads(line)
        # Any link record: each URL is written once a page, with the tag where it was
        # first found (a <link rel=canonical> to the page itself, an RSS alternate).
        if rec.get("reason") == "link":
            found.setdefault(rec["from"], set()).add(rec["url"])
    want = sum(len(v) for v in reference.values())
    misses: Counter[str] = Counter()
    examples: dict[str, str] = {}
    hit = 0
    for page, links in reference.items():
        got = found.get(page, set())
        hit += len(links & got)
        for url in links - got:
            kind = _miss_kind(url)
            misses[kind] += 1
            examples.setdefault(kind, url[:100])
    capped = sum(1 for r in records if r.get("capped"))
    errors = sum(1 for r in records if r.get("error"))
    per_page = statistics.median(cpu)
    print(
        f"  {name}: {per_page * 1e3:.2f} ms CPU a page ({1 / per_page:,.0f} pages/s a core; "
        f"runs {', '.join(f'{c * 1e3:.2f}' for c in cpu)}); pages dropped "
        f"{len(pages) - len(records)}, capped {capped} ({100 * capped / len(pages):.2f}%), "
        f"with an error {errors}; <a href> recall {100 * hit / max(want, 1):.2f}% "
        f"({hit:,} of {want:,})"
    )
    for kind, count in misses.most_common():
        print(f"    missed {count:5d} {kind:22s} e.g. {examples[kind]}")
    kinds = Counter(c for r in records for c in r.get("capped", []))
    if kinds:
        print(f"    capped by: {dict(kinds)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--hostile", action="store_true", help="only the hostile pages")
    parser.add_argument("--real", type=Path, action="append", help="a folder of real pages")
    parser.add_argument(
        "--baseline-python", help="with --real: the python of another crawlkit to compare"
    )
    args = parser.parse_args()
    if args.real:
        for folder in args.real:
            bench_real(folder, args.baseline_python, args.repeat)
        return
    bench_hostile(args.repeat)
    if args.hostile:
        return
    bench_size(20_000, args.pages, args.repeat)
    bench_size(100_000, max(40, args.pages // 4), args.repeat)


if __name__ == "__main__":
    main()
