"""extract in one process over a crawl's WARC files: CPU a page and a digest of the output.

Run on demand (never in CI), e.g. on the WARC of ``bench/bench_crawl.py --keep``::

    nice .venv/bin/python bench/bench_extract_warc.py STATE/warc/*.warc.gz
    PYTHONPATH=/path/to/other/tree nice .venv/bin/python bench/bench_extract_warc.py ...

What an extract worker does with a crawl's records (read, parse, links, simhash,
records), with a fresh parser and resolver cache per repeat, in this process: CPU ms
a page (the minimum of ``--repeat``) and the SHA-1 of the page and link lines, so two
trees (the second line, run in turns) can be compared for cost and for equal output.
"""

from __future__ import annotations

import argparse
import hashlib
import time

from crawlkit.html.page import HtmlExtractor
from crawlkit.stages.extract import ExtractOptions, extract_warcs
from crawlkit.url import Canonicalizer


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warc", nargs="+")
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    opts = ExtractOptions()
    runs = []
    for _ in range(args.repeat):
        pages, links = bytearray(), bytearray()
        ex = HtmlExtractor(
            Canonicalizer(opts.rules), max_html_bytes=opts.max_html_bytes, max_links=opts.max_links
        )
        start = time.process_time()
        stats = extract_warcs(args.warc, pages.extend, links.extend, options=opts, extractor=ex)
        runs.append(time.process_time() - start)
    digest = hashlib.sha1(bytes(pages) + bytes(links)).hexdigest()[:12]
    print(
        f"{stats.pages} pages, {stats.links} links: {1000 * min(runs) / stats.pages:.3f} ms a "
        f"page (min of {len(runs)}), output sha1 {digest}"
    )


if __name__ == "__main__":
    main()
