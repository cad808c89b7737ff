"""The archivist's part of a crawl report: what the collection holds and how it was made.

:func:`record_settings` is called by ``crawlkit crawl`` at the start of every run: it
keeps the seeds and the effective settings in ``STATE/crawl/settings.json``.
:func:`collection_section` reads them back with the fetch logs, the refusals and the
WARC directory, and returns the ``collection`` section of ``crawlkit report``:

* ``seeds`` (every run's, in order, once each) and ``settings`` (the last run's
  effective options, every default spelled out) and ``runs``; ``robots_ignored_for``,
  the hosts whose robots.txt rules the operator set aside (``--ignore-robots-for``);
* ``mime_types``: fetched responses by media type, with counts and bytes;
* ``statuses`` and ``problems`` (fetch outcomes other than fetched, not-modified and
  redirect, and redirects that lead nowhere, by outcome and error; responses kept
  cut, by why: ``truncated: length`` past a size cap, ``time`` past the timeout,
  ``disconnect`` a body the server broke off; refusals by reason), each with up to
  ``examples`` URLs;
* ``requisites``: how many page requisites were fetched, and those missing (an
  error status, a failed fetch, robots.txt, a refusal), with why;
* ``warc_files``: name, bytes and SHA-256 of each WARC file (hashes are kept in
  ``WARC_DIR/indexes/NAME.sha256`` once computed: WARC files do not change once
  closed), and the CDXJ index beside them; ``warc_new_files``: name, bytes and
  whether it is still open of each file not yet moved in from ``WARC_DIR/new`` (being
  written, or left there by a stop: the next run of the crawl cuts an open one back
  to its last whole record, closes it and moves it in), not hashed;
* ``audit``: the politeness audit (:mod:`crawlkit.stages.audit`) of the crawl's own fetch
  log, with the run's minimum gap: the proof, carried with the collection, that it
  was gathered politely.

Reads only; takes no lock.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from crawlkit import streams
from crawlkit.diag import NullReporter, Reporter
from crawlkit.errors import InvalidURL
from crawlkit.fetch.config import FetchConfig, robots_field
from crawlkit.html.page import media_type
from crawlkit.masking import mask_secrets
from crawlkit.records import Record, refusal_reason
from crawlkit.stages.audit import AuditConfig, run_audit
from crawlkit.times import iso
from crawlkit.url import Canonicalizer
from crawlkit.warc.places import warc_new_dir

__all__ = [
    "collection_section",
    "record_settings",
    "settings_of",
    "warc_files_of",
    "warc_new_files_of",
    "warcinfo_fields",
]

_OK_OUTCOMES = frozenset({"fetched", "not-modified", "redirect"})


def _plain(value: Any) -> Any:
    """``value`` as JSON-safe data (dataclasses, paths, tuples and sets unfolded)."""
    if hasattr(value, "to_json") and not isinstance(value, type):
        return _plain(value.to_json())  # objects that know what may be shown (no secrets)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        # sorted: a set's order changes with each process's string hashing, and the
        # same settings must read the same in every file's warcinfo
        return sorted((_plain(v) for v in value), key=repr)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def record_settings(state_path: str | os.PathLike[str], seeds: list[str], options: Any) -> None:
    """Add this run's seeds and effective options to ``STATE/crawl/settings.json``."""
    path = Path(state_path) / "crawl" / "settings.json"
    data: dict[str, Any] = streams.read_json(path) if path.exists() else {}
    known = list(data.get("seeds", []))
    known += [s for s in (x.strip() for x in seeds) if s and s not in known]
    data["seeds"] = known
    data["runs"] = int(data.get("runs", 0)) + 1
    data["settings"] = mask_secrets(_plain(options))
    warc_dir = getattr(options, "warc_dir", None) or Path(state_path) / "warc"
    data["warc_dir"] = str(Path(warc_dir).resolve())
    data["started"] = iso(time.time())
    path.parent.mkdir(parents=True, exist_ok=True)
    streams.atomic_write_json(path, data, mode=0o600)  # it names hosts with credentials


def warcinfo_fields(options: Any) -> dict[str, str]:
    """The warcinfo fields that say how a crawl's WARC files were made, beside those
    the fetch stage writes (``robots``, ``http-header-user-agent``, ``hostname``):
    ``crawlkit-settings``, the effective settings as one line of JSON with secrets
    masked (:mod:`crawlkit.masking`), then the fields the caller gave
    (``options.warc_info``: operator, isPartOf, description, command-line)."""
    return _info_fields(mask_secrets(_plain(options)), options.warc_info or {})


def _info_fields(settings: dict[str, Any], given: dict[str, Any]) -> dict[str, str]:
    """``crawlkit-settings`` (``settings`` as one line of JSON, less ``warc_info``,
    whose fields are in the record already) and the ``given`` fields, one line each."""
    shown = {k: v for k, v in settings.items() if k != "warc_info"}
    fields = {"crawlkit-settings": json.dumps(shown, sort_keys=True, separators=(",", ":"))}
    return {**fields, **mask_secrets({k: " ".join(str(v).split()) for k, v in given.items()})}


def crawl_warcinfo(state_path: str | os.PathLike[str]) -> dict[str, str]:
    """The warcinfo fields of the crawl's own WARC files, from ``STATE/crawl/settings.json``
    (its last run): those of :func:`warcinfo_fields` and the fetch stage's ``robots`` and
    ``http-header-user-agent``, for a file written after the crawl (the archive's crawl
    log and report), whose warcinfo had none of them."""
    settings = settings_of(state_path).get("settings") or {}
    if not settings:
        return {}
    given = settings.get("warc_info")
    fields = _info_fields(settings, given if isinstance(given, dict) else {})
    fetch = settings.get("fetch")
    if isinstance(fetch, dict):
        if fetch.get("agent"):
            fields["http-header-user-agent"] = str(fetch["agent"])
        fields["robots"] = robots_field(fetch.get("ignore_robots_for") or [])
    return fields


def settings_of(state_path: str | os.PathLike[str]) -> dict[str, Any]:
    path = Path(state_path) / "crawl" / "settings.json"
    # masked on reading too: an older version wrote a proxy's password there
    return mask_secrets(streams.read_json(path)) if path.exists() else {}


def _sha256(warc: Path, cache_dir: Path) -> str:
    cache = cache_dir / f"{warc.name}.sha256"
    stat = warc.stat()
    if cache.exists():
        size, _, digest = cache.read_text().strip().partition(" ")
        if size == str(stat.st_size):
            return digest
    h = hashlib.sha256()
    with open(warc, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    digest = h.hexdigest()
    if cache_dir.is_dir():
        streams.atomic_write_bytes(cache, f"{stat.st_size} {digest}\n".encode())
    return digest


def warc_new_files_of(warc_dir: Path) -> list[dict[str, Any]]:
    """Name, bytes and openness of each WARC file in ``warc_dir``'s ``new/``."""
    warcs = sorted(
        p
        for p in warc_new_dir(warc_dir).glob("*.warc*")
        if p.is_file() and p.name.removesuffix(".open").endswith((".warc", ".warc.gz"))
    )
    return [
        {"name": p.name, "bytes": p.stat().st_size, "open": p.name.endswith(".open")} for p in warcs
    ]


def warc_files_of(warc_dir: Path) -> list[dict[str, Any]]:
    """Name, bytes and SHA-256 of each closed WARC file directly in ``warc_dir``."""
    index_dir = warc_dir / "indexes"
    warcs = sorted(p for p in warc_dir.glob("*.warc*") if p.is_file() and ".open" not in p.name)
    return [
        {"name": p.name, "bytes": p.stat().st_size, "sha256": _sha256(p, index_dir)} for p in warcs
    ]


class _Seeds:
    """The seeds report: each seed's last answer (status, outcome, redirect target)
    and the pages fetched on its host."""

    def __init__(self, seeds: list[str]):
        canon = Canonicalizer()
        self.seeds = seeds
        self.canonical: dict[str, str] = {}
        for seed in seeds:
            try:
                self.canonical[canon.canonicalize(seed)] = seed
            except (InvalidURL, ValueError):
                self.canonical[seed] = seed
        self.last: dict[str, Record] = {}
        self.hosts = {_host(u) for u in self.canonical}
        self.pages: Counter[str] = Counter()

    def note(self, rec: Record) -> None:
        url = str(rec.get("url") or "")
        seed = self.canonical.get(url)
        if seed is not None:
            self.last[seed] = rec
        host = _host(url)
        status = rec.get("status")
        if (
            host in self.hosts
            and rec.get("outcome") == "fetched"
            and status == 200
            and media_type(rec.get("content_type")) == "text/html"
        ):
            self.pages[host] += 1

    def table(self) -> list[dict[str, Any]]:
        rows = []
        for url, seed in self.canonical.items():
            rec = self.last.get(seed) or {}
            rows.append(
                {
                    "seed": seed,
                    "status": rec.get("status"),
                    "outcome": rec.get("outcome") or "not fetched",
                    "location": rec.get("location"),
                    "pages": self.pages[_host(url)],
                }
            )
        return rows


def _host(url: str) -> str:
    parts = url.split("/", 3)
    return parts[2].lower() if len(parts) > 2 else ""


_WAITS = {
    "parked": "parked: its site is over its page budget until the next budget period "
    "(--no-budgets, or crawlkit archive, fetches it)",
    "queued": "queued: not fetched before the crawl stopped (run it again to continue)",
    "deferred": "deferred: waiting for a retry (run it again after its retry time)",
}


def _unanswered(
    links: Iterable[Record],
    known: set[str],
    locate: Callable[[set[str]], dict[str, str]] | None,
) -> list[dict[str, Any]]:
    """The requisites found but neither fetched nor refused, with where they wait."""
    waiting: dict[str, str | None] = {}
    for rec in links:
        url = rec.get("url")
        if isinstance(url, str) and url not in known and url not in waiting:
            waiting[url] = rec.get("from")
    where = locate(set(waiting)) if locate is not None and waiting else {}
    not_followed = "not followed (nofollow, --no-requisites, or a refused page's)"
    return [
        {"url": url, "why": _WAITS.get(where.get(url, ""), not_followed), "from": page}
        for url, page in waiting.items()
    ]


def _examples(store: dict[str, dict[str, Any]], key: str, url: Any, limit: int) -> None:
    entry = store.setdefault(key, {"count": 0, "examples": []})
    entry["count"] += 1
    if len(entry["examples"]) < limit and isinstance(url, str):
        entry["examples"].append(url)


def _is_requisite(rec: Record) -> bool:
    hops = rec.get("requisite_hops")
    return rec.get("reason") == "requisite" or (isinstance(hops, int) and hops > 0)


def collection_section(
    state_path: str | os.PathLike[str],
    fetches: Iterable[Record],
    refusals: Iterable[Record],
    *,
    fetch_logs: list[str] | None = None,
    examples: int = 3,
    reporter: Reporter | None = None,
    requisite_links: Iterable[Record] = (),
    locate: Callable[[set[str]], dict[str, str]] | None = None,
) -> dict[str, Any]:
    """The ``collection`` section (see the module docstring).

    ``requisite_links`` are the requisite link records the crawl found; one with no
    fetch record and no refusal is missing too, and ``locate`` (URLs -> ``parked``,
    ``queued`` or ``deferred``) says where it waits; the rest were not followed.
    """
    reporter = reporter or NullReporter()
    state = Path(state_path)
    saved = settings_of(state)
    settings = saved.get("settings", {})
    mimes: Counter[str] = Counter()
    mime_bytes: Counter[str] = Counter()
    statuses: dict[str, dict[str, Any]] = {}
    problems: dict[str, dict[str, Any]] = {}
    last_requisite: dict[str, Record] = {}
    answered: set[str] = set()
    seeds = _Seeds(saved.get("seeds", []))
    for rec in fetches:
        url = rec.get("url")
        seeds.note(rec)
        if isinstance(url, str) and rec.get("outcome") != "deferred":
            answered.add(url)
        outcome = str(rec.get("outcome") or "unknown")
        if rec.get("status") is not None:
            _examples(statuses, str(rec["status"]), url, examples)
        if outcome == "fetched":
            kind = media_type(rec.get("content_type")) or "(none)"
            mimes[kind] += 1
            mime_bytes[kind] += int(rec.get("bytes") or 0)
            if rec.get("truncated"):  # kept, cut (WARC-Truncated): a cap, or a broken body
                _examples(problems, f"truncated: {rec['truncated']}", url, examples)
        elif rec.get("refused") == "duplicate":
            pass  # the same URL handed out twice (again after a crash): the other is its answer
        elif outcome not in _OK_OUTCOMES or (outcome == "redirect" and rec.get("error")):
            # (a redirect with an error leads nowhere: past the hop limit, or to no URL)
            error = str(rec.get("error") or rec.get("reason_detail") or "").split("\n")[0][:120]
            _examples(problems, f"{outcome}: {error}" if error else outcome, url, examples)
        if _is_requisite(rec) and isinstance(url, str):
            last_requisite[url] = rec
    missing: list[dict[str, Any]] = []
    fetched_requisites = 0
    for url, rec in last_requisite.items():
        status = rec.get("status")
        if rec.get("outcome") in _OK_OUTCOMES and not (isinstance(status, int) and status >= 400):
            fetched_requisites += rec.get("outcome") != "redirect"
        elif rec.get("outcome") != "deferred":
            why = rec.get("error") or (f"HTTP {status}" if status else rec.get("outcome"))
            missing.append({"url": url, "why": str(why), "from": rec.get("via")})
    refused_urls: set[str] = set()
    for rec in refusals:
        reason = refusal_reason(rec)
        _examples(problems, f"refused: {reason}", rec.get("url"), examples)
        if isinstance(rec.get("url"), str):
            refused_urls.add(rec["url"])
        if _is_requisite(rec) and rec.get("url") not in answered:
            detail = rec.get("detail")
            why = f"refused: {reason}" + (f" ({detail})" if detail else "")
            missing.append({"url": rec.get("url"), "why": why, "from": rec.get("from")})
    missing += _unanswered(requisite_links, answered | refused_urls, locate)
    warc_dir = Path(saved.get("warc_dir") or state / "warc")
    warc_files = warc_files_of(warc_dir)
    min_gap = (settings.get("fetch") or {}).get("min_delay", FetchConfig.min_delay)
    audit: dict[str, Any] | None = None
    if fetch_logs:
        full = run_audit(
            fetch_logs=fetch_logs, config=AuditConfig(min_gap=float(min_gap)), reporter=reporter
        )
        audit = {
            "ok": full["ok"],
            "requests": full["requests"],
            "min_gap_s": min_gap,
            "violations": full["violations"],
            "warnings": [{k: w[k] for k in ("check", "host", "count")} for w in full["warnings"]],
        }
    index = warc_dir / "index.cdxj"
    return {
        "seeds": saved.get("seeds", []),
        "seeds_table": seeds.table(),
        "runs": saved.get("runs", 0),
        "settings": settings,
        "robots_ignored_for": list((settings.get("fetch") or {}).get("ignore_robots_for") or []),
        "mime_types": [
            {"type": k, "count": n, "bytes": mime_bytes[k]} for k, n in mimes.most_common()
        ],
        "statuses": dict(sorted(statuses.items())),
        "problems": dict(sorted(problems.items(), key=lambda kv: -kv[1]["count"])),
        "requisites": {
            "fetched": fetched_requisites,
            "missing": len(missing),
            "missing_examples": missing[: max(examples, 20)],
        },
        "warc_dir": str(warc_dir),
        "warc_files": warc_files,
        "warc_bytes": sum(w["bytes"] for w in warc_files),
        "warc_new_files": warc_new_files_of(warc_dir),
        "index": str(index) if index.exists() else None,
        "audit": audit,
    }
