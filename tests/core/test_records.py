"""The records of docs/design.md as typed definitions: field names, types, constructors, wire.

Each constructor's output is checked against its TypedDict (every key declared, every
value of the declared type), the TypedDicts against docs/design.md's field lists, and a
record of each kind goes through the NDJSON writer and reader unchanged.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from crawlkit import records, streams
from crawlkit.records import (
    CanonRecord,
    DedupRecord,
    FetchRecord,
    LinkRecord,
    PageRecord,
    RecrawlRecord,
    Refusal,
    URLRecord,
    WhereRecord,
)
from crawlkit.url import Canonicalizer

PARSED = Canonicalizer().parse("HTTP://Example.COM:80/a/../b?x=1#frag")

# docs/design.md "Records", field by field.
DESIGN_URL = {"url", "host", "site", "fp", "depth", "priority", "reason", "via", "lastmod", "due"}
DESIGN_FETCH = {
    "url",
    "status",
    "outcome",
    "fetched_at",
    "elapsed_ms",
    "ip",
    "bytes",
    "content_type",
    "etag",
    "last_modified",
    "digest",
    "location",
    "warc",
    "error",
}
DESIGN_PAGE = {
    "url",
    "digest",
    "simhash",
    "title",
    "canonical",
    "noindex",
    "nofollow",
    "links",
    "text_bytes",
}
DESIGN_LINK = DESIGN_URL | {"from", "nofollow"}


def _hints(cls: Any) -> dict[str, Any]:
    return typing.get_type_hints(cls, globalns=vars(records))


def _matches(value: Any, hint: Any) -> bool:
    """Whether ``value`` (as read back from JSON) is of the declared type ``hint``."""
    origin = typing.get_origin(hint)
    if origin is typing.Required or origin is typing.NotRequired:
        return _matches(value, typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if origin is typing.Literal:
        return value in typing.get_args(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, float)  # a hint is a JSON float, never an int
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if typing.is_typeddict(hint):
        return isinstance(value, dict) and _conforms(value, hint)
    return isinstance(value, hint)


def _conforms(record: dict[str, Any], cls: Any) -> bool:
    hints = _hints(cls)
    unknown = set(record) - set(hints)
    assert not unknown, f"{cls.__name__} does not declare {unknown}"
    wrong = {k: v for k, v in record.items() if not _matches(v, hints[k])}
    assert not wrong, f"{cls.__name__}: values of the wrong type {wrong}"
    missing = cls.__required_keys__ - set(record)
    assert not missing, f"{cls.__name__}: required {missing} missing"
    return True


def test_typed_definitions_have_every_field_design_md_names() -> None:
    assert set(_hints(URLRecord)) >= DESIGN_URL
    assert set(_hints(FetchRecord)) >= DESIGN_FETCH
    assert set(_hints(PageRecord)) >= DESIGN_PAGE
    assert set(_hints(LinkRecord)) >= DESIGN_LINK
    assert set(_hints(records.WarcLocation)) == {"file", "offset", "length"}


def test_every_field_is_documented_once_in_the_module() -> None:
    """Each declared field has a ``#:`` line saying what it means (and its unit)."""
    documented: set[str] = set()
    for cls in (
        URLRecord,
        FetchRecord,
        PageRecord,
        RecrawlRecord,
        DedupRecord,
        CanonRecord,
        WhereRecord,
        Refusal,
        records.WarcLocation,
    ):
        body = inspect.getsource(cls).splitlines()[1:]
        fields = [ln.strip() for ln in body if re.match(r"\s+\w+: ", ln)]
        assert fields, cls.__name__
        for line in fields:
            assert re.search(r"#: \S", line), f"{cls.__name__}: {line}"
            documented.add(line.split(":")[0])
    functional = inspect.getsource(records).split("TypedDict(")[1:]
    for block in functional:  # "from" and "yield" are keywords: commented dict entries
        for line in block.split("\n)")[0].splitlines():
            if re.match(r'\s+"\w+": ', line):
                assert "# " in line, line
                documented.add(line.split('"')[1])
    declared = {name for cls in (LinkRecord, records.SiteYieldRecord) for name in _hints(cls)}
    assert declared <= documented


def _samples() -> list[tuple[dict[str, Any], Any]]:
    url = records.url_record(PARSED, depth=0, priority=0.8, reason="sitemap")
    link = {
        **records.url_record(PARSED, depth=2, reason="link"),
        **records.link_fields(
            depth=2, priority=0.333333, reason="link", source="http://example.com/", nofollow=True
        ),
        "tag": "a",
    }
    fetch = records.fetch_record(
        {**url, "etag": '"v1"'},
        PARSED.url,
        "error",
        fetched_at="2026-12-01T12:00:00Z",
        elapsed_ms=12.5,
        ip="127.0.0.1",
        error="tls-expired: certificate has expired",
    )
    page = records.page_record(
        PARSED,
        depth=1,
        status=200,
        fetched_at="2026-12-01T12:00:00Z",
        content_type="text/html",
        charset="utf-8",
        digest="sha1:ABC",
        simhash=0xABC,
        title="T",
        canonical=None,
        noindex=False,
        nofollow=False,
        links=3,
        requisites=1,
        text_bytes=120,
    )
    recrawl = records.recrawl_record(
        url=PARSED.url,
        host=PARSED.host,
        site=None,
        fp=PARSED.fp,
        depth=1,
        importance=1,
        due="2026-12-02T00:00:00Z",
        interval=3600.0,
        etag=None,
        last_modified=None,
        last_fetch="2026-12-01T12:00:00Z",
        changes=1,
        checks=2,
    )
    dedup = records.dedup_record(
        url=PARSED.url,
        kind="near",
        dup_of="http://example.com/c",
        distance=2,
        site=PARSED.site,
        fp=PARSED.fp,
        digest="sha1:ABC",
        simhash="0000000000000abc",
    )
    return [
        (dict(url), URLRecord),
        (link, LinkRecord),
        (dict(fetch), FetchRecord),
        (dict(page), PageRecord),
        (dict(recrawl), RecrawlRecord),
        (dict(dedup), DedupRecord),
        (dict(records.refusal(url, "blocked", "operator block")), Refusal),
        (dict(records.canon_record("x y", None, "bad URL")), CanonRecord),
        (dict(records.canon_record("http://example.com/b", PARSED)), CanonRecord),
        (dict(records.where_record(PARSED.url, PARSED.site, 7, 1, 3)), WhereRecord),
    ]


@pytest.mark.parametrize("index", range(len(_samples())))
def test_constructors_build_what_their_type_declares(index: int) -> None:
    record, cls = _samples()[index]
    assert _conforms(record, cls)


def test_url_record_keys_come_in_the_order_stages_write_them() -> None:
    rec = records.url_record(PARSED, depth=0, priority=1.0, reason="seed")
    assert list(rec) == ["url", "host", "site", "fp", "depth", "priority", "reason"]
    assert rec["url"] == "http://example.com/b?x=1" and len(rec["fp"]) == 16
    no_hint = records.url_record(PARSED, depth=0, reason="sitemap")
    assert list(no_hint) == ["url", "host", "site", "fp", "depth", "reason"]
    bare = records.url_record(PARSED, depth=None, reason="redirect")
    assert list(bare) == ["url", "host", "site", "fp", "reason"]


def test_fetch_record_sets_every_fetch_field_and_classifies_the_error() -> None:
    old = {
        "url": "http://a.com/",
        "depth": 3,
        "mine": [1],
        "error_code": "dns-nxdomain",
        "tls_unverified": "tls-expired",
        "etag": '"e"',
    }
    rec = records.fetch_record(old, "http://a.com/", "error", error="tls-expired: expired")
    assert rec["mine"] == [1] and rec["depth"] == 3  # unknown fields pass through
    assert set(rec) >= DESIGN_FETCH
    assert rec["etag"] == '"e"' and rec["error_code"] == "tls-expired"
    assert "tls_unverified" not in rec
    fine = records.fetch_record(old, "http://a.com/", "fetched", status=200)
    assert "error_code" not in fine and fine["status"] == 200


def test_fetch_refusal_has_the_refusal_fields_and_the_fetch_records_error() -> None:
    rec = records.fetch_refusal(
        {"url": "http://a.com/", "depth": 1},
        "http://a.com/",
        "duplicate",
        "the same URL is already queued",
    )
    assert (rec["outcome"], rec["refused"]) == ("refused", "duplicate")
    assert rec["detail"] == rec["error"] == "the same URL is already queued"
    assert set(rec) >= DESIGN_FETCH and rec["depth"] == 1
    assert _conforms(dict(rec), FetchRecord)


def test_refusal_writes_code_and_detail_and_readers_accept_error() -> None:
    rec = records.refusal({"url": "http://a.com/"}, "blocked", "operator block")
    assert (rec["outcome"], rec["refused"], rec["detail"]) == (
        "refused",
        "blocked",
        "operator block",
    )
    assert records.refusal_reason(rec) == "blocked"
    assert records.refusal_detail(rec) == "operator block"
    old_fetcher = {"url": "http://a.com/", "outcome": "refused", "error": "address refused"}
    assert records.refusal_reason(old_fetcher) == "address refused"
    assert records.refusal_detail(old_fetcher) == "address refused"
    assert records.refusal_detail({"url": "x", "outcome": "refused"}) is None


def test_priority_importance_and_level_are_told_apart() -> None:
    assert [records.importance_priority(i) for i in range(4)] == [1.0, 0.75, 0.5, 0.25]
    assert records.queue_level({"level": 1, "priority": 0.5}) == 1
    assert records.queue_level({"priority": 2}) == 2  # the frontier's old spelling
    assert records.queue_level({"priority": 1.0}) is None  # a finder's hint, not a level
    assert records.queue_level({"priority": True}) is None
    assert records.importance_of({"importance": 3, "priority": 0}) == 3
    assert records.importance_of({"priority": 0}) == 0
    assert records.importance_of({"priority": 0.5}) is None


@pytest.mark.parametrize("suffix", ["", ".zst"])
def test_records_round_trip_through_ndjson(tmp_path: Path, suffix: str) -> None:
    samples = [record for record, _ in _samples()]
    path = tmp_path / f"records.ndjson{suffix}"
    with streams.open_output(path) as out:
        assert out.write_records(samples) == len(samples)
    back = list(streams.read_records([path]))
    assert back == samples
    assert [list(r) for r in back] == [list(r) for r in samples]  # key order kept
    for (_, cls), record in zip(_samples(), back, strict=True):
        assert _conforms(record, cls)
