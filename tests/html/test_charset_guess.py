"""Undeclared pages that are not UTF-8: windows-1252 unless it is implausible and the
detector is sure (crawlkit/html/guess.py). Pages made of the texts in tests/data/charset
(written for these tests, as news pages write) in a legacy encoding, no declaration:
Western pages stay windows-1252, the others are read in the encoding they were written
in."""

from __future__ import annotations

import html
from pathlib import Path

import orjson
import pytest
from conftest import crawlkit, fetch_loopback, serve_routes

from crawlkit.html.guess import guess_legacy, implausible_share, windows_1252_implausible
from crawlkit.html.page import HtmlExtractor, detect_charset
from crawlkit.url import Canonicalizer

DATA = Path(__file__).resolve().parent.parent / "data" / "charset"
# page -> (its text in tests/data/charset, the encoding it is written in)
WESTERN = {
    "de-windows-1252.html": ("de.txt", "cp1252"),
    "en-windows-1252.html": ("en.txt", "cp1252"),  # £ and quotes: chardetng alone says 1250
    "en-2-windows-1252.html": ("en-2.txt", "cp1252"),
    "en-3-windows-1252.html": ("en-3.txt", "cp1252"),
    "fr-windows-1252.html": ("fr.txt", "cp1252"),
    "pt-windows-1252.html": ("pt.txt", "cp1252"),
}
LEGACY = {
    "ja-shift_jis.html": ("ja.txt", "cp932"),
    "ja-euc-jp.html": ("ja.txt", "euc_jp"),
    "zh-gbk.html": ("zh.txt", "gbk"),
    "zh-tw-big5.html": ("zh-tw.txt", "big5"),
    "ko-euc-kr.html": ("ko.txt", "cp949"),
    "ru-windows-1251.html": ("ru.txt", "cp1251"),
    "ru-koi8-r.html": ("ru.txt", "koi8_r"),
    "el-iso-8859-7.html": ("el.txt", "iso8859_7"),
    "pl-windows-1250.html": ("pl.txt", "cp1250"),
}


def _page(name: str) -> bytes:
    """The undeclared page ``name``: its text's first line the title, the rest
    paragraphs, in its encoding (a character it lacks as a numeric reference, as a
    real page in that encoding writes it)."""
    text, codec = {**WESTERN, **LEGACY}[name]
    title, *paragraphs = (DATA / text).read_text("utf-8").strip().splitlines()
    body = "".join(f"<p>{html.escape(p, quote=False)}</p>\n" for p in paragraphs)
    page = f"<html><head><title>{html.escape(title)}</title></head><body>\n{body}</body></html>"
    return page.encode(codec, "xmlcharrefreplace")


def _title(body: bytes, codec: str) -> str:
    """The page's title as ``codec`` reads it, as document.title gives it."""
    start = body.index(b"<title>") + len(b"<title>")
    return " ".join(html.unescape(body[start : body.index(b"</title>")].decode(codec)).split())


@pytest.mark.parametrize("name", sorted(WESTERN))
def test_an_undeclared_western_page_stays_windows_1252(name: str) -> None:
    body = _page(name)
    assert not body.isascii()
    assert detect_charset(body) == ("cp1252", "default", 0)
    assert not windows_1252_implausible(body)


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_an_undeclared_legacy_page_is_read_as_written(name: str) -> None:
    body = _page(name)
    truth = LEGACY[name][1]
    codec, source, bom = detect_charset(body)
    assert (source, bom) == ("guess", 0)
    # right when it reads the bytes as the true encoding does (gb18030 for GBK, KOI8-U
    # for KOI8-R's letters, windows-1253 for ISO-8859-7's)
    assert body.decode(codec) == body.decode(truth)
    page = HtmlExtractor(Canonicalizer()).extract(
        body, "https://example.com/", content_type="text/html"
    )
    assert page.charset == codec
    assert page.title == _title(body, truth)
    assert "\ufffd" not in page.text and len(page.text) > 200


def test_a_declaration_or_utf_8_is_never_second_guessed() -> None:
    body = _page("ja-shift_jis.html")
    assert detect_charset(body, "text/html; charset=windows-1252")[:2] == ("cp1252", "header")
    declared = b'<meta charset="iso-8859-1">' + body
    assert detect_charset(declared)[:2] == ("cp1252", "meta")
    text = body.decode("cp932").encode("utf-8")
    assert detect_charset(text)[:2] == ("utf-8", "utf-8")


def test_what_western_text_puts_between_letters_is_no_sign() -> None:
    # ’ in "don’t", – in "A–Z", a soft hyphen, é and ü one at a time: all explained
    western = "Don’t miss the A–Z of caf\xe9s in M\xfcnchen, Gro\xadstadt.".encode("cp1252")
    assert implausible_share(western * 20)[0] == 0
    # Polish in windows-1250: ł and ż are symbols in windows-1252 (³, ¿), and inside a
    # word (Ma³gorzata, mo¿e, jab³ka) no Western text has them
    polish = "Małgorzata może mieć rację, że jabłka są tańsze.".encode("cp1250")
    assert implausible_share(polish) == (3, 8)


def test_scripts_styles_and_comments_are_not_text() -> None:
    # a form validator's character class of accented letters, a comment and a style
    # with runs of high bytes: a Western page all the same
    script = "<script>var word = /^[ÀÈÌÒÙàèìòùÁÉÍÓÚÝáéíóúý]+$/;</script>"
    noise = "<!-- ¦º¹¦¦º --><style>p:after{content:'¦º¹¦'}</style>"
    body = f"{script}{noise}<p>Grüße aus Köln</p>".encode("cp1252")
    assert implausible_share(body) == (0, 3)
    assert detect_charset(body)[:2] == ("cp1252", "default")


def test_bytes_no_encoding_explains_stay_windows_1252() -> None:
    # every high byte back to back: implausible for windows-1252, and no guess reads it
    # without replacement characters either
    body = b"<p>" + bytes(range(0x80, 0x100)) * 64 + b"</p>"
    assert windows_1252_implausible(body)
    assert guess_legacy(body) is None
    assert detect_charset(body)[:2] == ("cp1252", "default")


def test_extract_reads_an_undeclared_shift_jis_page_from_a_warc(tmp_path: Path) -> None:
    body = _page("ja-shift_jis.html")
    western = _page("de-windows-1252.html")
    routes = {"/ja.html": ("text/html", body), "/de.html": ("text/html", western)}
    with serve_routes(routes) as (root, _log):
        res = fetch_loopback(tmp_path / "s", [f"{root}/ja.html", f"{root}/de.html"])
    assert res.code == 0, res.stderr
    res = crawlkit("extract", str(tmp_path / "s" / "warc" / "new"))
    assert res.code == 0, res.stderr
    pages = {orjson.loads(line)["url"]: orjson.loads(line) for line in res.lines}
    ja, de = pages[f"{root}/ja.html"], pages[f"{root}/de.html"]
    assert (ja["charset"], de["charset"]) == ("cp932", "cp1252")
    assert (ja["title"], de["title"]) == (_title(body, "cp932"), _title(western, "cp1252"))


def test_a_utf_8_page_cut_inside_a_character_is_still_utf_8() -> None:
    # extract parses at most max_html_bytes of a page: a cap that falls inside a
    # character of an undeclared UTF-8 page made all of it windows-1252 mojibake
    body = _page("ja-shift_jis.html").decode("cp932").encode("utf-8")
    cap = body.index("図書館".encode(), body.index(b"</title>")) + 1  # one byte into 図
    assert detect_charset(body[:cap]) == ("utf-8", "utf-8", 0)
    small = HtmlExtractor(Canonicalizer(), max_html_bytes=cap)
    page = small.extract(body, "https://example.com/", content_type="text/html")
    assert (page.charset, page.capped) == ("utf-8", ["html"])
    assert page.title == _title(body, "utf-8")
    # an invalid byte before the end is no cut: UTF-8 with a stray byte (a guess)
    assert detect_charset(body[:cap] + b"<p>x</p>") == ("utf-8", "guess", 0)


@pytest.mark.parametrize(
    "text",
    [
        "Καλημέρα κόσμε: το γρήγορο καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο. ",
        "素早い茶色の狐がのろまな犬を飛び越える。日本語の文章です。",
        "Съешь же ещё этих мягких французских булок, да выпей чаю. ",
    ],
)
def test_a_utf_8_page_with_a_stray_byte_stays_utf_8(text: str) -> None:
    """A Latin-1 byte pasted into an undeclared UTF-8 page: read as UTF-8 (one
    replacement character), not as windows-1252 (every character two) nor as what a
    detector says of bytes that are UTF-8 (the Greek page came out gb18030, CJK)."""
    title = text.split(":")[0].split("。")[0].strip()
    page = f"<html><head><title>{title}</title></head><body><p>{text * 20}</p></body></html>"
    body = page.encode()
    at = body.index(b"<p>") + 3
    body = body[:at] + b"caf\xe9 " + body[at:]
    assert detect_charset(body) == ("utf-8", "guess", 0)
    extracted = HtmlExtractor(Canonicalizer()).extract(body, "http://a.test/")
    assert extracted.title == title and "caf\ufffd" in extracted.raw_text


def test_a_windows_1252_page_with_a_few_utf_8_lookalikes_stays_windows_1252() -> None:
    """Mostly-UTF-8 needs many valid sequences and nearly no invalid byte: a Western
    page whose accents happen to form a valid sequence or two stays windows-1252."""
    body = ("<p>" + "Café crème, naïve façade. " * 30 + "Ã©</p>").encode("cp1252")
    assert detect_charset(body) == ("cp1252", "default", 0)
