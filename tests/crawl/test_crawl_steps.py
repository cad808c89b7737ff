"""The loop in one place: the steps that run are the steps ``--explain`` prints."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import crawlkit, start_testweb

from crawlkit.crawl import CrawlOptions, crawl, step_process
from crawlkit.crawl.steps import POST_STEPS, STEPS
from crawlkit.dedup.store import DedupStore
from crawlkit.fetch.engine import FetchConfig
from crawlkit.fetch.hoststate import HostState
from crawlkit.frontier.store import Frontier
from crawlkit.recrawl import History
from crawlkit.seen import SeenStore


def test_explain_is_rendered_from_the_steps_that_run() -> None:
    res = crawlkit("crawl", "--state", "S", "--explain", "--per-host", "3", "--no-budgets")
    assert res.code == 0, res.stderr
    comments = [line[2:] for line in res.lines[1:] if line.startswith("# ")]
    commands = [line for line in res.lines if not line.startswith("#")]
    assert comments == [step.what for step in STEPS]
    assert len(commands) == sum(len(step.commands) for step in STEPS)
    assert "--per-host 3 --no-budgets" in commands[0]
    # every step after the fetch carries the function that runs it
    assert all(callable(s.run) for s in POST_STEPS)
    assert all(s.run is None for s in STEPS if not s.post)


def test_each_cycle_goes_through_every_step_in_the_list(tmp_path: Path) -> None:
    with start_testweb(tmp_path, "--hosts", "2", "--pages", "8", "--special", "none") as web:
        state = tmp_path / "state"
        res = crawlkit(
            "crawl",
            str(web.seeds),
            "--state",
            str(state),
            "--scope",
            "any",
            "--min-delay",
            "0.05s",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            timeout=120,
        )
        assert res.code == 0, res.stderr
    cycles = sorted(p for p in (state / "crawl" / "cycles").iterdir() if p.is_dir())
    assert cycles
    expected = {"fetch.done", "cycle.done", *(f"{s.marker}.done" for s in POST_STEPS)}
    for cycle in cycles:
        # (the links step also marks "seen" between seen-merge and frontier add)
        assert {p.name for p in cycle.glob("*.done")} - {"seen.done"} == expected, cycle.name


def test_explain_names_the_scope_on_every_frontier_add() -> None:
    res = crawlkit("crawl", "--state", "S", "--explain", "--scope", "host")
    assert res.code == 0, res.stderr
    adds = [line for line in res.lines if "crawlkit frontier add" in line]
    # the deferred URLs into the waiting room: queued (and judged) when due
    assert sum("--deferred" in line for line in adds) == 1
    adds = [line for line in adds if "--deferred" not in line]
    assert len(adds) == 3  # site records, new links, recrawls
    assert all(line.endswith("--scope host") or "--scope host $C/" in line for line in adds)
    assert "# crawl also" not in res.text  # nothing the pipeline leaves out
    # a regex scope is quoted for the shell
    res = crawlkit("crawl", "--state", "S", "--explain", "--scope", r"^https?://a\.test/(x|y)")
    assert "--scope '^https?://a\\.test/(x|y)'" in res.text


def _records(text: str) -> list[dict]:
    return [orjson.loads(line) for line in text.splitlines() if line.strip()]


@pytest.mark.parametrize(
    ("scope", "kept", "why"),
    [
        ("host", {"http://www.a.test/p"}, "host"),
        ("site", {"http://www.a.test/p", "http://b.a.test/q"}, "site"),
        (r"/p$", {"http://www.a.test/p"}, "does not match"),
        ("any", {"http://www.a.test/p", "http://b.a.test/q", "http://other.test/r"}, ""),
    ],
)
def test_frontier_add_scope_refuses_what_crawl_would(
    tmp_path: Path, scope: str, kept: set[str], why: str
) -> None:
    state = str(tmp_path / "state")
    seed = crawlkit(
        "frontier",
        "add",
        "--state",
        state,
        "--scope",
        scope,
        "--urls",
        "--reason",
        "seed",
        input=b"http://www.a.test/\n",
    )
    assert seed.code == 0, seed.stderr
    assert seed.stdout == b""  # a seed is always in its own scope
    links = b"".join(
        orjson.dumps({"url": u, "reason": "link", "from": "http://www.a.test/"}) + b"\n"
        for u in ("http://www.a.test/p", "http://b.a.test/q", "http://other.test/r")
    )
    res = crawlkit("frontier", "add", "--state", state, "--scope", scope, input=links)
    assert res.code == 0, res.stderr
    refused = _records(res.text)
    assert {r["url"] for r in refused} == {
        "http://www.a.test/p",
        "http://b.a.test/q",
        "http://other.test/r",
    } - kept
    for rec in refused:
        assert rec["outcome"] == "refused" and rec["refused"] == "out-of-scope"
        assert why in rec["detail"]
    # the scope is the seeds' (kept in the state), not the first record's
    assert orjson.loads((tmp_path / "state" / "scope.json").read_bytes())["hosts"] == ["www.a.test"]
    batch = crawlkit("frontier", "next", "--state", state, "--no-budgets", "--max", "10")
    assert batch.code == 0, batch.stderr
    assert {r["url"] for r in _records(batch.text)} == {"http://www.a.test/"} | kept


def test_frontier_add_scope_lets_requisites_and_site_records_pass(tmp_path: Path) -> None:
    state = str(tmp_path / "state")
    crawlkit(
        "frontier",
        "add",
        "--state",
        state,
        "--scope",
        "host",
        "--urls",
        "--reason",
        "seed",
        input=b"http://www.a.test/\n",
    )
    records = [
        {"url": "http://cdn.test/x.css", "reason": "requisite", "requisite_hops": 1},
        {"site": "a.test", "pages": 4, "exact": 1, "near": 0, "yield": 0.25},
    ]
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        state,
        "--scope",
        "host",
        input=b"".join(orjson.dumps(r) + b"\n" for r in records),
    )
    assert res.code == 0, res.stderr
    assert res.stdout == b""


def test_frontier_add_bad_scope_is_a_usage_error(tmp_path: Path) -> None:
    res = crawlkit("frontier", "add", "--state", str(tmp_path / "s"), "--scope", "a[(", input=b"")
    assert res.code == 2
    assert res.stderr.startswith("crawlkit frontier add: --scope")


def test_a_run_opens_each_store_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The stage functions get the stores the run opened: however many cycles and
    fetch runs, each store is opened from disk once per crawl run."""
    opened: Counter[str] = Counter()

    def counting(name: str, real: Any) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            opened[name] += 1
            return real(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(Frontier, "open", counting("frontier", Frontier.open))
    monkeypatch.setattr(SeenStore, "open", counting("seen", SeenStore.open))
    for cls, name in ((DedupStore, "dedup"), (History, "recrawl"), (HostState, "hosts")):
        monkeypatch.setattr(cls, "__init__", counting(name, cls.__init__))
    # The step process opens the dedup index and the history once, when it starts.
    monkeypatch.setattr(
        step_process, "_start_pool", counting("step process", step_process._start_pool)
    )
    with start_testweb(tmp_path, "--hosts", "3", "--pages", "12", "--special", "none") as web:
        options = CrawlOptions(
            scope="any",
            budgets=False,
            fetch=FetchConfig(min_delay=0.05),
            allow_net=(web.info["allow_net"],),
            hosts_file=web.hosts_file,
        )
        seeds = web.seeds.read_text().split()
        summary = crawl(tmp_path / "state", seeds, options)
    assert summary.outcomes["fetched"] >= 30
    assert summary.cycles >= 2  # several cycles went through every store
    # (the dedup index only there; the history here too, for what admission reads)
    assert opened == {"frontier": 1, "seen": 1, "recrawl": 1, "hosts": 1, "step process": 1}


def test_explain_of_a_shard_names_the_shard_on_the_stages_that_route() -> None:
    res = crawlkit("crawl", "--state", "S", "--explain", "--shard", "1", "--shards", "4")
    assert res.code == 0, res.stderr
    routed = [
        line
        for line in res.lines
        if line.startswith(("crawlkit frontier next", "crawlkit fetch"))
        or "| crawlkit frontier add" in line
    ]
    assert len(routed) == 4
    assert all("--state S --shard 1 --shards 4 " in line for line in routed)


def test_seen_merge_scope_refuses_before_marking_seen(tmp_path: Path) -> None:
    """Out of scope, a URL is refused and not marked seen: once a new seed widens the
    scope, the same link is new (a crawl given more seeds later follows it)."""
    state = str(tmp_path / "state")
    refused = tmp_path / "refused.ndjson"
    link = orjson.dumps({"url": "http://b.test/page", "reason": "link"}) + b"\n"
    seed_a = orjson.dumps({"url": "http://a.test/", "reason": "seed"}) + b"\n"
    res = crawlkit(
        "seen-merge",
        "--state",
        state,
        "--scope",
        "site",
        "--refused",
        str(refused),
        input=seed_a + link,
    )
    assert res.code == 0, res.stderr
    assert [r["url"] for r in _records(res.text)] == ["http://a.test/"]
    (why,) = _records(refused.read_text())
    assert why["url"] == "http://b.test/page" and why["refused"] == "out-of-scope"
    assert "b.test" in why["detail"] and "--scope site" in why["detail"]
    seed_b = orjson.dumps({"url": "http://b.test/", "reason": "seed"}) + b"\n"
    res = crawlkit("seen-merge", "--state", state, "--scope", "site", input=seed_b + link)
    assert res.code == 0, res.stderr
    assert [r["url"] for r in _records(res.text)] == ["http://b.test/", "http://b.test/page"]
    # a bad --scope is a usage error (--refused alone holds --exclude's refusals)
    res = crawlkit("seen-merge", "--state", state, "--scope", "(", input=link)
    assert res.code == 2 and res.stderr.startswith("crawlkit seen-merge: --scope")
