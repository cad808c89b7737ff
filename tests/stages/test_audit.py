"""crawlkit audit: it flags a rude client and passes a polite one (real HTTP, testweb)."""

from __future__ import annotations

import http.client
import json
import threading
import time

import pytest
from conftest import start_testweb

from crawlkit.robots import RobotsTxt
from crawlkit.stages.audit import AuditConfig, Event, HostRules, audit, rules_from_manifest
from crawlkit.testweb.special_robots import ROBOTS_RULES_PAGES

MIN_GAP = 0.05
MIN_BACKOFF = 0.3
# The client adds this to every wait: its clock starts after it read the response, the
# server's when it wrote it, and a loaded machine can delay either by milliseconds.
MARGIN = 0.03
UA = "crawlkit/0.1 (+test)"
WEB_ARGS = (
    "--hosts",
    "2",
    "--pages",
    "4",
    "--special",
    "none,robots-rules,status-429,slow",
    "--crawl-delay",
    "0.15s",
    "--retry-after",
    "1s",
    "--slow-delay",
    "0.3s",
)


class Client:
    """One keep-alive connection per host, to the address the hosts file names."""

    def __init__(self, web):
        self.web = web
        self.conns: dict[str, http.client.HTTPConnection] = {}

    def get(self, host: str, path: str) -> tuple[int, dict[str, str], float, bytes]:
        conn = self.conns.get(host)
        if conn is None:
            conn = http.client.HTTPConnection(self.web.hosts[host], self.web.port, timeout=10)
            self.conns[host] = conn
        t0 = time.monotonic()
        conn.request("GET", path, headers={"Host": f"{host}:{self.web.port}", "User-Agent": UA})
        resp = conn.getresponse()
        body = resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, headers, time.monotonic() - t0, body

    def close(self) -> None:
        for conn in self.conns.values():
            conn.close()


def polite_crawl(web) -> int:
    """robots.txt first, robots obeyed, one connection, gaps of max(min, 10x, delay),
    Retry-After and the backoff honoured. Returns the number of pages fetched."""
    client = Client(web)
    fetched = 0
    try:
        for name in ("h0.test", "robots-rules-0.test", "status-429-0.test"):
            host = web.host(name)
            status, _, elapsed, body = client.get(name, "/robots.txt")
            robots = RobotsTxt.parse(body) if status == 200 else RobotsTxt.allow_all()
            delay = robots.crawl_delay("crawlkit") or 0.0
            wait = max(MIN_GAP, 10 * elapsed, delay) + MARGIN
            queue = [u.split(str(web.port), 1)[1] for u in host["pages"]]
            backoff = MIN_BACKOFF
            while queue:
                time.sleep(wait)
                path = queue[0]
                if not robots.check("crawlkit", path).allowed:
                    queue.pop(0)
                    continue
                status, headers, elapsed, _ = client.get(name, path)
                wait = max(MIN_GAP, 10 * elapsed, delay) + MARGIN
                if status in (429, 503):
                    retry = headers.get("retry-after", "0")
                    wait = max(wait, backoff, float(retry) if retry.isdigit() else 2.0) + MARGIN
                    backoff *= 2
                    continue
                backoff = MIN_BACKOFF
                queue.pop(0)
                fetched += 1
            time.sleep(wait)  # the next host may share nothing, but be safe for per-IP
    finally:
        client.close()
    return fetched


def rude_crawl(web) -> None:
    """Everything the audit must catch."""
    client = Client(web)
    try:
        # No robots.txt, and a request inside the gap (back to back).
        client.get("h0.test", "/")
        client.get("h0.test", "/")
        # A disallowed path (robots fetched first, then ignored).
        client.get("robots-rules-0.test", "/robots.txt")
        time.sleep(0.2)
        client.get("robots-rules-0.test", "/private/secret.html")
        # Ignoring Retry-After: hammer the rate-limited host.
        client.get("status-429-0.test", "/robots.txt")
        for path in ("/p1.html", "/p2.html", "/p3.html"):
            time.sleep(0.06)
            client.get("status-429-0.test", path)
        # Two connections to one host at once (the slow host holds each for 0.3 s).
        client.get("slow-0.test", "/robots.txt")
        time.sleep(0.1)

        def fetch_alone(path: str) -> None:
            other = Client(web)
            try:
                other.get("slow-0.test", path)
            finally:
                other.close()

        threads = [
            threading.Thread(target=fetch_alone, args=(p,)) for p in ("/p1.html", "/p2.html")
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
    finally:
        client.close()


def run_audit_cli(cli, web, *extra):
    return cli(
        "audit",
        "--server-log",
        str(web.log_path),
        "--min-gap",
        f"{MIN_GAP}s",
        "--min-backoff",
        f"{MIN_BACKOFF}s",
        *extra,
    )


def test_polite_client_passes(cli, tmp_path):
    with start_testweb(tmp_path, *WEB_ARGS) as web:
        fetched = polite_crawl(web)
        web.flush()
        result = run_audit_cli(cli, web, "--json")
    report = json.loads(result.stdout)
    assert fetched >= 8
    assert result.code == 0, report["violations"]
    assert report["ok"] and report["requests"] > fetched
    rules = report["hosts"]["robots-rules-0.test"]
    assert rules["crawl_delay_s"] == 0.15 and rules["disallowed"] == 0 and rules["robots_rules"]
    throttled = report["hosts"]["status-429-0.test"]
    assert throttled["retry_after"] == 0 and throttled["backoff"] == 0
    assert report["hosts"]["h0.test"]["min_gap"] >= MIN_GAP


def test_rude_client_is_flagged(cli, tmp_path):
    with start_testweb(tmp_path, *WEB_ARGS) as web:
        rude_crawl(web)
        web.flush()
        result = run_audit_cli(cli, web, "--json")
        table = run_audit_cli(cli, web)
    report = json.loads(result.stdout)
    assert result.code == 1 and not report["ok"]
    found = {(v.get("host") or v.get("addr"), v["check"]) for v in report["violations"]}
    assert ("h0.test", "robots_first") in found
    assert ("h0.test", "gap") in found
    assert ("robots-rules-0.test", "disallowed") in found
    assert ("status-429-0.test", "retry_after") in found
    assert ("status-429-0.test", "backoff") in found
    assert ("slow-0.test", "conns") in found
    assert ("slow-0.test", "open_conns") in found
    assert report["hosts"]["slow-0.test"]["max_conns"] == 2
    assert table.code == 1 and "VIOLATION disallowed robots-rules-0.test" in table.text
    assert "/private/secret.html" in table.text


# -- the checks one at a time, on synthetic events ---------------------------------------
def ev(host, path, t0, t1, conn=1, status=200, addr="127.1.0.1", **kw):
    return Event(
        host=host,
        addr=addr,
        path=path,
        t_start=t0,
        t_end=t1,
        status=status,
        conn=conn,
        agent="crawlkit",
        **kw,
    )


def checks(report):
    return {(v.get("host") or v.get("addr"), v["check"]) for v in report["violations"]}


def test_gap_and_crawl_delay():
    rules = {"a.test": HostRules(RobotsTxt.parse(b"User-agent: *\nCrawl-delay: 2\n"), 200)}
    events = [
        ev("a.test", "/robots.txt", 0, 0.1),
        ev("a.test", "/x", 2.2, 2.3),
        ev("a.test", "/y", 3.3, 3.4),
    ]
    report = audit(events, rules, AuditConfig(min_gap=1.0))
    assert checks(report) == {("a.test", "crawl_delay")}
    assert report["hosts"]["a.test"]["crawl_delay_s"] == 2
    report = audit(events, None, AuditConfig(min_gap=1.0))
    assert report["ok"]  # without the rules there is no Crawl-delay to break
    report = audit(events, None, AuditConfig(min_gap=1.5))
    assert checks(report) == {("a.test", "gap")}


def test_backoff_doubles_and_retry_after_is_honoured():
    events = [
        ev("a.test", "/robots.txt", 0, 0),
        ev("a.test", "/1", 1, 1, status=429),
        ev("a.test", "/2", 12, 12, status=429),
        ev("a.test", "/3", 31, 31),
    ]
    cfg = AuditConfig(min_gap=0.5, min_backoff=10, adaptive_factor=0)
    # 11 s after the first 429 is fine (10 s), 19 s after the second is not (20 s).
    assert checks(audit(events, None, cfg)) == {("a.test", "backoff")}
    events = [
        ev("a.test", "/robots.txt", 0, 0),
        ev("a.test", "/1", 1, 1, status=503, retry_until=30.0),
        ev("a.test", "/2", 20, 20),
    ]
    found = checks(audit(events, None, cfg))
    assert found == {("a.test", "backoff"), ("a.test", "retry_after")}


def test_connections_per_host_and_per_ip():
    events = [
        ev("a.test", "/robots.txt", 0, 0.1, conn=1),
        ev("b.test", "/robots.txt", 0, 0.1, conn=2),
        ev("c.test", "/robots.txt", 0.05, 0.2, conn=3),
    ]
    found = checks(audit(events, None, AuditConfig(min_gap=0.01, per_ip=2)))
    assert found == {("127.1.0.1", "ip_conns")}
    assert audit(events, None, AuditConfig(min_gap=0.01, per_ip=3))["ok"]
    events = [ev("a.test", "/robots.txt", 0, 0.1, conn=1), ev("a.test", "/x", 0.05, 0.2, conn=2)]
    found = checks(audit(events, None, AuditConfig(min_gap=0.01, per_ip=5)))
    assert ("a.test", "conns") in found


def test_two_keep_alive_connections_used_in_turn():
    """No two requests overlap, yet two connections were open at once."""
    events = [
        ev("a.test", "/robots.txt", 0, 0.1, conn=1, conn_opened=0.0),
        ev("a.test", "/x", 2, 2.1, conn=2, conn_opened=1.9),
        ev("a.test", "/y", 4, 4.1, conn=1, conn_opened=0.0),
    ]
    report = audit(events, None, AuditConfig(min_gap=1))
    assert checks(report) == {("a.test", "open_conns")}
    assert report["hosts"]["a.test"]["max_conns"] == 1
    assert report["hosts"]["a.test"]["max_open_conns"] == 2
    # One connection after the other (the first never used again) is fine.
    events[2] = ev("a.test", "/y", 4, 4.1, conn=3, conn_opened=3.9)
    assert audit(events, None, AuditConfig(min_gap=1))["ok"]


def test_robots_unavailable_and_trap_depth():
    events = [ev("a.test", "/robots.txt", 0, 0, status=503), ev("a.test", "/x", 100, 100)]
    found = checks(audit(events, None, AuditConfig(min_gap=1, min_backoff=1)))
    assert found == {("a.test", "robots_unavailable")}
    events = [ev("t.test", "/robots.txt", 0, 0)] + [
        ev("t.test", f"/c/{i}", 2 * i, 2 * i, depth=i) for i in range(1, 6)
    ]
    assert audit(events, None, AuditConfig())["hosts"]["t.test"]["max_depth"] == 5
    assert checks(audit(events, None, AuditConfig(max_trap_depth=3))) == {("t.test", "trap_depth")}


def test_duplicates_and_hostile_bytes_are_warnings():
    bomb = {"special": "gzip-bomb", "hostile": True, "bytes": 65000}
    events = [
        ev("g.test", "/robots.txt", 0, 0, special="gzip-bomb"),
        ev("g.test", "/bomb.html", 2, 2, **bomb),
        ev("g.test", "/bomb.html", 4, 4, **bomb),
    ]
    report = audit(events, None, AuditConfig())
    assert report["ok"]
    warned = {(w["host"], w["check"]) for w in report["warnings"]}
    assert warned == {("g.test", "duplicates"), ("g.test", "hostile_bytes")}
    assert report["hosts"]["g.test"]["hostile_bytes"] == 130000


def test_rules_from_manifest_cover_status_and_redirects(testweb):
    rules = rules_from_manifest(testweb.manifest)
    rr = rules["robots-rules-0.test"].robots
    assert rr is not None
    for path, ok, star in ROBOTS_RULES_PAGES:
        assert rr.check("crawlkit", path).allowed is ok, path
        assert rr.check("somebot", path).allowed is star, path
    assert not rules["robots-503-0.test"].robots.check("crawlkit", "/a.html").allowed
    assert rules["robots-404-0.test"].robots.check("crawlkit", "/a.html").allowed
    assert not rules["robots-redirect-0.test"].robots.check("crawlkit", "/blocked/x.html").allowed
    assert not rules["robots-big-0.test"].robots.check("crawlkit", "/deep-rule/x.html").allowed


def test_fetch_log_mode(cli, tmp_path):
    recs = [
        {
            "url": "http://a.test:1/robots.txt",
            "fetched_at": "2026-11-30T07:00:00.000Z",
            "elapsed_ms": 10,
            "ip": "127.1.0.1",
            "status": 200,
        },
        {
            "url": "http://a.test:1/x",
            "fetched_at": "2026-11-30T07:00:00.100Z",
            "elapsed_ms": 10,
            "ip": "127.1.0.1",
            "status": 200,
        },
        {"url": "http://a.test:1/y", "outcome": "deferred", "fetched_at": None},
    ]
    log = tmp_path / "fetched.ndjson"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    bad = cli("audit", "--fetch-log", str(log), "--min-gap", "1s", "--json")
    assert bad.code == 1
    assert {v["check"] for v in json.loads(bad.stdout)["violations"]} == {"gap"}
    good = cli("audit", "--fetch-log", str(log), "--min-gap", "0.05s")
    assert good.code == 0, good.text
    assert "2 requests audited; ok" in good.text


def test_audit_needs_a_log(cli):
    r = cli("audit")
    assert r.code == 2


@pytest.mark.parametrize("flag", ["--json", None])
def test_audit_of_empty_log_is_ok(cli, tmp_path, flag):
    log = tmp_path / "requests.ndjson"
    log.write_text("")
    r = cli("audit", "--server-log", str(log), *([flag] if flag else []))
    assert r.code == 0


def test_fetch_log_without_robots_records_and_default_agent(cli, tmp_path, testweb):
    """A fetch log has no robots.txt lines and no User-Agent: robots-first is not judged
    and robots.txt is matched for the token "crawlkit" (not the "*" group)."""
    rules = testweb.host("robots-rules-0.test")
    allowed_for_crawlkit_only = rules["root"] + "private/public-info.html"
    disallowed = rules["root"] + "private/secret.html"
    recs = [
        {
            "url": allowed_for_crawlkit_only,
            "fetched_at": "2026-11-30T07:00:00.000Z",
            "elapsed_ms": 5,
            "ip": rules["addr"],
            "status": 200,
            "outcome": "fetched",
        },
        {
            "url": rules["root"] + "nostar/page.html",
            "fetched_at": "2026-11-30T07:00:02.000Z",
            "elapsed_ms": 5,
            "ip": rules["addr"],
            "status": 200,
            "outcome": "fetched",
        },
    ]
    log = tmp_path / "fetched.ndjson"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    args = (
        "audit",
        "--fetch-log",
        str(log),
        "--manifest",
        str(testweb.manifest_path),
        "--min-gap",
        "0.5s",
        "--json",
    )
    ok = cli(*args)
    report = json.loads(ok.stdout)
    assert ok.code == 0, report["violations"]
    assert report["hosts"]["robots-rules-0.test"]["robots_first_checked"] is False
    recs.append(
        {
            "url": disallowed,
            "fetched_at": "2026-11-30T07:00:04.000Z",
            "elapsed_ms": 5,
            "ip": rules["addr"],
            "status": 200,
        }
    )
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    bad = cli(*args)
    assert bad.code == 1
    assert [v["check"] for v in json.loads(bad.stdout)["violations"]] == ["disallowed"]


def test_starts_to_one_address_closer_than_the_per_ip_gap():
    # two hosts of one address, one after the other, their requests 0.039 s apart at
    # the start (a helper's log, --per-ip-delay 0.25s): ok without --per-ip-gap
    events = [
        ev("h9.test", "/robots.txt", 0.0, 0.01, conn=1),
        ev("h10.test", "/robots.txt", 0.3, 0.31, conn=2),
        ev("h9.test", "/", 1.529, 1.540, conn=3),
        ev("h10.test", "/", 1.568, 1.580, conn=4),
    ]
    assert audit(events, None, AuditConfig(min_gap=0.01))["ok"]
    report = audit(events, None, AuditConfig(min_gap=0.01, per_ip_gap=0.25))
    assert checks(report) == {("127.1.0.1", "ip_gap")}
    assert report["addresses"]["127.1.0.1"]["min_start_gap"] == 0.039
    assert audit(events, None, AuditConfig(min_gap=0.01, per_ip_gap=0.03))["ok"]


def test_an_ipv4_mapped_address_is_audited_as_its_ipv4_address(cli, tmp_path):
    """Two hosts of one server, reached as ::ffff:127.0.0.1 and as 127.0.0.1 at once,
    are two connections to one address (fetch --per-ip counts them so)."""
    recs = [
        {
            "url": f"http://{host}.test:1/",
            "fetched_at": "2026-11-30T07:00:00.000Z",
            "elapsed_ms": 500,
            "ip": ip,
            "status": 200,
        }
        for host, ip in (("a", "::ffff:7f00:1"), ("b", "127.0.0.1"))
    ]
    log = tmp_path / "fetched.ndjson"
    log.write_text("".join(json.dumps(r) + "\n" for r in recs))
    res = cli("audit", "--fetch-log", str(log), "--per-ip", "1", "--min-gap", "0s", "--json")
    report = json.loads(res.stdout)
    assert list(report["addresses"]) == ["127.0.0.1"]
    assert report["addresses"]["127.0.0.1"]["max_conns"] == 2
    assert res.code == 1 and {v["check"] for v in report["violations"]} == {"ip_conns"}
