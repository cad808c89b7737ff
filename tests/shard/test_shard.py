"""Sharding: deterministic slots, exact partition, slot maps."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit import streams
from crawlkit.errors import UsageError
from crawlkit.shard.slots import SlotMap, slot_of
from crawlkit.stages.shard import route_records


def test_slot_is_xxh3_of_site_mod_slots() -> None:
    assert slot_of("example.com", 4096) == xxhash.xxh3_64_intdigest(b"example.com") % 4096


def test_even_map_is_contiguous_and_balanced() -> None:
    m = SlotMap.even(5, 4096)
    assert m.owner == sorted(m.owner)
    sizes = Counter(m.owner)
    assert set(sizes) == set(range(5))
    assert max(sizes.values()) - min(sizes.values()) <= 1


def test_map_file_round_trip_and_validation(tmp_path: Path) -> None:
    m = SlotMap.even(3, 16)
    m.epoch[4] = 7
    m.save(tmp_path / "map.json")
    loaded = SlotMap.load(tmp_path / "map.json")
    assert loaded == m
    with pytest.raises(UsageError):
        SlotMap(2, [0, 1, 2])


sites = st.from_regex(r"[a-z]{1,8}\.(com|co\.uk|test|blogspot\.com)", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(st.lists(sites, max_size=200), st.integers(1, 9))
def test_routing_partitions_exactly(site_list: list[str], shards: int) -> None:
    records = [{"site": s, "i": i} for i, s in enumerate(site_list)]
    routed = list(route_records(records, SlotMap.even(shards, 64)))
    assert sorted(r["i"] for _, r in routed) == list(range(len(records)))  # none lost/doubled
    owner_of: dict[str, int] = {}
    for shard, rec in routed:
        assert owner_of.setdefault(rec["site"], shard) == shard  # a site has one owner


def test_cli_writes_every_shard_and_is_deterministic(tmp_path: Path, cli) -> None:
    urls = [f"http://h{i % 37}.site{i % 11}.co.uk/p/{i}" for i in range(2000)]
    data = b"".join(orjson.dumps({"url": u, "mine": i}) + b"\n" for i, u in enumerate(urls))
    data += b"garbage line\n" + orjson.dumps({"url": "mailto:x"}) + b"\n"
    inp = tmp_path / "in.ndjson"
    inp.write_bytes(data)
    outs = []
    for run in ("a", "b"):
        res = cli("shard", "--shards", "4", "--out-dir", str(tmp_path / run), str(inp))
        assert res.code == 0, res.stderr
        assert "2000 records to 4 shards" in res.stderr
        assert "in.ndjson:2001: not JSON" in res.stderr
        files = sorted((tmp_path / run).iterdir())
        assert [f.name for f in files] == [f"shard-{k}.ndjson.zst" for k in range(4)]
        outs.append([f.read_bytes() for f in files])
    assert outs[0] == outs[1]
    got = [
        r
        for k in range(4)
        for r in streams.read_records([tmp_path / "a" / f"shard-{k}.ndjson.zst"])
    ]
    assert sorted(r["mine"] for r in got) == list(range(2000))


def test_cli_which(cli) -> None:
    res = cli("shard", "--shards", "4", "--which", "https://news.bbc.co.uk/x")
    assert res.code == 0
    rec = orjson.loads(res.stdout)
    assert rec["site"] == "bbc.co.uk"
    assert rec["slot"] == slot_of("bbc.co.uk")
    assert rec["shard"] == rec["slot"] * 4 // 4096


def test_cli_usage_errors(cli) -> None:
    res = cli("shard", "--out-dir", "x")
    assert res.code == 2
    assert res.stderr.startswith("crawlkit shard: give --shards N or --slot-map FILE")


def test_cli_slot_map_and_its_hidden_old_name_map(cli, tmp_path) -> None:
    the_map = tmp_path / "map.json"
    assert cli("shard", "--shards", "3", "--save-map", str(the_map)).code == 0
    url = "https://news.bbc.co.uk/x"
    new = cli("shard", "--slot-map", str(the_map), "--which", url)
    old = cli("shard", "--map", str(the_map), "--which", url)
    assert new.code == old.code == 0
    assert orjson.loads(new.stdout) == orjson.loads(old.stdout)
    assert orjson.loads(new.stdout)["shard"] == slot_of("bbc.co.uk") * 3 // 4096
    other = tmp_path / "other.json"
    assert cli("shard", "--shards", "2", "--save-map", str(other)).code == 0
    both = cli("shard", "--slot-map", str(the_map), "--map", str(other), "--which", url)
    assert both.code == 2
    assert both.stderr.startswith("crawlkit shard: --map is the old name of --slot-map")
    helptext = cli("shard", "--help").stdout.decode()
    assert "--slot-map" in helptext and "--map " not in helptext
