"""The planning columns kept in memory (crawlkit/recrawl/columns.py) equal the table
read from disk, and a run on a history kept open (what ``crawlkit crawl`` does each
cycle) emits what the stage run afresh on the same inputs emits."""

from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path

import numpy as np

from crawlkit.recrawl import Entry, History
from crawlkit.recrawl.columns import NameIndex, Table
from crawlkit.recrawl.history import COLUMNS_FILE
from crawlkit.recrawl.stats import report_data
from crawlkit.stages.recrawl import recrawl, recrawl_in
from crawlkit.streams import Record

EPOCH = 1_780_000_000.0
DAY = 86400.0


def _groups(ix: np.ndarray) -> list[int]:
    """Each row's group named by the first row in it: equal for two numberings of the
    same grouping."""
    first: dict[int, int] = {}
    return [first.setdefault(int(i), row) for row, i in enumerate(ix)]


def _same(kept: Table, read: Table) -> None:
    """Row for row the same; host and site indices may be numbered differently but
    must group the same rows (sites under the same names)."""
    for f in fields(Table):
        a, b = getattr(kept, f.name), getattr(read, f.name)
        if f.name in ("site_ix", "sites", "host"):
            continue
        if isinstance(a, np.ndarray) and a.dtype.kind == "f":
            np.testing.assert_array_equal(a, b, err_msg=f.name)
        else:
            assert list(a) == list(b), f.name
    assert [kept.sites[i] for i in kept.site_ix] == [read.sites[i] for i in read.site_ix]
    assert _groups(kept.host) == _groups(read.host)
    assert _groups(kept.site_ix) == _groups(read.site_ix)


def test_kept_columns_follow_every_write(tmp_path: Path) -> None:
    history = History(tmp_path)
    # Fingerprints on both sides of 2**63: SQLite orders them signed.
    fps = [5, 1 << 63, (1 << 64) - 1, 17, (1 << 63) + 9]
    history.put(
        [Entry(fp=fp, url=f"https://a{fp % 3}.test/{fp}", site=f"a{fp % 3}.test") for fp in fps[:2]]
    )
    assert len(history.table().fp) == 2  # read once, kept from here
    history.put(
        [
            Entry(
                fp=fps[2],
                url="https://b.test/",
                host="b.test",
                site="b.test",
                rate=1e-5,
                last_fetch=EPOCH,
                due=EPOCH + DAY,
                outcome="fetched",
                checks=3,
            ),
            Entry(
                fp=fps[0],
                url="https://a.test/",
                site="c.test",
                importance=0,
                spread=0.7,
                pending_change=True,
                observed=EPOCH,
            ),
            Entry(fp=fps[3], url="https://d.test/", outcome="error"),
            Entry(fp=fps[4], url="https://e.test/", host="e.test", outcome="not-modified"),
        ]
    )
    history.set_schedule(
        np.array([fps[2], fps[3]], np.uint64),
        np.array([7.0, 8.0]),
        np.array([EPOCH + 7, EPOCH + 8]),
    )
    history.mark_emitted([fps[4], fps[1], 999], EPOCH + 3)  # 999 is not tracked
    kept = history.table()
    history.commit()
    _same(kept, History(tmp_path).table())
    # A write by another connection is seen: the columns are read again.
    other = sqlite3.connect(tmp_path / "history.sqlite")
    other.execute("UPDATE history SET due = 1.0")
    other.commit()
    other.close()
    assert list(history.table().due) == [1.0] * len(fps)
    history.rollback()
    history.close()


def _fetch(i: int, at: float, version: int) -> Record:
    return {
        "url": f"https://h{i % 7}.test/p{i}",
        "status": 200,
        "outcome": "fetched" if i % 11 else "error",
        "fetched_at": EPOCH + at,
        "digest": f"sha1:{i}-{version}",
    }


def test_open_history_emits_what_fresh_runs_emit(tmp_path: Path) -> None:
    """Cycles on one opened History (the crawl) against the stage opening it anew
    each run (the pipeline): the same records out of every cycle."""
    rng = np.random.default_rng(3)
    kept = History(tmp_path / "crawl")
    got: list[list[Record]] = []
    want: list[list[Record]] = []
    for cycle in range(12):
        at = cycle * 0.3 * DAY
        pages = rng.choice(400, 60, replace=False)
        lines = [("c", k, _fetch(int(i), at, int(rng.integers(2)))) for k, i in enumerate(pages)]
        a: list[Record] = []
        b: list[Record] = []
        recrawl_in(kept, lines, write=a.extend, now=EPOCH + at + 60)
        recrawl(tmp_path / "stage", lines, write=b.extend, now=EPOCH + at + 60)
        got.append(a)
        want.append(b)
    kept.close()
    assert sum(map(len, want)) > 50  # the runs emit something to compare
    assert got == want


def test_held_mu_is_solved_again_after_hold(tmp_path: Path) -> None:
    """``hold_mu`` keeps the solved μ for that many seconds, and for as long as the
    tracked URLs grow less than a tenth; then it is solved again."""
    history = History(tmp_path)
    out: list[Record] = []
    first = [("c", i, _fetch(i, 0.0, 0)) for i in range(200)]
    recrawl_in(history, first, write=out.extend, now=EPOCH + 1, hold_mu=60.0)
    assert history.meta("solved_at") == EPOCH + 1
    mu = history.meta("mu")
    for k in range(1, 4):  # within the hold, a few refetches: kept
        lines = [("c", 0, _fetch(k, k, 1))]
        recrawl_in(history, lines, write=out.extend, now=EPOCH + 1 + k, hold_mu=60.0)
        assert history.meta("solved_at") == EPOCH + 1 and history.meta("mu") == mu
    assert history.meta("updated_since") == 3
    more = [("c", i, _fetch(i, 5.0, 0)) for i in range(200, 230)]  # 15% more URLs
    recrawl_in(history, more, write=out.extend, now=EPOCH + 6, hold_mu=60.0)
    assert history.meta("solved_at") == EPOCH + 6
    recrawl_in(history, [], write=out.extend, now=EPOCH + 70, hold_mu=60.0)
    assert history.meta("solved_at") == EPOCH + 70  # the hold ran out
    recrawl_in(history, [], write=out.extend, now=EPOCH + 71)  # no hold: solved
    assert history.meta("solved_at") == EPOCH + 71
    history.close()


def test_kept_columns_cost_at_most_88_bytes_a_tracked_url() -> None:
    """A crawl's step process keeps the columns all run, so their bytes a URL are its
    memory slope (issue 27): 100,000 URLs put in batches of 500, 2,000 sites, each
    record with its own copy of its site's name (as parsed). Every column in 8 bytes
    was ~101 bytes a URL; the indices, counts and importance in fewer, ~82."""
    import gc
    import tracemalloc

    from crawlkit.recrawl.columns import Columns

    n, batch = 100_000, 500
    gc.collect()
    tracemalloc.start()
    try:
        columns = Columns([], ["fetched"])
        for first in range(0, n, batch):
            columns.put(
                Entry(
                    fp=(i * 0x9E3779B97F4A7C15) % (1 << 64),
                    url=f"https://s{i % 2000}.test/{i}",
                    site="".join(("s", str(i % 2000), ".test")),  # a fresh string
                    rate=1e-5,
                    checks=i % 7,
                    importance=i % 4,
                    last_fetch=EPOCH + i,
                    outcome="fetched",
                )
                for i in range(first, first + batch)
            )
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(columns.table().fp) == n
    assert held / n < 88, f"{held / n:.0f} bytes a URL"


def test_name_index_numbers_names_in_the_order_first_seen() -> None:
    index = NameIndex(keep_names=True)
    first = index.indices(["b.test", "a.test", "b.test", "c.test"])
    assert first.tolist() == [0, 1, 0, 2]
    again = index.indices(["c.test", "d.test", "a.test", "e.test", "d.test"])
    assert again.tolist() == [2, 3, 1, 4, 3]
    assert index.names == ["b.test", "a.test", "c.test", "d.test", "e.test"]
    assert len(index) == 5
    assert index.indices([]).tolist() == []
    # Many at once, in batches that overlap: each name keeps its first index.
    names = [f"h{i}.test" for i in range(5000)]
    big = NameIndex(keep_names=False)
    got = np.concatenate([big.indices(names[k : k + 700]) for k in range(0, 5000, 500)])
    want = np.concatenate([np.arange(k, min(k + 700, 5000)) for k in range(0, 5000, 500)])
    assert got.tolist() == want.tolist()
    assert big.names is None and len(big) == 5000


def test_a_host_costs_the_columns_12_bytes() -> None:
    """Hosts only group rows: a host's index is found by its name's hash, and the
    name is not kept (a dict from name to index held the name, an entry and an index
    object: ~120 bytes a host, and as much again a site)."""
    import gc
    import tracemalloc

    n = 20_000
    gc.collect()
    tracemalloc.start()
    try:
        index = NameIndex(keep_names=False)
        for first in range(0, n, 500):
            index.indices(["".join(("www.s", str(i), ".test")) for i in range(first, first + 500)])
        gc.collect()
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(index) == n
    assert held / n < 16, f"{held / n:.1f} bytes a host"


def _tracked(history: History, n: int, start: int = 0) -> None:
    history.put(
        [
            Entry(
                fp=(i * 0x9E3779B97F4A7C15) % (1 << 64),
                url=f"https://s{i % 5}.test/{i}",
                host=f"h{i % 7}.s{i % 5}.test",
                site=f"s{i % 5}.test" if i % 9 else None,
                rate=1e-5 * (i + 1) if i % 4 else None,
                last_fetch=EPOCH + i,
                due=EPOCH + DAY + i,
                outcome="fetched" if i % 3 else "error",
                checks=i % 4,
                importance=i % 4,
            )
            for i in range(start, start + n)
        ]
    )


def test_a_closed_history_saves_its_columns_and_the_next_run_loads_them(tmp_path: Path) -> None:
    history = History(tmp_path)
    _tracked(history, 60)
    kept = history.table()
    assert history.columns_from == "table"
    history.commit()
    history.close()
    assert (tmp_path / COLUMNS_FILE).exists()
    again = History(tmp_path)
    loaded = again.table()
    assert again.columns_from == "file"
    for f in fields(Table):  # what the last run kept, exactly
        a, b = getattr(kept, f.name), getattr(loaded, f.name)
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
        else:
            assert a == b, f.name
    # and the loaded columns are kept in step with writes as read ones are
    _tracked(again, 10, start=55)
    again.commit()
    (tmp_path / COLUMNS_FILE).unlink()
    _same(again.table(), History(tmp_path).table())
    again.close()


def test_a_write_after_the_save_or_a_damaged_file_reads_the_table(tmp_path: Path) -> None:
    history = History(tmp_path)
    _tracked(history, 30)
    history.table()
    history.commit()
    history.close()
    # A run that writes rows and ends without saving (killed, or it never planned).
    writer = History(tmp_path)
    _tracked(writer, 5, start=100)
    writer.commit()
    writer.db.close()  # no close(): as if killed
    history = History(tmp_path)
    assert len(history.table().fp) == 35 and history.columns_from == "table"
    history.close()  # saved again
    # Uncommitted writes at close are not saved (and not kept: SQLite drops them).
    history = History(tmp_path)
    history.table()
    _tracked(history, 5, start=200)
    history.close()
    history = History(tmp_path)
    assert len(history.table().fp) == 35 and history.columns_from == "file"
    history.close()
    # A damaged file is read past.
    data = (tmp_path / COLUMNS_FILE).read_bytes()
    (tmp_path / COLUMNS_FILE).write_bytes(data[: len(data) // 2])
    history = History(tmp_path)
    assert len(history.table().fp) == 35 and history.columns_from == "table"
    history.close()


def test_a_report_of_the_history_writes_nothing(tmp_path: Path) -> None:
    history = History(tmp_path / "recrawl")
    _tracked(history, 20)
    history.table()
    history.commit()
    history.close()
    saved = tmp_path / "recrawl" / COLUMNS_FILE

    def written() -> tuple[int, list[tuple]]:
        db = sqlite3.connect(tmp_path / "recrawl" / "history.sqlite")
        try:
            return saved.stat().st_mtime_ns, db.execute("SELECT * FROM meta").fetchall()
        finally:
            db.close()

    before = written()
    report = report_data(tmp_path, EPOCH)
    assert report is not None and report["tracked"] == 20
    assert written() == before
