"""crawlkit.fetch.iptable: per-IP slots and the start gap shared between processes
(real processes, real byte-range locks), and the scheduler driven through a gate.

Byte-range locks belong to a process, so exclusivity is only visible from another
process: the other side of each test is a forked child that takes orders over a pipe.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path

import pytest
from conftest import crawlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.errors import StateError
from crawlkit.fetch.config import FetchConfig
from crawlkit.fetch.iptable import SLOT_POLL, IpClaim, IpTable
from crawlkit.fetch.scheduler import HostQueue, Scheduler

IP = "192.0.2.7"
CTX = multiprocessing.get_context("fork")


def _child(path: str, conn: Connection) -> None:
    """Obey (op, args) orders over ``conn``: "acquire" (address, slots, gap) answers
    "claim" or the wait; "release" gives back every claim; "exit" ends."""
    table = IpTable(path)
    claims: list[IpClaim] = []
    while True:
        op, args = conn.recv()
        if op == "acquire":
            got = table.acquire(*args)
            if isinstance(got, IpClaim):
                claims.append(got)
                conn.send("claim")
            else:
                conn.send(got)
        elif op == "release":
            for c in claims:
                table.release(c, True)
            claims.clear()
            conn.send("released")
        else:
            return


class Other:
    """Another process using the table at ``path``."""

    def __init__(self, path: Path):
        self.conn, theirs = CTX.Pipe()
        self.proc = CTX.Process(target=_child, args=(str(path), theirs), daemon=True)
        self.proc.start()

    def ask(self, op: str, *args: object) -> object:
        self.conn.send((op, args))
        assert self.conn.poll(20), "the other process did not answer"
        return self.conn.recv()

    def stop(self) -> None:
        if self.proc.is_alive():
            self.conn.send(("exit", ()))
            self.proc.join(10)


@pytest.fixture
def other(tmp_path: Path) -> Iterator[Other]:
    o = Other(tmp_path / "ip.table")
    yield o
    o.stop()
    if o.proc.is_alive():
        o.proc.kill()


@pytest.fixture
def table(tmp_path: Path) -> Iterator[IpTable]:
    t = IpTable(tmp_path / "ip.table", buckets=1024)
    yield t
    t.close()


def test_slots_are_exclusive_across_processes(table: IpTable, other: Other) -> None:
    mine = [table.acquire(IP, 2, 0.0), table.acquire(IP, 2, 0.0)]
    # two slots in one process are two distinct bytes; a third is refused
    assert all(isinstance(c, IpClaim) for c in mine)
    assert mine[0].slot != mine[1].slot  # type: ignore[union-attr]
    assert table.acquire(IP, 2, 0.0) == SLOT_POLL
    assert other.ask("acquire", IP, 2, 0.0) == SLOT_POLL  # both held by us
    assert other.ask("acquire", "192.0.2.8", 2, 0.0) == "claim"  # another address
    table.release(mine[0], True)  # type: ignore[arg-type]
    assert other.ask("acquire", IP, 2, 0.0) == "claim"  # the slot we gave back
    assert other.ask("acquire", IP, 2, 0.0) == SLOT_POLL
    assert table.acquire(IP, 2, 0.0) == SLOT_POLL  # theirs now
    assert other.ask("release") == "released"
    assert isinstance(table.acquire(IP, 2, 0.0), IpClaim)


def test_a_killed_holder_frees_its_slot(tmp_path: Path, table: IpTable, other: Other) -> None:
    assert other.ask("acquire", IP, 1, 0.0) == "claim"
    assert table.acquire(IP, 1, 0.0) == SLOT_POLL
    os.kill(other.proc.pid, signal.SIGKILL)
    other.proc.join(10)
    assert other.proc.exitcode == -signal.SIGKILL
    assert isinstance(table.acquire(IP, 1, 0.0), IpClaim)  # the kernel dropped its lock


def test_the_gap_holds_across_processes(table: IpTable, other: Other) -> None:
    assert other.ask("acquire", IP, 2, 30.0) == "claim"
    wait = table.acquire(IP, 2, 30.0)  # a free slot, but inside their gap
    assert isinstance(wait, float) and 29.0 < wait <= 30.0
    assert table.acquire(IP, 2, 0.0) != SLOT_POLL  # a zero gap does not look


def test_a_start_waits_the_gap_after_the_last_start_and_end_and_unused_starts_go_back(
    tmp_path: Path,
) -> None:
    now = [100.0]
    table = IpTable(tmp_path / "t", buckets=64, clock=lambda: now[0])
    try:
        first = table.acquire(IP, 4, 0.5)
        assert isinstance(first, IpClaim)
        now[0] = 100.2
        assert table.acquire(IP, 4, 0.5) == pytest.approx(0.3)  # from the start
        now[0] = 100.7
        table.release(first, True)  # the request ended at 100.7
        assert table.last_start(IP) == pytest.approx(100.7)
        assert table.acquire(IP, 4, 0.5) == pytest.approx(0.5)  # from the end
        now[0] = 101.5
        unused = table.acquire(IP, 4, 0.5)
        assert isinstance(unused, IpClaim)
        table.release(unused, False)  # never started: the start is taken back
        assert table.last_start(IP) == pytest.approx(100.7)
        now[0] = 50.0  # a time in the future (another boot) does not hold us
        assert isinstance(table.acquire(IP, 4, 0.5), IpClaim)
    finally:
        table.close()


def test_a_foreign_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://example.org/\n")
    with pytest.raises(StateError, match="not a crawlkit IP table"):
        IpTable(seeds)
    assert seeds.read_text() == "http://example.org/\n"
    with pytest.raises(StateError, match=r"not a regular file|Is a directory"):
        IpTable(tmp_path)
    empty = tmp_path / "empty"
    empty.touch()
    IpTable(empty).close()  # an empty file is made a table
    assert empty.stat().st_size > 0


def test_one_instance_per_file_per_process(tmp_path: Path) -> None:
    path = tmp_path / "shared"
    a = IpTable.open(path)
    try:
        assert IpTable.open(path) is a
        assert Scheduler.from_config(FetchConfig(ip_table=str(path))).ip_gate is a
    finally:
        a.close()


# -- the scheduler through a gate -------------------------------------------------------
class FakeGate:
    """The table's contract in memory, on the fake clock of the schedule below."""

    def __init__(self, clock: list[float]):
        self.clock = clock
        self.held: dict[str, set[int]] = {}
        self.last: dict[str, float] = {}
        self.owner: dict[int, str] = {}

    def acquire(self, address: str, slots: int, gap: float) -> IpClaim | float:
        held = self.held.setdefault(address, set())
        free = [j for j in range(slots) if j not in held]
        if not free:
            return SLOT_POLL
        now = self.clock[0]
        last = self.last.get(address, -1e9)
        if gap > 0 and now - last < gap:
            return gap - (now - last)
        held.add(free[0])
        self.last[address] = now
        claim = IpClaim(free[0], 0, 0.0, now)
        self.owner[id(claim)] = address
        return claim

    def release(self, claim: IpClaim, started: bool) -> None:
        address = self.owner.pop(id(claim))
        self.held[address].discard(claim.slot)
        if started:
            self.last[address] = self.clock[0]


def _two_processes(
    scheds: list[Scheduler],
    hosts: list[list[HostQueue]],
    took: dict[str, float],
    clock: list[float],
):
    """Drive two schedulers on one fake clock, each request to host K taking
    ``took[K]``; (address, start, end) per request."""
    for sched, mine in zip(scheds, hosts, strict=True):
        for h in mine:
            sched.push(h)
    log, running = [], []
    for _ in range(20_000):
        now = clock[0]
        for sched in scheds:
            while (h := sched.pop_ready(now)) is not None:
                h.items.popleft()
                sched.start(h, now)
                running.append((now + took[h.key], sched, h, now))
        times = [t for s in scheds if (t := s.next_time()) is not None]
        ends = [r[0] for r in running]
        if not times and not ends:
            return log
        if times and (not ends or min(times) < min(ends)):
            clock[0] = max(now, min(times))
            continue
        running.sort(key=lambda r: r[0])
        end, sched, h, start = running.pop(0)
        clock[0] = end
        sched.finish(h, end, elapsed=end - start, status=200)
        log.append((h.address, start, end))
        if h.items:
            sched.push(h)
    raise AssertionError("the schedule did not finish")


@settings(deadline=None, max_examples=60)
@given(
    n_hosts=st.integers(1, 6),
    per_host=st.integers(1, 4),
    elapsed=st.floats(0.001, 0.3),
    per_ip=st.integers(1, 3),
    gap=st.sampled_from([0.0, 0.05, 0.2]),
)
def test_two_schedulers_through_one_gate_keep_the_limit_together(
    n_hosts: int, per_host: int, elapsed: float, per_ip: int, gap: float
) -> None:
    clock = [0.0]
    gate = FakeGate(clock)
    scheds = [
        Scheduler(min_delay=0.0, delay_factor=0, per_ip=per_ip, per_ip_delay=gap, ip_gate=gate)
        for _ in range(2)
    ]
    hosts: list[list[HostQueue]] = [[], []]
    took: dict[str, float] = {}
    for i in range(2 * n_hosts):
        h = HostQueue(f"h{i}", address=f"10.0.0.{i % 3 == 0}")
        h.items.extend(range(per_host))
        took[h.key] = elapsed * (1 + i % 2)
        hosts[i % 2].append(h)
    log = _two_processes(scheds, hosts, took, clock)
    assert len(log) == 2 * n_hosts * per_host  # nothing stranded behind a probe
    for ip in {a for a, _, _ in log}:
        spans = sorted((s, e) for a, s, e in log if a == ip)
        for s, _ in spans:
            assert sum(1 for s2, e2 in spans if s2 <= s < e2) <= per_ip
        starts = [s for s, _ in spans]
        assert all(b - a >= gap - 1e-9 for a, b in itertools.pairwise(starts))
    assert not any(gate.held.values())  # every slot given back


def test_fetch_names_a_file_that_is_not_a_table_in_one_line_and_keeps_it(
    tmp_path: Path,
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("http://a.test/\n")
    state = tmp_path / "S"
    res = crawlkit(
        "fetch", "--state", str(state), "--ip-table", str(seeds), input=b"http://a.test/\n"
    )
    assert res.code == 1
    assert res.stderr.strip().splitlines() == [
        f"crawlkit fetch: --ip-table {seeds}: not a crawlkit IP table (left untouched; "
        "name a new or empty file)"
    ]
    assert seeds.read_text() == "http://a.test/\n"
    assert not state.exists()  # refused before any work


def test_hosts_parked_behind_a_probe_are_not_stranded_when_it_is_deferred() -> None:
    clock = [0.0]
    gate = FakeGate(clock)
    gate.held[IP] = {0}  # another process holds the only slot
    sched = Scheduler(min_delay=0.0, per_ip=1, per_ip_delay=0.0, ip_gate=gate)
    a, b = HostQueue("a", address=IP), HostQueue("b", address=IP)
    for h in (a, b):
        h.items.append("x")
        sched.push(h)
    assert sched.pop_ready(0.0) is None  # a: the probe, back at SLOT_POLL; b: parked
    assert sched.next_time() == SLOT_POLL and len(sched) == 2
    assert sched.pop_due_after(SLOT_POLL / 2) == [a]  # the probe is deferred ...
    assert sched.next_time() == 0.0  # ... and b takes its place, not left parked
    assert sched.pop_ready(0.0) is None  # b is the probe now
    gate.held[IP].clear()
    assert sched.pop_ready(SLOT_POLL) is b
