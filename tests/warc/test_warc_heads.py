"""A record's head read at once (WarcStream.plain_head) is the head read line by line.

``read_head`` (crawlkit/warc/head.py) splits a head of plain CRLF lines from the
buffer in one go and leaves every other head to ``read_head_by_lines``. Both must
give the same offset, headers and Content-Length, or the same error, and leave the
stream at the same place, for any bytes: bare LF and CR CR LF line ends,
continuation lines, headers that are not UTF-8, blank lines between records, heads
cut short and heads past the limit.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.errors import InputError
from crawlkit.warc import head
from crawlkit.warc.read import WarcStream

NAMES = ["WARC-Type", "WARC-Target-URI", "Content-Type", "X-Note", "warc-date"]
VALUES = ["response", "<http://a.test/x y>", "text/html", "café", "2026-12-07T12:00:00Z", ""]
ENDS = [b"\r\n", b"\r\n", b"\r\n", b"\n", b"\r\r\n"]


@st.composite
def heads(draw: st.DrawFn) -> bytes:
    """One record: blank lines, a version line, headers, a blank line, a block."""
    out = [draw(st.sampled_from([b"", b"\r\n", b"\r\n\r\n", b"\n"]))]
    out.append(draw(st.sampled_from([b"WARC/1.0", b"WARC/1.1", b"WARX/1.0"])))
    out.append(draw(st.sampled_from(ENDS)))
    block = draw(st.binary(max_size=40))
    lines = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.sampled_from(VALUES)), max_size=6))
    for name, value in lines:
        out.append(f"{name}: {value}".encode())
        if draw(st.booleans()):
            out.append(b"\xe9t\xe9")  # not UTF-8: the line is read as Latin-1
        out.append(draw(st.sampled_from(ENDS)))
        if draw(st.integers(0, 5)) == 0:
            out.append(b"  continued" + draw(st.sampled_from(ENDS)))
    if draw(st.integers(0, 4)):
        length = len(block) + draw(st.sampled_from([0, 0, 0, 1, -1]))
        out.append(b"Content-Length: " + str(length).encode() + draw(st.sampled_from(ENDS)))
    out.append(draw(st.sampled_from(ENDS)))
    out.append(block)
    return b"".join(out)


def _heads(data: bytes, by_lines: bool) -> list[object]:
    """Every head of ``data`` and where the stream was after it, or the error."""
    stream = WarcStream(io.BytesIO(data), "t.warc")
    read_head = head.read_head_by_lines if by_lines else head.read_head
    seen: list[object] = []
    for number in range(1, 20):
        try:
            got = read_head(stream, number, "t.warc")
        except InputError as exc:
            seen.append((type(exc).__name__, str(exc)))
            return seen
        seen.append((got, stream.tell()))
        if got is None:
            return seen
        stream.read(got[2])  # past the block
    return seen


@settings(max_examples=400, deadline=None)
@given(st.lists(heads(), min_size=1, max_size=4), st.integers(0, 200))
def test_heads_read_at_once_are_heads_read_line_by_line(records: list[bytes], cut: int) -> None:
    data = b"".join(records)
    for whole in (data, data[: max(0, len(data) - cut)]):  # and cut short
        assert _heads(whole, by_lines=False) == _heads(whole, by_lines=True)


def test_the_fast_path_takes_plain_heads_and_leaves_the_rest() -> None:
    plain = b"\r\nWARC/1.0\r\nWARC-Type: response\r\nContent-Length: 2\r\n\r\nab"
    stream = WarcStream(io.BytesIO(plain), "t.warc")
    stream._fill()
    head = b"WARC/1.0\r\nWARC-Type: response\r\nContent-Length: 2\r\n"
    assert stream.plain_head(1000) == (2, head)
    assert stream.read(2) == b"ab"
    for odd in (
        plain.replace(b"response\r\n", b"response\n"),  # a bare LF
        plain.replace(b"\r\n\r\nab", b"\r\n\r\r\nab"),  # a blank line of CR CR LF
        plain.replace(b"WARC/1.0", b"WARX/1.0"),  # not a WARC record
    ):
        stream = WarcStream(io.BytesIO(odd), "t.warc")
        stream._fill()
        assert stream.plain_head(1000) is None and stream.tell() == 0
    stream = WarcStream(io.BytesIO(plain), "t.warc")
    stream._fill()
    assert stream.plain_head(20) is None  # longer than the limit


@pytest.mark.parametrize("limit", [head.MAX_HEADER_BYTES])
def test_a_head_past_the_limit_is_the_same_error_both_ways(limit: int) -> None:
    long_line = b"X-Long: " + b"a" * limit + b"\r\n"
    data = b"WARC/1.0\r\n" + long_line + b"Content-Length: 0\r\n\r\n"
    assert _heads(data, by_lines=False) == _heads(data, by_lines=True)
    assert "longer than" in str(_heads(data, by_lines=False)[0])
