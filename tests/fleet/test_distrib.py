"""Distributed crawling: slot maps, delivery, handoff, and a 4-shard fleet on testweb."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import orjson
import pytest
import yaml
from conftest import ROOT, crawlkit, start_testweb
from fleet_helpers import GAP, WEB, audit_web, fetched_pages, fleet_env, net_flags

from crawlkit import streams
from crawlkit.crawl.admission import site_edges
from crawlkit.errors import StateError
from crawlkit.frontier.waiting import WAITING, read_waiting
from crawlkit.recrawl import History
from crawlkit.shard.routing import ShardRole, adopt_role, deliver, grow, read_role, write_outbox
from crawlkit.shard.slots import SlotMap, slot_of

EXAMPLES = ROOT / "examples"


def test_grow_moves_the_fewest_slots_and_raises_their_epoch() -> None:
    old = SlotMap.even(4, 4096)
    new = grow(old, 5)
    moved = [s for s in range(4096) if old.owner[s] != new.owner[s]]
    assert len(moved) == 4096 // 5  # the new shard's share, nothing more
    assert all(new.owner[s] == 4 for s in moved)
    assert all(new.epoch[s] == old.epoch[s] + 1 for s in moved)
    assert all(new.epoch[s] == old.epoch[s] for s in range(4096) if s not in moved)
    assert max(Counter(new.owner).values()) - min(Counter(new.owner).values()) <= 1


def test_role_refuses_other_shards_and_stale_epochs(tmp_path: Path) -> None:
    old = SlotMap.even(4, 64)
    new = grow(old, 5)
    site = next(f"s{i}.test" for i in range(1000) if new.shard_of_site(f"s{i}.test") == 4)
    slot = slot_of(site, 64)
    old_owner = ShardRole(old.owner[slot], new)
    assert "belongs to shard 4" in (old_owner.check({"site": site}) or "")
    new_owner = ShardRole(4, new)
    assert new_owner.check({"site": site, "shard_epoch": new.epoch[slot]}) is None
    assert "older" in (new_owner.check({"site": site, "shard_epoch": 0}) or "")
    # a state directory never changes shard
    adopt_role(tmp_path, ShardRole(1, old))
    with pytest.raises(StateError, match="state of shard 1"):
        adopt_role(tmp_path, ShardRole(2, old))
    assert read_role(tmp_path).shard == 1


def test_deliver_moves_outboxes_to_the_owners_inboxes(tmp_path: Path) -> None:
    m = SlotMap.even(3, 16)
    dirs = [tmp_path / f"s{k}" for k in range(3)]
    for k, d in enumerate(dirs):
        adopt_role(d, ShardRole(k, m))
    write_outbox(dirs[0], {1: [{"url": "http://a.test/", "n": 1}], 2: [{"url": "http://b/"}]})
    write_outbox(dirs[2], {1: [{"url": "http://c.test/", "n": 2}]})
    counts = deliver(dirs)
    assert counts == {"files": 3, "undeliverable": 0}
    got = [r for f in sorted((dirs[1] / "inbox").iterdir()) for r in streams.read_records([f])]
    assert sorted(r.get("n") for r in got) == [1, 2]
    assert not list((dirs[0] / "outbox").rglob("*.zst"))


def test_cluster_examples_are_valid() -> None:
    for script in ("slurm-shards.sbatch", "shards-parallel.sh", "crawl-shard.sh"):
        subprocess.run(["bash", "-n", str(EXAMPLES / script)], check=True)
    job = yaml.safe_load((EXAMPLES / "k8s-indexed-job.yaml").read_text())
    assert job["kind"] == "Job" and job["spec"]["completionMode"] == "Indexed"
    assert job["spec"]["completions"] == job["spec"]["parallelism"]
    args = job["spec"]["template"]["spec"]["containers"][0]["args"][0]
    assert "--shard $(JOB_COMPLETION_INDEX)" in args and "--slot-map" in args


def _run_fleet(
    fleet: Path, shards: int, web, *extra: str, seeds: Path | None = None, **env: str
) -> None:
    """Run examples/shards-parallel.sh over ``web`` from its seeds, or ``seeds`` (env:
    ROUNDS, SLICE, ...)."""
    proc = subprocess.run(
        [
            str(EXAMPLES / "shards-parallel.sh"),
            str(fleet),
            str(shards),
            str(seeds or web.seeds),
            *net_flags(web),
            *extra,
        ],
        env=fleet_env(**env),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


def test_four_shards_with_gnu_parallel_reach_what_one_shard_reaches(tmp_path: Path) -> None:
    with start_testweb(tmp_path, *WEB) as web:
        one = tmp_path / "one"
        res = crawlkit("crawl", str(web.seeds), "--state", str(one), *net_flags(web), timeout=240)
        assert res.code == 0, res.stderr
        expected = set(fetched_pages([one]))
    assert len(expected) >= 60
    with start_testweb(tmp_path, *WEB) as web:
        fleet = tmp_path / "fleet"
        _run_fleet(fleet, 4, web)
        report = audit_web(web)
        ports = {q["port"] for q in web.requests()}
    assert ports == {web.info["tls_port"]}  # the fleet crawled over HTTPS, as the web is
    dirs = [fleet / f"shard-{k}" for k in range(4)]
    got = fetched_pages(dirs)
    assert set(got) == expected
    assert max(got.values()) == 1  # no page fetched by two shards
    assert report["ok"], report["violations"][:5]
    # the shards shared the work, and each kept to its own sites
    working = 0
    for k, d in enumerate(dirs):
        role = read_role(d)
        assert role is not None
        sites = {
            r["site"]
            for log in d.glob("crawl/cycles/*/fetch.ndjson")
            for r in streams.read_records([log])
        }
        assert all(role.owner(s) == k for s in sites)
        working += bool(sites)
    assert working >= 3


BIG_WEB = ("--hosts", "10", "--pages", "30", "--special", "none", "--seed", "5")
# Budgets depend on which sites link to which, and a new shard starts without that
# history (see README "Scaling out"); this test is about losing nothing, so it turns
# budgets off in both crawls.
NO_BUDGETS = "--no-budgets"


def test_rebalance_four_to_five_mid_crawl_loses_nothing(tmp_path: Path) -> None:
    # Every page a seed, and a 0.5 s gap in the first round: its 2 s slice leaves most
    # of every site queued, so the rebalance moves queued URLs whatever the machine's
    # load (from the home pages alone, a loaded machine's first round could end with
    # their links still in a cycle to post-process, nothing queued to move).
    seeds = tmp_path / "seeds.txt"

    def seed_every_page(web) -> list[str]:  # (each web has a port of its own)
        pages = [u for h in web.hosts_of_kind("ordinary") for u in h["allowed"]]
        seeds.write_text("".join(f"{u}\n" for u in pages))
        return pages

    with start_testweb(tmp_path, *BIG_WEB) as web:
        pages = seed_every_page(web)
        one = tmp_path / "one"
        res = crawlkit(
            "crawl", str(seeds), "--state", str(one), *net_flags(web), NO_BUDGETS, timeout=240
        )
        assert res.code == 0, res.stderr
        expected = set(fetched_pages([one]))
    assert len(expected) >= len(pages) > 100
    with start_testweb(tmp_path, *BIG_WEB) as web:
        seed_every_page(web)
        fleet = tmp_path / "fleet"
        slow = ("--min-delay", "0.5s")
        _run_fleet(fleet, 4, web, NO_BUDGETS, *slow, seeds=seeds, ROUNDS="1", SLICE="2s")
        # Add a fifth shard while every shard is stopped: grow the map in place (an
        # atomic replace), then each old owner hands over what moved to shard 4.
        the_map = fleet / "map.json"
        res = crawlkit("shard", "--map", str(the_map), "--grow", "5", "--save-map", str(the_map))
        assert res.code == 0, res.stderr
        new_dir = fleet / "shard-4"  # made shard 4 by the first handoff (--shard 4)
        grown = SlotMap.load(the_map)
        handed = copied = 0
        moved_history = sum(_history_of_shard(fleet / f"shard-{k}", grown, 4) for k in range(4))
        for k in range(4):
            res = crawlkit(
                "shard",
                "--map",
                str(the_map),
                "--handoff-from",
                str(fleet / f"shard-{k}"),
                "--handoff-to",
                str(new_dir),
                "--shard",
                "4",
            )
            assert res.code == 0, res.stderr
            words = res.stderr.split("handed over ")[1].split()
            handed += int(words[0]) + int(words[3])  # queued + waiting URLs
            copied += int(res.stderr.split("copied ")[1].split()[0])
        # the moved sites' history goes with them, else no shard revisits their pages
        assert copied == moved_history == _history_of_shard(new_dir, grown, 4)
        _run_fleet(fleet, 5, web, NO_BUDGETS, seeds=seeds)
        report = audit_web(web)
    dirs = [fleet / f"shard-{k}" for k in range(5)]
    got = fetched_pages(dirs)
    assert expected <= set(got)  # no URL lost
    assert report["ok"], report["violations"][:5]  # no host hit inside its gap
    assert handed > 0  # the test really moved queued URLs mid-crawl


def _history_of_shard(state: Path, slot_map: SlotMap, shard: int) -> int:
    """How many URLs of ``shard``'s sites ``state``'s recrawl history tracks."""
    if not (state / "recrawl").exists():
        return 0
    history = History(state / "recrawl")
    try:
        table = history.table()
    finally:
        history.close()
    ours = [bool(s) and slot_map.shard_of_site(s) == shard for s in table.sites]
    return sum(ours[i] for i in table.site_ix)


def test_a_shard_already_owned_refuses_a_second_process(tmp_path: Path) -> None:
    state = tmp_path / "shard-0"
    code = (
        "import sys, time; from crawlkit.state import open_state; "
        "s = open_state(sys.argv[1]); print('held', flush=True); time.sleep(60)"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(state)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        res = crawlkit(
            "crawl", "http://h0.test:1/", "--state", str(state), "--shard", "0", "--shards", "4"
        )
        assert res.code == 1
        assert "in use by another process" in res.stderr
    finally:
        holder.kill()
        holder.wait()
        assert holder.stdout is not None
        holder.stdout.close()


def _records(paths) -> list[dict]:
    return [r for p in sorted(paths) for r in streams.read_records([p])]


def test_stage_commands_of_a_shard_route_deliver_and_ingest(tmp_path: Path) -> None:
    # The pipeline form of a fleet: frontier add --shard keeps its own sites and
    # writes the others' to outboxes; the inbox is queued by the owner's frontier add,
    # minus what its seen set has seen; frontier next stamps shard_epoch.
    seeds = tmp_path / "seeds.txt"
    urls = [f"http://s{i}.example/a" for i in range(40)]
    seeds.write_text("\n".join(urls) + "\n")
    the_map = tmp_path / "map.json"
    assert crawlkit("shard", "--shards", "2", "--save-map", str(the_map)).code == 0
    s0, s1 = tmp_path / "s0", tmp_path / "s1"
    shard_args = ["--slot-map", str(the_map)]
    res = crawlkit("frontier", "add", "--state", str(s1), "--shard", "1", *shard_args, input=b"")
    assert res.code == 0, res.stderr
    # s1 has seen one of the URLs that s0 will send it
    m = SlotMap.load(the_map)
    theirs = [u for u in urls if m.shard_of_site(u.split("/")[2]) == 1]
    ours = [u for u in urls if m.shard_of_site(u.split("/")[2]) == 0]
    assert theirs and ours
    res = crawlkit("seen-merge", "--state", str(s1), input=theirs[0].encode() + b"\n")
    assert res.code == 0, res.stderr
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        str(s0),
        "--shard",
        "0",
        *shard_args,
        "--urls",
        "--reason",
        "seed",
        str(seeds),
    )
    assert res.code == 0, res.stderr
    assert f"{len(ours)} queued" in res.stderr
    assert f"{len(theirs)} for other shards' outboxes" in res.stderr
    sent = _records((s0 / "outbox" / "shard-1").glob("*.zst"))
    assert sorted(r["url"] for r in sent) == sorted(theirs)
    res = crawlkit("shard", "--deliver", str(s0), "--deliver", str(s1))
    assert res.code == 0, res.stderr
    # a crawl of another shard also sends site pairs (links between sites, for budgets)
    pair = {"site": "zz.example", "from": "http://s0.example/", "reason": "site-link"}
    with streams.open_output(s1 / "inbox" / "pairs.ndjson.zst") as out:
        out.write_record(pair)
    # no --shard here: the state directory remembers it is shard 1
    res = crawlkit("frontier", "add", "--state", str(s1), input=b"")
    assert res.code == 0, res.stderr
    assert f"{len(theirs) - 1} new from the inbox" in res.stderr
    assert "0 bad records skipped" in res.stderr
    from crawlkit.frontier.store import Frontier
    from crawlkit.state import open_state

    with open_state(s1) as state:
        assert Frontier.open(state.sub("frontier")).sites.linking_sites("zz.example") == 1
    assert not list((s1 / "inbox").glob("*.zst"))
    res = crawlkit("frontier", "next", "--state", str(s1), "--max", "100")
    assert res.code == 0, res.stderr
    batch = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert sorted(r["url"] for r in batch) == sorted(theirs[1:])
    assert all(r["shard_epoch"] == 0 for r in batch)
    # a state directory never changes shard
    res = crawlkit("frontier", "add", "--state", str(s1), "--shard", "0", *shard_args, input=b"")
    assert res.code == 1 and "state of shard 1" in res.stderr


def test_fetch_refuses_a_batch_stamped_before_a_rebalance_and_sends_it_on(
    tmp_path: Path,
) -> None:
    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://s{i}.example/a\n" for i in range(60)))
    the_map = tmp_path / "map.json"
    assert crawlkit("shard", "--shards", "2", "--save-map", str(the_map)).code == 0
    s1 = tmp_path / "s1"
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        str(s1),
        "--shard",
        "1",
        "--slot-map",
        str(the_map),
        "--urls",
        "--reason",
        "seed",
        str(seeds),
    )
    assert res.code == 0, res.stderr
    res = crawlkit("frontier", "next", "--state", str(s1), "--max", "100")
    batch = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert batch and all(r["shard_epoch"] == 0 for r in batch)
    # a third shard joins: the slots it takes get epoch 1
    res = crawlkit("shard", "--map", str(the_map), "--grow", "3", "--save-map", str(the_map))
    assert res.code == 0, res.stderr
    grown = SlotMap.load(the_map)
    moved = [r for r in batch if grown.shard_of_site(r["site"]) == 2]
    assert moved
    # the batch from before the rebalance, as a fetcher of shard 1 would get it late;
    # only moved URLs, so nothing is fetched (no request leaves this machine)
    stale = tmp_path / "stale.ndjson"
    stale.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in moved))
    res = crawlkit("fetch", "--state", str(s1), str(stale), "--hosts-file", os.devnull)
    assert res.code == 0, res.stderr
    out = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert len(out) == len(moved)
    assert all(r["outcome"] == "refused" and r["refused"] == "shard" for r in out)
    assert all("belongs to shard 2" in r["detail"] for r in out)
    # not lost: each went to the outbox of its new owner
    sent = _records((s1 / "outbox" / "shard-2").glob("*.zst"))
    assert sorted(r["url"] for r in sent) == sorted(r["url"] for r in moved)
    # and the new owner refuses the old stamp too (epoch 0 < the slot's 1)
    s2 = tmp_path / "s2"
    res = crawlkit(
        "fetch",
        "--state",
        str(s2),
        "--shard",
        "2",
        "--slot-map",
        str(the_map),
        str(stale),
        "--hosts-file",
        os.devnull,
    )
    assert res.code == 0, res.stderr
    out = [orjson.loads(line) for line in res.stdout.splitlines()]
    assert all(r["refused"] == "shard" and "older than slot" in r["detail"] for r in out)


def test_shards_share_the_site_graph_that_site_budgets_rest_on(tmp_path: Path) -> None:
    # Budgets trust a site by who links to it, transitively from the seeds. In a fleet
    # each shard must see the whole site graph: every seed's site is trusted in every
    # shard, and each cycle's cross-site links go to the other shards as site pairs.
    from crawlkit.crawl import Crawl, CrawlOptions
    from crawlkit.diag import NullReporter
    from crawlkit.frontier.store import Frontier
    from crawlkit.state import open_state

    the_map = SlotMap.even(2, 4096)
    map_path = tmp_path / "map.json"
    the_map.save(map_path)
    sites = [f"x{i}.test" for i in range(40)]
    seed, a = [s for s in sites if the_map.shard_of_site(s) == 0][:2]
    b = next(s for s in sites if the_map.shard_of_site(s) == 1)
    dirs = [tmp_path / "s0", tmp_path / "s1"]

    def crawl_of(k: int, state) -> Crawl:
        opts = CrawlOptions(scope="any", shard=k, slot_map=map_path)
        return Crawl(state, opts, reporter=NullReporter())

    with open_state(dirs[0]) as state:
        run = crawl_of(0, state)
        run.admission.add_seeds([f"http://{seed}/"])
        # shard 0 fetched its seed page, which links to a (shard 0) and to b (shard 1)
        links = [{"url": f"http://{t}/p", "site": t, "from": f"http://{seed}/"} for t in (a, b)]
        # (the cycle's links step sends them with its URLs for each other shard)
        run.gate.route([], "t", site_edges(run.admission.site_link_pairs(links)))
        run.close()
    with open_state(dirs[1]) as state:
        crawl_of(1, state).close()
    assert deliver(dirs)["files"] >= 1
    with open_state(dirs[1]) as state:
        run = crawl_of(1, state)
        run.admission.add_seeds([f"http://{seed}/"])  # every shard gets every seed
        run.admission.ingest_inbox()
        run.close()
        frontier = Frontier.open(state.sub("frontier"))
        table = frontier.sites
        assert seed in table.trusted()
        assert table.linking_sites(a) == 1  # a pair about shard 0's site, for trust
        assert table.credited(b) == 1  # b is vouched for by the seed, as in one shard
        policy = table.policy
        assert table.budget(b) == policy.base + policy.per_linker
    # the pairs are not URLs: shard 1 queued none of them
    assert frontier_stats_queued(dirs[1]) == 0


def frontier_stats_queued(state: Path) -> int:
    from crawlkit.stages.frontier import frontier_stats

    return int(frontier_stats(state)["queued"])


def test_a_handoff_carries_each_moved_sites_linkers_and_budget_use(tmp_path: Path) -> None:
    from crawlkit.frontier.store import Frontier
    from crawlkit.state import open_state

    seeds = tmp_path / "seeds.txt"
    seeds.write_text("".join(f"http://s{i}.example/\n" for i in range(40)))
    the_map = tmp_path / "map.json"
    assert crawlkit("shard", "--shards", "1", "--save-map", str(the_map)).code == 0
    old, new = tmp_path / "s0", tmp_path / "s1"
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        str(old),
        "--shard",
        "0",
        "--slot-map",
        str(the_map),
        "--urls",
        "--reason",
        "seed",
        str(seeds),
    )
    assert res.code == 0, res.stderr
    # a site nobody seeded, linked from two seeds, and some of its budget used
    links = [
        {"url": f"http://late.example/p{i}", "reason": "link", "from": f"http://s{i % 2}.example/"}
        for i in range(30)
    ]
    res = crawlkit(
        "frontier",
        "add",
        "--state",
        str(old),
        input=b"".join(orjson.dumps(r) + b"\n" for r in links),
    )
    assert res.code == 0, res.stderr
    res = crawlkit("frontier", "next", "--state", str(old), "--max", "1000", "--per-host", "5")
    assert res.code == 0, res.stderr
    with open_state(old) as state:
        giver = Frontier.open(state.sub("frontier"))
        before, period = giver.sites, (giver.cycle_start, giver.cycle_number)
        used, linkers = before.get("late.example").used, before.get("late.example").linkers
    assert used == 5 and set(linkers or ()) == {"s0.example", "s1.example"}
    # grow the fleet until late.example moves to the newest shard
    shards = next(
        n for n in range(2, 64) if grow(SlotMap.load(the_map), n).shard_of_site("late.example") != 0
    )
    grown = grow(SlotMap.load(the_map), shards)
    grown.save(tmp_path / "grown.json")
    k = grown.shard_of_site("late.example")
    adopt_role(new, ShardRole(k, grown, tmp_path / "grown.json"))
    # an operator's block on the old owner, not applied yet: it moves with the sites
    assert crawlkit("frontier", "block", "--state", str(old), "late.example").code == 0
    res = crawlkit(
        "shard",
        "--map",
        str(tmp_path / "grown.json"),
        "--handoff-from",
        str(old),
        "--handoff-to",
        str(new),
    )
    assert res.code == 0, res.stderr
    with open_state(new) as state:
        receiver = Frontier.open(state.sub("frontier"))
        after = receiver.sites
    assert receiver.blocks == {"late.example"}
    assert after.get("late.example").linkers == linkers
    assert after.get("late.example").used == used
    # ... in the budget period it was used in: the new owner's first batch would have
    # started a period of its own and forgotten it (growing --workers 2 to 3 gave the
    # moved sites of a link farm a whole budget again, 66 more pages)
    assert period[0] is not None and (receiver.cycle_start, receiver.cycle_number) == period
    assert "handed over" in res.stderr and "what it knew of" in res.stderr


def test_deferred_urls_handed_to_a_new_shard_are_fetched_there(tmp_path: Path) -> None:
    """A shard stopped by --for leaves the rest of its batch in its waiting room,
    stamped with the slot's epoch of that time. Handed to the new owner after the map
    grew, they were dropped at its next batch as stale (older epoch, yet its own):
    lost. Found by test_rebalance_four_to_five_mid_crawl_loses_nothing under load."""
    with start_testweb(tmp_path, "--hosts", "6", "--pages", "6", "--special", "none") as web:
        hosts = web.hosts_of_kind("ordinary")
        seeds = tmp_path / "seeds.txt"
        seeds.write_text("".join(u + "\n" for h in hosts for u in h["allowed"]))
        the_map = tmp_path / "map.json"
        assert crawlkit("shard", "--shards", "1", "--save-map", str(the_map)).code == 0
        old, new = tmp_path / "shard-0", tmp_path / "shard-1"
        net = [
            "--scope",
            "any",
            "--allow-net",
            web.info["allow_net"],
            "--hosts-file",
            str(web.hosts_file),
            "--slot-map",
            str(the_map),
            "--json",
        ]
        # a 2 s gap and a 1 s run: one page a host, the rest of the batch deferred
        res = crawlkit(
            "crawl",
            str(seeds),
            "--state",
            str(old),
            "--shard",
            "0",
            *net,
            "--min-delay",
            "2s",
            "--for",
            "1s",
        )
        assert res.code == 0, res.stderr
        waiting = read_waiting(old / WAITING)
        assert waiting and all(r.get("shard_epoch") == 0 for r in waiting)
        res = crawlkit("shard", "--map", str(the_map), "--grow", "2", "--save-map", str(the_map))
        assert res.code == 0, res.stderr
        grown = SlotMap.load(the_map)
        adopt_role(new, ShardRole(1, grown, the_map))
        moved = [h for h in hosts if grown.shard_of_site(h["name"]) == 1]
        assert moved and any(grown.shard_of_site(str(r["site"])) == 1 for r in waiting)
        res = crawlkit(
            "shard", "--map", str(the_map), "--handoff-from", str(old), "--handoff-to", str(new)
        )
        assert res.code == 0, res.stderr
        roots = tmp_path / "roots.txt"  # the deferred pages reach shard 1 only by handoff
        roots.write_text("".join(h["root"] + "\n" for h in hosts))
        res = crawlkit(
            "crawl",
            str(roots),
            "--state",
            str(new),
            "--shard",
            "1",
            *net,
            "--min-delay",
            GAP,
            "--no-budgets",
        )
        assert res.code == 0, res.stderr
        assert orjson.loads(res.stdout)["stopped"] == "frontier empty"
    got = fetched_pages([old, new])
    for h in moved:
        for url in h["allowed"]:
            assert got[url.split("//", 1)[1].split("/", 1)[1] + "@" + h["name"]] >= 1, url
