"""`crawlkit frontier stats --state S` of a `crawl --workers N` state: the workers'
frontiers as one, as `report` sums them (the parent keeps no frontier of its own);
the commands that would write to S's own frontier are refused, and so are the stages
whose stores are the workers' (seen-merge, dedup, recrawl, fetch), while seen-merge
--contains and recrawl --stats answer from the workers' stores."""

from __future__ import annotations

from pathlib import Path

import orjson
from conftest import crawlkit, start_testweb

from crawlkit import streams
from crawlkit.stages.frontier import crawl_frontier_stats


def test_frontier_stats_of_a_workers_state_are_the_workers_summed(tmp_path: Path) -> None:
    web_args = ("--hosts", "4", "--pages", "20", "--special", "none", "--seed", "11")
    with start_testweb(tmp_path, *web_args) as web:
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--min-delay",
            "0.05s",
            "--no-budgets",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--workers",
            "2",
            "--max-pages",
            "12",  # cut: URLs left queued in both workers
            timeout=120,
        )
        assert res.code == 0, res.stderr
    assert crawlkit("frontier", "block", "--state", str(state), "h1.test").code == 0
    res = crawlkit("frontier", "stats", "--state", str(state))
    assert res.code == 0, res.stderr
    stats = orjson.loads(res.stdout)
    parts = [
        orjson.loads(crawlkit("frontier", "stats", "--state", str(state / "workers" / k)).stdout)
        for k in ("0", "1")
    ]
    assert stats["queued"] == sum(p["queued"] for p in parts) > 0
    assert all(p["queued"] > 0 for p in parts)  # both workers' queues counted
    for key in ("added", "handed_out", "hosts"):
        assert stats[key] == sum(p[key] for p in parts), key
    # every worker learns every site (the site links are shared): not summed, which
    # said twice the sites of the web
    assert stats["sites_known"] == max(p["sites_known"] for p in parts) <= 4
    levels = [sum(p["levels"]["new"][i] for p in parts) for i in range(4)]
    assert stats["levels"]["new"] == levels
    assert stats["blocked"] == ["h1.test"]  # posted to both, counted once
    assert stats["budgets"]["cycle"] == max(p["budgets"]["cycle"] for p in parts)
    assert crawl_frontier_stats(state) == stats
    # what would write to (or take from) S's own frontier, which no worker reads, is
    # refused with one line instead of being lost
    seeds = tmp_path / "more.txt"
    seeds.write_text("http://h0.test/new-page\n")
    for args, stdin in (
        (("frontier", "add", "--state", str(state), "--urls", str(seeds)), None),
        (("frontier", "next", "--state", str(state), "--max", "10"), None),
        (("frontier", "links", "--state", str(state)), b""),
        (("frontier", "add", "--state", str(state), "--deferred", "-"), b""),
    ):
        res = crawlkit(*args, input=stdin)
        assert res.code == 2, (args, res.stderr)
        assert len(res.stderr.splitlines()) == 1 and "is a crawl of --workers" in res.stderr
    assert crawl_frontier_stats(state) == stats  # nothing changed
    # so is every stage whose stores are the workers' (the seen sets, dedup indexes,
    # recrawl histories, hosts' clocks): nothing is made in S itself
    links = tmp_path / "links.ndjson"
    links.write_text('{"url": "http://h0.test/new-page", "depth": 1}\n')
    for args in (
        ("seen-merge", "--state", str(state), str(links)),
        ("seen-merge", "--state", str(state), "--rebuild"),
        ("dedup", "--state", str(state), str(links)),
        ("recrawl", "--state", str(state), str(links)),
        ("fetch", "--state", str(state), str(links)),
    ):
        res = crawlkit(*args)
        assert res.code == 2, (args, res.stderr)
        assert len(res.stderr.splitlines()) == 1 and "is a crawl of --workers" in res.stderr
    assert {p.name for p in state.iterdir()} == {"LOCK", "crawl", "warc", "workers"}
    # the questions are answered from the workers' stores
    fetched = [
        r["url"]
        for k in ("0", "1")
        for r in streams.read_records(
            sorted((state / "workers" / k).glob("crawl/cycles/*/fetch.ndjson"))
        )
        if r["outcome"] == "fetched"
    ]
    res = crawlkit("seen-merge", "--state", str(state), "--contains", *fetched, "http://h0.test/no")
    assert res.code == 0, res.stderr
    assert [orjson.loads(line)["seen"] for line in res.lines] == [True] * len(fetched) + [False]
    res = crawlkit("recrawl", "--state", str(state), "--stats")
    assert res.code == 0, res.stderr
    tracked = [
        crawlkit("recrawl", "--state", str(state / "workers" / k), "--stats").stdout
        for k in ("0", "1")
    ]
    assert _tracked(res.stdout) == sum(_tracked(t) for t in tracked) == len(fetched)


def _tracked(stats: bytes) -> int:
    """The URLs tracked of ``crawlkit recrawl --stats``'s text."""
    first = stats.decode().splitlines()[0]  # "URLs tracked: N, with a rate ..."
    return int(first.split(":")[1].split(",")[0])
