"""A crawl retries what failed (issue 15): seeds named again, failed URLs after their
backoff; it names the reasons of its failures and exits 1 when it fetched nothing."""

from __future__ import annotations

import time
from pathlib import Path

import orjson
from conftest import crawlkit, start_testweb

from crawlkit.crawl.retry import retry_records
from crawlkit.url import Canonicalizer

GAP = "0.05s"
WEB = ("--hosts", "1", "--pages", "5", "--special", "none")


def _crawl(web, state: Path, *extra: str):
    return crawlkit(
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--min-delay",
        GAP,
        "--timeout",
        "3s",
        *extra,
    )


def test_a_seed_that_failed_is_fetched_by_the_next_run_that_names_it(tmp_path: Path) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        seed = web.seeds.read_text().split()[0]
        state = tmp_path / "s"
        # no --hosts-file: h0.test does not resolve, a network error
        first = _crawl(web, state, "--allow-net", web.info["allow_net"])
        assert first.code == 1
        assert f"errors: dns-nxdomain 1, e.g. {seed} (dns-nxdomain:" in first.stderr
        assert (
            first.stderr.strip()
            .splitlines()[-1]
            .startswith("crawlkit crawl: nothing was fetched (dns-nxdomain 1, e.g. ")
        )
        assert not web.requests()
        # the same seed again, with the right options: it is fetched, not "seen"
        second = _crawl(
            web,
            state,
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--json",
        )
        assert second.code == 0, second.stderr
        summary = orjson.loads(second.stdout)
        assert summary["fetched"] == 5 and summary["errors"] == {}
        assert "/" in {r["path"] for r in web.requests()}


def test_a_seed_refused_by_the_network_policy_is_fetched_once_allowed(tmp_path: Path) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        state = tmp_path / "s"
        first = _crawl(web, state, "--hosts-file", str(web.hosts_file))  # no --allow-net
        assert first.code == 1
        assert "errors: refused (address) 1, e.g. " in first.stderr
        # the reason in full, never cut mid-word ("allow it with --allow-ne")
        assert "refused (allow it with --allow-net))" in first.stderr
        assert "--allow-ne)" not in first.stderr
        assert "nothing was fetched (refused (address)" in first.stderr
        assert "refused: none" not in first.stderr
        second = _crawl(
            web,
            state,
            "--hosts-file",
            str(web.hosts_file),
            "--allow-net",
            web.info["allow_net"],
            "--json",
        )
        assert second.code == 0, second.stderr
        assert orjson.loads(second.stdout)["fetched"] == 5
        # a rerun of a finished crawl fetches nothing new, and that is no failure
        third = _crawl(
            web, state, "--hosts-file", str(web.hosts_file), "--allow-net", web.info["allow_net"]
        )
        assert third.code == 0, third.stderr


def test_failed_urls_come_back_after_their_backoff(tmp_path: Path) -> None:
    """Pages that fail (dropped connections, broken chunking) are backed off by the
    recrawl history (1 h, doubling); a run after that hands them out again."""
    with start_testweb(
        tmp_path, "--hosts", "1", "--pages", "3", "--special", "none,malformed"
    ) as web:
        bad = web.hosts_of_kind("malformed")[0]
        seeds = tmp_path / "seeds.txt"
        seeds.write_text(f"{bad['root']}\n")
        state = tmp_path / "s"
        net = ["--hosts-file", str(web.hosts_file), "--allow-net", web.info["allow_net"]]
        res = crawlkit(
            "crawl",
            str(seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            "--min-delay",
            GAP,
            "--timeout",
            "3s",
            *net,
            "--json",
        )
    assert res.code == 0, res.stderr
    summary = orjson.loads(res.stdout)
    failed = {
        r["url"]
        for log in state.glob("crawl/cycles/*/fetch.ndjson")
        for r in map(orjson.loads, log.read_bytes().splitlines())
        if r["outcome"] == "error"
    }
    assert failed and sum(e["count"] for e in summary["errors"].values()) == len(failed)
    assert all(e["example"].startswith("http://") for e in summary["errors"].values())
    canon = Canonicalizer()
    assert retry_records(state, [], canon) == []  # backing off
    later = retry_records(state, [], canon, now=time.time() + 2 * 3600)
    assert {r["url"] for r in later} >= failed


def test_a_url_cut_in_flight_by_a_crash_is_fetched_again_despite_its_duplicate(
    tmp_path: Path,
) -> None:
    """A URL handed out twice: the fetcher answers the second copy "refused: duplicate"
    while the first is in flight. A kill -9 then cut the first: recovery took the
    duplicate's refusal for the URL's answer and never fetched it (seen in
    test_kill9_ten_times_then_finish_equals_uninterrupted under load)."""
    from crawlkit.crawl import Crawl, CrawlOptions
    from crawlkit.crawl.files import mark_done, write_file
    from crawlkit.diag import NullReporter
    from crawlkit.state import open_state

    url = "http://a.test/page"
    rec = {"url": url, "host": "a.test", "site": "a.test", "fp": "0" * 16, "depth": 1}
    with open_state(tmp_path / "s") as state:
        run = Crawl(state, CrawlOptions(), reporter=NullReporter())
        try:
            cycle = run.dir.new_cycle()  # what the killed run left: a closed cycle ...
            refusal = {
                **rec,
                "outcome": "refused",
                "refused": "duplicate",
                "status": None,
                "error": "the same URL is already queued or in flight",
            }
            (cycle / "fetch.ndjson").write_bytes(orjson.dumps(refusal) + b"\n")
            for step in ("fetch", "extract", "dedup", "links", "recrawl", "cycle"):
                mark_done(cycle, step)
            write_file(run.dir.batches / f"{cycle.name}-0001.ndjson.zst", [rec])  # ... its batch
            pending = run.recovery.recover().records
        finally:
            run.close()
    assert [r["url"] for r in pending] == [url]
