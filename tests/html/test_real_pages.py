"""Real pages that the first HTML guard dropped or cut (issue 23, tests/data/real-pages):
each is parsed whole, not capped, with no error, and keeps the links the cut lost."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from crawlkit.html.guard import SCAN_FROM, guard_markup
from crawlkit.html.page import HtmlExtractor
from crawlkit.url import Canonicalizer

DATA = Path(__file__).resolve().parent.parent / "data" / "real-pages"
PAGES = {
    "datev-magazin.de-kommunikation.html.gz": (
        "https://www.datev-magazin.de/archiv/sichere-und-digitale-mandantenkommunikation-73813",
        "https://www.datev.de/web/de/m/ueber-datev/datev-im-web/impressum/",
    ),
    "liquimoly-hbl.de-cheftrainer.html.gz": (
        "https://www.liquimoly-hbl.de/de/n/news/2--liga/2021-22/transfers/tsv-bayer-dormagen/"
        "neuer-cheftrainer-fuer-dormagen--matthias-flohr-uebernimmt-ab-sommer-2022/",
        "https://play.google.com/store/apps/details?hl=de&id=ag.sportradar.android.livescore.hbl",
    ),
    "homify.de-Tischdecke.html.gz": (
        "https://www.homify.de/diy/20546/wie-man-eine-runde-tischdecke-in-nur-7-schritten-herstellt",
        None,
    ),
}


@pytest.mark.parametrize("name", sorted(PAGES))
def test_a_real_page_is_parsed_whole(name):
    url, last_link = PAGES[name]
    body = gzip.decompress((DATA / name).read_bytes())
    assert len(body) >= SCAN_FROM  # (big enough to be scanned)
    assert guard_markup(body) == (body, [])
    page = HtmlExtractor(Canonicalizer()).extract(body, url, content_type="text/html")
    assert page.capped == [] and page.error is None and page.title
    urls = [link.url.url for link in page.links]
    if last_link is not None:
        assert last_link in urls
