"""crawlkit.fetch.scheduler: one request per host at a time, the gap, per-IP limits,
backoff (invariant 2), driven with a fake clock."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.fetch.scheduler import HostQueue, Scheduler


def run_schedule(sched: Scheduler, hosts: list[HostQueue], elapsed: float, status=200):
    """Drive the scheduler with a fake clock; returns (host, start, end) per request."""
    for h in hosts:
        sched.push(h)
    now, log, running = 0.0, [], []
    for _ in range(10_000):
        while True:
            h = sched.pop_ready(now)
            if h is None:
                break
            h.items.popleft()
            sched.start(h, now)
            running.append((now + elapsed, h, now))
        if not running:
            nt = sched.next_time()
            if nt is None:
                break
            now = max(now, nt)
            continue
        running.sort(key=lambda r: r[0])
        nt = sched.next_time()
        if nt is not None and nt < running[0][0]:
            now = max(now, nt)
            continue
        end, h, start = running.pop(0)
        now = end
        sched.finish(h, now, elapsed=elapsed, status=status(h) if callable(status) else status)
        log.append((h.key, start, end))
        if h.items:
            sched.push(h)
    return log


@settings(deadline=None)  # timing varies on a shared machine; examples are bounded
@given(
    n_hosts=st.integers(1, 6),
    per_host=st.integers(1, 5),
    elapsed=st.floats(0.001, 0.3),
    min_delay=st.floats(0.0, 2.0),
    per_ip=st.integers(1, 3),
)
def test_scheduler_never_overlaps_a_host_and_keeps_the_gap(
    n_hosts, per_host, elapsed, min_delay, per_ip
):
    sched = Scheduler(min_delay=min_delay, delay_factor=10, per_ip=per_ip, per_ip_delay=0.1)
    hosts = [HostQueue(f"h{i}", address=f"10.0.0.{i % 2}") for i in range(n_hosts)]
    for h in hosts:
        h.items.extend(range(per_host))
    log = run_schedule(sched, hosts, elapsed)
    assert len(log) == n_hosts * per_host  # nothing dropped
    gap = max(min_delay, 10 * elapsed)
    for key in {k for k, _, _ in log}:
        mine = sorted((s, e) for k, s, e in log if k == key)
        for (_s1, e1), (s2, _) in itertools.pairwise(mine):
            assert s2 >= e1 + gap - 1e-9
    for ip in ("10.0.0.0", "10.0.0.1"):
        spans = [(s, e) for k, s, e in log if f"10.0.0.{int(k[1:]) % 2}" == ip]
        for s, _ in spans:
            assert sum(1 for s2, e2 in spans if s2 <= s < e2) <= per_ip
        starts = sorted(s for s, _ in spans)
        assert all(b - a >= 0.1 - 1e-9 for a, b in itertools.pairwise(starts))


def test_backoff_doubles_to_the_cap_honours_retry_after_and_clears() -> None:
    sched = Scheduler(min_delay=1, backoff=60, max_backoff=3600)
    h = HostQueue("a", address="1.1.1.1")
    waits = []
    for _ in range(8):
        sched.start(h, 0)
        sched.finish(h, 100.0, elapsed=0.1, status=503)
        waits.append(h.backoff_until - 100.0)
    assert waits == [60, 120, 240, 480, 960, 1920, 3600, 3600]
    sched.start(h, 0)
    sched.finish(h, 100.0, elapsed=0.1, status=429, retry_after=7200)
    assert h.backoff_until == 100.0 + 7200  # Retry-After longer than the step wins
    sched.start(h, 0)
    sched.finish(h, 200.0, elapsed=0.1, status=200)
    assert h.backoff == 0 and not h.backing_off(200.0) and h.next_allowed == 201.0


def test_crawl_delay_sets_the_gap() -> None:
    sched = Scheduler(min_delay=1)
    h = HostQueue("a", crawl_delay=5)
    sched.start(h, 0)
    sched.finish(h, 10.0, elapsed=0.01, status=200)
    assert h.next_allowed == 15.0


def test_per_address_clocks_long_past_are_forgotten() -> None:
    """One clock per address ever fetched grew for the whole run (issue 27): those long
    past go, one still ahead or of an address in flight stays, and a host of an
    address forgotten is as due as one never seen."""
    sched = Scheduler(min_delay=0, per_ip_delay=1.0)
    done = [HostQueue(f"h{i}", address=f"10.0.{i}.1") for i in range(100)]
    for h in done:
        sched.start(h, 0.0)
        sched.finish(h, 0.5, elapsed=0.1, status=200)
    late = HostQueue("late", address="10.9.9.9")
    sched.start(late, 5.0)  # next start on its address allowed at 6.0 ...
    sched.finish(late, 5.1, elapsed=0.1, status=200)  # ... and, from its end, at 6.1
    flying = HostQueue("flying", address="10.9.9.8")
    sched.start(flying, 0.0)  # still in flight
    assert sched.forget_addresses(0.5) == 0  # every clock is at 1.5 (end + gap) or later
    assert sched.forget_addresses(2.0) == 100
    assert sched._ip_next.keys() == {"10.9.9.9", "10.9.9.8"}
    again = HostQueue("again", address="10.0.0.1")
    again.items.append("x")
    sched.push(again)
    assert sched.pop_ready(2.0) is again
    other = HostQueue("other", address="10.9.9.9")  # same address as late: waits for 6.1
    other.items.append("x")
    sched.push(other)
    assert sched.pop_ready(6.05) is None and sched.pop_ready(6.1) is other


def test_the_per_ip_gap_counts_from_when_a_request_went_out() -> None:
    # A start is counted at launch; on a loaded machine the request went out 0.2 s
    # later, and the next one to the address, launched per_ip_delay after the first
    # start, reached the server 39 ms after it (a helper's server log).
    sched = Scheduler(min_delay=0, per_ip=2, per_ip_delay=0.25)
    first = HostQueue("a", address="10.0.0.1")
    first.items.append("x")
    second = HostQueue("b", address="10.0.0.1")
    second.items.append("y")
    sched.push(first)
    sched.push(second)
    assert sched.pop_ready(0.0) is first
    sched.start(first, 0.0)
    sched.sent(first, 0.2)  # it went out now
    assert sched.pop_ready(0.25) is None  # 0.25 after the launch, 0.05 after it went out
    assert sched.pop_ready(0.449) is None
    assert sched.pop_ready(0.45) is second
    sched.start(second, 0.45)
    sched.sent(second, 0.46)
    sched.finish(first, 0.5, elapsed=0.3, status=200)
    # a request not (or no longer) in flight moves no clock
    sched.sent(first, 9.0)
    assert sched._ip_next["10.0.0.1"] == 0.75


def test_address_clocks_pass_from_one_fetch_run_to_the_next(tmp_path) -> None:
    # A crawl runs one fetch after another on one host state; each began with no
    # address clocks, so a host alone on its address (--per-ip-delay above its own gap)
    # was asked after its own gap only at each new run (a helper's server log: 0.5 s
    # against 2 s).
    import http.server
    import threading
    import time

    from crawlkit.fetch.config import FetchConfig
    from crawlkit.fetch.hoststate import HostState
    from crawlkit.stages.fetch import fetch_records

    starts: list[tuple[str, float]] = []

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            starts.append((self.path, time.monotonic()))
            self.send_response(200 if self.path != "/robots.txt" else 404)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    root = f"http://127.0.0.1:{server.server_address[1]}"
    config = FetchConfig(min_delay=0.05, delay_factor=0, per_ip=1, per_ip_delay=0.8)
    (tmp_path / "fetch").mkdir()
    hosts = HostState(tmp_path / "fetch")
    try:
        for path in ("/a", "/b"):  # two runs, as a crawl's loop makes them
            got: list[dict] = []
            fetch_records(
                [{"url": root + path}],
                got.append,
                state_dir=tmp_path,
                config=config,
                allow_net=["127.0.0.0/8"],
                host_state=hosts,
            )
            assert [r["outcome"] for r in got] == ["fetched"], got
    finally:
        hosts.close()
        server.shutdown()
        server.server_close()
    assert [p for p, _ in starts] == ["/robots.txt", "/a", "/b"]
    assert starts[2][1] - starts[1][1] >= 0.8 - 0.02, starts


def test_an_address_waits_while_a_request_to_it_has_not_gone_out() -> None:
    # A launched request may go out long after its launch (a slow TLS handshake, a
    # loaded machine): the next start to the address waits for it, then the gap.
    sched = Scheduler(min_delay=0, per_ip=2, per_ip_delay=0.25)
    a, b, c = (HostQueue(k, address="10.0.0.9") for k in "abc")
    for h in (a, b, c):
        h.items.append("x")
        sched.push(h)
    assert sched.pop_ready(0.0) is a
    sched.start(a, 0.0)
    assert sched.pop_ready(5.0) is None  # a has not gone out: b and c wait, parked
    sched.sent(a, 5.0)
    assert sched.pop_ready(5.2) is None and sched.pop_ready(5.25) is b
    sched.start(b, 5.25)
    # a request that never goes out (no connection) frees its address when it ends
    sched.finish(b, 6.0, elapsed=0.7, status=None)
    assert sched.pop_ready(6.25) is c
