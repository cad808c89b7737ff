"""URL patterns are bounded (issue 25 item 7): RE2, and no pattern on an over-long URL;
--exclude and --ignore-file refuse alike in seen-merge, frontier add and frontier next."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import re2
from conftest import crawlkit
from hypothesis import given
from hypothesis import strategies as st

from crawlkit.errors import UsageError
from crawlkit.frontier.scope import Scope
from crawlkit.patterns import MAX_URL_LENGTH, Excludes, PatternSet, compile_pattern
from crawlkit.url import Canonicalizer

# Backtracks for minutes in Python's re on a URL of many slashes that does not end in
# .jpg or .png (the review's case); linear in RE2.
TRAP = r"^(.*?/){3,}.*\.(jpg|png)$"


def _records(data: bytes | str) -> list[dict]:
    text = data.decode() if isinstance(data, bytes) else data
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.timeout(60)
def test_a_backtracking_pattern_runs_in_linear_time_on_a_long_url() -> None:
    url = "http://a.test/" + "a/" * (MAX_URL_LENGTH // 2 - 10)  # just under the limit
    assert len(url) <= MAX_URL_LENGTH
    assert not compile_pattern(TRAP, "--exclude").search(url)
    assert compile_pattern(TRAP, "--exclude").search(url + "x.jpg")


@pytest.mark.parametrize("pattern", [r"(a)\1", r"(?=x)y", r"(?<!x)y"])
def test_a_pattern_re2_cannot_run_is_a_usage_error_that_says_why(pattern: str) -> None:
    with pytest.raises(UsageError, match="linear") as info:
        compile_pattern(pattern, "--exclude")
    assert str(info.value).startswith("--exclude: bad regular expression")


def test_an_over_long_url_is_refused_before_any_pattern() -> None:
    excludes = Excludes([TRAP])
    long_url = "http://a.test/" + "a/" * 4000
    out = excludes.refusal({"url": long_url})
    assert out is not None and out["refused"] == "url-length"
    assert out["detail"] == f"{len(long_url)} characters > {MAX_URL_LENGTH}"
    out = excludes.refusal({"url": "http://a.test/a/b/c/d.png"})
    assert out is not None and out["refused"] == "excluded" and TRAP in out["detail"]
    scope = Scope(TRAP)
    refused = scope.refusal({"url": long_url, "host": "a.test", "site": "a.test"}, Canonicalizer())
    assert refused is not None and refused["refused"] == "url-length"


@pytest.mark.timeout(120)
def test_seen_merge_refuses_long_and_excluded_links_unseen(tmp_path: Path) -> None:
    state = str(tmp_path / "S")
    long_url = "http://a.test/" + "a/" * 400_000  # 800 KB, as extract passed through
    links = [
        {"url": long_url, "reason": "link"},
        {"url": "http://a.test/x/y/z/pic.png", "reason": "link"},
        {"url": "http://a.test/keep", "reason": "link"},
    ]
    data = b"".join(orjson.dumps(r) + b"\n" for r in links)
    refused = tmp_path / "refused.ndjson"
    res = crawlkit(
        "seen-merge", "--state", state, "--exclude", TRAP, "--refused", str(refused), input=data
    )
    assert res.code == 0, res.stderr
    assert [r["url"] for r in _records(res.stdout)] == ["http://a.test/keep"]
    why = {r["refused"]: r for r in _records(refused.read_text())}
    assert set(why) == {"url-length", "excluded"}
    assert why["excluded"]["detail"] == f"--exclude {TRAP}"
    # refused URLs were never marked seen: without the pattern they are new
    res = crawlkit("seen-merge", "--state", state, "--max-url-length", "1000000", input=data)
    assert {r["url"] for r in _records(res.stdout)} == {long_url, "http://a.test/x/y/z/pic.png"}


def test_frontier_next_refuses_urls_queued_before_the_ignore_file_changed(
    tmp_path: Path,
) -> None:
    state = str(tmp_path / "S")
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("# nothing yet\n")
    urls = b"http://a.test/\nhttp://a.test/private/1\nhttp://a.test/public\n"
    res = crawlkit(
        "frontier", "add", "--state", state, "--urls", "--reason", "seed",
        "--ignore-file", str(ignore), input=urls,
    )  # fmt: skip
    assert res.code == 0, res.stderr
    assert res.stdout == b""  # all queued
    ignore.write_text("/private/\n")
    refused = tmp_path / "refused.ndjson"
    res = crawlkit(
        "frontier", "next", "--state", state, "--ignore-file", str(ignore),
        "--refused", str(refused), "--no-budgets",
    )  # fmt: skip
    assert res.code == 0, res.stderr
    assert {r["url"] for r in _records(res.stdout)} == {"http://a.test/", "http://a.test/public"}
    (why,) = _records(refused.read_text())
    assert why["url"] == "http://a.test/private/1"
    assert why["refused"] == "excluded" and why["detail"] == f"{ignore}: /private/"
    # nothing lost: the refusal was the URL's one record, and it left the queue
    res = crawlkit("frontier", "next", "--state", state, "--no-budgets")
    assert res.stdout == b""
    # frontier add refuses with the same words
    res = crawlkit(
        "frontier", "add", "--state", state, "--exclude", "/private/", "--urls",
        input=b"http://a.test/private/2\n",
    )  # fmt: skip
    (why,) = _records(res.stdout)
    assert why["refused"] == "excluded" and why["detail"] == "--exclude /private/"


class _Trap(BaseHTTPRequestHandler):
    """A page linking to an 8,000-character URL and to a 1,990-character one, both
    made for the backtracking pattern: many slashes, no .jpg or .png at the end."""

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            body, kind = b"", "text/plain"
        else:
            long_path = "/" + "a/" * 4000
            near_path = "/n" + "b/" * 985
            body = (
                f'<html><body><a href="{long_path}">x</a><a href="{near_path}">y</a></body></html>'
            ).encode()
            kind = "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.mark.timeout(180)
def test_a_crawl_with_a_backtracking_exclude_and_huge_links_ends(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Trap)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        seed = f"http://127.0.0.1:{server.server_address[1]}/"
        state = tmp_path / "S"
        res = crawlkit(
            "crawl", seed, "--state", str(state), "--allow-net", "127.0.0.1/32",
            "--min-delay", "0", "--exclude", TRAP, "--scope", "any", "--for", "20s",
            "--max-pages", "3", timeout=150,
        )  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert res.code == 0, res.stderr
    refused = [
        r
        for path in (state / "crawl" / "cycles").rglob("*refused*.ndjson.zst")
        for r in _records(zstd_text(path))
    ]
    assert any(r["refused"] == "url-length" for r in refused), refused
    # the 1,990-character URL went through the pattern (no match, in linear time) and
    # on to the trap limits, which refuse its 985 path segments
    (near,) = [r for r in refused if r.get("url", "").startswith(seed + "nb/")]
    assert near["refused"] in ("path-depth", "repeated-segment"), near


def zstd_text(path: Path) -> str:
    from crawlkit import streams

    return "".join((text or "") + "\n" for _, _, text in streams.read_text_lines([path]))


_POOL = [r"a+b", r"/a/", r"\?x=1", "é", r"^http://h1", r"b$", r"(a|b)/(a|b)", r"\d{2}"]
_POOL += [r"[^/]{5,}", r"(?i)AB", r"\ba", r"%2[fF]", r"^(.*?/){3,}.*\.(jpg|png)$"]


@given(
    chosen=st.lists(st.sampled_from(_POOL), min_size=1, max_size=5, unique=True),
    tail=st.text(alphabet="ab/.?=x19é%-_2fF", max_size=40),
)
def test_a_pattern_set_answers_as_the_patterns_one_by_one(chosen: list[str], tail: str) -> None:
    url = "http://h" + tail
    patterns = [compile_pattern(p, "--exclude") for p in chosen]
    one_by_one = [re2.compile(p).search(url) is not None for p in chosen]
    assert [p.search(url) for p in patterns] == one_by_one
    first = next((n for n, found in enumerate(one_by_one) if found), None)
    assert PatternSet(patterns).first(url) == first
