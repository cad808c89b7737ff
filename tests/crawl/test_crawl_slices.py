"""`crawlkit crawl` in slices: every stop is as clean as no stop, from the server's log."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
from conftest import ROOT, crawlkit, start_testweb

from crawlkit import streams

PER_HOST = 3  # most URLs of one host the fetcher holds at once


def _args(web, state: Path, *extra: str) -> list[str]:
    return [
        "crawl",
        str(web.seeds),
        "--state",
        str(state),
        "--scope",
        "any",
        "--min-delay",
        "0.2s",
        "--per-host",
        str(PER_HOST),
        "--allow-net",
        web.info["allow_net"],
        "--hosts-file",
        str(web.hosts_file),
        "--timeout",
        "3s",
        "--no-budgets",
        "--json",
        *extra,
    ]


def _given_back(state: Path, cycles_before: set[Path]) -> Counter[str]:
    """Per host, the URLs a run gave back unstarted at its stop (new cycles' logs)."""
    out: Counter[str] = Counter()
    for log in state.glob("crawl/cycles/*/fetch.ndjson"):
        if log.parent not in cycles_before:
            out.update(r["host"] for r in streams.read_records([log]) if r.get("stopped"))
    return out


def _pages(requests: list[dict]) -> Counter[tuple[str, str]]:
    return Counter((q["host"], q["path"]) for q in requests if q["path"] != "/robots.txt")


def test_short_slices_fetch_no_url_twice_and_reach_everything(tmp_path: Path) -> None:
    web_args = ("--hosts", "12", "--pages", "15", "--special", "none", "--seed", "3")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        runs: list[dict] = []
        given_back: list[Counter[str]] = []
        while len(runs) < 60:
            before = set(state.glob("crawl/cycles/*"))
            res = crawlkit(*_args(web, state, "--for", "1s"), timeout=120)
            assert res.code == 0, res.stderr
            runs.append(orjson.loads(res.stdout))
            given_back.append(_given_back(state, before))
            if runs[-1]["stopped"] == "frontier empty":
                break
        requests = web.requests()
        manifest = {
            (h["name"], u.split(str(web.port), 1)[1])
            for h in web.hosts_of_kind("ordinary")
            for u in h["pages"]
        }
    stops = [r["stopped"] for r in runs]
    assert stops[-1] == "frontier empty"
    assert stops.count("time limit (--for)") >= 3, stops  # the crawl really lived in slices
    pages = _pages(requests)
    twice = sorted(k for k, n in pages.items() if n > 1)
    assert not twice, twice[:5]
    assert manifest <= {(h.split(":")[0], p) for h, p in pages}  # nothing lost at a stop
    # A stop gives back only what the fetcher held: at most --per-host URLs a host,
    # not the frontier; and they are counted.
    assert sum(sum(g.values()) for g in given_back) == sum(r["unstarted"] for r in runs) > 0
    assert max(n for g in given_back for n in g.values()) <= PER_HOST


def test_max_pages_is_a_hard_limit_from_the_server_view(tmp_path: Path) -> None:
    web_args = ("--hosts", "6", "--pages", "30", "--special", "none", "--seed", "5")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        first = crawlkit(*_args(web, state, "--max-pages", "10", "--min-delay", "0.05s"))
        assert first.code == 0, first.stderr
        after_first = len(_pages(web.requests()))
        # the limit counts every run of the crawl: a second run with 25 adds 15
        second = crawlkit(*_args(web, state, "--max-pages", "25", "--min-delay", "0.05s"))
        assert second.code == 0, second.stderr
        pages = _pages(web.requests())
    assert orjson.loads(first.stdout)["stopped"] == "page limit (--max-pages)"
    assert after_first == 10
    assert sum(pages.values()) == 25 and max(pages.values()) == 1


def test_a_sharded_fleet_in_short_slices_fetches_no_url_twice(tmp_path: Path) -> None:
    # examples/shards-parallel.sh: four shards crawl 2-s slices round after round,
    # delivering links between rounds, until no shard has work left.
    web_args = ("--hosts", "16", "--pages", "12", "--special", "none", "--seed", "4")
    with start_testweb(tmp_path, *web_args) as web:
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "SLICE": "2s",
            "ROUNDS": "60",
        }
        proc = subprocess.run(
            [
                str(ROOT / "examples" / "shards-parallel.sh"),
                str(tmp_path / "fleet"),
                "4",
                str(web.seeds),
                "--scope",
                "any",
                "--min-delay",
                "0.2s",
                "--no-budgets",
                "--allow-net",
                web.info["allow_net"],
                "--hosts-file",
                str(web.hosts_file),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        requests = web.requests()
        manifest = {
            (h["name"], u.split(str(web.port), 1)[1])
            for h in web.hosts_of_kind("ordinary")
            for u in h["pages"]
        }
    rounds = proc.stderr.count("round ")
    assert rounds >= 3, proc.stderr[-2000:]  # the fleet really lived in slices
    pages = _pages(requests)
    twice = sorted(k for k, n in pages.items() if n > 1)
    assert not twice, twice[:5]
    assert manifest <= {(h.split(":")[0], p) for h, p in pages}
