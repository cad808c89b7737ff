"""The durable-state primitive: commits through manifest.json, leftovers of crashes
removed on open, and the migration of an old manifest name.

A crash is simulated two ways: by leaving on disk exactly what a process killed between
two steps leaves (temporary files, generation files no manifest names, files retired but
not yet deleted), and by a child process that dies (``os._exit``) at every fsync and
rename of a commit in turn.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from crawlkit.durable import MANIFEST, DurableDir
from crawlkit.errors import StateError

OWNS = re.compile(r"^gen-\d+\.dat$")


def durable(path: Path, **kw) -> DurableDir:
    path.mkdir(parents=True, exist_ok=True)
    return DurableDir(path, owns=OWNS, what="test", **kw)


def commit_generation(d: DurableDir, n: int, previous: str | None = None) -> str:
    """One commit: a new generation file, the manifest naming it, the old one retired."""
    name = f"gen-{n}.dat"
    d.write(name, b"generation %d\n" % n)
    if previous:
        d.retire(previous)
    d.commit({"generation": n, "file": name})
    return name


def names(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()}


def check_consistent(path: Path, generations: set[int]) -> int:
    """The committed manifest is one of ``generations`` and its file says so."""
    manifest = durable(path).load()
    assert manifest is not None and manifest["generation"] in generations
    assert (path / manifest["file"]).read_bytes() == b"generation %d\n" % manifest["generation"]
    return int(manifest["generation"])


def test_commit_and_load_round_trip(tmp_path: Path) -> None:
    d = durable(tmp_path / "s")
    assert d.load() is None
    first = commit_generation(d, 1)
    second = commit_generation(d, 2, previous=first)
    assert durable(tmp_path / "s").load() == {"generation": 2, "file": second}
    # The retired generation is gone; nothing temporary is left behind.
    assert names(tmp_path / "s") == {MANIFEST, second}
    assert orjson.loads((tmp_path / "s" / MANIFEST).read_bytes())["generation"] == 2


def test_crash_before_the_manifest_keeps_the_old_state_and_cleans_up(tmp_path: Path) -> None:
    path = tmp_path / "s"
    d = durable(path)
    live = commit_generation(d, 1)
    # What a process killed before its manifest leaves: the next generation written and
    # renamed, another one half written under its temporary name, an older writer's
    # temporary manifest; and files the owner does not claim, which must survive.
    (path / "gen-2.dat").write_bytes(b"generation 2\n")
    (path / ".tmp-gen-3.dat").write_bytes(b"genera")
    (path / ".manifest.json.k2j3.tmp").write_bytes(b'{"generation": 3')
    (path / "seg-7.ndjson.zst.tmp").write_bytes(b"")
    (path / "LOCK").write_bytes(b"pid 1\n")
    (path / "notes.txt").write_bytes(b"mine")
    (path / "inbox").mkdir()

    reopened = durable(path)
    assert check_consistent(path, {1}) == 1
    removed = reopened.remove_leftovers([live])
    assert set(removed) == {
        "gen-2.dat",
        ".tmp-gen-3.dat",
        ".manifest.json.k2j3.tmp",
        "seg-7.ndjson.zst.tmp",
    }
    assert names(path) == {MANIFEST, live, "LOCK", "notes.txt", "inbox"}
    # And the next commit goes on from there.
    commit_generation(reopened, 2, previous=live)
    assert check_consistent(path, {2}) == 2


def test_crash_while_the_manifest_is_written(tmp_path: Path) -> None:
    path = tmp_path / "s"
    d = durable(path)
    live = commit_generation(d, 1)
    (path / "gen-2.dat").write_bytes(b"generation 2\n")
    (path / f".tmp-{MANIFEST}").write_bytes(b'{"generation": 2, "fi')  # torn, never renamed
    assert check_consistent(path, {1}) == 1
    durable(path).remove_leftovers([live])
    assert names(path) == {MANIFEST, live}


def test_crash_after_the_manifest_before_the_retired_files_go(tmp_path: Path) -> None:
    path = tmp_path / "s"
    d = durable(path)
    first = commit_generation(d, 1)
    d.write("gen-2.dat", b"generation 2\n")
    d.retire(first)
    d.commit({"generation": 2, "file": "gen-2.dat"}, collect=False)  # the crash: no collect
    assert (path / first).exists()
    reopened = durable(path)
    assert check_consistent(path, {2}) == 2
    assert reopened.remove_leftovers(["gen-2.dat"]) == [first]


def test_abort_deletes_what_no_manifest_names(tmp_path: Path) -> None:
    path = tmp_path / "s"
    d = durable(path)
    first = commit_generation(d, 1)
    d.write("gen-2.dat", b"generation 2\n")
    with d.create("gen-3.dat") as f:
        f.write(b"generation 3\n")
    d.retire(first)
    d.abort()
    assert names(path) == {MANIFEST, first}
    assert check_consistent(path, {1}) == 1


def test_a_failed_manifest_write_leaves_the_old_state(tmp_path: Path) -> None:
    path = tmp_path / "s"
    d = durable(path)
    commit_generation(d, 1)
    d.write("gen-2.dat", b"generation 2\n")
    # A manifest that cannot be replaced (here a directory stands in its way).
    (path / MANIFEST).rename(path / "saved")
    (path / MANIFEST).mkdir()
    with pytest.raises(OSError):
        d.commit({"generation": 2, "file": "gen-2.dat"})
    (path / MANIFEST).rmdir()
    (path / "saved").rename(path / MANIFEST)
    assert not (path / f".tmp-{MANIFEST}").exists()
    d.abort()
    assert check_consistent(path, {1}) == 1
    assert not (path / "gen-2.dat").exists()


def test_a_damaged_manifest_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "s"
    durable(path)
    (path / MANIFEST).write_bytes(b"{not json")
    with pytest.raises(StateError, match=r"test manifest .* is damaged: not valid JSON"):
        durable(path).load()


# --------------------------------------------------------------------------- old names


def test_an_old_manifest_name_is_migrated_by_a_writer_and_read_by_a_reader(tmp_path: Path):
    path = tmp_path / "s"
    durable(path)
    old = b'{\n  "generation": 4,\n  "file": "gen-4.dat"\n}\n'
    (path / "MANIFEST.json").write_bytes(old)
    (path / "gen-4.dat").write_bytes(b"generation 4\n")
    reader = durable(path, legacy=("MANIFEST.json",))
    assert reader.load(migrate=False) == {"generation": 4, "file": "gen-4.dat"}
    assert (path / "MANIFEST.json").exists() and not (path / MANIFEST).exists()
    writer = durable(path, legacy=("MANIFEST.json",))
    assert writer.load() == {"generation": 4, "file": "gen-4.dat"}
    assert names(path) == {MANIFEST, "gen-4.dat"}
    assert (path / MANIFEST).read_bytes() == old
    assert writer.remove_leftovers(["gen-4.dat"]) == []


def test_an_interrupted_copy_migration_is_finished(tmp_path: Path) -> None:
    """Both names with the same commit (a copy made, the old name not yet removed)."""
    path = tmp_path / "s"
    durable(path)
    data = b'{"generation": 1, "file": "gen-1.dat"}\n'
    (path / "MANIFEST.json").write_bytes(data)
    (path / MANIFEST).write_bytes(data)
    assert durable(path, legacy=("MANIFEST.json",)).load() == {"generation": 1, "file": "gen-1.dat"}
    assert not (path / "MANIFEST.json").exists()


def test_two_different_manifests_are_refused_not_guessed(tmp_path: Path) -> None:
    path = tmp_path / "s"
    durable(path)
    (path / "MANIFEST.json").write_bytes(b'{"generation": 1}\n')
    (path / MANIFEST).write_bytes(b'{"generation": 2}\n')
    with pytest.raises(StateError, match=r"holds both MANIFEST\.json .* and manifest\.json"):
        durable(path, legacy=("MANIFEST.json",)).load()
    assert (path / "MANIFEST.json").exists() and (path / MANIFEST).exists()


def test_a_damaged_old_manifest_is_not_migrated(tmp_path: Path) -> None:
    path = tmp_path / "s"
    durable(path)
    (path / "MANIFEST.json").write_bytes(b"{broken")
    with pytest.raises(StateError, match="damaged"):
        durable(path, legacy=("MANIFEST.json",)).load()
    assert (path / "MANIFEST.json").read_bytes() == b"{broken"
    assert not (path / MANIFEST).exists()


# --------------------------------------------------------------------------- real exits

# Commits generations 2 and 3 over a committed generation 1, dying (os._exit, like a
# SIGKILL: no clean-up, no flush) at the Nth fsync or rename of the run.
CHILD = """
import os, re, sys
from pathlib import Path
from crawlkit.durable import DurableDir

path, die_at = Path(sys.argv[1]), int(sys.argv[2])
calls = 0
def dying(real):
    def call(*args, **kw):
        global calls
        calls += 1
        if calls == die_at:
            os._exit(9)
        return real(*args, **kw)
    return call
os.fsync = dying(os.fsync)
os.replace = dying(os.replace)
d = DurableDir(path, owns=re.compile(r"^gen-\\d+\\.dat$"), what="test")
previous = d.load()["file"]
for n in (2, 3):
    name = f"gen-{n}.dat"
    with d.create(name) as f:
        f.write(b"generation %d\\n" % n)
    d.retire(previous)
    d.commit({"generation": n, "file": name})
    previous = name
print(calls)
"""


def test_dying_at_every_fsync_and_rename_loses_no_commit(tmp_path: Path) -> None:
    script = tmp_path / "child.py"
    script.write_text(CHILD)

    def run(path: Path, die_at: int) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, str(script), str(path), str(die_at)],
            capture_output=True,
            text=True,
            timeout=60,
        )

    def fresh(name: str) -> Path:
        path = tmp_path / name
        commit_generation(durable(path), 1)
        return path

    clean = run(fresh("clean"), 0)
    assert clean.returncode == 0, clean.stderr
    steps = int(clean.stdout)
    assert steps >= 8  # per commit: the file's fsync and rename, the manifest's
    reached = set()
    for die_at in range(1, steps + 1):
        path = fresh(f"die{die_at}")
        result = run(path, die_at)
        assert result.returncode == 9, result.stderr
        generation = check_consistent(path, {1, 2, 3})
        reached.add(generation)
        live = durable(path).load()["file"]
        durable(path).remove_leftovers([live])
        assert names(path) == {MANIFEST, live}, die_at
        # The directory goes on working: a clean run commits on top of what survived.
        again = run(path, 0)
        assert again.returncode == 0, again.stderr
        assert check_consistent(path, {3}) == 3
        assert json.loads((path / MANIFEST).read_text())["file"] == "gen-3.dat"
    assert reached == {1, 2, 3}
