"""The words of crawl's summary: what was left unfetched on purpose, on its own line;
labels never cut mid-word; no "refused: none"."""

from __future__ import annotations

from crawlkit.crawl.retry import ErrorTally, short_label
from crawlkit.crawl.summary import CrawlSummary, summary_text


def _summary(**fields: object) -> dict:
    summary = CrawlSummary(**{"stopped": "frontier empty", **fields})  # type: ignore[arg-type]
    return summary.to_json()


def test_parked_urls_get_a_line_of_their_own() -> None:
    text = summary_text(
        _summary(queued=177, parked=177, stopped="done for this budget period (177 URLs ...)")
    )
    lines = text.splitlines()
    assert any(line.strip().startswith("still queued 0,") for line in lines)
    parked = [line for line in lines if "NOT FETCHED" in line]
    assert len(parked) == 1
    assert "177 URLs (pages and page requisites)" in parked[0]
    assert "crawlkit archive" in parked[0] and "--no-budgets" in parked[0]


def test_no_parked_line_and_no_refused_none_when_there_is_nothing_to_say() -> None:
    text = summary_text(_summary(queued=3))
    assert "NOT FETCHED" not in text
    assert "refused: none" not in text and "not queued" not in text
    assert "still queued 3," in text


def test_refused_links_are_listed_by_reason() -> None:
    summary = CrawlSummary(stopped="frontier empty")
    summary.refused.update({"out-of-scope": 4, "excluded": 2})
    text = summary_text(summary.to_json())
    assert "  not queued (scope, patterns, trap limits, ...): excluded 2, out-of-scope 4" in text


def test_labels_are_cut_at_a_word_boundary() -> None:
    assert short_label("short reason") == "short reason"
    long = "loopback address 127.2.0.1 refused (allow it with --allow-net 127.0.0.0/8 please)"
    label = short_label(long)
    assert len(label) <= 60 and label.endswith("…")
    assert long.startswith(label[:-1])
    assert long[len(label) - 1] == " "  # the cut falls between two words


def test_error_tally_groups_refusals_by_their_code_and_keeps_the_reason_whole() -> None:
    tally = ErrorTally()
    why = "loopback address 127.2.0.1 refused (allow it with --allow-net)"
    for ip in ("127.2.0.1", "127.2.0.2"):
        tally.note(
            {"url": f"http://{ip}/", "outcome": "refused", "refused": "address", "error": why}
        )
    out = tally.to_json()
    assert list(out) == ["refused (address)"]
    assert out["refused (address)"]["count"] == 2
    assert out["refused (address)"]["example"].endswith("(allow it with --allow-net))")


def test_warcinfo_says_how_the_crawl_was_made_without_secrets() -> None:
    import json

    from crawlkit.crawl import CrawlOptions
    from crawlkit.fetch.engine import FetchConfig
    from crawlkit.stages.report_collection import warcinfo_fields

    line = "crawlkit crawl https://a.test/ --proxy http://***@p.test:3128 --header 'Cookie: ***'"
    options = CrawlOptions(
        fetch=FetchConfig(proxy="http://user:PASS@p.test:3128", min_delay=2.0),
        warc_info={"operator": "Archive Team", "command-line": line},
    )
    fields = warcinfo_fields(options)
    assert "PASS" not in repr(fields)
    settings = json.loads(fields["crawlkit-settings"])
    assert settings["fetch"]["proxy"] == "http://***@p.test:3128"
    assert settings["fetch"]["min_delay"] == 2.0 and "warc_info" not in settings
    assert fields["operator"] == "Archive Team" and fields["command-line"] == line
    assert all("\n" not in v and "\r" not in v for v in fields.values())  # warc-fields lines
