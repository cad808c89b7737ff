"""dedup: the 20-table index against brute force, exact and near copies, state, sites."""

from __future__ import annotations

import json
import random
from pathlib import Path

import numpy as np
import pytest
from conftest import crawlkit
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.dedup.nearindex import TABLES, NearIndex, table_keys
from crawlkit.dedup.simhash import simhash
from crawlkit.dedup.store import ENTRY, DedupStore
from crawlkit.stages.dedup import dedup_records, site_records

VOCAB = [f"{a}{b}{c}{d}" for a in "bdfgklmnprst" for b in "aeiou" for c in "lnrst" for d in "aeo"]


def text(rng: random.Random, words: int) -> list[str]:
    return [rng.choice(VOCAB) for _ in range(words)]


def synthetic_pages(n: int, seed: int = 0) -> list[dict]:
    """Page records in near-duplicate families, shuffled.

    Half the families are texts with variants (a new timestamp, a changed word, an
    added sentence, a rewrite); half are simhash values with 0-6 bits flipped, so
    every distance around the threshold occurs. Some pages repeat a digest under
    another URL (exact copies) or under the same URL (a recrawl).
    """
    rng = random.Random(seed)
    pages: list[dict] = []
    family = 0
    while len(pages) < n:
        family += 1
        site = f"site{family % 37}.example"
        if family % 2:
            words = text(rng, rng.randint(150, 500))
            for v in range(rng.randint(1, 8)):
                w = list(words)
                change = v % 4
                if change == 1:
                    w[rng.randrange(len(w))] = rng.choice(VOCAB)
                elif change == 2:
                    w += text(rng, 8)
                elif change == 3 and rng.random() < 0.3:
                    w = text(rng, len(w))
                body = f"Updated {rng.randint(1, 28)} Nov 2026 {rng.randint(0, 23)}:00 " + " ".join(
                    w
                )
                pages.append(
                    {
                        "url": f"https://{site}/f{family}/v{v}",
                        "site": site,
                        "simhash": f"{simhash(body):016x}",
                        "digest": f"sha1:{hash(body)}",
                        "text_bytes": len(body),
                    }
                )
        else:
            base = rng.getrandbits(64)
            for v in range(rng.randint(1, 8)):
                value = base
                for bit in rng.sample(range(64), rng.choice((0, 1, 2, 3, 3, 4, 5, 6))):
                    value ^= 1 << bit
                pages.append(
                    {
                        "url": f"https://{site}/g{family}/v{v}",
                        "site": site,
                        "simhash": f"{value:016x}",
                        "digest": f"sha1:g{family}-{v}",
                        "text_bytes": 100,
                    }
                )
    pages = pages[:n]
    rng.shuffle(pages)
    for i in range(0, n, 97):  # exact copies under other URLs
        j = rng.randrange(n)
        pages[j] = dict(pages[i], url=pages[j]["url"], site=pages[j]["site"])
    for i in range(0, n, 211):  # recrawls of the same URL, unchanged
        pages.insert(rng.randrange(i, len(pages)), dict(pages[i]))
    return pages


def reference(pages: list[dict], k: int = 3) -> list[tuple[str, str | None, int | None]]:
    """The same decisions by brute force: every page compared with every stored one."""
    first_url: dict[str, str] = {}
    sims = np.zeros(len(pages), np.uint64)
    urls: list[str] = []
    out = []
    for page in pages:
        url, digest = page["url"], page["digest"]
        sh = int(page["simhash"], 16)
        eligible = page.get("text_bytes", 1) > 0
        kind, dup, dist = "unique", None, None
        self_seen = False
        if digest in first_url:
            if first_url[digest] != url:
                kind, dup, dist = "exact", first_url[digest], 0
            else:
                self_seen = True
        self_near = False
        if kind == "unique" and eligible and urls:
            d = np.bitwise_count(sims[: len(urls)] ^ np.uint64(sh))
            for idx in np.flatnonzero(d <= k)[np.argsort(d[d <= k], kind="stable")]:
                if urls[idx] == url:
                    self_near = True
                elif kind == "unique":
                    kind, dup, dist = "near", urls[idx], int(d[idx])
            if kind == "near":
                same = [i for i in np.flatnonzero(d <= k) if urls[i] == url]
                self_near = bool(same)
        if kind != "exact" and not self_seen:
            first_url.setdefault(digest, url)
            if kind == "unique" and eligible and not self_near:
                sims[len(urls)] = sh
                urls.append(url)
        out.append((kind, dup, dist))
    return out


def run(store_dir: Path, pages: list[dict], **kw) -> list[dict]:
    store = DedupStore(store_dir)
    try:
        return list(dedup_records((("t", i, p) for i, p in enumerate(pages)), store, **kw))
    finally:
        store.close()


def test_block_layout():
    assert len(TABLES) == 20
    keys = table_keys(np.array([0xFFFFFFFFFFFFFFFF, 0], dtype=np.uint64))
    assert keys.shape == (20, 2)
    assert (keys[:, 1] == 0).all()


def test_index_finds_exactly_the_brute_force_pairs():
    rng = np.random.default_rng(7)
    bases = rng.integers(0, 2**63, 1500, dtype=np.int64).astype(np.uint64) * np.uint64(2)
    values = []
    for b in bases:
        for _ in range(int(rng.integers(1, 12))):
            v = int(b)
            for bit in rng.choice(64, int(rng.integers(0, 7)), replace=False):
                v ^= 1 << int(bit)
            values.append(v)
    sims = np.array(values[:10_000], dtype=np.uint64)
    index = NearIndex()
    for start in range(0, len(sims), 700):  # many runs, merged as they grow
        index.add(np.arange(start, min(start + 700, len(sims))), sims)
    qi, ids, dist = index.within(sims, sims, 3)
    found = {(int(a), int(b), int(d)) for a, b, d in zip(qi, ids, dist, strict=True)}
    brute = set()
    for i in range(len(sims)):
        d = np.bitwise_count(sims ^ sims[i])
        brute |= {(i, int(j), int(d[j])) for j in np.flatnonzero(d <= 3)}
    assert found == brute
    assert sum(1 for a, b, _ in brute if a != b) > 5000  # the families really are close


def test_dedup_equals_brute_force_over_10000_pages(tmp_path):
    pages = synthetic_pages(10_000)
    expected = reference(pages)
    # Small chunks and commits, and a restart half way, exercise every path.
    half = len(pages) // 2
    out = run(tmp_path, pages[:half], chunk_size=500, commit_every=1500)
    out += run(tmp_path, pages[half:], chunk_size=733, commit_every=2000)
    assert len(out) == len(pages)  # invariant 1: one record per page
    got = [(r["kind"], r["dup_of"], r["distance"]) for r in out]
    assert got == expected
    kinds = {k for k, _, _ in got}
    assert kinds == {"unique", "exact", "near"}
    assert sum(1 for k, _, _ in got if k == "near") > 1000
    for record, page in zip(out, pages, strict=True):
        assert record["url"] == page["url"]
        assert record["dup_of"] != record["url"]


def test_exact_near_unique_and_self(tmp_path):
    body = " ".join(text(random.Random(1), 400))
    a = {
        "url": "http://a.example/1",
        "digest": "sha1:AAA",
        "simhash": f"{simhash(body):016x}",
        "text_bytes": 10,
    }
    b = dict(a, url="http://b.example/copy")
    c = dict(
        a, url="http://c.example/near", digest="sha1:CCC", simhash=f"{simhash(body) ^ 0b101:016x}"
    )
    d = dict(
        a, url="http://d.example/far", digest="sha1:DDD", simhash=f"{simhash(body) ^ 0b1111:016x}"
    )
    empty = {"url": "http://e.example/", "digest": "sha1:EEE", "simhash": "0" * 16, "text_bytes": 0}
    empty2 = dict(empty, url="http://e2.example/", digest="sha1:EEF")
    out = run(tmp_path, [a, b, c, d, dict(a), empty, empty2])
    assert [(r["kind"], r["dup_of"], r["distance"]) for r in out] == [
        ("unique", None, None),
        ("exact", "http://a.example/1", 0),
        ("near", "http://a.example/1", 2),
        ("unique", None, None),
        ("unique", None, None),  # the same URL again: never a copy of itself
        ("unique", None, None),
        ("unique", None, None),  # no text: exact copies only
    ]
    # A later run remembers: the copy is still a copy, the original still unique.
    out = run(tmp_path, [b, a, dict(c, digest="sha1:NEW")])
    assert [(r["kind"], r["dup_of"]) for r in out] == [
        ("exact", "http://a.example/1"),
        ("unique", None),
        ("near", "http://a.example/1"),
    ]


def test_crash_leftovers_are_cut_off(tmp_path):
    pages = synthetic_pages(300, seed=3)
    first = run(tmp_path, pages)
    with open(tmp_path / "pages.bin", "ab") as f:  # a crash after appending
        f.write(b"\x01" * (ENTRY.itemsize * 5 + 3))
    with open(tmp_path / "urls.bin", "ab") as f:
        f.write(b"http://half-written")
    again = run(tmp_path, pages)
    assert [r["kind"] for r in again] == [
        "exact" if r["kind"] == "exact" else ("near" if r["kind"] == "near" else "unique")
        for r in first
    ]
    assert (tmp_path / "pages.bin").stat().st_size % ENTRY.itemsize == 0


def test_site_counts(tmp_path):
    store = DedupStore(tmp_path, window=4)
    recs = [
        {
            "url": f"http://s.example/{i}",
            "digest": f"d{i % 2}",
            "simhash": f"{i:016x}",
            "text_bytes": 0,
        }
        for i in range(6)
    ]
    list(dedup_records((("t", i, r) for i, r in enumerate(recs)), store))
    # 6 pages, 4 exact copies; at 8 = 2 * window the counts would halve.
    assert list(site_records(store, ["s.example"])) == [
        {"site": "s.example", "pages": 6, "exact": 4, "near": 0, "yield": 0.6667}
    ]
    list(dedup_records((("t", i, r) for i, r in enumerate(recs[:2])), store))
    assert store.sites["s.example"] == [4, 2, 0]  # 8 pages, 4 copies, halved
    store.close()


def test_site_counts_are_journalled_between_whole_copies(tmp_path):
    """A commit writes the sites it changed, not all of them; reopened, the counts are
    the same; once the journal holds as many entries as there are sites, a whole copy
    replaces it."""
    store = DedupStore(tmp_path)
    for i in range(100):
        store.count_site(f"s{i}.example", "unique")
    store.commit()  # the first commit: a whole copy
    files = {p.name for p in tmp_path.iterdir()}
    assert "sites.1.json" in files and not any(n.startswith("sites-journal") for n in files)
    for round_ in range(3):  # each commit changes 30 of the 100 sites
        for i in range(30):
            store.count_site(f"s{i}.example", "exact" if round_ else "near")
        store.count_site(f"new{round_}.example", "unique")
        store.commit()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["sites_generation"] == 1 and manifest["sites_journal"] == [2, 3, 4]
    assert json.loads((tmp_path / "sites-journal.3.json").read_text()) == {
        **{f"s{i}.example": [3, 1, 1] for i in range(30)},
        "new1.example": [1, 0, 0],
    }
    store.commit()  # nothing changed: nothing written
    assert json.loads((tmp_path / "manifest.json").read_text())["sites_journal"] == [2, 3, 4]
    expected = {site: list(c) for site, c in store.sites.items()}
    store.close()
    store = DedupStore(tmp_path)
    assert store.sites == expected
    for i in range(30):  # 93 + 31 entries > 103 sites: a whole copy instead
        store.count_site(f"s{i}.example", "unique")
    store.count_site("new3.example", "unique")
    store.commit()
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["sites_generation"] == 5 and manifest["sites_journal"] == []
    expected = {site: list(c) for site, c in store.sites.items()}
    store.close()
    names = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("sites"))
    assert names == ["sites.5.json"]  # the old copy and its journal are gone
    store = DedupStore(tmp_path)
    assert store.sites == expected and store.sites["s0.example"] == [5, 2, 1]
    store.close()


def test_cli(tmp_path):
    body = " ".join(text(random.Random(2), 300))
    pages = [
        {
            "url": "http://a.example/x",
            "site": "a.example",
            "digest": "sha1:1",
            "simhash": f"{simhash(body):016x}",
            "text_bytes": 5,
        },
        {
            "url": "http://b.example/y",
            "site": "b.example",
            "digest": "sha1:1",
            "simhash": f"{simhash(body):016x}",
            "text_bytes": 5,
        },
        {
            "url": "http://a.example/z",
            "site": "a.example",
            "digest": "sha1:2",
            "simhash": f"{simhash(body + ' Updated Monday 12:00'):016x}",
            "text_bytes": 5,
        },
        {"no_url": True},
    ]
    inp = tmp_path / "pages.ndjson"
    inp.write_text("".join(json.dumps(p) + "\n" for p in pages) + "not json\n")
    sites = tmp_path / "sites.ndjson"
    state = tmp_path / "S"
    res = crawlkit("dedup", "--state", str(state), str(inp), "--sites", str(sites))
    assert res.code == 0, res.stderr
    out = [json.loads(x) for x in res.lines]
    assert [(r["kind"], r["dup_of"], r["distance"]) for r in out] == [
        ("unique", None, None),
        ("exact", "http://a.example/x", 0),
        ("near", "http://a.example/x", 0),
    ]
    assert "pages.ndjson:4" in res.stderr and "pages.ndjson:5" in res.stderr
    assert [json.loads(x) for x in sites.read_text().splitlines()] == [
        {"site": "a.example", "pages": 2, "exact": 0, "near": 1, "yield": 0.5},
        {"site": "b.example", "pages": 1, "exact": 1, "near": 0, "yield": 1.0},
    ]
    assert (state / "dedup" / "manifest.json").exists()
    # Pipe in from stdin; the state remembers the first run.
    res = crawlkit("dedup", "--state", str(state), input=inp.read_bytes()[:200])
    assert json.loads(res.lines[0])["kind"] == "unique"  # the same URL: not a copy of itself
    res = crawlkit("dedup", "--state", str(state), "--out", "-", "--sites", "-", str(inp))
    assert res.code == 2


def test_link_and_fetch_records_are_not_taken_for_pages(tmp_path):
    """Fed the wrong file, dedup stored every link as a unique page of its site, and
    the site records it wrote (yields, which set the frontier's budgets) counted them."""
    link = {"url": "http://a.example/l", "site": "a.example", "from": "http://a.example/"}
    link["reason"] = "link"
    fetch = {"url": "http://a.example/f", "site": "a.example", "outcome": "fetched"}
    fetch["digest"] = "sha1:F"
    page = {"url": "http://a.example/p", "site": "a.example", "digest": "sha1:P"}
    inp = tmp_path / "in.ndjson"
    inp.write_text("".join(json.dumps(r) + "\n" for r in (link, fetch, page)))
    sites = tmp_path / "sites.ndjson"
    res = crawlkit("dedup", "--state", str(tmp_path / "S"), str(inp), "--sites", str(sites))
    assert res.code == 0, res.stderr
    assert [json.loads(x)["url"] for x in res.lines] == ["http://a.example/p"]
    assert "in.ndjson:1: a link or URL record" in res.stderr
    assert "in.ndjson:2: a fetch record" in res.stderr
    assert json.loads(sites.read_text())["pages"] == 1


def test_locked_state(tmp_path):
    from crawlkit.state import open_state

    with open_state(tmp_path / "S" / "dedup"):
        res = crawlkit("dedup", "--state", str(tmp_path / "S"), input=b"")
    assert res.code == 1
    assert "in use" in res.stderr


def test_damaged_manifest(tmp_path):
    (tmp_path / "S" / "dedup").mkdir(parents=True)
    (tmp_path / "S" / "dedup" / "manifest.json").write_text("{broken")
    res = crawlkit("dedup", "--state", str(tmp_path / "S"), input=b"")
    assert res.code == 1
    assert "damaged" in res.stderr and len(res.stderr.splitlines()) == 1


@pytest.mark.parametrize("bad", ["xyz", "1234567890abcdef0", 12])
def test_bad_simhash_is_exact_only(tmp_path, bad):
    out = run(tmp_path, [{"url": "http://a/", "digest": "d", "simhash": bad}])
    assert out[0]["kind"] == "unique"


def test_testweb_corpus_index_equals_brute_force(tmp_path):
    """10,000 testweb pages plus its near-duplicate host: index and brute force agree."""
    from selectolax.lexbor import LexborHTMLParser

    from crawlkit.html.page import BOILERPLATE_TAGS
    from crawlkit.testweb import special_duplicates, specials
    from crawlkit.testweb.graph import WebConfig, build_web
    from crawlkit.testweb.model import Request
    from crawlkit.testweb.pages import page_path, render_page

    def visible_simhash(body: bytes) -> str:
        tree = LexborHTMLParser(body)
        tree.strip_tags(BOILERPLATE_TAGS)
        return f"{simhash(tree.body.text(separator=' ')):016x}"

    web = build_web(WebConfig(hosts=100, pages=100, page_kb=2, specials={"near-duplicates": 1}))
    pages = []
    for host in web.hosts:
        for p in range(host.pages if host.kind == "ordinary" else 0):
            body = render_page(web, host, p, 8080)
            pages.append(
                {
                    "url": f"http://{host.name}:8080{page_path(p)}",
                    "site": host.name,
                    "digest": str(hash(body)),
                    "simhash": visible_simhash(body),
                }
            )
    near_host = next(h for h in web.hosts if h.kind == "near-duplicates")

    class Clock:
        state_by_host: dict = {}  # noqa: RUF012
        t = 1_780_000_000.0

        def state(self, name):
            return self.state_by_host.setdefault(name, {})

        def now(self):
            self.t += 3607.0
            return self.t

    ctx = Clock()
    near_urls = []
    for k in range(special_duplicates.NEAR_DUP_PAGES):
        for _ in range(3):  # recrawls: a new timestamp and another ad each time
            path = f"/news/{k}.html"
            req = Request("GET", path, path, "", near_host.name, {}, "127.0.0.1", 8080, 1, 0.0)
            body = specials.handle(ctx, web, near_host, req).body
            url = f"http://{near_host.name}:8080{path}?v={len(near_urls)}"
            near_urls.append(url)
            pages.append(
                {
                    "url": url,
                    "site": near_host.name,
                    "digest": str(hash(body)),
                    "simhash": visible_simhash(body),
                }
            )
    assert len(pages) >= 10_000
    out = run(tmp_path, pages, chunk_size=2048)
    assert [(r["kind"], r["dup_of"], r["distance"]) for r in out] == reference(pages)
    kinds = {r["url"]: r["kind"] for r in out}
    assert sum(kinds[u] == "near" for u in near_urls) == len(near_urls) - 1  # all but the first

    sims = np.array([int(p["simhash"], 16) for p in pages], dtype=np.uint64)
    index = NearIndex()
    index.add(np.arange(len(sims)), sims)
    qi, ids, _ = index.within(sims, sims, 3)
    found = {(int(a), int(b)) for a, b in zip(qi, ids, strict=True) if a != b}
    brute = set()
    for i in range(len(sims)):
        close = np.flatnonzero(np.bitwise_count(sims ^ sims[i]) <= 3)
        brute |= {(i, int(j)) for j in close if j != i}
    assert found == brute
    assert len(brute) >= 2 * (len(near_urls) - 1)


_URLS = [f"http://s{i % 3}.example/{i}" for i in range(8)]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(_URLS),
            st.sampled_from(["d1", "d2", "d3", "d4", None]),
            st.sampled_from([0, 1, 3, 7, 0xFF, 1 << 63, (1 << 63) | 1, None]),
            st.sampled_from([0, 50]),
        ),
        max_size=40,
    ),
    st.integers(1, 7),
)
def test_dedup_properties(tmp_path_factory, rows, chunk_size):
    """One record per page, in order; a copy always names another, earlier URL."""
    pages = []
    for url, digest, sh, text_bytes in rows:
        page = {"url": url, "text_bytes": text_bytes}
        if digest is not None:
            page["digest"] = digest
        if sh is not None:
            page["simhash"] = f"{sh:016x}"
        pages.append(page)
    out = run(tmp_path_factory.mktemp("d"), pages, chunk_size=chunk_size)
    assert [r["url"] for r in out] == [p["url"] for p in pages]
    seen_digests: dict[str, str] = {}
    seen_urls: list[str] = []
    for page, record in zip(pages, out, strict=True):
        if record["kind"] == "exact":
            assert record["dup_of"] != page["url"]
            assert seen_digests.get(page["digest"]) == record["dup_of"]
        elif record["kind"] == "near":
            assert record["dup_of"] != page["url"] and record["dup_of"] in seen_urls
            assert 0 <= record["distance"] <= 3
            assert page["text_bytes"] > 0
        else:
            assert record["dup_of"] is None and record["distance"] is None
        if "digest" in page:
            seen_digests.setdefault(page["digest"], page["url"])
        seen_urls.append(page["url"])


def test_table_snapshots_across_restarts(tmp_path, monkeypatch):
    """With snapshots written often, runs that reopen the state still equal brute force."""
    import crawlkit.dedup.store as ds

    monkeypatch.setattr(ds, "SNAPSHOT_MIN", 300)
    pages = synthetic_pages(4000, seed=11)
    out = []
    for start in range(0, len(pages), 900):
        out += run(tmp_path, pages[start : start + 900], chunk_size=256, commit_every=400)
        snapshots = sorted(p.name for p in tmp_path.glob("tables.*.bin"))
        assert len(snapshots) == 1, snapshots
    assert [(r["kind"], r["dup_of"], r["distance"]) for r in out] == reference(pages)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert 0 < manifest["tables_pages"] <= manifest["pages"]
    # A damaged snapshot is a clear state error, not a silent rebuild.
    (tmp_path / snapshots[0]).write_bytes(b"short")
    with pytest.raises(ds.StateError, match="table snapshot"):
        DedupStore(tmp_path)


def test_a_snapshot_of_the_20_table_layout_is_rebuilt_then_replaced(tmp_path, monkeypatch):
    """A state whose table snapshot has the older layout (20 tables of keys and ids, no
    ``tables_layout`` in the manifest) opens with its index rebuilt from the log, gives
    the same records as brute force, keeps the old file until a new snapshot replaces
    it, and then names only the new one (10 tables of ids: 40 bytes a row)."""
    import crawlkit.dedup.store as ds

    monkeypatch.setattr(ds, "SNAPSHOT_MIN", 300)
    pages = synthetic_pages(3000, seed=5)
    out = run(tmp_path, pages[:1000], chunk_size=256, commit_every=400)
    manifest_path = tmp_path / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    assert manifest["tables_layout"] == 2 and manifest["tables_rows"] > 0
    old = tmp_path / f"tables.{manifest['tables_generation']}.bin"
    old.write_bytes(b"\x00" * (2 * 20 * 4 * manifest["tables_rows"]))  # unreadable as ids
    del manifest["tables_layout"]
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")

    store = DedupStore(tmp_path)  # opens: the old snapshot is not read
    assert len(store.near) == manifest["tables_rows"]
    store.close()
    assert old.exists()  # still what the committed manifest names
    out += run(tmp_path, pages[1000:], chunk_size=256, commit_every=400)
    assert [(r["kind"], r["dup_of"], r["distance"]) for r in out] == reference(pages)
    manifest = json.loads(manifest_path.read_text())
    assert manifest["tables_layout"] == 2
    snapshots = sorted(p.name for p in tmp_path.glob("tables.*.bin"))
    assert snapshots == [f"tables.{manifest['tables_generation']}.bin"] != [old.name]
    assert (tmp_path / snapshots[0]).stat().st_size == 10 * 4 * manifest["tables_rows"]


def test_an_old_layout_state_opens_and_is_migrated(tmp_path):
    """A dedup directory as an older crawlkit wrote it (``MANIFEST.json``), byte by byte,
    with the debris a crash of that version could leave: it opens, its pages are still
    known, the manifest is renamed to ``manifest.json`` and the debris is gone."""
    import struct

    import xxhash

    from crawlkit.url import fingerprint_int

    body = " ".join(text(random.Random(5), 300))
    sh = simhash(body)
    old_pages = [("http://a.example/1", "sha1:AAA", sh), ("http://b.example/2", "sha1:BBB", ~sh)]
    entries, urls = b"", b""
    for url, digest, value in old_pages:
        d64 = xxhash.xxh3_64_intdigest(digest.encode())
        data = url.encode()
        # simhash, digest hash, URL fingerprint, URL offset, URL length, flags (1: indexed)
        entries += struct.pack(
            "<QQQQII", value & (2**64 - 1), d64, fingerprint_int(url), len(urls), len(data), 1
        )
        urls += data
    d = tmp_path / "S" / "dedup"
    d.mkdir(parents=True)
    (d / "pages.bin").write_bytes(entries + b"\x07" * 11)  # a torn append after the commit
    (d / "urls.bin").write_bytes(urls)
    (d / "sites.1.json").write_bytes(b'{"a.example":[1,0,0],"b.example":[1,0,0]}')
    old_manifest = (
        b'{\n  "version": 1,\n  "pages": 2,\n  "url_bytes": %d,\n  "sites_generation": 1,\n'
        b'  "tables_generation": 0,\n  "tables_pages": 0,\n  "tables_rows": 0\n}\n' % len(urls)
    )
    (d / "MANIFEST.json").write_bytes(old_manifest)
    debris = ["tables.3.bin", "sites.9.json", ".MANIFEST.json.x1y2.tmp", ".tables.4.bin.tmp"]
    for name in debris:
        (d / name).write_bytes(b"left by a crash")

    pages = [
        {
            "url": "http://c.example/copy",
            "digest": "sha1:AAA",
            "simhash": f"{sh:016x}",
            "text_bytes": 10,
        },
        {
            "url": "http://d.example/near",
            "digest": "sha1:DDD",
            "simhash": f"{sh ^ 0b11:016x}",
            "text_bytes": 10,
        },
        {
            "url": "http://a.example/1",
            "digest": "sha1:AAA",
            "simhash": f"{sh:016x}",
            "text_bytes": 10,
        },
    ]
    res = crawlkit(
        "dedup",
        "--state",
        str(tmp_path / "S"),
        input="".join(json.dumps(p) + "\n" for p in pages).encode(),
    )
    assert res.code == 0, res.stderr
    assert [(r["kind"], r["dup_of"]) for r in map(json.loads, res.lines)] == [
        ("exact", "http://a.example/1"),
        ("near", "http://a.example/1"),
        ("unique", None),  # the same URL again
    ]
    names = {p.name for p in d.iterdir()}
    assert "MANIFEST.json" not in names and "manifest.json" in names
    assert not names & set(debris)
    manifest = json.loads((d / "manifest.json").read_text())
    # the old site counts stay, with this run's changes in a journal over them
    assert manifest["pages"] > 2 and manifest["sites_generation"] == 1
    assert manifest["sites_journal"] == [2]
    assert (d / "pages.bin").stat().st_size == manifest["pages"] * ENTRY.itemsize
    store = DedupStore(d)  # and the migrated state opens again, with the old site counts
    try:
        assert store.sites["b.example"] == [1, 0, 0] and store.sites["c.example"] == [1, 1, 0]
        assert store.url_of(0) == "http://a.example/1" and store.url_of(1) == "http://b.example/2"
    finally:
        store.close()


def test_pages_with_no_word_that_counts_are_checked_for_exact_copies_only(tmp_path):
    # A table of prices and a page that says only a date have no word left (digits and
    # date words do not count): simhash 0, like an empty page. They were near copies of
    # each other, across sites, and raised the sites' yields.
    from crawlkit.dedup.simhash import simhash_hex

    texts = ["12,99 4.50 17 % 3.20 / 8.75", "Monday, 5 May 2025 10:30 am", "1 2 3 4 5 6 7 8 9"]
    pages = [
        {
            "url": f"http://s{i}.test/p",
            "site": f"s{i}.test",
            "digest": f"d{i}",
            "simhash": simhash_hex(t),
            "text_bytes": len(t),
        }
        for i, t in enumerate(texts)
    ]
    assert {p["simhash"] for p in pages} == {"0000000000000000"}
    out = run(tmp_path / "store", pages)
    assert [r["kind"] for r in out] == ["unique", "unique", "unique"]


def test_head_closing_stdout_says_sites_were_not_written(tmp_path):
    """`dedup --sites F | head -1` ended 0 and quiet with F never written (it is
    written after the records); as `extract --links L | head -1`, the command says so
    and exits 1. The store is not committed either, so a rerun does the same work."""
    import subprocess
    import sys

    inp = tmp_path / "pages.ndjson"
    inp.write_text("".join(json.dumps(p) + "\n" for p in synthetic_pages(3000)))
    state, sites = tmp_path / "S", tmp_path / "sites.ndjson"
    cmd = f"{sys.executable} -m crawlkit dedup --state {state} {inp} --sites {sites}"
    proc = subprocess.run(
        ["bash", "-c", f"{cmd} | head -1 >/dev/null; exit ${{PIPESTATUS[0]}}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    assert proc.stderr.splitlines() == [
        f"crawlkit dedup: standard output was closed before the end; not written: {sites}"
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["S", "pages.ndjson"]
    again = crawlkit("dedup", "--state", str(state), str(inp), "--sites", str(sites))
    fresh = crawlkit("dedup", "--state", str(tmp_path / "fresh"), str(inp))
    assert again.code == 0 and again.lines == fresh.lines  # nothing taken as seen before
