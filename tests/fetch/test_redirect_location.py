"""Redirects resolved as browsers resolve them, and hosts by the name a lookup asks for.

A ``Location`` was joined with Python's ``urljoin``: ``\\target`` became ``/r/\\target``
(a browser asks ``/target``), and ``http://[google.com]/`` raised, which ended the
fetch and every rerun of a crawl that met it. An internationalized host was never
fetched: its checked address was kept under the Unicode name, not the punycode one
aiohttp looks up.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from conftest import RAW, crawl_loopback, crawlkit, fetch_loopback, serve_routes

from crawlkit import streams
from crawlkit.fetch.outcome import SELF_REDIRECT


def _redirect(location: str) -> tuple[str, bytes]:
    head = f"HTTP/1.1 301 Moved\r\nLocation: {location}\r\nContent-Length: 0\r\n"
    return RAW, (head + "Connection: close\r\n\r\n").encode()


def _records(state: Path) -> list[dict]:
    return list(streams.read_records([str(state / "fetch-log.ndjson")]))


@pytest.mark.parametrize(
    ("location", "asked"),
    [
        ("\\target", "/target"),  # "\" is "/" in http(s)
        ("/\\127.0.0.1:{port}/target", "/target"),  # and "//" starts an authority
        ("///127.0.0.1:{port}/target", "/target"),
        ("/tar\tget", "/target"),  # a tab inside is dropped
    ],
)
def test_location_resolved_by_whatwg(tmp_path: Path, location: str, asked: str) -> None:
    routes = {"/r/a": ("", b""), "/target": ("text/html", b"here")}
    with serve_routes(routes) as (root, log):
        port = root.rsplit(":", 1)[1]
        routes["/r/a"] = _redirect(location.format(port=port))
        result = crawl_loopback(f"{root}/r/a", tmp_path / "s", "--scope", "any", "--for", "20s")
    assert result.code == 0, result.stderr
    assert log.count(asked) == 1, log


def test_a_location_that_is_no_url_is_an_error_record(tmp_path: Path) -> None:
    routes = {"/bad": _redirect("http://[google.com]/"), "/fine": ("text/html", b"ok")}
    with serve_routes(routes) as (root, log):
        result = fetch_loopback(
            tmp_path / "s",
            [f"{root}/bad", f"{root}/fine"],
            "--log",
            str(tmp_path / "s" / "fetch-log.ndjson"),
        )
    assert result.code == 0, result.stderr
    by_url = {r["url"].rsplit("/", 1)[1]: r for r in _records(tmp_path / "s")}
    assert by_url["bad"]["status"] == 301
    assert by_url["bad"]["error"] == "redirect target refused: not a URL"
    assert by_url["fine"]["status"] == 200
    assert "/fine" in log


def test_a_robots_redirect_to_no_url_defers_the_host(tmp_path: Path) -> None:
    routes = {"/robots.txt": _redirect("http://[::1.2.3.]/"), "/page": ("text/html", b"x")}
    with serve_routes(routes) as (root, log):
        result = fetch_loopback(
            tmp_path / "s", [f"{root}/page"], "--log", str(tmp_path / "s" / "fetch-log.ndjson")
        )
    assert result.code == 0, result.stderr
    assert log == ["/robots.txt"]  # unavailable: nothing else asked (RFC 9309 2.3.1.4)
    assert "robots.txt redirect" in _records(tmp_path / "s")[0]["error"]


def test_an_internationalized_host_is_fetched(tmp_path: Path) -> None:
    hosts = tmp_path / "hosts"
    hosts.write_text("127.0.0.1 xn--bcher-kva.test\n")
    with serve_routes({"/": ("text/html", b"<title>hi</title>")}) as (root, log):
        port = root.rsplit(":", 1)[1]
        result = crawl_loopback(
            f"http://bücher.test:{port}/",
            tmp_path / "s",
            "--hosts-file",
            str(hosts),
            "--for",
            "20s",
        )
    assert result.code == 0, result.stderr
    assert log == ["/robots.txt", "/"]


def test_a_redirect_chain_past_the_hop_limit_is_counted_and_reported(tmp_path: Path) -> None:
    # /r0 -> /r1 -> ... -> /r7: the fetcher stops after 5 hops. The summary's errors
    # and the report's problems said nothing of it; the page was lost silently.
    routes = {f"/r{i}": _redirect(f"/r{i + 1}") for i in range(7)}
    routes["/r7"] = ("text/html", b"the end")
    with serve_routes(routes) as (root, log):
        result = crawl_loopback(f"{root}/r0", tmp_path / "s", "--for", "30s", "--json")
    assert result.code == 0, result.stderr
    assert "/r7" not in log and "/r6" not in log
    summary = orjson.loads(result.stdout)
    assert summary["errors"]["redirect limit reached"]["count"] == 1
    report = orjson.loads(crawlkit("report", "--state", str(tmp_path / "s")).stdout)
    assert (
        report["collection"]["problems"]["redirect: redirect limit reached (5 hops)"]["count"] == 1
    )


def test_a_redirect_to_the_url_itself_once_canonicalized_is_reported(tmp_path: Path) -> None:
    # A Java or PHP server that rewrites URLs with the session sends "/account" to
    # "/account;jsessionid=..." (or "?PHPSESSID=..."): canonical, that is "/account"
    # again, already fetched, so the target was dropped as seen and the page never
    # fetched, with nothing said. It is an error of the redirect now, in the summary,
    # the fetch log and the report.
    routes = {
        "/": ("text/html", b"<a href='/account'>a</a> <a href='/shop'>s</a>"),
        "/account": _redirect("/account;jsessionid=5F1C0A77D29B3E4F"),
        "/shop": _redirect("/shop?PHPSESSID=k8d2v0q1e7m3"),
    }
    with serve_routes(routes) as (root, log):
        result = crawl_loopback(f"{root}/", tmp_path / "s", "--for", "30s", "--json")
    assert result.code == 0, result.stderr
    assert log == ["/robots.txt", "/", "/account", "/shop"]
    summary = orjson.loads(result.stdout)
    assert summary["errors"]["redirect to the URL itself once canonicalized"]["count"] == 2
    logs = sorted((tmp_path / "s").glob("crawl/cycles/*/fetch.ndjson"))
    redirects = [r for r in streams.read_records(logs) if r["outcome"] == "redirect"]
    assert sorted(r["url"] for r in redirects) == [f"{root}/account", f"{root}/shop"]
    assert all(r["error"] == SELF_REDIRECT and r["location"] == r["url"] for r in redirects)
    report = orjson.loads(crawlkit("report", "--state", str(tmp_path / "s")).stdout)
    assert report["collection"]["problems"][f"redirect: {SELF_REDIRECT}"]["count"] == 2
