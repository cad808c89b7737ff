"""``crawlkit archive``'s steps after the crawl: provenance WARC, index, report, WACZ.

An archive collection directory ``OUT`` holds ``state/`` (the crawl's state),
``warc/`` (WARC files and ``index.cdxj``), ``report.json``, ``report.html`` and
``collection.wacz``. After each run of the crawl, :func:`package_collection`:

1. builds the report (:func:`crawlkit.stages.report.crawl_report`);
2. writes one more WARC file, the run's *provenance file*
   (:func:`write_provenance`): ``metadata`` records with the outlinks of each page
   captured in the cycles not written before (each referring to its capture by
   ``WARC-Refers-To``), a ``resource`` record with those cycles' crawl log (the fetch
   records, NDJSON) and one with ``report.json``. So the last WARC file of a
   collection says how it was made, and the WARC files alone carry the log and
   report. A cycle is marked (``provenance.done``) once its outlinks and log are in
   a closed file, so a resumed collection writes each once; then writes
   ``report.json`` and ``report.html``, whose list of WARC files includes that one;
3. brings ``warc/index.cdxj`` up to date and writes the WACZ
   (:func:`crawlkit.stages.wacz.write_wacz`) from every WARC file, both reports
   carried under ``reports/``.

Memory: one cycle's links at a time (grouped by page), and one cycle's fetch log.
"""

from __future__ import annotations

import gzip
import os
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from crawlkit import streams
from crawlkit.crawl.archive import update_collection_index
from crawlkit.crawl.files import is_done, mark_done, read_file
from crawlkit.diag import NullReporter, Reporter
from crawlkit.report import render_html
from crawlkit.stages.report import crawl_report
from crawlkit.stages.report_collection import crawl_warcinfo, warc_files_of
from crawlkit.stages.wacz import write_wacz
from crawlkit.state import crawl_roots
from crawlkit.warc.write import WarcWriter

__all__ = ["Collection", "package_collection", "write_provenance"]

LOG_URI = "urn:crawlkit:crawl-log.ndjson"
REPORT_URI = "urn:crawlkit:report.json"
_MARKER = "provenance"
# How a link was found, in Heritrix's hop letters: L a link, E an embed (requisite),
# R a redirect.
_HOP = {"requisite": "E", "redirect": "R"}


@dataclass(frozen=True)
class Collection:
    """The places of an archive collection under ``root`` (see the module docstring)."""

    root: Path

    @property
    def state(self) -> Path:
        return self.root / "state"

    @property
    def warc_dir(self) -> Path:
        return self.root / "warc"

    @property
    def report_json(self) -> Path:
        return self.root / "report.json"

    @property
    def report_html(self) -> Path:
        return self.root / "report.html"

    @property
    def wacz(self) -> Path:
        return self.root / "collection.wacz"


def _record_id(warc: Path, offset: int, length: int) -> str | None:
    """The WARC-Record-ID of the record stored at ``offset`` (one gzip member)."""
    try:
        with open(warc, "rb") as f:
            f.seek(offset)
            raw = f.read(length)
        head = gzip.decompress(raw)[:4096] if warc.name.endswith(".gz") else raw[:4096]
    except (OSError, EOFError, gzip.BadGzipFile):
        return None
    for line in head.split(b"\r\n"):
        if not line:
            break
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"warc-record-id":
            return value.strip().decode("ascii", "replace")
    return None


def _outlinks(cycle: Path) -> dict[str, list[tuple[str, str]]]:
    """page URL -> [("outlink", "URL HOP tag")] of the cycle's link records."""
    out: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for rec in read_file(cycle / "links.ndjson.zst"):
        page, url = rec.get("from"), rec.get("url")
        if not isinstance(page, str) or not isinstance(url, str):
            continue
        hop = _HOP.get(str(rec.get("reason")), "L")
        tag = str(rec.get("tag") or "")
        out[page].append(("outlink", f"{url} {hop} {tag}".rstrip()))
    return out


def _open_cycles(state: Path) -> Iterator[Path]:
    """The finished cycles whose provenance is not written yet: the crawl's, and with
    ``--workers N`` each worker's (a crawl of workers has none of its own)."""
    for root in crawl_roots(state):
        cycles = root / "crawl" / "cycles"
        found = sorted(p for p in cycles.glob("[0-9]*") if p.is_dir()) if cycles.exists() else []
        for cycle in found:
            if is_done(cycle, "cycle") and not is_done(cycle, _MARKER):
                yield cycle


def write_provenance(
    collection: Collection,
    report: dict[str, Any],
    *,
    info: dict[str, str] | None = None,
    prefix: str = "crawlkit",
) -> Path | None:
    """Write the provenance file (see the module docstring); returns its path.

    ``info`` adds warcinfo fields (the command line). The file is written under a
    ``.open`` name and renamed when whole (as every WARC file); only then are its
    cycles marked, so a crash here writes them again next time, never loses them.
    """
    warc_dir = collection.warc_dir
    warcs: dict[str, Path] = {p.name: p for p in warc_dir.glob("*.warc.gz")}
    cycles = list(_open_cycles(collection.state))
    log_lines: list[bytes] = []
    # the crawl's own warcinfo fields (settings, robots, operator, isPartOf), as in
    # every other file of the collection; its description says what this file holds
    fields = crawl_warcinfo(collection.state)
    given = fields.get("description")
    fields["description"] = f"{given} (crawl log and report)" if given else "crawl log and report"
    writer = WarcWriter(warc_dir, prefix=prefix, info=fields)
    writer.info.update(info or {})
    with writer:
        for cycle in cycles:
            links = _outlinks(cycle)
            for rec in read_file(cycle / "fetch.ndjson"):
                log_lines.append(orjson.dumps(rec) + b"\n")
                warc = rec.get("warc")
                url = rec.get("url")
                if (
                    rec.get("outcome") != "fetched"
                    or not isinstance(warc, dict)
                    or not isinstance(url, str)
                    or url not in links
                ):
                    continue
                path = warcs.get(Path(str(warc.get("file"))).name)
                if path is None:
                    continue
                rid = _record_id(path, int(warc["offset"]), int(warc["length"]))
                writer.write_metadata(
                    url, links.pop(url), refers_to=rid, date=_warc_date(rec.get("fetched_at"))
                )
        writer.write_resource(LOG_URI, "application/x-ndjson", b"".join(log_lines))
        writer.write_resource(
            REPORT_URI, "application/json", orjson.dumps(report, option=orjson.OPT_INDENT_2)
        )
    for cycle in cycles:
        mark_done(cycle, _MARKER)
    return warc_dir / writer.name if writer.name else None


def _warc_date(fetched_at: Any) -> str:
    """A fetch record's ``fetched_at`` (ISO, UTC) as a WARC-Date."""
    text = str(fetched_at or "")
    if not text:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return text.replace("+00:00", "Z") if text.endswith("+00:00") else text


def package_collection(
    collection: Collection,
    *,
    title: str,
    main_url: str | None = None,
    info: dict[str, str] | None = None,
    prefix: str = "crawlkit",
    reporter: Reporter | None = None,
) -> dict[str, Any]:
    """Steps 1 to 3 of the module docstring after a crawl run; returns the report."""
    reporter = reporter or NullReporter()
    report = crawl_report(collection.state, reporter=reporter)
    provenance = write_provenance(collection, report, info=info, prefix=prefix)
    # The report in the provenance file cannot name that file's own hash; the copies
    # beside the collection and in the WACZ list every WARC file, that one included.
    section = report.get("collection") or {}
    section["warc_files"] = warc_files_of(collection.warc_dir)
    section["warc_bytes"] = sum(w["bytes"] for w in section["warc_files"])
    section["provenance_file"] = provenance.name if provenance is not None else None
    streams.atomic_write_bytes(
        collection.report_json, orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n"
    )
    streams.atomic_write_bytes(
        collection.report_html, render_html(report, title=title).encode("utf-8")
    )
    update_collection_index(collection.warc_dir, reporter)
    warcs = sorted(
        p for p in collection.warc_dir.glob("*.warc.gz") if p.is_file() and ".open" not in p.name
    )
    write_wacz(
        [os.fspath(p) for p in warcs],
        collection.wacz,
        title=title,
        main_url=main_url,
        reports=[collection.report_json, collection.report_html],
    )
    return report
