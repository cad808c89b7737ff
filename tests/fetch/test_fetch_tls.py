"""crawlkit fetch over HTTPS against crawlkit testweb --tls.

Certificates are verified for the URL's name while the connection goes to the checked
address; each TLS failure of the test web's tls-* hosts comes out as a record with its
error_code; --insecure fetches anyway and marks the record and the WARC capture.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import warcio.archiveiterator
from conftest import TestWeb, crawlkit, start_testweb

from crawlkit.fetch.hoststate import HostState
from crawlkit.testweb.tls import TLS_KINDS

pytest.importorskip("cryptography", reason="testweb --tls needs crawlkit[testweb]")

GAP = "0.05s"


@pytest.fixture(scope="module")
def web(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    tmp = tmp_path_factory.mktemp("tlsfetch")
    with start_testweb(
        tmp, "--hosts", "3", "--pages", "4", "--special", ",".join(TLS_KINDS), "--tls"
    ) as w:
        yield w


def fetch(web: TestWeb, state: Path, urls: list[str], *args: str, ca: bool = True) -> list[dict]:
    trust = ["--ca-file", web.info["ca_file"]] if ca else []
    batch = "".join(json.dumps({"url": u, "reason": "seed"}) + "\n" for u in urls)
    res = crawlkit(
        "fetch",
        "--state",
        str(state),
        "--hosts-file",
        str(web.hosts_file),
        "--allow-net",
        web.info["allow_net"],
        "--min-delay",
        GAP,
        "--timeout",
        "15s",
        # the gap after a request is 10x its time by default: 20 s after a stalled
        # handshake; the stall tests only need the first request
        "--delay-factor",
        "0",
        "--warc-dir",
        str(state / "warc"),
        *trust,
        *args,
        input=batch.encode(),
    )
    assert res.code == 0, res.stderr
    return [json.loads(line) for line in res.lines]


def warc_metadata(state: Path) -> dict[str, dict[str, str]]:
    """WARC metadata records' fields, by target URI."""
    out: dict[str, dict[str, str]] = {}
    for path in sorted((state / "warc" / "new").glob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in warcio.archiveiterator.ArchiveIterator(fh):
                if rec.rec_type == "metadata":
                    text = rec.content_stream().read().decode()
                    fields = dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)
                    out[rec.rec_headers.get_header("WARC-Target-URI")] = fields
    return out


def test_https_is_verified_for_the_name_on_the_checked_address(
    web: TestWeb, tmp_path: Path
) -> None:
    urls = [web.host("h0.test")["root"], web.host("h1.test")["pages"][-1]]
    mark = len(web.requests(settle=0))
    records = fetch(web, tmp_path / "s", urls)
    assert [r["outcome"] for r in records] == ["fetched", "fetched"]
    assert all(r["status"] == 200 and "error_code" not in r for r in records)
    served = web.requests()[mark:]
    # every request arrived over TLS on the address of the host it named (the server
    # answers 421 to a Host it does not serve on that address)
    assert served and all(r["port"] == web.info["tls_port"] for r in served)
    assert all(r["addr"] == web.hosts[r["host"]] and r["status"] == 200 for r in served)
    # without --ca-file only the system store is trusted: the run's CA is not in it
    untrusted = fetch(web, tmp_path / "s2", urls[:1], ca=False)
    assert untrusted[0]["outcome"] == "deferred"
    assert untrusted[0]["error_code"] == "tls-untrusted"


@pytest.mark.parametrize(
    ("host", "code"),
    [
        ("tls-expired-0.test", "tls-expired"),
        ("tls-wrong-name-0.test", "tls-hostname"),
        ("tls-self-signed-0.test", "tls-untrusted"),
        ("tls-stall-0.test", "tls-handshake-timeout"),
        ("tls-1-0-0.test", "tls-protocol"),
    ],
)
def test_tls_failures_are_records_with_a_reason(
    web: TestWeb, tmp_path: Path, host: str, code: str
) -> None:
    root = f"https://{host}:{web.info['tls_port']}/"
    state = tmp_path / "s"
    mark = len(web.requests(settle=0))
    stall = ["--timeout", "2s"] if code == "tls-handshake-timeout" else []  # the last wins
    records = fetch(web, state, [root, root + "a.html"], *stall)
    # robots.txt comes first and fails: the host's URLs wait (RFC 9309: unreachable
    # robots.txt means disallow all, retry later), each saying why
    assert len(records) == 2
    for rec in records:
        assert rec["outcome"] == "deferred" and rec["retry_at"]
        assert rec.get("error_code") == code, rec["error"]
        assert code in rec["error"]
    assert not [r for r in web.requests()[mark:] if r["host"] == host]  # no HTTP exchanged
    # the host's clock moved on as after any error: it is on disk with a next time
    saved = HostState(state / "fetch").host(f"{host}:{web.info['tls_port']}")
    assert saved is not None and saved.next_allowed > 0 and saved.inflight_since is None


@pytest.mark.parametrize(
    ("host", "code"),
    [
        ("tls-expired-0.test", "tls-expired"),
        ("tls-wrong-name-0.test", "tls-hostname"),
        ("tls-self-signed-0.test", "tls-untrusted"),
        ("tls-1-0-0.test", "tls-protocol"),
    ],
)
def test_insecure_fetches_anyway_and_marks_record_and_warc(
    web: TestWeb, tmp_path: Path, host: str, code: str
) -> None:
    root = f"https://{host}:{web.info['tls_port']}/"
    state = tmp_path / "s"
    mark = len(web.requests(settle=0))
    records = fetch(web, state, [root, root + "a.html"], "--insecure")
    assert [r["outcome"] for r in records] == ["fetched", "fetched"]
    assert all(r["tls_unverified"] == code and r["status"] == 200 for r in records)
    served = [r for r in web.requests()[mark:] if r["host"] == host]
    assert sorted(r["path"] for r in served) == ["/", "/a.html", "/robots.txt"]
    meta = warc_metadata(state)
    assert meta[root]["tlsUnverified"] == code
    assert meta[root + "robots.txt"]["tlsUnverified"] == code


def test_insecure_does_not_hide_a_stalled_handshake(web: TestWeb, tmp_path: Path) -> None:
    root = f"https://tls-stall-0.test:{web.info['tls_port']}/"
    records = fetch(web, tmp_path / "s", [root], "--insecure", "--timeout", "2s")
    assert records[0]["error_code"] == "tls-handshake-timeout"
    assert "tls_unverified" not in records[0]


def test_http_to_https_redirect_and_cross_scheme_chain(web: TestWeb, tmp_path: Path) -> None:
    upgrade = web.host("tls-upgrade-0.test")["notes"]["upgrade"]
    http_url, https_url = next(iter(upgrade.items()))
    rec = fetch(web, tmp_path / "s", [http_url])[0]
    assert (rec["outcome"], rec["location"]) == ("redirect", https_url)
    chain = web.host("tls-mixed-0.test")["notes"]["chain"]
    got = []
    for hop in chain:
        rec = fetch(web, tmp_path / "s2", [hop])[0]
        got.append((rec["status"], rec["location"]))
    assert got == [(302, chain[1]), (301, chain[2]), (200, None)]


def test_bad_ca_file_is_a_usage_error(web: TestWeb, tmp_path: Path) -> None:
    bad = tmp_path / "nope.pem"
    bad.write_text("not a certificate\n")
    res = crawlkit(
        "fetch", "--state", str(tmp_path / "s"), "--ca-file", str(bad), input=b"https://h0.test/\n"
    )
    assert res.code == 2
    assert res.stderr.startswith(f"crawlkit fetch: --ca-file {bad}:")
