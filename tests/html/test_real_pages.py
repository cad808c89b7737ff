"""Real pages that the first HTML guard dropped or cut (issue 23, tests/data/real-pages):
each is parsed whole, not capped, with no error, and keeps the links the cut lost.

The pages are not in the repository (the README there says why and how to place them);
a page that is absent is skipped. ``CRAWLKIT_REAL_PAGES`` names another directory."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import pytest
import surt

from crawlkit.html.guard import SCAN_FROM, guard_markup
from crawlkit.html.page import HtmlExtractor
from crawlkit.url import Canonicalizer
from crawlkit.warc.surt import surt_key

_HERE = Path(__file__).resolve().parent.parent / "data" / "real-pages"
DATA = Path(os.environ.get("CRAWLKIT_REAL_PAGES", _HERE))
SHA256 = {
    "datev-magazin.de-kommunikation.html": (
        "44e85fcf0ec6c238743036909d742d628017e7cadaafd8aab455b6f0381ea965"
    ),
    "liquimoly-hbl.de-cheftrainer.html": (
        "a2bad4b6b8e07f7269f782349385c1c49b1d310715e4e4e49dc880c47b339f38"
    ),
    "homify.de-Tischdecke.html": "1eef5708aa4049c70490e80f4ccb1a5fe083a4d60830ad20a99e80b86a69b633",
}
PAGES = {
    "datev-magazin.de-kommunikation.html": (
        "https://www.datev-magazin.de/archiv/sichere-und-digitale-mandantenkommunikation-73813",
        "https://www.datev.de/web/de/m/ueber-datev/datev-im-web/impressum/",
    ),
    "liquimoly-hbl.de-cheftrainer.html": (
        "https://www.liquimoly-hbl.de/de/n/news/2--liga/2021-22/transfers/tsv-bayer-dormagen/"
        "neuer-cheftrainer-fuer-dormagen--matthias-flohr-uebernimmt-ab-sommer-2022/",
        "https://play.google.com/store/apps/details?hl=de&id=ag.sportradar.android.livescore.hbl",
    ),
    "homify.de-Tischdecke.html": (
        "https://www.homify.de/diy/20546/wie-man-eine-runde-tischdecke-in-nur-7-schritten-herstellt",
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_real_page_is_parsed_whole(name):
    url, last_link = PAGES[name]
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in {DATA} (tests/data/real-pages/README.md)")
    body = path.read_bytes()
    assert hashlib.sha256(body).hexdigest() == SHA256[name], f"{path} is another file"
    assert len(body) >= SCAN_FROM  # (big enough to be scanned)
    assert guard_markup(body) == (body, [])
    page = HtmlExtractor(Canonicalizer()).extract(body, url, content_type="text/html")
    assert page.capped == [] and page.error is None and page.title
    urls = [link.url.url for link in page.links]
    if last_link is not None:
        assert last_link in urls


@pytest.mark.parametrize("name", sorted(PAGES))
def test_the_links_of_a_real_page_get_the_surt_packages_keys(name):
    """The index line's key (crawlkit.warc.surt) of every link a real page holds, as
    extracted and as written in its markup, equals the surt package's (which pywb
    looks it up by): real query strings, escapes and hosts, not generated ones."""
    url, _ = PAGES[name]
    path = DATA / name
    if not path.exists():
        pytest.skip(f"{name} not in {DATA} (tests/data/real-pages/README.md)")
    body = path.read_bytes()
    page = HtmlExtractor(Canonicalizer()).extract(body, url, content_type="text/html")
    written = [
        m.group(1).decode("utf-8", "replace").strip()
        for m in re.finditer(rb"""(?:href|src)\s*=\s*["']([^"'<>]{1,2000})""", body)
    ]
    urls = [link.url.url for link in page.links] + written
    assert len(urls) > 100
    compared = 0
    for link in urls:
        try:
            expected = surt.surt(link)
        except Exception:  # surt gives up on some (cdxj-indexer then keys by the URL)
            continue
        assert surt_key(link) == expected, link
        compared += 1
    assert compared > 100
