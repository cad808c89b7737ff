"""Charset labels against the browsers' own conformance cases: the web-platform-tests
table encoding/resources/encodings.js (the Encoding Standard's labels), as
encoding/textdecoder-labels.any.js reads it (case-insensitive, ASCII white space
around a label trimmed) and encoding/api-invalid-label.any.js (any other white space,
or a NUL, makes it no label). Retyped as a table: label -> encoding -> the Python codec
crawlkit decodes it with.
"""

from __future__ import annotations

import codecs

import pytest

from crawlkit.html.encoding import codec_for_label

LABELS = "encoding/resources/encodings.js"

# The Python codec of each encoding of the standard. gbk is gb18030's decoder, Big5 is
# Big5-HKSCS, Shift_JIS and EUC-KR are Microsoft's supersets: the standard's own
# definitions of them.
CODEC = {
    "utf-8": "utf-8",
    "ibm866": "cp866",
    "iso-8859-2": "iso8859-2",
    "iso-8859-3": "iso8859-3",
    "iso-8859-4": "iso8859-4",
    "iso-8859-5": "iso8859-5",
    "iso-8859-6": "iso8859-6",
    "iso-8859-7": "iso8859-7",
    "iso-8859-8": "iso8859-8",
    "iso-8859-8-i": "iso8859-8",  # the same bytes; -i says the text is in logical order
    "iso-8859-10": "iso8859-10",
    "iso-8859-13": "iso8859-13",
    "iso-8859-14": "iso8859-14",
    "iso-8859-15": "iso8859-15",
    "iso-8859-16": "iso8859-16",
    "koi8-r": "koi8-r",
    "koi8-u": "koi8-u",
    "macintosh": "mac-roman",
    "windows-874": "cp874",
    "windows-1250": "cp1250",
    "windows-1251": "cp1251",
    "windows-1252": "cp1252",
    "windows-1253": "cp1253",
    "windows-1254": "cp1254",
    "windows-1255": "cp1255",
    "windows-1256": "cp1256",
    "windows-1257": "cp1257",
    "windows-1258": "cp1258",
    "x-mac-cyrillic": "mac-cyrillic",
    "gbk": "gb18030",
    "gb18030": "gb18030",
    "big5": "big5hkscs",
    "euc-jp": "euc_jp",
    "iso-2022-jp": "iso2022_jp",
    "shift_jis": "cp932",
    "euc-kr": "cp949",
    "utf-16be": "utf-16-be",
    "utf-16le": "utf-16-le",
    # Deliberate: x-user-defined maps bytes 0x80-0xFF to the Private Use Area, text no
    # reader can use; HTML itself reads a <meta> naming it as windows-1252, and so
    # does crawlkit wherever it is named.
    "x-user-defined": "cp1252",
    # Deliberate: the "replacement" encoding decodes a whole page to one U+FFFD (it
    # defuses ISO-2022-KR and HZ); crawlkit takes such a label for no label, and the
    # page's other declarations, or its bytes, decide.
    "replacement": None,
}

# encodings.js, in its order: encoding -> its labels.
TABLE: dict[str, str] = {
    "utf-8": "unicode-1-1-utf-8 utf-8 utf8",
    "ibm866": "866 cp866 csibm866 ibm866",
    "iso-8859-2": "csisolatin2 iso-8859-2 iso-ir-101 iso8859-2 iso88592 iso_8859-2 "
    "iso_8859-2:1987 l2 latin2",
    "iso-8859-3": "csisolatin3 iso-8859-3 iso-ir-109 iso8859-3 iso88593 iso_8859-3 "
    "iso_8859-3:1988 l3 latin3",
    "iso-8859-4": "csisolatin4 iso-8859-4 iso-ir-110 iso8859-4 iso88594 iso_8859-4 "
    "iso_8859-4:1988 l4 latin4",
    "iso-8859-5": "csisolatincyrillic cyrillic iso-8859-5 iso-ir-144 iso8859-5 iso88595 "
    "iso_8859-5 iso_8859-5:1988",
    "iso-8859-6": "arabic asmo-708 csiso88596e csiso88596i csisolatinarabic ecma-114 "
    "iso-8859-6 iso-8859-6-e iso-8859-6-i iso-ir-127 iso8859-6 iso88596 iso_8859-6 "
    "iso_8859-6:1987",
    "iso-8859-7": "csisolatingreek ecma-118 elot_928 greek greek8 iso-8859-7 iso-ir-126 "
    "iso8859-7 iso88597 iso_8859-7 iso_8859-7:1987 sun_eu_greek",
    "iso-8859-8": "csiso88598e csisolatinhebrew hebrew iso-8859-8 iso-8859-8-e iso-ir-138 "
    "iso8859-8 iso88598 iso_8859-8 iso_8859-8:1988 visual",
    "iso-8859-8-i": "csiso88598i iso-8859-8-i logical",
    "iso-8859-10": "csisolatin6 iso-8859-10 iso-ir-157 iso8859-10 iso885910 l6 latin6",
    "iso-8859-13": "iso-8859-13 iso8859-13 iso885913",
    "iso-8859-14": "iso-8859-14 iso8859-14 iso885914",
    "iso-8859-15": "csisolatin9 iso-8859-15 iso8859-15 iso885915 iso_8859-15 l9",
    "iso-8859-16": "iso-8859-16",
    "koi8-r": "cskoi8r koi koi8 koi8-r koi8_r",
    "koi8-u": "koi8-u",
    "macintosh": "csmacintosh mac macintosh x-mac-roman",
    "windows-874": "dos-874 iso-8859-11 iso8859-11 iso885911 tis-620 windows-874",
    "windows-1250": "cp1250 windows-1250 x-cp1250",
    "windows-1251": "cp1251 windows-1251 x-cp1251",
    "windows-1252": "ansi_x3.4-1968 ascii cp1252 cp819 csisolatin1 ibm819 iso-8859-1 "
    "iso-ir-100 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 l1 latin1 us-ascii "
    "windows-1252 x-cp1252",
    "windows-1253": "cp1253 windows-1253 x-cp1253",
    "windows-1254": "cp1254 csisolatin5 iso-8859-9 iso-ir-148 iso8859-9 iso88599 iso_8859-9 "
    "iso_8859-9:1989 l5 latin5 windows-1254 x-cp1254",
    "windows-1255": "cp1255 windows-1255 x-cp1255",
    "windows-1256": "cp1256 windows-1256 x-cp1256",
    "windows-1257": "cp1257 windows-1257 x-cp1257",
    "windows-1258": "cp1258 windows-1258 x-cp1258",
    "x-mac-cyrillic": "x-mac-cyrillic x-mac-ukrainian",
    "gbk": "chinese csgb2312 csiso58gb231280 gb2312 gb_2312 gb_2312-80 gbk iso-ir-58 x-gbk",
    "gb18030": "gb18030",
    "big5": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "euc-jp": "cseucpkdfmtjapanese euc-jp x-euc-jp",
    "iso-2022-jp": "csiso2022jp iso-2022-jp",
    "shift_jis": "csshiftjis ms_kanji shift-jis shift_jis sjis windows-31j x-sjis",
    "euc-kr": "cseuckr csksc56011987 euc-kr iso-ir-149 korean ks_c_5601-1987 "
    "ks_c_5601-1989 ksc5601 ksc_5601 windows-949",
    "replacement": "csiso2022kr hz-gb-2312 iso-2022-cn iso-2022-cn-ext iso-2022-kr",
    "utf-16be": "utf-16be",
    "utf-16le": "utf-16 utf-16le",
    "x-user-defined": "x-user-defined",
}
# Labels the Encoding Standard added after that copy of encodings.js: the same checks.
TABLE["utf-8"] += " unicode11utf8 unicode20utf8 x-unicode20utf8"
TABLE["koi8-u"] += " koi8-ru"
TABLE["shift_jis"] += " ms932"
TABLE["utf-16le"] += " csunicode iso-10646-ucs-2 ucs-2 unicode unicodefeff"
TABLE["utf-16be"] += " unicodefffe"

CASES = [(label, name) for name, labels in TABLE.items() for label in labels.split()]
ASCII_SPACE = [" ", "\t", "\n", "\f", "\r"]
NOT_SPACE = ["\x00", "\x0b", "\xa0", "\u2028", "\u2029"]


def _codec(name: str) -> str | None:
    codec = CODEC[name]
    return codecs.lookup(codec).name if codec else None


@pytest.mark.parametrize(("label", "name"), CASES, ids=repr)
def test_wpt_label_names_its_encoding(label: str, name: str) -> None:
    expected = _codec(name)
    assert codec_for_label(label) == expected
    assert codec_for_label(label.upper()) == expected
    for space in ASCII_SPACE:
        assert codec_for_label(space + label) == expected
        assert codec_for_label(label + space) == expected
        assert codec_for_label(space + label + space) == expected


@pytest.mark.parametrize(("label", "name"), CASES, ids=repr)
def test_wpt_other_white_space_makes_no_label(label: str, name: str) -> None:
    for space in NOT_SPACE:
        assert codec_for_label(space + label) is None, repr(space)
        assert codec_for_label(label + space) is None, repr(space)
        assert codec_for_label(space + label + space) is None, repr(space)


def test_wpt_invalid_label() -> None:
    assert codec_for_label("invalid-invalidLabel") is None


@pytest.mark.parametrize("label", ['"gbk"', "'gbk'", "gbk'", '"gbk'])
def test_quotes_are_part_of_a_label(label: str) -> None:
    # A quote is a character of the label (the standard trims white space only): a
    # Content-Type's charset='gbk' names no encoding in a browser (WPT
    # mimesniff/mime-types/resources/mime-types.json), and crawlkit read it as GBK.
    assert codec_for_label(label) is None
