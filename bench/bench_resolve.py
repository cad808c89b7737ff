"""The link resolver on the hrefs of real pages: this tree's against a git revision's.

Run on demand (never in CI)::

    nice .venv/bin/python bench/bench_resolve.py STATE/warc/*.warc.gz [--baseline HEAD]
    nice .venv/bin/python bench/bench_resolve.py --html-dir DIR ...   # saved pages

The pages' HTML records (or ``DIR/*.html``, each with the URL of ``DIR/urls.tsv`` or a
made-up one) are extracted once to record every ``LinkResolver.resolve`` call extract
makes (links and requisites, in page order); the calls are then replayed through a
fresh resolver of each version, in turns (``crawlkit/html/resolve.py`` at
``--baseline`` is loaded as a separate module). Prints CPU µs per call and per page,
the median of ``--repeat`` turns, and checks both versions give the same result for
every call (the canonical URL, host, site and fingerprint).
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from crawlkit.diag import NullReporter
from crawlkit.html import resolve as new
from crawlkit.html.page import HtmlExtractor
from crawlkit.stages.extract import ExtractOptions, ExtractStats, _jobs
from crawlkit.url import Canonicalizer

Call = tuple[str, str, str]


def baseline(rev: str) -> ModuleType:
    text = subprocess.run(
        ["git", "show", f"{rev}:crawlkit/html/resolve.py"], check=True, capture_output=True
    ).stdout
    path = Path(tempfile.mkdtemp()) / "resolve_base.py"
    path.write_bytes(text)
    spec = importlib.util.spec_from_file_location("resolve_base", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def pages(args: argparse.Namespace) -> list[tuple[str, bytes, str | None]]:
    """(url, body, content type) of each HTML page."""
    if args.html_dir:
        out: list[tuple[str, bytes, str | None]] = []
        for folder in args.html_dir:
            urls = {}
            tsv = Path(folder) / "urls.tsv"
            if tsv.exists():
                for line in tsv.read_text().splitlines():
                    name, _, url = line.partition("\t")
                    urls[name] = url
            for path in sorted(Path(folder).glob("*.html")):
                url = urls.get(path.name, f"https://{path.stem[:40]}.example/a/page.html")
                out.append((url, path.read_bytes(), "text/html"))
        return out
    jobs = _jobs(args.warc, ExtractOptions(), ExtractStats(), NullReporter())
    return [(j[0], j[7], j[4]) for j in jobs if j[9] == "html"]


def record_calls(items: list[tuple[str, bytes, str | None]]) -> list[Call]:
    calls: list[Call] = []
    real = new.LinkResolver.resolve

    def spy(self: Any, href: str, base: str, authority: str) -> Any:
        calls.append((href, base, authority))
        return real(self, href, base, authority)

    new.LinkResolver.resolve = spy  # type: ignore[method-assign]
    try:
        ex = HtmlExtractor(Canonicalizer())
        for url, body, ctype in items:
            ex.extract(body, url, content_type=ctype)
    finally:
        new.LinkResolver.resolve = real  # type: ignore[method-assign]
    return calls


def replay(module: ModuleType, calls: list[Call]) -> tuple[float, list[Any]]:
    resolver = module.LinkResolver(Canonicalizer())
    resolve = resolver.resolve
    start = time.process_time()
    out = [resolve(h, b, a) for h, b, a in calls]
    return time.process_time() - start, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warc", nargs="*")
    ap.add_argument("--html-dir", action="append", default=[])
    ap.add_argument("--baseline", default="HEAD")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    items = pages(args)
    calls = record_calls(items)
    old = baseline(args.baseline)
    times: dict[str, list[float]] = {"baseline": [], "this tree": []}
    results: dict[str, list[Any]] = {}
    for _ in range(args.repeat):
        for name, module in (("baseline", old), ("this tree", new)):
            spent, results[name] = replay(module, calls)
            times[name].append(spent)
    same = [
        (a is None and b is None)
        or (a and b and (a.url, a.host, a.site, a.fp) == (b.url, b.host, b.site, b.fp))
        for a, b in zip(results["baseline"], results["this tree"], strict=True)
    ]
    print(f"{len(items)} pages, {len(calls)} resolve calls ({len(calls) / len(items):.1f} a page)")
    base_t = statistics.median(times["baseline"])
    for name, runs in times.items():
        t = statistics.median(runs)
        print(
            f"  {name:10s} {1e6 * t / len(calls):6.2f} µs a call, "
            f"{1e6 * t / len(items):7.1f} µs a page ({t / base_t:.2f}x)"
        )
    print(f"  same results: {all(same)} ({same.count(False)} differ)")


if __name__ == "__main__":
    main()
