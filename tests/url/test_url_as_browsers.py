"""URLs as the WHATWG URL Standard (and so a browser) reads them, where crawlkit read
them otherwise: found by checking canon, extract and crawl against WPT's urltestdata
and browsers' requests."""

from __future__ import annotations

from conftest import crawlkit

from crawlkit.html.encoding import query_in_document_encoding
from crawlkit.url import Canonicalizer, trim_url


def test_jsessionid_removal_keeps_the_path_parameters_after_it() -> None:
    canon = Canonicalizer()
    urls = [canon.parse(f"http://127.0.0.1/list;jsessionid=A1B2C3;page={n}").url for n in (2, 3)]
    assert urls == ["http://127.0.0.1/list;page=2", "http://127.0.0.1/list;page=3"]
    assert canon.parse("http://127.0.0.1/a;JSESSIONID=1?x=1").url == "http://127.0.0.1/a?x=1"


def test_a_character_the_page_encoding_lacks_is_a_percent_encoded_reference() -> None:
    # WHATWG "percent-encode after encoding": %26%23 code point %3B; a bare "&" would
    # split the parameter in two.
    assert query_in_document_encoding("/s?q=\u044f", "cp1252") == "/s?q=%26%231103%3B"
    assert query_in_document_encoding("/s?q=caf\xe9", "cp1252") == "/s?q=caf%E9"


def test_only_c0_controls_and_space_are_trimmed() -> None:
    assert trim_url("\t http://a.test/x\u00a0\n") == "http://a.test/x\u00a0"
    out = crawlkit("canon", input="http://127.0.0.1/a\u00a0\n\u3000http://127.0.0.1/b\n".encode())
    lines = out.text.splitlines()
    assert lines[0] == "http://127.0.0.1/a%C2%A0"
    assert lines[1] == ""  # U+3000 is no scheme's first letter: not a URL
    assert "<stdin>:2: cannot parse URL" in out.stderr


def test_canon_base_resolves_a_reference_that_starts_with_a_brace() -> None:
    out = crawlkit("canon", "--base", "http://127.0.0.1/d/", input=b"{foo}\n")
    assert out.code == 0, out.stderr
    assert out.text == "http://127.0.0.1/d/%7Bfoo%7D\n"
    # a JSON record is still read as one
    record = crawlkit("canon", "--base", "http://127.0.0.1/d/", input=b'{"url": "x"}\n')
    assert record.text == "http://127.0.0.1/d/x\n"
