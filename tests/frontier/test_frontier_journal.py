"""The frontier's site table and host counts on disk: full copies plus a journal.

Reopening after every commit (and after a crash at each step of a commit) must give
the table the writer had in memory; a state written before the journal existed must
open as it was; and an older crawlkit, which reads only the full copies, must find
them complete as of the last compaction.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from crawlkit.frontier.budgets import BudgetPolicy, SiteTable
from crawlkit.frontier.journal import MAX_JOURNAL_FILES, SideTables
from crawlkit.frontier.store import Frontier, NextOptions
from crawlkit.url import fingerprint

NOW = 1_780_000_000.0
POLICY = BudgetPolicy(base=2, per_linker=1, seed_bonus=2)
DATA = Path(__file__).parent.parent / "data" / "frontier-v1"


def _norm(sites: dict[str, list[Any]]) -> dict[str, list[Any]]:
    """A site table's JSON with each linker list sorted (set order varies by process)."""
    return {name: [*value[:7], sorted(value[7])] for name, value in sites.items()}


def snapshot(frontier: Frontier) -> dict[str, Any]:
    return {
        "sites": _norm(frontier.sites.to_json()),
        "hosts": dict(frontier.hosts),
        "queued": frontier.queued(),
        "parked": sum(len(q) for q in frontier.parked.values()),
    }


def manifest(directory: Path) -> dict[str, Any]:
    return orjson.loads((directory / "manifest.json").read_bytes())


def link(i: int, site: int, from_site: int, reason: str = "link") -> dict[str, Any]:
    host = f"www{i % 2}.site{site}.test"
    url = f"http://{host}/p{i}"
    return {
        "url": url,
        "host": host,
        "site": f"site{site}.test",
        "fp": fingerprint(url),
        "depth": 1 + i % 3,
        "reason": reason,
        "from": f"http://www.site{from_site}.test/",
    }


def steps(directory: Path, on_commit: Any, before_commit: Any = None) -> None:
    """A fixed sequence of frontier work, committing after each step as the crawl does:
    adds over old and new sites, batches with budgets (parking), site records, link
    records, recrawls, and a new budget cycle (every site's ``used`` reset, the parked
    URLs back). ``on_commit(frontier)`` is called after each commit."""
    # small budgets, so URLs are parked; more URLs than a batch reads, so a new cycle
    # unparks sites that the batch after it does not look at
    frontier = Frontier.open(directory, policy=POLICY)
    counter = 0

    def commit() -> None:
        if before_commit is not None:
            before_commit(frontier)
        frontier.commit()
        on_commit(frontier)

    now = NOW
    for round_ in range(8):
        recs = []
        for _ in range(300):
            counter += 1
            recs.append(link(counter, (counter * 7) % (50 + 20 * round_), counter % 2))
        if round_ == 0:
            recs.append(link(0, 0, 0, reason="seed"))
        frontier.add_records(recs, now=now, on_refused=lambda r: None)
        commit()
        opts = NextOptions(max_urls=100, per_host=4, cycle=3600.0, now=now)
        frontier.next(opts)
        commit()
        if round_ % 3 == 1:
            yields = [{"site": f"site{s}.test", "pages": 10, "yield": 0.3} for s in range(3)]
            frontier.add_records(yields, now=now, on_refused=lambda r: None)
            frontier.note_links(
                [{"url": f"http://www.site{round_}.test/", "from": "http://site99.test/"}]
            )
            commit()
        if round_ % 2 == 0:
            recrawls = [link(1000 + counter + k, k, k, reason="recrawl") for k in range(3)]
            frontier.add_records(recrawls, now=now, on_refused=lambda r: None)
            commit()
        commit()  # nothing new
        now += 2000.0  # a new budget cycle every other round


@pytest.mark.parametrize("compact_at", [1.0, 1e9])
def test_reopened_after_each_commit_equals_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, compact_at: float
) -> None:
    """With compactions, and with none (every change since the first commit is in the
    journal, so a change it missed would show)."""
    monkeypatch.setattr(SideTables, "compact_at", compact_at)
    directory = tmp_path / "frontier"
    kinds = []
    committed: dict[str, Any] = {"sites": {}}

    def changes_known(frontier: Frontier) -> None:
        # every site that differs from the last commit is among those to journal
        now = _norm(frontier.sites.to_json())
        differ = {name for name, value in now.items() if committed["sites"].get(name) != value}
        assert differ <= frontier.sites.changed

    def check(frontier: Frontier) -> None:
        reread = Frontier.open(directory, read_only=True)
        committed.update(snapshot(reread))
        assert committed == snapshot(frontier)
        kinds.append(bool(manifest(directory)["journal"]))

    steps(directory, check, changes_known)
    # both ways of writing were exercised: journal commits and compactions after them
    assert any(kinds)
    if compact_at == 1.0:
        assert any(not a and b for a, b in zip(kinds[1:], kinds, strict=False))
    # nothing but the files the last manifest names is left
    m = manifest(directory)
    named = {*m["files"].values(), *m["journal"], "manifest.json"}
    left = {p.name for p in directory.iterdir() if not p.name.startswith("seg-")}
    assert left == named


def test_journal_is_compacted_before_it_grows_past_its_bound(tmp_path: Path) -> None:
    directory = tmp_path / "frontier"
    frontier = Frontier.open(directory)
    # many sites, few changes a commit: only the file count bounds the journal
    frontier.add_records(
        [link(i, i, i + 1) for i in range(500)], now=NOW, on_refused=lambda r: None
    )
    frontier.commit()
    lengths = []
    for i in range(MAX_JOURNAL_FILES + 5):
        frontier.add_records([link(10_000 + i, i, 0)], now=NOW, on_refused=lambda r: None)
        frontier.commit()
        lengths.append(len(manifest(directory)["journal"]))
    assert max(lengths) == MAX_JOURNAL_FILES
    assert 0 in lengths[MAX_JOURNAL_FILES - 1 :]
    assert snapshot(Frontier.open(directory, read_only=True)) == snapshot(frontier)


def test_an_older_reader_sees_the_last_compaction(tmp_path: Path) -> None:
    """What a downgrade sees: the full copies the manifest's ``files`` name are whole
    (the table as of the last compaction), and the queues are exact."""
    directory = tmp_path / "frontier"
    at_compaction: dict[str, Any] = {}

    def remember(frontier: Frontier) -> None:
        if not manifest(directory)["journal"]:
            at_compaction.update(snapshot(frontier))

    steps(directory, remember)
    m = manifest(directory)
    assert m["journal"], "the sequence should end with journal commits"
    current = snapshot(Frontier.open(directory, read_only=True))
    del m["journal"]  # an older crawlkit does not know the key
    (directory / "manifest.json").write_bytes(orjson.dumps(m))
    old_view = snapshot(Frontier.open(directory, read_only=True))
    assert old_view["sites"] == at_compaction["sites"]
    assert old_view["hosts"] == at_compaction["hosts"]
    assert (old_view["queued"], old_view["parked"]) == (current["queued"], current["parked"])


def test_a_state_written_before_the_journal_opens_as_it_was(tmp_path: Path) -> None:
    shutil.copytree(DATA / "frontier", tmp_path / "frontier")
    expected = json.loads((DATA / "expected.json").read_text())
    assert "journal" not in manifest(tmp_path / "frontier")
    frontier = Frontier.open(tmp_path / "frontier")
    assert _norm(frontier.sites.to_json()) == _norm(expected["sites"])
    assert dict(frontier.hosts) == expected["hosts"]
    assert frontier.stats() == expected["stats"]
    # and it goes on from there: a commit, a reopen
    frontier.add_records([link(1, 9, 1)], now=NOW, on_refused=lambda r: None)
    frontier.commit()
    reread = Frontier.open(tmp_path / "frontier", read_only=True)
    assert snapshot(reread) == snapshot(frontier)
    assert reread.stats()["queued"] == expected["stats"]["queued"] + 1
    urls = []
    for queue in [*reread.queues.values(), *reread.parked.values()]:
        urls += [orjson.loads(line)["url"] for line in queue.take(len(queue))]
    assert sorted(urls) == sorted([*expected["queued_urls"], "http://www1.site9.test/p1"])


CHILD = """
import os, sys
from pathlib import Path
sys.path.insert(0, {tests!r})
import test_frontier_journal as t

target, phase = {target}, {phase!r}
real = os.replace
commits = 0

def replace(src, dst):
    global commits
    if str(dst).endswith("manifest.json"):
        commits += 1
        if commits == target and phase == "before":
            os._exit(9)
        real(src, dst)
        if commits == target and phase == "after":
            os._exit(9)
        return
    real(src, dst)

os.replace = replace
t.steps(Path({directory!r}), lambda frontier: None)
"""


@pytest.mark.parametrize("phase", ["before", "after"])
def test_a_crash_at_each_step_of_a_commit_leaves_a_commit(tmp_path: Path, phase: str) -> None:
    """Killed with the commit's side files written but the manifest not yet replaced
    (``before``), or replaced but the files it retires not yet deleted (``after``):
    the reopened frontier is the last commit's, and goes on from there."""
    expected: list[dict[str, Any]] = []
    journal: list[bool] = []
    written = [b""]

    def record(frontier: Frontier) -> None:
        data = (tmp_path / "ref" / "manifest.json").read_bytes()
        if data != written[-1]:  # a commit with nothing new writes no manifest
            written.append(data)
            expected.append(snapshot(frontier))
            journal.append(bool(orjson.loads(data)["journal"]))

    steps(tmp_path / "ref", record)
    # a journal commit, a compaction after journal commits, and the last commit
    # (numbers count manifest writes from 1; the first one makes the directory)
    first_journal = journal.index(True)
    compaction = next(k for k in range(first_journal, len(journal)) if not journal[k])
    for k in sorted({first_journal, compaction, len(journal) - 1}):
        directory = tmp_path / f"crash-{k}"
        code = CHILD.format(
            tests=str(Path(__file__).parent), target=k + 1, phase=phase, directory=str(directory)
        )
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True)
        assert proc.returncode == 9, proc.stderr.decode()
        want = expected[k] if phase == "after" else expected[k - 1]
        assert snapshot(Frontier.open(directory, read_only=True)) == want
        frontier = Frontier.open(directory)  # a writer's open removes the leftovers
        m = manifest(directory)
        named = {*m["files"].values(), *m["journal"], "manifest.json"}
        left = {p.name for p in directory.iterdir() if not p.name.startswith("seg-")}
        assert left == named
        frontier.add_records([link(5000, 1, 2)], now=NOW, on_refused=lambda r: None)
        frontier.commit()
        assert snapshot(Frontier.open(directory, read_only=True)) == snapshot(frontier)


def test_site_table_counts_every_change_it_makes_as_changed() -> None:
    """The site table's own bulk changes (a new cycle, unparking) mark the sites they
    change, and only those, as :meth:`get` marks every site it hands out."""
    table = SiteTable()
    table.get("a.test").parked = 3
    table.get("b.test").used = 2
    table.get("c.test").queued = 1
    assert table.take_changes().keys() == {"a.test", "b.test", "c.test"}
    table.unpark_all()
    assert table.changed == {"a.test"}
    assert table.take_changes()["a.test"][:2] == [3, 0]  # queued, parked
    table.new_cycle()
    assert table.changed == {"b.test"}
    table.take_changes()
    table.note_link("c.test", "a.test")
    table.note_yield("b.test", 10, 0.5)
    assert table.take_changes().keys() == {"b.test", "c.test"}


def test_a_commit_with_nothing_new_writes_nothing(tmp_path: Path) -> None:
    directory = tmp_path / "frontier"
    frontier = Frontier.open(directory)
    frontier.add_records([link(i, i % 3, 9) for i in range(30)], now=NOW, on_refused=print)
    frontier.commit()
    before = {p.name: p.stat().st_mtime_ns for p in directory.iterdir()}
    frontier.commit()
    frontier.note_links([{"url": "http://www0.site1.test/x", "from": "http://www.site9.test/"}])
    frontier.commit()  # a link already known
    assert {p.name: p.stat().st_mtime_ns for p in directory.iterdir()} == before
    frontier.add_records([link(99, 1, 9)], now=NOW, on_refused=print)
    frontier.commit()
    assert manifest(directory)["seq"] == 2
    assert snapshot(Frontier.open(directory, read_only=True)) == snapshot(frontier)


def test_a_commit_journals_the_linkers_a_site_gained_not_all_it_has(tmp_path: Path) -> None:
    """A site keeps up to 256 linkers and most sites are touched every few cycles:
    journaling each one's whole list made every commit cost more as a crawl went on.
    The journal holds the linkers gained; reopening gives the whole list."""
    import zstandard

    directory = tmp_path / "frontier"
    frontier = Frontier.open(directory)
    many = [link(i, 0, i) for i in range(1, 201)]  # site0 linked from 200 sites
    frontier.add_records(many, now=NOW, on_refused=lambda r: None)
    frontier.commit()
    frontier.add_records([link(1000, 0, 999)], now=NOW, on_refused=lambda r: None)
    frontier.commit()
    journal = manifest(directory)["journal"]
    assert journal, "the second commit wrote a journal file"
    raw = (
        zstandard.ZstdDecompressor()
        .decompressobj()
        .decompress((directory / journal[-1]).read_bytes())
    )
    written = orjson.loads(raw)
    # Under a key of its own: a crawlkit that journaled whole entries under "sites"
    # ignores it rather than reading {"+": ...} as linkers.
    assert "sites" not in written
    entry = written["site_changes"]["site0.test"]
    assert entry[7] == {"+": ["site999.test"]}
    reread = Frontier.open(directory, read_only=True)
    linkers = reread.sites.sites["site0.test"].linkers
    assert linkers is not None and len(linkers) == 201 and "site999.test" in linkers
    assert snapshot(reread) == snapshot(frontier)


def test_journal_entries_whole_or_with_linkers_gained_both_apply() -> None:
    """A journal written before linker deltas holds whole lists; both forms apply."""
    table = SiteTable()
    table.apply_json({"a.test": [1, 0, 0, 0, 0, None, 0, ["x.test", "y.test"]]})
    table.apply_json({"a.test": [2, 0, 1, 1, 0, None, 0, {"+": ["z.test"]}]})
    table.apply_json({"b.test": [1, 0, 0, 0, 1, None, 0, {}]})
    assert table.sites["a.test"].linkers == ("x.test", "y.test", "z.test")
    assert table.sites["a.test"].queued == 2 and table.sites["a.test"].used == 1
    assert table.sites["b.test"].linkers is None and table.sites["b.test"].seed
    table.apply_json({"a.test": [2, 0, 1, 1, 0, None, 0, ["w.test"]]})  # a whole list
    assert table.sites["a.test"].linkers == ("w.test",)
