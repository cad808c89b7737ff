"""`crawl --max-depth`: the depth is the path's, so a URL refused for it is not seen.

A link's depth is the number of hops of the path it was found by. A URL found first by
a long path (refused) and later by a short one must then be queued: the refusal must
not have marked it seen (docs/design.md invariant 4). And the deepest pages the crawl
fetches get their requisites (images, stylesheets): those are limited by their own
hops from a page, not by the link depth. Served by a small site on loopback whose
request log is the judge.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from conftest import crawlkit, serve_routes


def _page(*hrefs: str, img: str | None = None) -> bytes:
    links = " ".join(f'<a href="{h}">{h}</a>' for h in hrefs)
    image = f'<img src="{img}">' if img else ""
    return f"<!doctype html><title>t</title><body>{links}{image}</body>".encode()


# / -> /b.html -> /x.html: /x.html is 2 hops from the seed /, 1 from the seed /a.html.
ROUTES: dict[str, tuple[str, bytes]] = {
    "/": ("text/html", _page("/b.html")),
    "/b.html": ("text/html", _page("/x.html", img="/b.png")),
    "/a.html": ("text/html", _page("/x.html")),
    "/x.html": ("text/html", _page()),
    "/b.png": ("image/png", b"\x89PNG\r\n\x1a\nb"),
}


@pytest.fixture
def site() -> Iterator[tuple[str, list[str]]]:
    with serve_routes(ROUTES) as served:
        yield served


def _crawl(state: Path, seed: str, *extra: str) -> dict:
    res = crawlkit(
        "crawl",
        seed,
        "--state",
        str(state),
        "--max-depth",
        "1",
        "--min-delay",
        "0.05s",
        "--allow-net",
        "127.0.0.0/8",
        "--json",
        *extra,
        timeout=120,
    )
    assert res.code == 0, res.stderr
    return orjson.loads(res.stdout)


def test_a_url_refused_as_too_deep_is_queued_when_a_shorter_path_finds_it(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    root, log = site
    first = _crawl(tmp_path / "s", f"{root}/", "--no-requisites")
    assert first["refused"] == {"max-depth": 1}
    assert "/x.html" not in log  # 2 hops from /
    # the same crawl, seeded now with a page that links to it: 1 hop
    second = _crawl(tmp_path / "s", f"{root}/a.html", "--no-requisites")
    assert log.count("/x.html") == 1, log
    assert second["fetched"] == 2 and not second["refused"], second


def test_the_deepest_pages_get_their_requisites(
    tmp_path: Path, site: tuple[str, list[str]]
) -> None:
    root, log = site
    summary = _crawl(tmp_path / "s", f"{root}/")
    # /b.html is 1 hop from the seed, its image 2: fetched, as a requisite
    assert log.count("/b.html") == 1 and log.count("/b.png") == 1, log
    assert summary["refused"] == {"max-depth": 1}  # /x.html alone
    # with --no-requisites the image is not asked for at all
    log.clear()
    _crawl(tmp_path / "t", f"{root}/", "--no-requisites")
    assert "/b.png" not in log and "/b.html" in log
