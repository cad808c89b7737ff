"""The WARC thread's work per capture: ``WarcWriter.write_capture`` with its index line.

Run on demand (never in CI), on the captures of a real WARC (a crawl's, e.g. from
``bench/bench_crawl.py --keep``)::

    nice .venv/bin/python bench/bench_warc_write.py STATE/warc/crawlkit-*.warc.gz

Each ``response`` record of the WARC becomes a :class:`Capture` again (its HTTP head,
its body as stored, a request head and the metadata a crawl writes), and the captures
are written to a fresh file, in turns: A with the index line's HTTP head read by
warcio's parser (as before), B with the plain scan :func:`_plain_head` (warcio only
for heads it cannot read). Prints CPU µs per capture, the median of ``--repeat``
turns each, and checks that both wrote the same index lines. Blocks of 256 KiB or
more are mapped apart, as in a crawl (:func:`crawlkit.heap.map_large_blocks`).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

from warcio.archiveiterator import ArchiveIterator

from crawlkit.heap import map_large_blocks
from crawlkit.warc import cdxj
from crawlkit.warc.write import Capture, WarcWriter, index_of, sha1_digest

REQUEST = b"GET / HTTP/1.1\r\nHost: a.test\r\nUser-Agent: crawlkit\r\nAccept-Encoding: gzip\r\n\r\n"


def captures(paths: list[str]) -> list[Capture]:
    out = []
    for path in paths:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f):
                if rec.rec_type != "response" or rec.http_headers is None:
                    continue
                body = rec.raw_stream.read()
                out.append(
                    Capture(
                        url=str(rec.rec_headers.get_header("WARC-Target-URI")),
                        ip="127.0.0.1",
                        date=time.time(),
                        request_head=REQUEST,
                        response_head=rec.http_headers.to_bytes(),
                        body=body,
                        payload_digest=sha1_digest(body),
                        depth=1,
                        precompressed=rec.http_headers.get_header("Content-Encoding") is not None,
                        metadata={"fetchTimeMs": "12", "ipAddress": "127.0.0.1"},
                    )
                )
    return out


def write_all(caps: list[Capture], warcio_only: bool) -> tuple[float, list[str]]:
    """CPU seconds to write ``caps`` with their index, and the index lines."""
    with tempfile.TemporaryDirectory() as tmp:
        writer = WarcWriter(tmp, index=True)
        with (
            mock.patch.object(cdxj, "_plain_head", lambda head: None)
            if warcio_only
            else (mock.patch.object(cdxj, "_plain_head", cdxj._plain_head))
        ):
            start = time.process_time()
            for cap in caps:
                writer.write_capture(cap)
            writer.flush()
            spent = time.process_time() - start
        name = writer.name
        writer.close()
        lines = index_of(Path(tmp) / name).read_text().splitlines()
    # length and offset differ between runs (record ids are random, so are the
    # compressed sizes): the rest of each line must not
    return spent, [line.split(', "length"')[0] for line in lines]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warc", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    map_large_blocks()  # as in a crawl's processes: allocators' costs differ without it
    caps = captures(args.warc)
    times: dict[bool, list[float]] = {True: [], False: []}
    lines: dict[bool, list[str]] = {}
    for _ in range(args.repeat):
        for warcio_only in (True, False):
            spent, lines[warcio_only] = write_all(caps, warcio_only)
            times[warcio_only].append(spent)
    a, b = (1e6 * statistics.median(times[k]) / len(caps) for k in (True, False))
    print(f"{len(caps)} captures ({sum(c.precompressed for c in caps)} with a gzip body)")
    print(f"  A warcio head parse: {a:7.1f} µs a capture")
    print(f"  B plain head scan:   {b:7.1f} µs a capture ({b / a:.2f}x)")
    print(f"  same index lines: {lines[True] == lines[False]}")


if __name__ == "__main__":
    main()
