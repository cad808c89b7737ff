"""crawlkit testweb --tls: every host over HTTPS with a CA made for the run, and the
TLS special hosts, checked with Python's own ssl client (not crawlkit's)."""

from __future__ import annotations

import http.client
import socket
import ssl
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TestWeb, crawlkit, start_testweb

from crawlkit.testweb.tls import TLS_KINDS

pytest.importorskip("cryptography", reason="testweb --tls needs crawlkit[testweb]")


@pytest.fixture(scope="module")
def tlsweb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestWeb]:
    tmp = tmp_path_factory.mktemp("tlsweb")
    special = "slow," + ",".join(TLS_KINDS)  # every TLS kind, and a delayed host
    args = ("--hosts", "2", "--pages", "6", "--special", special, "--tls", "--slow-delay", "0.2s")
    with start_testweb(tmp, *args) as web:
        yield web


def _verifying(ca: Path) -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.load_verify_locations(ca)
    return ctx


def _handshake(
    web: TestWeb, name: str, ctx: ssl.SSLContext, timeout: float = 10.0
) -> ssl.SSLSocket:
    raw = socket.create_connection((web.hosts[name], web.info["tls_port"]), timeout=timeout)
    try:
        return ctx.wrap_socket(raw, server_hostname=name)
    except BaseException:
        raw.close()
        raise


def _get(web: TestWeb, name: str, path: str, *, tls: bool) -> tuple[int, dict[str, str], bytes]:
    port = web.info["tls_port"] if tls else web.port
    if tls:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            name, port, context=_verifying(Path(web.info["ca_file"])), timeout=10
        )
        conn.sock = _handshake(web, name, _verifying(Path(web.info["ca_file"])))
    else:
        conn = http.client.HTTPConnection(web.hosts[name], port, timeout=10)
    try:
        conn.request("GET", path, headers={"Host": f"{name}:{port}"})
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def test_every_host_over_https_with_the_run_ca(tlsweb: TestWeb) -> None:
    ca = Path(tlsweb.info["ca_file"])
    assert ca == tlsweb.dir / "ca.pem" and b"BEGIN CERTIFICATE" in ca.read_bytes()
    tls_port = tlsweb.info["tls_port"]
    assert tls_port != tlsweb.port and tlsweb.manifest["tls_port"] == tls_port
    seeds = tlsweb.seeds.read_text().split()
    assert seeds and all(s.startswith("https://") and f":{tls_port}/" in s for s in seeds)
    for name in ("h0.test", "h1.test", "tls-upgrade-0.test"):
        with _handshake(tlsweb, name, _verifying(ca)) as sock:
            assert sock.getpeercert()["subject"] == ((("commonName", name),),)
    status, _, body = _get(tlsweb, "h0.test", "/", tls=True)
    assert status == 200 and f"https://h1.test:{tls_port}/".encode() in body
    assert b"http://" not in body  # the web links over https only
    # the same page over plain HTTP still works, and the request log tells them apart
    assert _get(tlsweb, "h0.test", "/", tls=False)[0] == 200
    ports = {r["port"] for r in tlsweb.requests() if r["host"] == "h0.test"}
    assert ports == {tls_port, tlsweb.port}


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("tls-expired-0.test", 10),  # X509_V_ERR_CERT_HAS_EXPIRED
        ("tls-wrong-name-0.test", 62),  # X509_V_ERR_HOSTNAME_MISMATCH
        ("tls-self-signed-0.test", 18),  # X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT
    ],
)
def test_certificate_failures(tlsweb: TestWeb, name: str, code: int) -> None:
    with pytest.raises(ssl.SSLCertVerificationError) as info:
        _handshake(tlsweb, name, _verifying(Path(tlsweb.info["ca_file"])))
    assert info.value.verify_code == code
    # over plain HTTP the host serves its site
    assert _get(tlsweb, name, "/", tls=False)[0] == 200
    entry = tlsweb.host(name)
    assert entry["pages"] == [] and entry["notes"]["tls"]


def test_handshake_stall(tlsweb: TestWeb) -> None:
    # The stalled host accepts TCP and reads the ClientHello but never answers; the
    # socket timeout is the only way out (nothing is timed: it never answers at all).
    with pytest.raises((TimeoutError, socket.timeout)):
        _handshake(tlsweb, "tls-stall-0.test", _verifying(Path(tlsweb.info["ca_file"])), 1.0)
    assert tlsweb.host("tls-stall-0.test")["notes"]["tls"] == "tls-handshake-timeout"


def test_tls_1_0_only(tlsweb: TestWeb) -> None:
    ca = Path(tlsweb.info["ca_file"])
    with pytest.raises(ssl.SSLError):
        _handshake(tlsweb, "tls-1-0-0.test", _verifying(ca))  # TLS 1.2+ by default
    legacy = _verifying(ca)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        legacy.minimum_version = ssl.TLSVersion.TLSv1
    legacy.set_ciphers("DEFAULT:@SECLEVEL=0")
    served = tlsweb.info["tls_legacy"]
    with _handshake(tlsweb, "tls-1-0-0.test", legacy) as sock:
        assert sock.version() == served.split()[0].replace("TLSv1.0", "TLSv1")


def test_http_to_https_redirect(tlsweb: TestWeb) -> None:
    status, headers, _ = _get(tlsweb, "tls-upgrade-0.test", "/a.html", tls=False)
    tls_port = tlsweb.info["tls_port"]
    assert status == 301
    assert headers["location"] == f"https://tls-upgrade-0.test:{tls_port}/a.html"
    assert _get(tlsweb, "tls-upgrade-0.test", "/a.html", tls=True)[0] == 200


def test_cross_scheme_chain(tlsweb: TestWeb) -> None:
    chain = tlsweb.host("tls-mixed-0.test")["notes"]["chain"]
    status, headers, _ = _get(tlsweb, "tls-mixed-0.test", "/chain/0", tls=True)
    assert (status, headers["location"]) == (302, chain[1])
    assert chain[1].startswith("http://")
    status, headers, _ = _get(tlsweb, "tls-mixed-0.test", "/chain/1", tls=False)
    assert (status, headers["location"]) == (301, chain[2])
    assert _get(tlsweb, "tls-mixed-0.test", "/final.html", tls=True)[0] == 200


def test_tls_kinds_need_tls(tmp_path: Path) -> None:
    res = crawlkit("testweb", "--dir", str(tmp_path), "--special", "tls-expired", "--for", "1s")
    assert res.code == 2
    assert "crawlkit testweb: special kind 'tls-expired' needs --tls" in res.stderr


def test_a_delayed_tls_response_is_logged_when_sent(tlsweb: TestWeb) -> None:
    # A delayed response over TLS must be logged once it is sent, not when the next
    # request comes on its connection (a TLS transport pauses writing at size >= the
    # high-water mark, so the server's setting differs for TLS). Seen with aiohttp's
    # client (crawlkit's), not with http.client, and on some connections only: eight
    # connections, each request logged while its connection is still open.
    import asyncio
    import time

    from crawlkit.fetch.client import AiohttpClient, FetchRequest

    url = f"https://slow-0.test:{tlsweb.info['tls_port']}/"

    def logged() -> list[dict]:
        return [r for r in tlsweb.requests(settle=0) if r["host"] == "slow-0.test"]

    async def one(i: int) -> tuple[float, dict]:
        client = AiohttpClient(ca_file=tlsweb.info["ca_file"])
        try:
            res = await client.fetch(FetchRequest(url, tlsweb.hosts["slow-0.test"]))
            assert res.status == 200, res.error
            received = time.time()
            deadline = time.monotonic() + 5
            while len(logged()) <= i and time.monotonic() < deadline:
                await asyncio.sleep(0.02)  # the connection stays open meanwhile
            lines = logged()
            assert len(lines) > i, f"request {i} not logged while its connection is open"
            return received, lines[i]
        finally:
            await client.close()

    before = len(logged())
    for i in range(8):
        received, line = asyncio.run(one(before + i))
        assert not line.get("aborted")
        assert line["t_end"] - line["t_start"] >= 0.2 and line["t_end"] <= received + 1.0


def test_demo_over_https(tmp_path: Path) -> None:
    res = crawlkit(
        "demo",
        "--tls",
        "--hosts",
        "2",
        "--pages",
        "3",
        "--for",
        "6s",
        "--dir",
        str(tmp_path / "d"),
        timeout=120,
    )
    assert res.code == 0, res.stderr
    assert "ok: no violations" in res.text
    seeds = (tmp_path / "d" / "web" / "seeds.txt").read_text().split()
    assert seeds and all(s.startswith("https://") for s in seeds)
    assert (tmp_path / "d" / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_special_all_includes_the_tls_kinds_only_with_tls(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "1", "--special", "all,-tls-stall", "--tls") as web:
        kinds = {h["kind"] for h in web.manifest["hosts"]}
    assert set(TLS_KINDS) - {"tls-stall"} <= kinds and "tls-stall" not in kinds
    with start_testweb(tmp_path, "--hosts", "1", "--special", "none", "--tls") as web:
        assert {h["kind"] for h in web.manifest["hosts"]} == {"ordinary"}
    with start_testweb(tmp_path, "--hosts", "1") as web:
        assert not {h["kind"] for h in web.manifest["hosts"]} & set(TLS_KINDS)
