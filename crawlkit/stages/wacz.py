"""``crawlkit wacz``: WARC files, their index and page list in one WACZ 1.1.1 package.

One job: :func:`write_wacz` packs WARC files into a WACZ (https://specs.webrecorder.net/
wacz/1.1.1/) that ReplayWeb.page, pywb and ``wacz validate`` load as it is::

    archive/<name>.warc.gz         each WARC, stored (not compressed again), so a
                                   reader can seek to a record by its offset
    indexes/index.cdx              the CDXJ index of the WARCs (crawlkit.warc.cdxj);
                                   above ZIPNUM_ABOVE lines, a ZipNum index instead:
    indexes/index.cdx.gz             blocks of 1024 lines, each a gzip member
    indexes/index.idx                the first key of each block, its offset, length
    pages/pages.jsonl              a header line, then one line per page:
                                   {"id", "url", "ts", "title", "text"}
    reports/<name>                 extra files given by the caller (the crawl report,
                                   the politeness audit), deflated; a name that
                                   Frictionless (which `wacz validate` runs) would
                                   read as one of its own descriptors (report.json,
                                   schema.json, ...) gets ".data" before its
                                   extension: reports/report.data.json
    datapackage.json               every file above with its size and sha256, the
                                   title, created, wacz_version "1.1.1", software
    datapackage-digest.json        the sha256 of datapackage.json

Pages are the HTTP 200 HTML responses of the WARCs (and their HTML ``resource`` records
of http(s) URIs, the pages as archived), and the revisits that are copies of
them at other URLs, in time order, with the title of the page (the ``<title>``, or ""
when it has none), unless the caller gives the page list. ``id`` is 16 hex digits of
the sha256 of ts and URL.

The package is written to a temporary name and renamed when complete (invariant 5).
``text`` is the page's visible text as ``crawlkit extract`` computes it, for
full-text search (py-wacz writes it with ``--text``). The WARCs are named as
:func:`archive_names` says. The ZIP is written by :mod:`crawlkit.stages.wacz_zip`,
with zip64 fields only where a member needs them (ReplayWeb.page rejects the rest).

Memory: the index lines and the page lines are sorted with an external sort
(:mod:`crawlkit.warc.extsort`, run files beside ``out``), so memory holds a bounded
amount of them and the set of page URLs; WARC bytes are streamed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any, BinaryIO

from crawlkit import __version__, streams
from crawlkit.diag import shown_path
from crawlkit.errors import InputError, UsageError
from crawlkit.html.page import looks_like_html, media_type
from crawlkit.stages.extract import page_texts
from crawlkit.stages.wacz_zip import ZipWriter
from crawlkit.warc.cdxj import sorted_index, write_zipnum
from crawlkit.warc.extsort import LineSorter
from crawlkit.warc.read import iter_responses

__all__ = [
    "WACZ_VERSION",
    "ZIPNUM_ABOVE",
    "Page",
    "archive_names",
    "iter_pages",
    "pages_of_warcs",
    "report_name",
    "write_wacz",
]

WACZ_VERSION = "1.1.1"
_PAGES_HEADER = {"format": "json-pages-1.0", "id": "pages", "title": "All Pages"}
_HTML_LIKE = frozenset({"", "text/html", "application/xhtml+xml", "text/plain"})


@dataclass(frozen=True, slots=True)
class Page:
    """One line of ``pages/pages.jsonl``: the URL, its capture time (ISO 8601), title,
    and its visible text (as ``crawlkit extract`` computes it; None: left out)."""

    url: str
    ts: str
    title: str
    text: str | None = None

    def to_json(self) -> dict[str, str]:
        ident = hashlib.sha256(f"{self.ts} {self.url}".encode()).hexdigest()[:16]
        item = {"id": ident, "url": self.url, "ts": self.ts, "title": self.title}
        if self.text is not None:
            item["text"] = self.text
        return item


def iter_pages(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Page]:
    """The pages of the WARCs, in file order, once per URL and content (a page whose
    later capture changed is listed again, with its new text): HTTP 200 HTML responses
    (and HTML resource records of http(s) URIs, which a replay serves as such),
    with title and text as ``crawlkit extract`` computes them, parsed in a worker
    under extract's CPU deadline (:func:`crawlkit.stages.extract.page_texts`), so a
    hostile page cannot hold the package up (it gets its bounded scan's title and no
    text); then the copies of those pages at other URLs (revisits of an HTTP 200 with
    the payload of a page listed: a mirror, /en/ beside /fr/), with its title and no
    text. Memory holds the URLs seen, each page's payload digest and title, and the
    pages waiting for the worker."""
    waiting: deque[tuple[str, str, str | None]] = deque()  # (url, ts, digest) sent, in order
    copies: dict[str, tuple[str, str]] = {}  # url -> (ts, digest) of the first revisit
    titles: dict[str, str] = {}  # payload digest -> the title of its page
    seen: set[str] = set()  # the URLs of the pages sent
    sent: set[tuple[str, str | None]] = set()  # and their payload digests

    def bodies() -> Iterator[tuple[str, bytes, str | None]]:
        for path in paths:
            for resp in iter_responses(
                path,
                want_body=lambda status, ctype: status == 200 and media_type(ctype) in _HTML_LIKE,
            ):
                if resp.status != 200 or (resp.target_uri, resp.payload_digest) in sent:
                    continue
                if resp.record_type == "revisit":
                    if resp.target_uri in seen:
                        continue  # (its content is listed: this capture changed nothing)
                    if resp.payload_digest and media_type(resp.content_type) in _HTML_LIKE:
                        copies.setdefault(resp.target_uri, (resp.date or "", resp.payload_digest))
                    continue
                if resp.body is None or not looks_like_html(resp.content_type, resp.body):
                    continue
                seen.add(resp.target_uri)
                sent.add((resp.target_uri, resp.payload_digest))
                waiting.append((resp.target_uri, resp.date or "", resp.payload_digest))
                yield resp.target_uri, resp.body, resp.content_type

    for title, text in page_texts(bodies()):
        url, ts, digest = waiting.popleft()
        if digest:
            titles.setdefault(digest, title or "")
        yield Page(url, ts, title or "", text)
    for url, (ts, digest) in copies.items():
        title = titles.get(digest)
        # a copy of a page (not of an image, nor of nothing here) at a URL with no
        # page of its own (a response there, before or after the revisit, is listed)
        if title is not None and url not in seen:
            yield Page(url, ts, title)


def pages_of_warcs(paths: Iterable[str | os.PathLike[str]]) -> list[Page]:
    """The pages of the WARCs (:func:`iter_pages`) in time order."""
    return sorted(iter_pages(paths), key=lambda p: (p.ts, p.url))


def _write_pages(
    warcs: Sequence[Path],
    out: BinaryIO,
    main_url: str | None,
    tmpdir: Path,
    max_bytes: int,
) -> tuple[Page | None, Page | None]:
    """Write ``pages.jsonl`` of the WARCs to ``out`` in time order, sorted on disk
    past ``max_bytes``; returns (the first page, the page of ``main_url``)."""
    out.write(_page_line_of(_PAGES_HEADER))
    main: Page | None = None
    with LineSorter(tmpdir=tmpdir, max_bytes=max_bytes) as sorter:
        for page in iter_pages(warcs):
            if page.url == main_url:
                main = page
            # the sort key goes before the line (no tab or newline in it)
            key = f"{page.ts.translate(_NO_BREAKS)}\t{page.url.translate(_NO_BREAKS)}"
            sorter.add(f"{key}\t" + json.dumps(page.to_json()))
        first: Page | None = None
        for line in sorter:
            item = json.loads(line.split("\t", 2)[2])
            if first is None:
                first = Page(item["url"], item["ts"], item["title"])
            out.write(_page_line_of(item))
    return first, main


_NO_BREAKS = {9: " ", 10: " ", 13: " "}


def _page_line_of(item: dict[str, str]) -> bytes:
    return json.dumps(item, ensure_ascii=False).encode("utf-8") + b"\n"


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


def _resource(path: str, size: int, digest: str, name: str) -> dict[str, Any]:
    return {"name": name, "path": path, "hash": digest, "bytes": size}


_NAME_CHARS = re.compile(r"[^a-z0-9._-]+")


def _resource_names(paths: Sequence[str]) -> list[str]:
    """Frictionless resource names (lowercase ``[a-z0-9._-]``, unique) of ``paths``."""
    seen: set[str] = set()
    names: list[str] = []
    for path in paths:
        base = _NAME_CHARS.sub("-", os.path.basename(path).lower()) or "file"
        name, n = base, 1
        while name in seen:
            n += 1
            name = f"{base}-{n}"
        seen.add(name)
        names.append(name)
    return names


def archive_names(paths: Sequence[Path]) -> list[str]:
    """The names the WARC files get under ``archive/`` (and in the index): the base
    name, with bytes that are not UTF-8 written as ``%XX``, and ``-2``, ``-3``, ...
    before the ``.warc`` of a name that another one before it already has (names
    compared without case, so the package unpacks on a case-insensitive file system
    and ``wacz validate``'s resource names stay distinct)."""
    taken: set[str] = set()
    names: list[str] = []
    for path in paths:
        raw = os.fsencode(path.name)
        name = raw.decode("utf-8", "surrogateescape")
        if any("\udc80" <= c <= "\udcff" for c in name):
            name = "".join(
                f"%{ord(c) - 0xDC00:02X}" if "\udc80" <= c <= "\udcff" else c for c in name
            )
        stem, dot, ext = name.partition(".warc")
        candidate, n = name, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{stem}-{n}{dot}{ext}" if dot else f"{name}-{n}"
        taken.add(candidate.lower())
        names.append(candidate)
    return names


# A collection with more index lines than this gets a ZipNum index (indexes/index.cdx.gz
# + indexes/index.idx), which replay tools load a block at a time, instead of one
# indexes/index.cdx they load whole.
ZIPNUM_ABOVE = 100_000


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
    zipnum_above: int = ZIPNUM_ABOVE,
    max_bytes: int = 0,
) -> dict[str, Any]:
    """Write the WACZ of ``warcs`` to ``out``; returns its ``datapackage.json`` dict.

    ``pages`` None finds the pages in the WARCs (:func:`pages_of_warcs`). ``reports``
    are files put under ``reports/`` by their base names. ``main_url`` (default: the
    first page) becomes ``mainPageURL``. The WARCs are named as
    :func:`archive_names` says. An index of more than ``zipnum_above`` lines is
    written as a ZipNum index; ``max_bytes`` bounds the index lines held in memory
    (0: the default of :func:`crawlkit.warc.cdxj.sorted_index`). Raises
    :class:`UsageError` for one WARC given twice or two report files of one name,
    :class:`InputError` for a file that is missing or not a WARC.
    """
    warc_paths = [Path(w) for w in warcs]
    report_paths = [Path(r) for r in reports]
    if len({report_name(p.name) for p in report_paths}) != len(report_paths):
        raise UsageError("two report files have the same name")
    for p in [*warc_paths, *report_paths]:
        if not p.is_file():
            raise InputError(f"{shown_path(p)}: no such file")
    for i, p in enumerate(warc_paths):
        if any(os.path.samefile(p, q) for q in warc_paths[:i]):
            raise UsageError(f"{shown_path(p)}: given twice")
    arc_names = archive_names(warc_paths)
    tmpdir = Path(out).parent
    stamp = time.gmtime(created if created is not None else time.time())
    with contextlib.ExitStack() as stack:
        sorter = stack.enter_context(
            sorted_index(
                zip(warc_paths, arc_names, strict=True), tmpdir=tmpdir, max_bytes=max_bytes
            )
        )
        pages_file = stack.enter_context(tempfile.TemporaryFile(dir=tmpdir))
        if pages is None:
            first, main = _write_pages(warc_paths, pages_file, main_url, tmpdir, max_bytes)
        else:
            pages_file.write(_page_line_of(_PAGES_HEADER))
            for page in pages:
                pages_file.write(_page_line_of(page.to_json()))
            first = pages[0] if pages else None
            main = next((p for p in pages if p.url == main_url), None)
        index_file = stack.enter_context(tempfile.TemporaryFile(dir=tmpdir))
        idx_lines: list[str] | None = None
        if sorter.count > zipnum_above:
            idx_lines = write_zipnum(sorter, index_file)
        else:
            for line in sorter:
                index_file.write(line.encode("utf-8") + b"\n")
        f = stack.enter_context(streams.atomic_file(out))
        zw = ZipWriter(f, stamp=stamp)
        entries: list[tuple[str, int, str]] = []  # (name, size, sha256) of each member

        def put(name: str, src: BinaryIO, *, compress: bool) -> None:
            entries.append((name, *zw.add(name, src, _size(src), compress=compress)))

        for path, arc in zip(warc_paths, arc_names, strict=True):
            with open(path, "rb") as src:
                put(f"archive/{arc}", src, compress=False)  # readers seek into WARCs
        if idx_lines is None:
            put("indexes/index.cdx", index_file, compress=True)
        else:  # stored: readers seek to its blocks by the offsets in index.idx
            put("indexes/index.cdx.gz", index_file, compress=False)
            put("indexes/index.idx", BytesIO("".join(idx_lines).encode("utf-8")), compress=True)
        put("pages/pages.jsonl", pages_file, compress=True)
        for path in report_paths:
            with open(path, "rb") as src:
                put(f"reports/{report_name(path.name)}", src, compress=True)
        names = _resource_names([e[0] for e in entries])
        resources = [
            _resource(arc, size, digest, name)
            for (arc, size, digest), name in zip(entries, names, strict=True)
        ]
        package: dict[str, Any] = {"profile": "data-package", "resources": resources}
        if title:
            package["title"] = title
        if description:
            package["description"] = description
        if main_url is None:
            main = first
        if main_url or main is not None:
            package["mainPageURL"] = main_url or main.url  # type: ignore[union-attr]
            if main is not None and main.ts:
                package["mainPageDate"] = main.ts
        package["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", stamp)
        package["wacz_version"] = WACZ_VERSION
        package["software"] = f"crawlkit {__version__}"
        data = json.dumps(package, indent=2).encode("utf-8")
        zw.add_bytes("datapackage.json", data)
        digest = {"path": "datapackage.json", "hash": "sha256:" + hashlib.sha256(data).hexdigest()}
        zw.add_bytes("datapackage-digest.json", json.dumps(digest, indent=2).encode("utf-8"))
        zw.close()
    return package


def _size(f: BinaryIO) -> int:
    """The size of an open file (or BytesIO), its position put at the start."""
    size = f.seek(0, os.SEEK_END)
    f.seek(0)
    return size
