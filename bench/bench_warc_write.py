"""The WARC thread's work per capture: ``WarcWriter.write_capture`` with its index line.

Run on demand (never in CI), on the captures of a real WARC (a crawl's, e.g. from
``bench/bench_crawl.py --keep``)::

    nice .venv/bin/python bench/bench_warc_write.py STATE/warc/crawlkit-*.warc.gz --contend

Each ``response`` record of the WARC becomes a :class:`Capture` again (its HTTP head,
its body as stored, a request head and the metadata a crawl writes), and the captures
are written to a fresh file on a thread of their own, a flush after every ``--batch``
(the crawl's archiver flushes after each batch; 44 captures was the mean of a busy
few-seed crawl), in turns: A as before (every gzip member made by zlib-ng, which lets
go of the interpreter lock for each call, and the default 8 KiB file buffer), B as now
(members of at most ``HELD_MEMBER_MAX`` bytes made by ``crawlkit/warc/_gzip.c``,
keeping the lock, and the 1 MiB buffer). Prints the writing thread's CPU µs a capture
and the process's, the median of ``--repeat`` turns each. With ``--contend`` a second
thread runs Python beside it and lets the lock go every ~10 µs, as a crawl's event
loop does with its system calls: the writer then pays for each time it lets go. Blocks
of 256 KiB or more are mapped apart, as in a crawl (:func:`crawlkit.heap.map_large_blocks`).
"""

from __future__ import annotations

import argparse
import select
import statistics
import tempfile
import threading
import time
from pathlib import Path
from unittest import mock

from warcio.archiveiterator import ArchiveIterator

from crawlkit.heap import map_large_blocks
from crawlkit.warc import write
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


def write_all(caps: list[Capture], now: bool, batch: int) -> tuple[float, float, int]:
    """(thread CPU s, process CPU s, WARC bytes) to write ``caps`` with their index on
    a thread of their own, flushing after every ``batch``; ``now``: B, else A."""
    out: list[float] = []

    def run(writer: WarcWriter) -> None:
        start, process = time.thread_time(), time.process_time()
        for i, cap in enumerate(caps, 1):
            writer.write_capture(cap)
            if i % batch == 0:
                writer.flush()
        writer.flush()
        out.extend((time.thread_time() - start, time.process_time() - process))

    with tempfile.TemporaryDirectory() as tmp:
        patches = (
            []
            if now
            else [
                mock.patch.object(write, "_held_gzip_member", None),
                mock.patch.object(write, "WRITE_BUFFER", 8192),
            ]
        )
        for patch in patches:
            patch.start()
        try:
            writer = WarcWriter(tmp, index=True)
            thread = threading.Thread(target=run, args=(writer,))
            thread.start()
            thread.join()
            size = (Path(tmp) / (writer.name + ".open")).stat().st_size
            writer.close()
            index_of(Path(tmp) / writer.name).read_text()  # the index was written
        finally:
            for patch in patches:
                patch.stop()
    return out[0], out[1], size


def contend(stop: threading.Event) -> None:
    """Python work that lets the interpreter lock go every ~10 µs (a select of no
    time), as an event loop does with its sockets."""
    spin = 0
    while not stop.is_set():
        for i in range(300):
            spin += i
        select.select([], [], [], 0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("warc", nargs="+")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--batch", type=int, default=44, help="captures between flushes")
    ap.add_argument("--contend", action="store_true", help="a lock-hungry thread beside")
    args = ap.parse_args()
    map_large_blocks()  # as in a crawl's processes: allocators' costs differ without it
    caps = captures(args.warc)
    stop = threading.Event()
    if args.contend:
        threading.Thread(target=contend, args=(stop,), daemon=True).start()
    runs: dict[bool, list[tuple[float, float, int]]] = {False: [], True: []}
    for _ in range(args.repeat):
        for now in (False, True):
            runs[now].append(write_all(caps, now, args.batch))
    stop.set()
    n = len(caps)
    print(f"{n} captures ({sum(c.precompressed for c in caps)} with a gzip body)", end="")
    print(f", a flush every {args.batch}{', contended' if args.contend else ''}")
    thread_a, thread_b = (1e6 * statistics.median(r[0] for r in runs[k]) / n for k in runs)
    proc_a, proc_b = (1e6 * statistics.median(r[1] for r in runs[k]) / n for k in runs)
    size_a, size_b = (statistics.median(r[2] for r in runs[k]) for k in runs)
    print(f"  A before: thread {thread_a:7.1f} µs a capture, process {proc_a:7.1f}, {size_a:,} B")
    print(
        f"  B now:    thread {thread_b:7.1f} µs a capture ({thread_b / thread_a:.2f}x), "
        f"process {proc_b:7.1f} ({proc_b / proc_a:.2f}x), {size_b:,} B ({size_b / size_a:.4f}x)"
    )


if __name__ == "__main__":
    main()
