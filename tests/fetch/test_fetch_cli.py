"""``crawlkit fetch`` (cli/fetch.py, crawlkit.stages.fetch): bare URLs and records in,
bad lines reported, addresses refused without --allow-net."""

from __future__ import annotations

from pathlib import Path


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


def test_dot_segments_do_not_walk_past_robots_txt(tmp_path: Path) -> None:
    """``/x/../private/`` is ``/private/`` to a server: a URL given with dot segments
    (plain or ``%2e``) is judged by the path it names. Before, robots.txt was
    matched against the raw path and the fetcher fetched what it forbids."""
    import orjson
    from conftest import fetch_loopback, serve_routes

    routes = {"/robots.txt": ("text/plain", b"User-agent: *\nDisallow: /private/\n")}
    with serve_routes(routes) as (root, log):
        urls = [f"{root}/x/../private/a.html", f"{root}/x/%2e%2E/private/b.html", f"{root}/ok"]
        res = fetch_loopback(tmp_path / "s", urls)
    assert res.code == 0, res.stderr
    outcomes = {r["url"]: r["outcome"] for r in map(orjson.loads, res.lines)}
    assert [outcomes[u] for u in urls] == ["robots-denied", "robots-denied", "fetched"]
    assert log == ["/robots.txt", "/ok"]


def test_a_cut_input_is_fetched_up_to_the_damage_and_exits_1(tmp_path: Path) -> None:
    """As every stage: the records before the damage are fetched, the damage named,
    and the exit status 1 so a script's ``set -e`` stops (fetch exited 0)."""
    import orjson
    import zstandard
    from conftest import fetch_loopback, serve_routes

    with serve_routes({"/a": ("text/plain", b"a"), "/b": ("text/plain", b"b")}) as (root, log):
        whole = b"".join(
            zstandard.compress(orjson.dumps({"url": f"{root}{path}"}) + b"\n")
            for path in ("/a", "/b", "/c")
        )
        cut = tmp_path / "batch.zst"
        cut.write_bytes(whole[: len(whole) - 8])  # inside the last frame
        res = fetch_loopback(tmp_path / "s", [], str(cut))
    assert res.code == 1
    assert "zstd stream ends inside a frame" in res.stderr
    assert [orjson.loads(line)["url"] for line in res.lines] == [f"{root}/a", f"{root}/b"]
    assert log == ["/robots.txt", "/a", "/b"]


def _robots_route(coding: str, body: bytes) -> tuple[str, bytes]:
    from conftest import RAW

    head = f"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\nContent-Encoding: {coding}\r\n"
    return RAW, head.encode() + f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_robots_txt_in_a_content_encoding_is_read_or_taken_as_unreachable(
    tmp_path: Path,
) -> None:
    """A robots.txt that could not be decoded was read as it came (br) or as empty
    (gzip that is not): no rules, and the fetcher fetched what it forbids. Now a label
    on plain text is the text, stacked and listed codings are undone, and what cannot
    be read is unreachable (RFC 9309: disallow all, retry later)."""
    import gzip as gz

    import orjson
    from conftest import fetch_loopback, serve_routes

    rules = b"User-agent: *\nDisallow: /private\n"
    cases = {
        "gzip": rules,  # labelled, not compressed
        "gzip, identity": gz.compress(rules),
        "gzip, gzip": gz.compress(gz.compress(rules)),
        "br": bytes(range(256)) * 4,  # never asked for
    }
    for coding, body in cases.items():
        routes = {"/robots.txt": _robots_route(coding, body), "/ok": ("text/plain", b"ok")}
        with serve_routes(routes) as (root, log):
            state = tmp_path / coding.replace(", ", "-")
            res = fetch_loopback(state, [f"{root}/private/x", f"{root}/ok"])
        assert res.code == 0, res.stderr
        outcomes = [orjson.loads(line)["outcome"] for line in res.lines]
        if coding == "br":
            assert outcomes == ["deferred", "deferred"], coding
            assert log == ["/robots.txt"], coding
        else:
            assert outcomes == ["robots-denied", "fetched"], coding
            assert log == ["/robots.txt", "/ok"], coding


def test_a_url_that_cannot_be_sent_as_it_is_is_refused_not_written(tmp_path: Path) -> None:
    """A hand-made batch's URL with CR LF wrote "WARC-Type: foo" into the WARC's
    headers and the request line; a space split the request line. Each is refused as
    invalid-url (canonical URLs never hold one), and a record with no string url keeps
    what it had, not "None"; the good URL is fetched (server log)."""
    import json

    from conftest import fetch_loopback, serve_routes

    with serve_routes({"/ok": ("text/html", b"<title>ok</title>")}) as (root, log):
        lines = [
            json.dumps({"url": f"{root}/x\r\nWARC-Type: foo"}),
            f"{root}/a b",
            f"{root}/caf\u00e9",
            json.dumps({"url": None, "id": 7}),
            f"{root}/ok",
        ]
        res = fetch_loopback(tmp_path / "s", [line for line in lines])
    assert res.code == 0, res.stderr
    out = [json.loads(line) for line in res.lines]
    assert [(r["url"], r["outcome"]) for r in out if r["outcome"] == "fetched"] == [
        (f"{root}/ok", "fetched")
    ]
    refused = [r for r in out if r["outcome"] == "refused"]
    assert [r["refused"] for r in refused] == ["invalid-url"] * 4, refused
    assert {"url": None, "id": 7}.items() <= refused[-1].items()
    assert log == ["/robots.txt", "/ok"], log
    warcs = list((tmp_path / "s" / "warc").rglob("*.warc.gz"))
    assert warcs and not any(b"WARC-Type: foo" in __import__("gzip").open(w).read() for w in warcs)
