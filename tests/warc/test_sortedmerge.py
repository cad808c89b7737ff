"""merge_lines: a sorted file with new sorted lines inserted, as a merge from scratch."""

from __future__ import annotations

import heapq
import io

from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit.warc.sortedmerge import merge_lines

# Lines from a small alphabet, so equal lines, shared prefixes and a prefix that is a
# whole line ("a b" and "a") all come up; non-ASCII to check the byte order.
_LINE = st.text(alphabet="ab é,)/", max_size=6).map(lambda s: s.encode() + b"\n")
_LINES = st.lists(_LINE, max_size=40).map(sorted)


def merged(old: bytes, new: list[bytes], block: int) -> tuple[bytes, int]:
    out = io.BytesIO()
    count = merge_lines(io.BytesIO(old), new, out, block=block)
    return out.getvalue(), count


@settings(max_examples=300, deadline=None)
@given(old=_LINES, new=_LINES, block=st.integers(1, 64))
def test_merge_equals_a_merge_of_all_lines(old: list[bytes], new: list[bytes], block: int) -> None:
    data, count = merged(b"".join(old), new, block)
    assert data == b"".join(heapq.merge(old, new))
    assert count == len(old) + len(new)
    # The same order as the lines read as text (what the collection index merged).
    text = [line.decode() for line in old + new]
    assert data.decode() == "".join(sorted(text))


def test_a_last_line_without_its_newline_gets_one() -> None:
    data, count = merged(b"a\nc", [b"b\n", b"d"], block=3)
    assert (data, count) == (b"a\nb\nc\nd\n", 4)


def test_a_new_line_lands_in_its_place_in_a_long_file() -> None:
    old = b"".join(b"line %05d\n" % i for i in range(10_000))
    data, count = merged(old, [b"line 04999x\n"], block=4096)
    lines = data.splitlines(keepends=True)
    assert count == 10_001 and lines[5000] == b"line 04999x\n"
    assert lines[:5000] + lines[5001:] == old.splitlines(keepends=True)
