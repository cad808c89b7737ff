"""``crawlkit wacz``: WARC files, their index and page list in one WACZ 1.1.1 package.

One job: :func:`write_wacz` packs WARC files into a WACZ (https://specs.webrecorder.net/
wacz/1.1.1/) that ReplayWeb.page, pywb and ``wacz validate`` load as it is::

    archive/<name>.warc.gz         each WARC, stored (not compressed again), so a
                                   reader can seek to a record by its offset
    indexes/index.cdx              the CDXJ index of the WARCs (crawlkit.warc.cdxj)
    pages/pages.jsonl              a header line, then one line per page:
                                   {"id", "url", "ts", "title"}
    reports/<name>                 extra files given by the caller (the crawl report,
                                   the politeness audit), deflated; a name that
                                   Frictionless (which `wacz validate` runs) would
                                   read as one of its own descriptors (report.json,
                                   schema.json, ...) gets ".data" before its
                                   extension: reports/report.data.json
    datapackage.json               every file above with its size and sha256, the
                                   title, created, wacz_version "1.1.1", software
    datapackage-digest.json        the sha256 of datapackage.json

Pages are the HTTP 200 HTML responses of the WARCs (not revisits), in time order,
with the title of the page (the ``<title>``, or "" when it has none), unless the
caller gives the page list. ``id`` is 16 hex digits of the sha256 of ts and URL.

The package is written to a temporary name and renamed when complete (invariant 5).
Memory holds the index and the page list; WARC bytes are streamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crawlkit import __version__, io
from crawlkit.errors import InputError, UsageError
from crawlkit.html.page import HtmlExtractor, looks_like_html, media_type
from crawlkit.url import Canonicalizer
from crawlkit.warc.cdxj import index_lines
from crawlkit.warc.read import iter_responses

__all__ = ["WACZ_VERSION", "Page", "pages_of_warcs", "report_name", "write_wacz"]

WACZ_VERSION = "1.1.1"
_PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_HTML_LIKE = frozenset({"", "text/html", "application/xhtml+xml", "text/plain"})


@dataclass(frozen=True, slots=True)
class Page:
    """One line of ``pages/pages.jsonl``: the URL, its capture time (ISO 8601), title."""

    url: str
    ts: str
    title: str

    def to_json(self) -> dict[str, str]:
        ident = hashlib.sha256(f"{self.ts} {self.url}".encode()).hexdigest()[:16]
        return {"id": ident, "url": self.url, "ts": self.ts, "title": self.title}


def pages_of_warcs(paths: Iterable[str | os.PathLike[str]]) -> list[Page]:
    """The pages of the WARCs: HTTP 200 HTML responses, time order, once per URL."""
    extractor = HtmlExtractor(Canonicalizer())
    pages: dict[str, Page] = {}
    for path in paths:
        for resp in iter_responses(
            path, want_body=lambda status, ctype: status == 200 and media_type(ctype) in _HTML_LIKE
        ):
            if resp.record_type != "response" or resp.status != 200 or resp.body is None:
                continue
            if not looks_like_html(resp.content_type, resp.body) or resp.target_uri in pages:
                continue
            title = extractor.extract(resp.body, resp.target_uri, content_type=resp.content_type)
            pages[resp.target_uri] = Page(resp.target_uri, resp.date or "", title.title or "")
    return sorted(pages.values(), key=lambda p: (p.ts, p.url))


def _sha256_of(path: Path) -> tuple[int, str]:
    digest = hashlib.sha256()
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return size, "sha256:" + digest.hexdigest()


# File names Frictionless takes for its own descriptors (it matches name endings).
_DESCRIPTOR_NAMES = tuple(
    f"{stem}.{ext}"
    for stem in (
        "package",
        "resource",
        "catalog",
        "chart",
        "dialect",
        "jsonschema",
        "schema",
        "checklist",
        "pipeline",
        "report",
        "inquiry",
        "view",
        "map",
    )
    for ext in ("json", "yaml", "yml")
)


def report_name(name: str) -> str:
    """The name a report file gets under ``reports/`` (see the module docstring)."""
    if name.lower().endswith(_DESCRIPTOR_NAMES):
        stem, _, ext = name.rpartition(".")
        return f"{stem}.data.{ext}"
    return name


def _resource(path: str, size: int, digest: str) -> dict[str, Any]:
    return {"name": os.path.basename(path).lower(), "path": path, "hash": digest, "bytes": size}


def write_wacz(
    warcs: Sequence[str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    title: str | None = None,
    description: str | None = None,
    main_url: str | None = None,
    pages: Sequence[Page] | None = None,
    reports: Sequence[str | os.PathLike[str]] = (),
    created: float | None = None,
) -> dict[str, Any]:
    """Write the WACZ of ``warcs`` to ``out``; returns its ``datapackage.json`` dict.

    ``pages`` None finds the pages in the WARCs (:func:`pages_of_warcs`). ``reports``
    are files put under ``reports/`` by their base names. ``main_url`` (default: the
    first page) becomes ``mainPageURL``. Raises :class:`UsageError` for two inputs of
    one base name, :class:`InputError` for a file that is missing or not a WARC.
    """
    warc_paths = [Path(w) for w in warcs]
    report_paths = [Path(r) for r in reports]
    names = [p.name for p in warc_paths]
    if len(set(names)) != len(names):
        raise UsageError("two WARC files have the same name; a WACZ keeps base names")
    if len({report_name(p.name) for p in report_paths}) != len(report_paths):
        raise UsageError("two report files have the same name")
    for p in [*warc_paths, *report_paths]:
        if not p.is_file():
            raise InputError(f"{p}: no such file")
    index = "".join(line + "\n" for line in index_lines(warc_paths)).encode("utf-8")
    page_list = list(pages) if pages is not None else pages_of_warcs(warc_paths)
    pages_bytes = b"".join(
        json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n"
        for item in [_PAGES_HEADER, *(p.to_json() for p in page_list)]
    )
    resources: list[dict[str, Any]] = []
    stamp = time.gmtime(created if created is not None else time.time())
    date_time = stamp[:6]
    with io.atomic_file(out) as f, zipfile.ZipFile(f, "w", allowZip64=True) as zf:

        def put_bytes(arcname: str, data: bytes) -> None:
            info = zipfile.ZipInfo(arcname, date_time)
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
            resources.append(
                _resource(arcname, len(data), "sha256:" + hashlib.sha256(data).hexdigest())
            )

        for path in warc_paths:
            arcname = f"archive/{path.name}"
            info = zipfile.ZipInfo(arcname, date_time)
            info.compress_type = zipfile.ZIP_STORED  # readers seek into stored WARCs
            info.file_size = path.stat().st_size
            with open(path, "rb") as src, zf.open(info, "w", force_zip64=True) as dst:
                while chunk := src.read(1 << 20):
                    dst.write(chunk)
            resources.append(_resource(arcname, *_sha256_of(path)))
        put_bytes("indexes/index.cdx", index)
        put_bytes("pages/pages.jsonl", pages_bytes)
        for path in report_paths:
            put_bytes(f"reports/{report_name(path.name)}", path.read_bytes())
        package: dict[str, Any] = {"profile": "data-package", "resources": resources}
        if title:
            package["title"] = title
        if description:
            package["description"] = description
        first = main_url or (page_list[0].url if page_list else None)
        if first:
            package["mainPageURL"] = first
            match = next((p for p in page_list if p.url == first), None)
            if match is not None and match.ts:
                package["mainPageDate"] = match.ts
        package["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp)
        package["wacz_version"] = WACZ_VERSION
        package["software"] = f"crawlkit {__version__}"
        data = json.dumps(package, indent=2).encode("utf-8")
        info = zipfile.ZipInfo("datapackage.json", date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(data).hexdigest()}
        info = zipfile.ZipInfo("datapackage-digest.json", date_time)
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, json.dumps(digest, indent=2).encode("utf-8"))
    return package
