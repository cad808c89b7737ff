"""The WACZ's ZIP: zip64 only where a member needs it (ReplayWeb.page rejects the rest)."""

from __future__ import annotations

import io
import struct
import time
import zipfile

import pytest
from conftest import crawlkit
from warc_samples import write_site_warc

from crawlkit.stages.wacz_zip import ZIP32_LIMIT, ZipWriter, needs_zip64

# warcio's writer (write_site_warc) leaves SpooledTemporaryFiles to the collector.
pytestmark = pytest.mark.filterwarnings(
    "ignore::ResourceWarning", "ignore::pytest.PytestUnraisableExceptionWarning"
)
_STAMP = time.gmtime(1_790_000_000)


def test_the_zip64_rule_without_writing_4_gib():
    assert not needs_zip64(0) and not needs_zip64(ZIP32_LIMIT - 1)
    assert not needs_zip64(3 << 30)  # 3 GiB: Python's zipfile goes zip64 from 2 GiB
    assert needs_zip64(ZIP32_LIMIT) and needs_zip64(5 << 30)
    assert needs_zip64(10, offset=ZIP32_LIMIT) and not needs_zip64(10, offset=ZIP32_LIMIT - 1)


def _extras(data: bytes) -> dict[str, bytes]:
    """{name: the extra field of its local header} of a ZIP in ``data``."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        for info in zf.infolist():
            head = data[info.header_offset : info.header_offset + 30]
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            start = info.header_offset + 30 + name_len
            out[info.filename] = data[start : start + extra_len]
            assert info.extra == b""  # the central directory's
    return out


def test_small_members_have_no_zip64_fields():
    buf = io.BytesIO()
    zw = ZipWriter(buf, stamp=_STAMP)
    zw.add_bytes("archive/a.warc.gz", b"WARC/1.1\r\n" * 100, compress=False)
    zw.add_bytes("pages/pages.jsonl", b'{"x": 1}\n' * 100)
    zw.add_bytes("datapackage.json", b"{}")
    zw.close()
    data = buf.getvalue()
    assert _extras(data) == {
        n: b"" for n in ("archive/a.warc.gz", "pages/pages.jsonl", "datapackage.json")
    }
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.testzip() is None
        assert zf.read("archive/a.warc.gz") == b"WARC/1.1\r\n" * 100
        assert zf.getinfo("archive/a.warc.gz").compress_type == zipfile.ZIP_STORED
    assert b"PK\x06\x06" not in data  # no zip64 end of central directory


class _Sized(io.RawIOBase):
    """A stream that claims ``size`` but ends early (the writer must notice)."""

    def __init__(self, data: bytes):
        self._data = io.BytesIO(data)

    def read(self, n: int = -1) -> bytes:
        return self._data.read(n)


def test_a_member_over_4_gib_gets_zip64_headers(monkeypatch):
    """The rule applied: with the limit lowered to 1 KiB (so the test writes KiB, not
    GiB), the member past it, and only that one, gets zip64 fields, and the archive
    still reads back whole (Python's zipfile follows the zip64 fields)."""
    import crawlkit.stages.wacz_zip as wz

    monkeypatch.setattr(wz, "ZIP32_LIMIT", 1024)
    buf = io.BytesIO()
    zw = wz.ZipWriter(buf, stamp=_STAMP)
    zw.add_bytes("small", b"s" * 100, compress=False)
    zw.add_bytes("big", b"b" * 2000, compress=False)
    zw.close()
    data = buf.getvalue()
    head = data[: 30 + len("small")]
    assert struct.unpack("<H", head[28:30])[0] == 0  # small: no extra field
    big_at = data.index(b"PK\x03\x04", 1)
    size_fields = struct.unpack("<II", data[big_at + 18 : big_at + 26])
    assert size_fields == (0xFFFFFFFF, 0xFFFFFFFF)  # big: see the zip64 extra
    extra = data[big_at + 30 + 3 : big_at + 30 + 3 + 20]
    assert struct.unpack("<HHQQ", extra) == (1, 16, 2000, 2000)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.read("big") == b"b" * 2000 and zf.read("small") == b"s" * 100
    with pytest.raises(ValueError, match="bytes read"):
        wz.ZipWriter(io.BytesIO(), stamp=_STAMP).add("x", _Sized(b"abc"), 5, compress=False)


def test_crawlkit_wacz_writes_no_zip64_for_a_small_collection(tmp_path):
    """Before: every WARC member had zip64 headers, and ReplayWeb.page showed "Archived
    Page Not Found" for every page."""
    warc = tmp_path / "site.warc.gz"
    write_site_warc(warc)
    out = tmp_path / "c.wacz"
    assert crawlkit("wacz", str(warc), "-o", str(out)).code == 0
    data = out.read_bytes()
    assert set(_extras(data).values()) == {b""}
    assert b"PK\x06\x06" not in data
