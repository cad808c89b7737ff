"""A pattern appended to --ignore-file while the crawl runs never ends it early.

The crawl used to stop with "nothing more can be fetched now" and fetchable URLs still
queued: a batch from the frontier whose every URL the new pattern refused read as
"the frontier has nothing to give", and three such fetch runs in a row ended the crawl.
"""

from __future__ import annotations

import re
from pathlib import Path

from conftest import start_testweb

from crawlkit import streams
from crawlkit.crawl import CrawlOptions, crawl
from crawlkit.crawl.archive import ArchiveOptions
from crawlkit.fetch.engine import FetchConfig


def test_pattern_appended_mid_crawl_leaves_only_matching_urls(tmp_path: Path) -> None:
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("# live ignores\n")
    with start_testweb(tmp_path, "--hosts", "1", "--pages", "40", "--special", "none") as web:
        host = web.host("h0.test")
        pages = set(host["pages"])
        state = tmp_path / "S"
        options = CrawlOptions(
            scope="site",
            budgets=False,
            per_host=4,
            allow_net=(web.info["allow_net"],),
            hosts_file=web.hosts_file,
            fetch=FetchConfig(min_delay=0.02, delay_factor=1.0, timeout=5.0),
            archive=ArchiveOptions(ignore_file=ignore),
            idle_wait=0.2,
        )
        patterns: list[str] = []

        def progress(info: dict) -> None:
            # The event: the first cycle (the root) is done and its links are queued,
            # in link order. The pattern refuses all but the last one: the frontier
            # hands out at least three batches of four refused URLs before them.
            if not patterns:
                links = state / "crawl" / "cycles" / info["cycle"] / "links.ndjson.zst"
                urls = [r["url"] for r in streams.read_records([links]) if r["url"] in pages]
                assert len(urls) >= 14, urls
                patterns.append("^(" + "|".join(re.escape(u) for u in urls[:-1]) + ")$")
                with open(ignore, "a") as f:
                    f.write(patterns[0] + "\n")

        summary = crawl(state, [host["root"]], options, progress=progress)
    assert patterns, "no cycle finished"
    pattern = patterns[0]
    assert summary.stopped == "frontier empty", summary.to_json()
    assert summary.queued == 0 and summary.waiting == 0
    fetched = {
        r["url"]
        for log in sorted(state.glob("crawl/cycles/*/fetch.ndjson"))
        for r in streams.read_records([log])
        if r["outcome"] == "fetched"
    }
    excluded = {
        r["url"]
        for p in sorted(state.glob("crawl/**/*refused.ndjson.zst"))
        for r in streams.read_records([p])
        if r.get("refused") == "excluded"
    }
    assert excluded, "the pattern refused nothing: the test did not test"
    assert all(re.search(pattern, u) for u in excluded)
    found = {
        r["url"]
        for p in sorted(state.glob("crawl/cycles/*/links.ndjson.zst"))
        for r in streams.read_records([p])
    }
    # every page found that the pattern does not match was fetched; only matching
    # pages are left out (refused, or linked only from refused pages: never found)
    wanted = {u for u in pages & found if not re.search(pattern, u)}
    assert len(wanted) >= 1 and wanted <= fetched


def test_urls_the_fetcher_holds_are_refused_once_the_file_excludes_them(tmp_path: Path) -> None:
    """The fetcher holds up to --per-host URLs a host: a pattern added while it held
    some was applied to new batches only, and the held ones were still asked, one a
    gap, for seconds after the operator excluded them (minutes at a long Crawl-delay).
    Judged from the server's log: after the edit, no excluded page is asked but the
    one in flight and, at most, one started before the fetcher read the change."""
    from conftest import poll_until, serve_routes, start_crawlkit

    trap = [f"/p/{i}.html" for i in range(12)]
    rest = [f"/q/{i}.html" for i in range(4)]
    home = "".join(f'<a href="{path}">x</a>' for path in [*trap, *rest])
    routes = {"/": ("text/html", home.encode())}
    routes |= {path: ("text/html", b"<p>page</p>") for path in [*trap, *rest]}
    ignore = tmp_path / "ignore.txt"
    ignore.write_text("")
    with serve_routes(routes) as (root, log):
        args = ["crawl", f"{root}/", "--state", str(tmp_path / "s"), "--ignore-file", str(ignore)]
        args += ["--allow-net", "127.0.0.0/8", "--min-delay", "0.4s", "--per-host", "8"]
        args += ["--delay-factor", "0", "--for", "60s"]
        proc = start_crawlkit(*args)
        try:
            poll_until(lambda: any(p.startswith("/p/") for p in log), proc, "a /p/ page asked")
            edited_at = len(log)
            ignore.write_text("/p/\n")
            assert proc.wait(timeout=120) == 0
        finally:
            proc.kill()
            proc.wait()
    after = [p for p in log[edited_at:] if p.startswith("/p/")]
    assert len(after) <= 1, after
    assert set(rest) <= set(log)  # the rest of the site is crawled
