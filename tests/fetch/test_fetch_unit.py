"""Unit tests of the fetch parts: network policy, scheduler, WARC writer, resolver,
host state, client caps (against a tiny loopback server), and the engine over a
fake client."""

from __future__ import annotations

import asyncio
import gzip
import itertools
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import ClassVar

import pytest
import warcio.archiveiterator
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.errors import UsageError
from crawlkit.fetch.client import AiohttpClient, FetchRequest, FetchResult
from crawlkit.fetch.engine import FetchConfig, Fetcher, parse_retry_after, split_url
from crawlkit.fetch.hoststate import HostRecord, HostState
from crawlkit.fetch.netpolicy import NetPolicy
from crawlkit.fetch.resolver import Resolver, read_hosts_file
from crawlkit.fetch.scheduler import HostQueue, Scheduler
from crawlkit.warc.write import Capture, WarcWriter, sha1_digest

# -- network policy (invariant 7) ---------------------------------------------------------


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.9.9.9",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fc00::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:8.8.8.8",
        "64:ff9b::a00:1",
        "2002:7f00:1::1",
        "192.0.2.1",
        "198.18.0.1",
    ],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    assert NetPolicy().refusal(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "93.184.216.34", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address: str) -> None:
    assert NetPolicy().allowed(address)


def test_allow_net_opens_exactly_its_cidr() -> None:
    policy = NetPolicy(["127.0.0.0/9"])
    assert policy.allowed("127.1.0.1")
    assert not policy.allowed("127.255.0.1")
    assert not policy.allowed("10.0.0.1")
    with pytest.raises(UsageError):
        NetPolicy(["not-a-cidr"])


# -- scheduler (invariant 2) ----------------------------------------------------------------


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


def test_retry_after_seconds_and_http_date() -> None:
    assert parse_retry_after("120", 0) == 120
    now = 1_700_000_000.0
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now + 90))
    assert parse_retry_after(date, now) == pytest.approx(90, abs=1)
    assert parse_retry_after("soon", now) is None


def test_split_url() -> None:
    assert split_url("http://A.example:80/x").key == "a.example"
    assert split_url("https://a.example:8443/").origin == "https://a.example:8443"
    with pytest.raises(Exception, match="scheme"):
        split_url("ftp://a.example/")


# -- WARC ---------------------------------------------------------------------------------


def capture(i: int, body: bytes, revisit=None) -> Capture:
    return Capture(
        url=f"http://a.test/{i}",
        ip="127.0.0.2",
        date=time.time(),
        request_head=f"GET /{i} HTTP/1.1\r\nHost: a.test\r\n\r\n".encode(),
        response_head=b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n",
        body=body,
        payload_digest=sha1_digest(body),
        depth=3,
        revisit_of=revisit,
        metadata={"fetchTimeMs": "5"},
    )


@pytest.mark.parametrize("version", ["1.1", "1.0"])
def test_warc_files_pass_warcio_check_and_rotate(tmp_path: Path, version: str) -> None:
    w = WarcWriter(tmp_path, version=version, max_size=3000)
    locs = [w.write_capture(capture(i, b"<p>%d</p>" % i * 100)) for i in range(6)]
    w.write_capture(
        capture(9, b"<p>0</p>" * 100, revisit=("http://a.test/0", "2020-01-01T00:00:00Z"))
    )
    w.close()
    files = sorted(tmp_path.glob("*.warc.gz"))
    assert len(files) > 1 and not list(tmp_path.glob("*.open"))
    assert all(f.name.startswith("crawlkit-") and f.name.endswith(".warc.gz") for f in files)
    warcio_bin = Path(sys.executable).parent / "warcio"
    check = subprocess.run(
        [str(warcio_bin), "check", *map(str, files)], capture_output=True, text=True
    )
    assert check.returncode == 0, check.stdout + check.stderr
    loc = locs[2]
    with open(tmp_path / loc.file, "rb") as fh:
        fh.seek(loc.offset)
        rec = next(iter(warcio.archiveiterator.ArchiveIterator(fh)))
        assert rec.rec_type == "response"
        assert rec.rec_headers.protocol == f"WARC/{version}"
        assert rec.rec_headers.get_header("WARC-Crawlkit-Depth") == "3"
        assert rec.content_stream().read() == b"<p>2</p>" * 100
        assert rec.http_headers.get_header("Transfer-Encoding") is None


def test_warc_reads_with_fastwarc_when_installed(tmp_path: Path) -> None:
    fastwarc = pytest.importorskip("fastwarc.warc")
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"x" * (i + 1)))
    w.close()
    (path,) = tmp_path.glob("*.warc.gz")
    with open(path, "rb") as fh:
        blocks = [
            r.verify_block_digest()
            for r in fastwarc.ArchiveIterator(fh, parse_http=False)
            if r.record_type == fastwarc.WarcRecordType.response
        ]
    with open(path, "rb") as fh:
        # (FastWARC checks the block digest only before it parses the HTTP head)
        payloads = [
            r.verify_payload_digest()
            for r in fastwarc.ArchiveIterator(fh, parse_http=True)
            if r.record_type == fastwarc.WarcRecordType.response
        ]
    assert blocks == payloads == [True, True, True]


def test_warc_indexes_with_cdxj_indexer_when_installed(tmp_path: Path) -> None:
    pytest.importorskip("cdxj_indexer")
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"y" * (i + 1)))
    w.close()
    (path,) = tmp_path.glob("*.warc.gz")
    exe = Path(sys.executable).parent / "cdxj-indexer"
    out = subprocess.run([str(exe), str(path)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if line.strip()]
    assert sum('"status": "200"' in line for line in lines) == 3


# -- resolver and host state -------------------------------------------------------------


def test_hosts_file_overrides_and_negative_cache_is_bounded(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("# comment\n127.1.0.1 a.test b.test\n::1 c.test\n")
    table = read_hosts_file(hosts)
    assert table == {"a.test": ("127.1.0.1",), "b.test": ("127.1.0.1",), "c.test": ("::1",)}
    calls = []

    def lookup(name: str) -> list[str]:
        calls.append(name)
        raise OSError(-2, "Name or service not known")

    r = Resolver(hosts=table, lookup=lookup, max_negative=3)

    async def go() -> None:
        assert (await r.resolve("A.test.")).addresses == ("127.1.0.1",)
        for i in range(5):
            res = await r.resolve(f"x{i}.invalid")
            assert res.error and not res.addresses
        await r.resolve("x4.invalid")  # cached failure: no second lookup

    asyncio.run(go())
    assert calls == [f"x{i}.invalid" for i in range(5)]
    assert len(r._negative) == 3


def test_host_state_round_trip(tmp_path: Path) -> None:
    s = HostState(tmp_path)
    s.put_host("a.test", HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0))
    s.put_digest("sha1:X", "http://a.test/", "2026-01-01T00:00:00Z")
    s.commit()
    s.close()
    s = HostState(tmp_path)
    assert s.host("a.test") == HostRecord(100.0, 60.0, 160.0, 0.2, 1.0, 99.0)
    assert s.digest("sha1:X") == ("http://a.test/", "2026-01-01T00:00:00Z")
    assert s.host("b.test") is None
    s.close()


# -- the client's caps, against a tiny loopback server ---------------------------------


@pytest.fixture(scope="module")
def tiny_server():
    from aiohttp import web

    async def handler(request: web.Request) -> web.StreamResponse:
        if request.path == "/bomb":
            return web.Response(
                body=gzip.compress(b"\0" * 20_000_000), headers={"Content-Encoding": "gzip"}
            )
        if request.path == "/stall":
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b"partial")
            await asyncio.sleep(2)
            return resp
        return web.Response(text=f"hello {request.host} {request.headers.get('User-Agent')}")

    import threading

    loop = asyncio.new_event_loop()
    runner_box: dict = {}

    async def start() -> None:
        app = web.Application()
        app.router.add_get("/{tail:.*}", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runner_box["runner"] = runner
        runner_box["port"] = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(10)
    yield runner_box["port"]
    asyncio.run_coroutine_threadsafe(runner_box["runner"].cleanup(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    loop.close()


def test_client_connects_to_the_pinned_address_keeping_the_name(tiny_server: int) -> None:
    async def go() -> list[FetchResult]:
        c = AiohttpClient()
        try:
            ok = await c.fetch(
                FetchRequest(
                    f"http://named.test:{tiny_server}/", "127.0.0.1", {"User-Agent": "t/1"}
                )
            )
            bomb = await c.fetch(
                FetchRequest(
                    f"http://named.test:{tiny_server}/bomb", "127.0.0.1", max_decoded=1_000_000
                )
            )
            stall = await c.fetch(
                FetchRequest(f"http://named.test:{tiny_server}/stall", "127.0.0.1", timeout=0.5)
            )
            return [ok, bomb, stall]
        finally:
            await c.close()

    ok, bomb, stall = asyncio.run(go())
    assert ok.status == 200 and ok.body == f"hello named.test:{tiny_server} t/1".encode()
    assert bomb.truncated == "length" and bomb.decoded_bytes > 1_000_000
    assert len(bomb.body) < 100_000  # stopped at the decoded cap, body kept raw (gzip)
    assert stall.truncated == "time" and stall.body == b"partial" and "timeout" in stall.error


# -- the engine over a fake client --------------------------------------------------------


class FakeClient:
    """Answers from a table; records the order of requests per host."""

    def __init__(self, table: dict[str, tuple[int, dict[str, str], bytes]]):
        self.table = table
        self.seen: list[tuple[str, str]] = []

    async def fetch(self, request: FetchRequest) -> FetchResult:
        self.seen.append((request.url, request.address))
        status, headers, body = self.table.get(request.url, (404, {}, b""))
        await asyncio.sleep(0.001)
        return FetchResult(
            status=status,
            headers=list(headers.items()),
            response_head=b"HTTP/1.1 %d X\r\n\r\n" % status,
            request_head=b"GET / HTTP/1.1\r\n\r\n",
            body=body,
            started=time.time(),
            elapsed=0.001,
            address=request.address,
        )

    async def close(self) -> None:
        pass


def run_engine(records, table, **cfg):
    client = FakeClient(table)
    redirects: list[dict] = []
    resolver = Resolver(
        hosts={"a.test": ("8.8.8.8",), "b.test": ("8.8.4.4",), "lan.test": ("10.0.0.1",)}
    )
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, **cfg),
        client=client,
        resolver=resolver,
        netpolicy=NetPolicy(),
        on_redirect=redirects.append,
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run(records)]

    return asyncio.run(go()), client, redirects


def test_engine_one_record_per_url_robots_first_and_redirects() -> None:
    robots = b"User-agent: *\nDisallow: /private\n"
    table = {
        "http://a.test:80/robots.txt": (200, {}, robots),
        "http://a.test/": (200, {"Content-Type": "text/html"}, b"<p>hi</p>"),
        "http://a.test/old": (301, {"Location": "/new"}, b""),
        "http://b.test:80/robots.txt": (503, {"Retry-After": "5"}, b""),
    }
    records = [
        {"url": u, "depth": 2, "x": "keep"}
        for u in [
            "http://a.test/",
            "http://a.test/private/1",
            "http://a.test/old",
            "http://b.test/",
            "http://lan.test/",
            "mailto:x@y",
            "http://a.test/missing",
        ]
    ]
    out, client, redirects = run_engine(records, table)
    assert len(out) == len(records)
    got = {r["url"]: r for r in out}
    assert all(r["x"] == "keep" for r in out)
    assert got["http://a.test/"]["outcome"] == "fetched"
    assert got["http://a.test/private/1"]["outcome"] == "robots-denied"
    assert got["http://a.test/old"]["outcome"] == "redirect"
    assert got["http://a.test/old"]["location"] == "http://a.test/new"
    assert got["http://b.test/"]["outcome"] == "deferred" and got["http://b.test/"]["retry_at"]
    assert got["http://lan.test/"]["outcome"] == "refused"
    assert got["mailto:x@y"]["outcome"] == "refused"
    assert got["http://a.test/missing"]["status"] == 404
    assert redirects == [
        {
            "url": "http://a.test/new",
            "host": "a.test",
            "site": "a.test",
            "fp": redirects[0]["fp"],
            "depth": 2,
            "reason": "redirect",
            "hops": 1,
            "via": "http://a.test/old",
        }
    ]
    a_requests = [u for u, _ in client.seen if "a.test" in u]
    assert a_requests[0] == "http://a.test:80/robots.txt"
    assert all(addr == "8.8.8.8" for u, addr in client.seen if "a.test" in u)
    assert not [u for u, _ in client.seen if "lan.test" in u or "private" in u]


def test_engine_defers_hosts_not_due_before_the_deadline() -> None:
    table = {"http://a.test:80/robots.txt": (404, {}, b"")}
    records = [{"url": f"http://a.test/{i}"} for i in range(5)]
    out, _client, _ = run_engine(records, table, duration=0.5, delay_factor=0, per_ip_delay=0)
    # min_delay 0 but Crawl-delay none: all five fit; now with a 1 s gap only some do
    assert len(out) == 5
    cfg = {"duration": 0.3, "delay_factor": 0.0}
    client2 = FakeClient(table)
    fetcher = Fetcher(
        FetchConfig(min_delay=1.0, **cfg),
        client=client2,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run(records)]

    out2 = asyncio.run(go())
    assert len(out2) == 5
    deferred = [r for r in out2 if r["outcome"] == "deferred"]
    assert len(deferred) == 5 and all(r["retry_at"] for r in deferred)  # robots took the slot
    assert len(client2.seen) == 1


def test_open_file_of_a_dead_writer_is_salvaged(tmp_path: Path) -> None:
    w = WarcWriter(tmp_path)
    for i in range(3):
        w.write_capture(capture(i, b"z" * 500))
    w.flush()
    (open_file,) = tmp_path.glob("*.open")
    data = open_file.read_bytes()
    w._file.close()  # the writer "dies" without renaming
    w._file = None
    name = open_file.name.rsplit("-", 1)[0] + "-999999999.warc.gz.open"  # a pid that is gone
    open_file.unlink()
    (tmp_path / name).write_bytes(data[:-7])  # and the last record is cut short
    w2 = WarcWriter(tmp_path)
    w2.write_capture(capture(9, b"new"))
    w2.close()
    assert not list(tmp_path.glob("*.open"))
    salvaged = tmp_path / name[: -len(".open")]
    assert w2.salvaged == [salvaged]
    with open(salvaged, "rb") as fh:
        kinds = [r.rec_type for r in warcio.archiveiterator.ArchiveIterator(fh)]
    # warcinfo + 3 x (response, request, metadata), minus the cut metadata record
    assert kinds.count("response") == 3 and len(kinds) == 1 + 3 * 3 - 1


@pytest.mark.parametrize("crashed", [True, False])
def test_after_a_crash_every_known_host_waits_its_full_gap(tmp_path: Path, crashed: bool) -> None:
    # The last run touched a.test long ago (its clock says "due"), then died (the
    # running mark is still set): a request to a.test may have been lost with it.
    s = HostState(tmp_path)
    s.begin_run()
    s.put_host("a.test", HostRecord(0.0, 0.0, 0.0, 0.0, 0.0, None))
    s.commit()
    s.close(clean=not crashed)
    state = HostState(tmp_path)
    client = FakeClient({"http://a.test:80/robots.txt": (404, {}, b"")})
    times: list[float] = []
    real_fetch = client.fetch

    async def timed_fetch(request: FetchRequest) -> FetchResult:
        times.append(time.monotonic())
        return await real_fetch(request)

    client.fetch = timed_fetch  # type: ignore[method-assign]
    fetcher = Fetcher(
        FetchConfig(min_delay=1.0, delay_factor=0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
        state=state,
    )

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/"}])]

    start = time.monotonic()
    out = asyncio.run(go())
    state.close()
    assert [r["outcome"] for r in out] == ["fetched"]
    if crashed:
        assert times[0] - start >= 1.0
    else:
        assert times[0] - start < 1.0


def test_cli_takes_bare_urls_reports_bad_lines_and_refuses_without_allow_net(
    tmp_path: Path,
) -> None:
    from conftest import crawlkit

    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.7 local.test\n")
    res = crawlkit(
        "fetch",
        "--state",
        str(tmp_path / "s"),
        "--hosts-file",
        str(hosts),
        input=b'http://local.test/\n{"url": "gopher://x/", "depth": 4}\n{broken\n',
    )
    assert res.code == 0, res.stderr
    out = [__import__("json").loads(line) for line in res.lines]
    assert [(r["url"], r["outcome"]) for r in out] == [
        ("gopher://x/", "refused"),
        ("http://local.test/", "refused"),
    ]
    assert out[0]["depth"] == 4
    assert "loopback address 127.0.0.7 refused" in out[1]["error"]
    assert ":3:" in res.stderr and "1 bad input records skipped" in res.stderr
    bad = crawlkit("fetch", "--state", str(tmp_path / "s"), "--allow-net", "nope", input=b"")
    assert bad.code == 2 and "not a CIDR" in bad.stderr


def test_https_keeps_the_name_for_sni_and_host_while_pinned(tmp_path: Path) -> None:
    import shutil
    import ssl
    import threading

    from aiohttp import web

    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("needs the openssl command to make a test certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-days",
            "1",
            "-subj",
            "/CN=secure.test",
            "-addext",
            "subjectAltName=DNS:secure.test",
        ],
        check=True,
        capture_output=True,
    )
    seen: dict[str, str] = {}
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(cert, key)

    def sni(sock: ssl.SSLObject, name: str | None, _ctx: ssl.SSLContext) -> None:
        seen["sni"] = name or ""

    ctx.sni_callback = sni  # type: ignore[assignment]

    async def handler(request: web.Request) -> web.Response:
        seen["host"] = request.host
        return web.Response(text="secure")

    loop = asyncio.new_event_loop()
    box: dict = {}

    async def start() -> None:
        app = web.Application()
        app.router.add_get("/", handler)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=ctx)
        await site.start()
        box["runner"], box["port"] = runner, site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        asyncio.run_coroutine_threadsafe(start(), loop).result(10)

        async def go() -> FetchResult:
            c = AiohttpClient(ca_file=cert)  # verified for the name, not the address
            try:
                return await c.fetch(
                    FetchRequest(f"https://secure.test:{box['port']}/", "127.0.0.1")
                )
            finally:
                await c.close()

        res = asyncio.run(go())
    finally:
        if "runner" in box:
            asyncio.run_coroutine_threadsafe(box["runner"].cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()
    assert res.status == 200 and res.body == b"secure", res.error
    assert seen == {"sni": "secure.test", "host": f"secure.test:{box['port']}"}


ANSWERS = {
    "ok": (200, {"Content-Type": "text/html"}, b"<p>x</p>"),
    "moved": (301, {"Location": "/elsewhere"}, b""),
    "gone": (404, {}, b""),
    "slow-down": (429, {"Retry-After": "1"}, b""),
    "busy": (503, {}, b""),
    "same": (304, {}, b""),
}
ROBOTS = {
    "rules": (200, {}, b"User-agent: *\nDisallow: /no\n"),
    "none": (404, {}, b""),
    "down": (503, {}, b""),
}


@settings(deadline=None)  # timing varies on a shared machine; examples are bounded
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["a.test", "b.test", "lan.test", "gopher", "nourl"]),
            st.sampled_from([*sorted(ANSWERS), "no"]),
        ),
        max_size=25,
    ),
    st.sampled_from(sorted(ROBOTS)),
    st.sampled_from(sorted(ROBOTS)),
)
def test_every_input_url_gets_exactly_one_record(items, robots_a, robots_b) -> None:
    records, table = (
        [],
        {
            "http://a.test:80/robots.txt": ROBOTS[robots_a],
            "http://b.test:80/robots.txt": ROBOTS[robots_b],
        },
    )
    for i, (host, answer) in enumerate(items):
        if host == "nourl":
            records.append({"n": i})
            continue
        scheme = "gopher" if host == "gopher" else "http"
        url = f"{scheme}://{'a.test' if host == 'gopher' else host}/{answer}/{i}"
        records.append({"url": url, "n": i})
        table[url] = ANSWERS.get(answer, ANSWERS["ok"])
    out, _, _ = run_engine(records, table, backoff=0.05, delay_factor=0.0, per_ip_delay=0.0)
    assert sorted(r["n"] for r in out) == list(range(len(records)))
    for r in out:
        assert r["outcome"] in (
            "fetched",
            "not-modified",
            "redirect",
            "robots-denied",
            "deferred",
            "refused",
            "error",
        )
        if r["outcome"] == "deferred":
            assert r["retry_at"]


@pytest.mark.timeout(30)
def test_stop_with_requests_in_flight_lets_them_finish_and_defers_the_rest() -> None:
    class SlowClient(FakeClient):
        started: ClassVar[list[str]] = []

        async def fetch(self, request: FetchRequest) -> FetchResult:
            self.started.append(request.url)
            if not request.url.endswith("robots.txt"):
                await asyncio.sleep(0.3)
            return await super().fetch(request)

    client = SlowClient({"http://a.test:80/robots.txt": (404, {}, b"")})
    client.table.update({f"http://a.test/{i}": ANSWERS["ok"] for i in range(4)})
    fetcher = Fetcher(
        FetchConfig(min_delay=0.0, delay_factor=0.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
    )

    async def go() -> list[dict]:
        out = []
        async for rec in fetcher.run([{"url": f"http://a.test/{i}"} for i in range(4)]):
            out.append(rec)
        return out

    async def main() -> list[dict]:
        task = asyncio.create_task(go())
        while len(client.started) < 2:  # robots.txt, then the first page is in flight
            await asyncio.sleep(0.01)
        fetcher.stop()
        return await task

    out = asyncio.run(main())
    assert sorted(r["outcome"] for r in out) == ["deferred", "deferred", "deferred", "fetched"]


def test_idle_hosts_are_forgotten_and_come_back_from_the_state(tmp_path: Path) -> None:
    state = HostState(tmp_path)
    client = FakeClient(
        {
            "http://a.test:80/robots.txt": (200, {}, b"User-agent: *\nDisallow: /no\n"),
            "http://a.test/1": ANSWERS["ok"],
            "http://a.test/2": ANSWERS["ok"],
        }
    )
    fetcher = Fetcher(
        FetchConfig(min_delay=0.2, delay_factor=0.0),
        client=client,
        resolver=Resolver(hosts={"a.test": ("8.8.8.8",)}),
        netpolicy=NetPolicy(),
        state=state,
    )
    fetcher.sweep_every, fetcher.sweep_min_hosts, fetcher.idle_evict = 0.0, 0, 0.0
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed:
            return None
        if not fetcher.evicted:
            return []
        fed = True
        return [{"url": "http://a.test/2"}, {"url": "http://a.test/no/3"}]

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/1"}], refill=refill)]

    out = asyncio.run(go())
    state.close()
    assert fetcher.evicted >= 1
    assert sorted(r["outcome"] for r in out) == ["fetched", "fetched", "robots-denied"]
    assert [u for u, _ in client.seen].count("http://a.test:80/robots.txt") == 1


def test_dns_cache_survives_in_the_state(tmp_path: Path) -> None:
    calls: list[str] = []

    def lookup(name: str) -> list[str]:
        calls.append(name)
        if name == "gone.test":
            raise OSError(-2, "Name or service not known")
        return ["93.184.216.34"]

    first = Resolver(lookup=lookup)

    async def resolve_all(r: Resolver) -> list[tuple[str, ...]]:
        return [(await r.resolve(n)).addresses for n in ("www.example.test", "gone.test")]

    assert asyncio.run(resolve_all(first)) == [("93.184.216.34",), ()]
    s = HostState(tmp_path)
    s.save_dns(first.export())
    s.close()
    s = HostState(tmp_path)
    second = Resolver(lookup=lookup)
    second.load(s.dns())
    s.close()
    assert asyncio.run(resolve_all(second)) == [("93.184.216.34",), ()]
    assert calls == ["www.example.test", "gone.test"]  # the second resolver asked no one


def test_a_dropped_connection_is_not_silently_retried() -> None:
    import socket as socketlib
    import threading

    seen: list[bytes] = []
    server = socketlib.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(5)
    port = server.getsockname()[1]

    def serve() -> None:
        for _ in range(2):  # a retry would be the second connection
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(2)
            seen.append(conn.recv(65536))
            conn.close()  # no response at all
            server.settimeout(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()

    async def go() -> FetchResult:
        c = AiohttpClient()
        try:
            return await c.fetch(FetchRequest(f"http://drop.test:{port}/", "127.0.0.1", timeout=3))
        finally:
            await c.close()

    res = asyncio.run(go())
    server.close()
    thread.join(6)
    assert res.status is None and res.error
    assert len(seen) == 1


def test_records_refused_upstream_pass_through_unfetched() -> None:
    table = {
        "http://a.test:80/robots.txt": (200, {}, b""),
        "http://a.test/ok": (200, {}, b"fine"),
    }
    blocked = {"url": "http://a.test/blocked", "outcome": "refused", "refused": "blocked",
               "detail": "operator block"}  # fmt: skip
    out, client, _ = run_engine([blocked, {"url": "http://a.test/ok"}], table)
    by_url = {r["url"]: r for r in out}
    assert len(out) == 2
    assert by_url["http://a.test/blocked"]["outcome"] == "refused"
    assert by_url["http://a.test/blocked"]["error"] == "operator block"
    assert "http://a.test/blocked" not in [url for url, _ in client.seen]
    assert by_url["http://a.test/ok"]["outcome"] == "fetched"


@pytest.mark.parametrize("offset", range(10))
def test_a_run_with_a_deadline_and_an_idle_refill_ends_whatever_the_clock_reads(
    offset: int,
) -> None:
    # The clock moves 1 ms per reading, so across these offsets the deadline falls
    # between every pair of readings in one turn of the loop. Once it fell between the
    # exit test and the wait, and the run waited forever for a wake-up (CI hung on it).
    ticks = itertools.count()

    def clock() -> float:
        return next(ticks) * 0.001

    fetcher = Fetcher(
        FetchConfig(duration=0.0305 + offset * 0.001),
        client=FakeClient({}),
        resolver=Resolver(hosts={}),
        netpolicy=NetPolicy(),
        clock=clock,
    )
    asked = 0

    async def refill() -> list[dict] | None:
        nonlocal asked
        asked += 1
        return []  # nothing now; ask again soon

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([], refill=refill)]

    out = asyncio.run(asyncio.wait_for(go(), timeout=20))
    assert out == []
    assert asked >= 1


def test_a_url_twice_in_a_batch_is_asked_once_and_again_once_answered() -> None:
    table = {
        "http://a.test:80/robots.txt": (200, {}, b""),
        "http://a.test/x": (200, {"Content-Type": "text/html"}, b"<p>x</p>"),
    }
    records = [{"url": "http://a.test/x", "n": n} for n in range(3)]
    out, client, _ = run_engine(records, table)
    assert sorted((r["n"], r["outcome"]) for r in out) == [
        (0, "fetched"), (1, "refused"), (2, "refused")
    ]  # fmt: skip
    assert all(r["refused"] == "duplicate" for r in out if r["outcome"] == "refused")
    assert [u for u, _ in client.seen].count("http://a.test/x") == 1
    # once answered, the URL may be fed again (a recrawl in a long crawl)
    client2 = FakeClient(table)
    resolver = Resolver(hosts={"a.test": ("8.8.8.8",)})
    fetcher = Fetcher(FetchConfig(min_delay=0.0), client=client2, resolver=resolver,
                      netpolicy=NetPolicy())  # fmt: skip
    fed = False

    async def refill() -> list[dict] | None:
        nonlocal fed
        if fed:
            return None
        if not fetcher.counts["fetched"]:
            return []  # not yet answered
        fed = True
        return [{"url": "http://a.test/x", "n": 9}]

    async def go() -> list[dict]:
        return [r async for r in fetcher.run([{"url": "http://a.test/x", "n": 8}], refill=refill)]

    again = asyncio.run(go())
    assert [r["outcome"] for r in again] == ["fetched", "fetched"]
    assert [u for u, _ in client2.seen].count("http://a.test/x") == 2


class CutRobotsServer:
    """A loopback HTTP server whose robots.txt promises 200 bytes (the full file
    disallows /private/), sends ``User-agent: *`` and then resets the connection
    (``how="reset"``) or goes silent (``how="stall"``). Pages answer 200. ``paths``
    is the server's request log, in arrival order."""

    FULL = b"User-agent: *\nDisallow: /private/\n"

    def __init__(self, how: str) -> None:
        import socket as socketlib
        import threading

        self.how = how
        self.paths: list[str] = []
        self._stop = threading.Event()
        self._sock = socketlib.socket()
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.2)
        self.port = self._sock.getsockname()[1]
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        import threading

        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            t = threading.Thread(target=self._serve, args=(conn,), daemon=True)
            self._threads.append(t)
            t.start()

    def _serve(self, conn) -> None:
        import socket as socketlib
        import struct

        conn.settimeout(10)
        with conn:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            path = head.split(b" ", 2)[1].decode()
            self.paths.append(path)
            if path != "/robots.txt":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                         b"Content-Length: 200\r\n\r\nUser-agent: *\n")  # fmt: skip
            if self.how == "reset":  # RST instead of FIN: SO_LINGER with a zero timeout
                conn.setsockopt(socketlib.SOL_SOCKET, socketlib.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                self._stop.wait(10)  # silent until the client gives up (or the test ends)

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
        for t in self._threads:
            t.join(12)


@pytest.mark.parametrize("how", ["reset", "stall"])
def test_a_robots_txt_cut_off_mid_body_is_a_network_error(tmp_path: Path, how: str) -> None:
    """The cut file says only ``User-agent: *`` (no rules); used as complete, it would
    let /private/ through. A cut robots.txt disallows all and is retried later: the
    server sees no request but robots.txt."""
    from conftest import crawlkit

    server = CutRobotsServer(how)
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 cut.test\n")
        urls = [f"http://cut.test:{server.port}/private/page", f"http://cut.test:{server.port}/"]
        res = crawlkit(
            "fetch", "--state", str(tmp_path / "s"), "--hosts-file", str(hosts),
            "--allow-net", "127.0.0.1/32", "--timeout", "1s", "--min-delay", "0.05s",
            "--delay-factor", "1",
            input="".join(u + "\n" for u in urls).encode(),
        )  # fmt: skip
    finally:
        server.close()
    assert res.code == 0, res.stderr
    out = [json.loads(line) for line in res.lines]
    assert server.paths == ["/robots.txt"], server.paths
    assert sorted(r["url"] for r in out) == sorted(urls)
    for r in out:
        assert r["outcome"] == "deferred" and r["retry_at"], r
        assert "robots.txt unavailable" in r["error"], r


def test_urls_behind_an_unreachable_robots_txt_are_deferred_at_once(tmp_path: Path) -> None:
    """A robots.txt that times out (1 s) made the host's URLs wait its next turn, ten
    times that, before they were deferred; with --for 5s they came out deferred for
    the run's end instead, with the wrong reason. They are deferred when robots.txt
    fails, for robots.txt."""
    from conftest import crawlkit

    server = CutRobotsServer("stall")
    try:
        hosts = tmp_path / "hosts"
        hosts.write_text("127.0.0.1 cut.test\n")
        urls = [f"http://cut.test:{server.port}/a", f"http://cut.test:{server.port}/b"]
        res = crawlkit(
            "fetch", "--state", str(tmp_path / "s"), "--hosts-file", str(hosts),
            "--allow-net", "127.0.0.1/32", "--timeout", "1s", "--for", "5s",
            input="".join(u + "\n" for u in urls).encode(),
        )  # fmt: skip
    finally:
        server.close()
    assert res.code == 0, res.stderr
    out = [json.loads(line) for line in res.lines]
    assert server.paths == ["/robots.txt"]
    assert [r["outcome"] for r in out] == ["deferred", "deferred"]
    assert all("robots.txt unavailable" in r["error"] for r in out), out
