"""crawlkit.deflate: zlib-ng's streams are zlib's format both ways, and its error is
what a damaged stream raises where the library catches it."""

from __future__ import annotations

import random
import zlib

import pytest

from crawlkit import deflate


def page(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    words = [b"<a href='/p%d'>" % i for i in range(50)] + [b"the ", b"crawl ", b"</div>\n"]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words)
    return bytes(out[:size])


@pytest.mark.parametrize("wbits", [31, 15, -15])  # gzip, zlib, raw deflate
def test_streams_are_zlibs_format_both_ways(wbits: int) -> None:
    for size in (0, 1, 300, 70_000):
        raw = page(size, size)
        packer = deflate.compressobj(6, deflate.DEFLATED, wbits)
        ours = packer.compress(raw) + packer.flush()
        assert zlib.decompressobj(wbits).decompress(ours) == raw
        theirs = zlib.compress(raw, 6, wbits=wbits)
        unpacker = deflate.decompressobj(wbits)
        assert unpacker.decompress(theirs) == raw and unpacker.eof


def test_a_damaged_stream_raises_error_and_a_capped_one_keeps_its_tail() -> None:
    member = zlib.compress(page(1, 50_000), 6, wbits=31)
    with pytest.raises(deflate.Error):
        deflate.decompressobj(31).decompress(member[:10] + b"\xff" * 40 + member[50:])
    assert issubclass(deflate.Error, Exception)
    # max_length holds the rest back, as zlib's decompressobj does (the bomb guards)
    unpacker = deflate.decompressobj(47)
    head = unpacker.decompress(member, 1000)
    assert len(head) == 1000 and unpacker.unconsumed_tail and not unpacker.eof
