"""``seen-merge``: the batch algorithm, invariant 4, and the command line."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import orjson
import pytest
from conftest import crawlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.seen import SeenStore
from crawlkit.stages.seen_merge import SeenMerge, fresh_in
from crawlkit.streams import read_records
from crawlkit.url import Canonicalizer, fingerprint

CANON = Canonicalizer()


def fp_record(x: int, **extra) -> dict:
    return {"fp": f"{x:016x}", **extra}


class Sink:
    def __init__(self) -> None:
        self.data = b""
        self.flushes = 0

    def write(self, data: bytes) -> None:
        self.data += data

    def flush(self) -> None:
        self.flushes += 1

    @property
    def records(self) -> list[dict]:
        return [orjson.loads(line) for line in self.data.splitlines()]


def merge(store: SeenStore, items, *, chunk_size: int = 1000, **kw) -> tuple[Sink, SeenMerge]:
    sink = Sink()
    merger = SeenMerge(store, canonicalizer=CANON, chunk_size=chunk_size, **kw)
    merger.run([("t", i + 1, item) for i, item in enumerate(items)], sink.write, sink.flush)
    return sink, merger


def lines(*records: dict) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


# -- the algorithm ----------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 30), max_size=80), st.integers(1, 20))
def test_first_occurrence_wins_and_order_is_kept(values, chunk_size):
    with tempfile.TemporaryDirectory() as tmp, SeenStore.open(tmp, capacity=16) as store:
        sink, _ = merge(
            store, [fp_record(v, i=i) for i, v in enumerate(values)], chunk_size=chunk_size
        )
    expected, seen = [], set()
    for i, v in enumerate(values):
        if v not in seen:
            seen.add(v)
            expected.append(i)
    assert [r["i"] for r in sink.records] == expected


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 60), max_size=40), min_size=1, max_size=6),
    st.integers(1, 15),
    st.sampled_from([4, 50, 10_000]),
    st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_never_marks_seen_what_it_did_not_emit(runs, chunk_size, capacity, failures):
    """Invariant 4 over several runs, some of whose writes fail part way."""
    emitted: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        for run, fail in zip(runs, failures, strict=False):
            with SeenStore.open(tmp, capacity=capacity) as store:
                merger = SeenMerge(store, canonicalizer=CANON, chunk_size=chunk_size)
                calls = 0

                def write(data: bytes, fail: bool = fail) -> None:
                    nonlocal calls
                    calls += 1
                    if fail and calls == 2:
                        raise BrokenPipeError
                    emitted.extend(orjson.loads(x)["v"] for x in data.splitlines())

                items = [("t", i, fp_record(v, v=v)) for i, v in enumerate(run)]
                with contextlib.suppress(BrokenPipeError):
                    merger.run(items, write)
                stored = {int(x) for chunk in store.iter_keys() for x in chunk}
                # Everything stored was emitted at some point...
                assert stored <= set(emitted)
                # ... and nothing was emitted twice unless a failed write lost it first.
                if not any(failures):
                    assert len(emitted) == len(set(emitted))
        with SeenStore.open(tmp) as store:
            sink, _ = merge(store, [fp_record(v, v=v) for run in runs for v in run])
            union = set(emitted) | {r["v"] for r in sink.records}
    assert union == {v for run in runs for v in run}


def test_a_filter_that_always_says_maybe_still_lets_every_new_url_out(tmp_path: Path):
    with SeenStore.open(tmp_path, capacity=100_000) as store:
        store.commit(np.arange(0, 2000, 2, dtype=np.uint64))  # the even numbers
        store.filter._bits[:] = np.uint64(2**64 - 1)  # every probe now says "maybe"
        items = [fp_record(x) for x in range(2000)]
        sink, merger = merge(store, items, chunk_size=300)
    assert [int(r["fp"], 16) for r in sink.records] == list(range(1, 2000, 2))
    stats = merger.stats
    assert (stats.checked, stats.bloom_maybes, stats.confirmed_seen) == (2000, 2000, 1000)
    assert stats.false_positives == 1000 and stats.new == 1000
    assert stats.measured_fp_rate == 1.0


def test_records_pass_through_and_missing_fingerprints_are_made(tmp_path: Path):
    raw = b'{"fp":"00000000000000ff","url":"x","n":1.50,"z":{"deep":[1,"two"]}}'
    items = [
        raw,
        b'{"url":"HTTP://Example.COM:80/a?b=1&a=2#f","reason":"link"}',
        b"https://example.org/path",
        {"url": "https://example.net/"},
    ]
    with SeenStore.open(tmp_path) as store:
        sink, merger = merge(store, items)
    out = sink.data.splitlines()
    assert out[0] == raw  # byte for byte, unknown fields and number spelling kept
    second = orjson.loads(out[1])
    assert second == {
        "url": "http://example.com/a?a=2&b=1",
        "reason": "link",
        "host": "example.com",
        "site": "example.com",
        "fp": fingerprint("http://example.com/a?a=2&b=1"),
    }
    assert orjson.loads(out[2])["url"] == "https://example.org/path"
    assert orjson.loads(out[3])["site"] == "example.net"
    assert merger.stats.new == 4


def test_bad_records_are_reported_and_skipped(tmp_path: Path):
    from crawlkit.diag import NullReporter

    reporter = NullReporter()
    items = [
        b"{broken",
        b'{"fp":"xyz"}',
        b'{"fp":12}',
        b'{"nothing":1}',
        b"mailto:a@b.c",
        b'{"url":"ftp://example.com/"}',
        b'{"fp":null,"url":"http://ok.example/"}',
    ]
    with SeenStore.open(tmp_path) as store:
        sink, merger = merge(store, items, reporter=reporter)
    assert [r["url"] for r in sink.records] == ["http://ok.example/"]
    assert merger.stats.bad_records == 6 == reporter.bad_records


RECORDS = st.lists(
    st.one_of(
        st.integers(0, 40).map(lambda x: fp_record(x, n=x)),
        st.integers(0, 40).map(lambda x: {"url": f"HTTP://Host{x % 7}.example/p{x}#f"}),
        st.integers(0, 40).map(lambda x: {"fp": None, "url": f"http://h{x}.example/"}),
        st.sampled_from([{"fp": "xyz"}, {"nothing": 1}, {"url": "ftp://example.com/"}]),
    ),
    max_size=60,
)


@contextlib.contextmanager
def two_stores(seen_before: list[int]) -> Iterator[tuple[SeenStore, SeenStore]]:
    """Two stores that have seen the same fingerprints."""
    with (
        tempfile.TemporaryDirectory() as a,
        tempfile.TemporaryDirectory() as b,
        SeenStore.open(a) as store_a,
        SeenStore.open(b) as store_b,
    ):
        before = np.array(sorted(set(seen_before)), dtype=np.uint64)
        store_a.commit(before)
        store_b.commit(before)
        yield store_a, store_b


@settings(max_examples=40, deadline=None)
@given(RECORDS, st.lists(st.integers(0, 40), max_size=10))
def test_fresh_in_gives_what_the_stage_writes(records, seen_before):
    """crawl's in-memory path (fresh_in, no JSON line per record) emits the very
    records, in order, and counts, that the stage's line path emits on the same input,
    and marks the same keys seen once committed; its records are copies."""
    with two_stores(seen_before) as (store_a, store_b):
        sink, merger = merge(store_a, [orjson.dumps(r) for r in records])
        inputs = [dict(r) for r in records]
        fresh = fresh_in(store_b, inputs, canonicalizer=CANON)
        assert fresh.records == sink.records
        for record in fresh.records:  # a copy: the caller's records stay as they are
            record["mark"] = 1
        assert not any("mark" in r for r in inputs)
        fresh.commit()
        assert fresh.stats == merger.stats
        keys = np.array([int(r["fp"], 16) for r in sink.records], dtype=np.uint64)
        assert store_b.lookup(np.unique(keys)).seen.all()


@settings(max_examples=40, deadline=None)
@given(RECORDS, st.lists(st.integers(0, 40), max_size=10), st.integers(1, 7))
def test_fresh_in_takes_an_iterator_a_chunk_at_a_time(records, seen_before, chunk):
    """Records from an iterator, a few at a time (crawl's links step reads its links
    so, issue 27), give the records a list in one chunk gives: a URL met again in a
    later chunk is not new twice."""
    with two_stores(seen_before) as (store_a, store_b):
        whole = fresh_in(store_a, [dict(r) for r in records], canonicalizer=CANON)
        sliced = fresh_in(
            store_b, (dict(r) for r in records), canonicalizer=CANON, chunk_size=chunk
        )
        assert sliced.records == whole.records
        sliced.commit()
        keys = np.array([int(r["fp"], 16) for r in whole.records], dtype=np.uint64)
        assert store_b.lookup(np.unique(keys)).seen.all()


def test_fresh_in_reads_no_further_than_the_chunk_it_checks(tmp_path: Path):
    pulled = [0]
    at_lookup: list[int] = []

    def each() -> Iterator[dict]:
        for x in range(10):
            pulled[0] += 1
            yield {"url": f"http://h{x}.example/"}

    with SeenStore.open(tmp_path) as store:
        lookup = store.lookup

        def counted_lookup(keys):
            at_lookup.append(pulled[0])
            return lookup(keys)

        store.lookup = counted_lookup  # type: ignore[method-assign]
        fresh = fresh_in(store, each(), canonicalizer=CANON, chunk_size=3)
    assert at_lookup == [3, 6, 9, 10]
    assert len(fresh.records) == 10


def test_a_failed_write_commits_nothing(tmp_path: Path):
    with SeenStore.open(tmp_path) as store:
        merger = SeenMerge(store, canonicalizer=CANON, chunk_size=10)

        def write(data: bytes) -> None:
            raise OSError("disk full")

        with pytest.raises(OSError):
            merger.run([("t", 1, fp_record(x)) for x in range(25)], write)
        assert store.stored == 0


def test_pending_mode_commits_only_when_told(tmp_path: Path):
    with SeenStore.open(tmp_path) as store:
        sink = Sink()
        merger = SeenMerge(store, canonicalizer=CANON, chunk_size=3)
        items = [("t", i, fp_record(x % 7)) for i, x in enumerate(range(20))]
        merger.run(items, sink.write, commit_each_chunk=False)
        assert len(sink.records) == 7  # later batches still saw the earlier ones
        assert store.stored == 0
        merger.commit_pending()
        assert store.stored == 7


def test_dry_run_changes_nothing(tmp_path: Path):
    with SeenStore.open(tmp_path) as store:
        store.commit(np.array([1], dtype=np.uint64))
    with SeenStore.open(tmp_path, writable=False) as store:
        sink, merger = merge(
            store, [fp_record(x) for x in (1, 2, 2, 3)], chunk_size=2, dry_run=True
        )
        merger.commit_pending()
        assert [int(r["fp"], 16) for r in sink.records] == [2, 3]
    with SeenStore.open(tmp_path, writable=False) as store:
        assert store.stored == 1


# -- the command ------------------------------------------------------------------------

URLS = [f"https://site{i % 7}.example.com/page/{i}" for i in range(300)]


def test_cli_emits_new_urls_once_and_is_idempotent(tmp_path: Path):
    state = tmp_path / "S"
    data = lines(*({"url": u, "i": i} for i, u in enumerate(URLS + URLS[:50])))
    first = crawlkit("seen-merge", "--state", str(state), "--chunk-size", "64", input=data)
    assert first.code == 0, first.stderr
    assert [orjson.loads(x)["i"] for x in first.lines] == list(range(300))
    again = crawlkit("seen-merge", "--state", str(state), input=data)
    assert again.code == 0 and again.stdout == b""
    names = {p.name for p in (state / "seen").iterdir()}
    assert "manifest.json" in names and not any(n.startswith(".") for n in names)


def test_cli_tiny_filter_false_positives_are_counted_and_let_through(tmp_path: Path):
    state = tmp_path / "S"
    first = lines(*({"url": u} for u in URLS[:150]))
    args = ["seen-merge", "--state", str(state), "--capacity", "150", "--fp-rate", "0.4"]
    assert crawlkit(*args, input=first).code == 0
    second = lines(*({"url": u} for u in URLS))
    result = crawlkit(*args, "--stats", input=second)
    assert result.code == 0, result.stderr
    assert sorted(orjson.loads(x)["url"] for x in result.lines) == sorted(URLS[150:])
    stats = orjson.loads(result.stderr.strip().splitlines()[-1])
    assert stats["new"] == 150 and stats["confirmed_seen"] == 150
    assert stats["false_positives"] > 0  # the filter guessed wrong, and nothing was lost
    assert stats["bloom_maybes"] == 150 + stats["false_positives"]
    assert 0 < stats["measured_fp_rate"] < 1
    for key in ("checked", "filter_fill", "stored", "bytes_per_url_disk", "bytes_per_url_ram"):
        assert key in stats


def test_cli_out_file_contains_dry_run_and_rebuild(tmp_path: Path):
    state = tmp_path / "S"
    out = tmp_path / "new.ndjson.zst"
    data = lines(*({"url": u} for u in URLS[:40]))
    dry = crawlkit("seen-merge", "--state", str(state), "--dry-run", input=data)
    assert dry.code == 0 and len(dry.lines) == 40
    assert not (state / "seen").exists()
    result = crawlkit(
        "seen-merge",
        "--state",
        str(state),
        "--out",
        str(out),
        "--batch-size",
        "7",
        "--stats-file",
        str(tmp_path / "s.json"),
        input=data,
    )
    assert result.code == 0, result.stderr
    assert len(list(read_records([out]))) == 40
    stats = orjson.loads((tmp_path / "s.json").read_bytes())
    assert stats["new"] == 40
    assert stats["batches"] == 6  # --batch-size, chunk's old name, still sets it: 40 / 7
    shouted = URLS[0].replace("https://site", "HTTPS://SITE")
    check = crawlkit(
        "seen-merge", "--state", str(state), "--contains", shouted, URLS[100], "not a url"
    )
    answers = [orjson.loads(x) for x in check.lines]
    assert [a["seen"] for a in answers] == [True, False, None]
    assert answers[0]["url"] == URLS[0]
    rebuilt = crawlkit(
        "seen-merge", "--state", str(state), "--rebuild", "--capacity", "1000", "--stats"
    )
    assert rebuilt.code == 0, rebuilt.stderr
    assert orjson.loads(rebuilt.stderr.strip())["capacity"] == 1000
    again = crawlkit("seen-merge", "--state", str(state), input=data)
    assert again.code == 0 and again.stdout == b""


def test_cli_reports_bad_lines_and_a_locked_state(tmp_path: Path):
    state = tmp_path / "S"
    result = crawlkit(
        "seen-merge", "--state", str(state), input=b'{"url":"http://a.example/"}\n{oops\n'
    )
    assert result.code == 0 and len(result.lines) == 1
    assert "<stdin>:2:" in result.stderr
    with SeenStore.open(state):
        locked = crawlkit("seen-merge", "--state", str(state), input=b"")
    assert locked.code == 1 and "in use" in locked.stderr
    assert len(locked.stderr.strip().splitlines()) == 1


def test_line_reader_keeps_the_io_contract(tmp_path: Path):
    import zstandard

    from crawlkit.diag import NullReporter
    from crawlkit.stages.seen_merge import read_lines

    path = tmp_path / "in.ndjson"
    path.write_bytes(b"a\r\n\n  \nbbbbbbbbbbbb\nc\n" + b"x" * 3000 + b"\nd")
    reporter = NullReporter()
    got = list(read_lines([path], reporter, max_line=2000))
    assert got == [
        (str(path), 1, b"a"),
        (str(path), 4, b"bbbbbbbbbbbb"),
        (str(path), 5, b"c"),
        (str(path), 7, b"d"),
    ]
    assert reporter.bad_records == 1
    big = tmp_path / "big.zst"
    body = b"".join(b'{"n":%d}\n' % i for i in range(300_000))
    big.write_bytes(zstandard.ZstdCompressor().compress(body)[:-40])
    reporter = NullReporter()
    lines = list(read_lines([big], reporter))
    assert 0 < len(lines) < 300_000 and reporter.counts["truncated input"] == 1
    assert [n for _, n, _ in lines] == list(range(1, len(lines) + 1))


def test_cli_commits_nothing_when_the_reader_goes_away(tmp_path: Path):
    import subprocess
    import sys

    state = tmp_path / "S"
    source = tmp_path / "links.ndjson"
    # Several MB in one batch: far more than a pipe holds.
    source.write_bytes(
        lines(
            *(
                {"url": f"https://e{i % 50}.example.com/p/{i}", "pad": "x" * 200}
                for i in range(20_000)
            )
        )
    )
    writer = subprocess.Popen(
        [sys.executable, "-m", "crawlkit", "seen-merge", "--state", str(state), str(source)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert writer.stdout is not None
    writer.stdout.readline()  # one line, then the reader goes away
    writer.stdout.close()
    writer.wait(timeout=120)
    # The exit status of a closed pipe belongs to the CLI's exit point (click turns
    # EPIPE into exit 1 before crawlkit's handler sees it); what matters here is that
    # what did not get out is not marked seen.
    assert writer.stderr is not None
    with writer.stderr:
        assert b"Traceback" not in writer.stderr.read()
    with SeenStore.open(state, writable=False) as store:
        assert store.stored == 0
    again = crawlkit("seen-merge", "--state", str(state), str(source))
    assert len(again.lines) == 20_000


def test_cli_a_link_too_deep_is_refused_unseen_and_passes_by_a_shorter_path(tmp_path: Path):
    """--max-depth before the seen set: the depth is the path's (invariant 4)."""
    state, refused = tmp_path / "S", tmp_path / "refused.ndjson"
    deep = {"url": "https://a.test/x", "depth": 3, "reason": "link"}
    image = {"url": "https://a.test/x.png", "depth": 3, "reason": "requisite"}
    res = crawlkit(
        "seen-merge",
        "--state",
        str(state),
        "--max-depth",
        "2",
        "--refused",
        str(refused),
        "--stats",
        input=lines(deep, image),
    )
    assert res.code == 0, res.stderr
    assert [orjson.loads(x)["url"] for x in res.lines] == [image["url"]]  # requisites pass
    (out,) = list(read_records([refused]))
    assert (out["url"], out["refused"], out["detail"]) == (deep["url"], "max-depth", "depth 3 > 2")
    (figures,) = [ln for ln in res.stderr.splitlines() if ln.startswith("{")]
    assert orjson.loads(figures)["too_deep"] == 1
    assert "1 URLs more than 2 link hops from a seed refused" in res.stderr
    # found again 1 hop from a seed: new, as it was never marked seen
    again = crawlkit(
        "seen-merge", "--state", str(state), "--max-depth", "2", input=lines({**deep, "depth": 1})
    )
    assert again.code == 0 and [orjson.loads(x)["url"] for x in again.lines] == [deep["url"]]
    # --max-depth 0: no limit
    off = crawlkit(
        "seen-merge",
        "--state",
        str(tmp_path / "T"),
        "--max-depth",
        "0",
        input=lines({**deep, "depth": 99}),
    )
    assert off.code == 0 and len(off.lines) == 1


def test_the_canonical_url_cache_is_bounded_by_size_not_count(tmp_path: Path) -> None:
    """Bare URL lines are canonicalized once per distinct URL, through a cache: bounded
    by entries alone, 65,536 URLs of 2,000 characters would have kept ~290 MB, and
    URLs refused as too long were kept too (one of 60 KB, 120 KB with its canonical
    form). Traced memory stays near the cache's byte bound whatever the URLs."""
    import tracemalloc

    filler = "x" * 1_900
    urls = [f"http://a.test/{i}/{filler}".encode() for i in range(12_000)]
    urls += [f"http://a.test/long/{i}/{'y' * 60_000}".encode() for i in range(300)]
    with SeenStore.open(tmp_path / "seen") as store:
        merger = SeenMerge(store, canonicalizer=CANON, chunk_size=200)
        tracemalloc.start()
        try:
            merger.run(
                (("t", i + 1, url) for i, url in enumerate(urls)), lambda data: None, lambda: None
            )
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert merger.stats.too_long == 300
    # all kept (a bound of entries alone), 87.6 MB at the peak: ~50 for the 12,000
    # and ~36 for the 300 refused ones; bounded at 32 MiB, 34.6 MB
    assert peak < 48 * 2**20, peak
