"""A host that serves a directory's files as they are: a saved site on loopback.

``crawlkit testweb --files DIR`` adds one host, ``files.test`` unless ``--files-host``
names it, whose answers are DIR's files, as a plain static server sends them:

* a path names the file under DIR at that path, percent-decoded; the query is not
  looked at (a static server's file is the same whatever the query says);
* a directory's path ending in ``/`` is its ``index.html``; without the ``/``, a 301
  to the path with it (what Apache, nginx and Python's http.server answer, and what
  makes a page's relative links resolve against the directory);
* anything else is a 404, a path that would leave DIR (``..``, a symbolic link out
  of it) too; ``robots.txt`` is DIR's own, or a 404 (no rules);
* Content-Type by the file's extension (the standard library's table, HTML and text
  without a charset, as most static servers send them, so a page's own ``<meta
  charset>`` decides), ETag and Last-Modified from the file's size and time, so a
  recrawl gets 304s, and the bytes as they are on disk (never gzip-encoded).

The request log is the web's like any host's (so ``crawlkit audit`` judges a crawl of
the directory), and so is the manifest entry, but for its ``pages``: which of the files
a crawl reaches depends on the links in them, which the manifest does not compute
(``notes.files`` names the directory). Files are read from disk at each request: the
directory may be large (a whole site), and the server holds none of it.
"""

from __future__ import annotations

import mimetypes
import os
from pathlib import Path
from urllib.parse import unquote_to_bytes

from crawlkit.testweb.model import Request, Response, not_found
from crawlkit.testweb.special_site import Facts, Site, robots_entry

__all__ = ["DEFAULT_HOST", "describe", "respond"]

DEFAULT_HOST = "files.test"
_TYPES = mimetypes.MimeTypes()  # the standard library's table only, not the machine's


def respond(root: Path, req: Request) -> Response:
    """The answer of the files host serving ``root`` to ``req`` (see the module doc)."""
    local = _local_path(root, req.route)
    if local is None:
        return not_found()
    if local.is_dir():
        if not req.route.endswith("/"):
            query = f"?{req.query}" if req.query else ""
            return Response(
                301, b"", content_type=None, headers=[("Location", req.route + "/" + query)]
            )
        local = local / "index.html"
    try:
        body = local.read_bytes()
        stat = local.stat()
    except OSError:  # absent, a directory without index.html, unreadable
        return not_found()
    return Response(
        200,
        body,
        content_type=_content_type(local),
        etag=f'"{stat.st_size:x}-{stat.st_mtime_ns:x}"',
        last_modified=stat.st_mtime,
    )


def describe(site: Site, root: Path) -> Facts:
    """The files host's manifest entry: its robots.txt and where its files are."""
    robots = root / "robots.txt"
    if robots.is_file():
        entry = robots_entry(site.robots_url, 200, robots.read_bytes().decode("utf-8", "replace"))
    else:
        entry = robots_entry(site.robots_url, 404)
    notes = {"files": str(root), "pages": "not computed: the files' own links decide them"}
    return Facts([], notes=notes, robots=entry)


def _local_path(root: Path, route: str) -> Path | None:
    """The path under ``root`` that ``route`` names, or None if it names none (bytes
    that are no file name, a path out of ``root``)."""
    raw = unquote_to_bytes(route)
    if b"\0" in raw:
        return None
    parts = [p for p in os.fsdecode(raw).split("/") if p not in ("", ".")]
    if ".." in parts:
        return None
    local = root.joinpath(*parts)
    try:  # a symbolic link may point out of the directory: serve only what is in it
        if not local.resolve().is_relative_to(root.resolve()):
            return None
    except (OSError, RuntimeError):  # a loop of links
        return None
    return local


def _content_type(path: Path) -> str:
    kind, _ = _TYPES.guess_type(path.name, strict=False)
    return kind or "application/octet-stream"
