"""Record streams: compression by magic bytes, bad lines, truncation, atomic outputs."""

from __future__ import annotations

import gzip
import io as pyio
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from crawlkit import streams
from crawlkit.diag import Reporter
from crawlkit.errors import InputError, UsageError


def _records(n: int) -> list[dict]:
    return [{"url": f"http://a.com/{i}", "n": i, "extra": {"keep": [i, None]}} for i in range(n)]


def _ndjson(records: list[dict]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


def _reporter() -> tuple[Reporter, pyio.StringIO]:
    buf = pyio.StringIO()
    return Reporter("crawlkit test", stream=buf), buf


@pytest.mark.parametrize("suffix", ["", ".zst", ".gz"])
def test_round_trip_by_extension_and_magic(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"r.ndjson{suffix}"
    recs = _records(1000)
    with streams.open_output(path) as out:
        out.write_records(recs)
    raw = path.read_bytes()
    if suffix == ".zst":
        assert raw.startswith(streams.ZSTD_MAGIC)
    elif suffix == ".gz":
        assert raw.startswith(streams.GZIP_MAGIC)
    # detection is by magic bytes, not the name: rename and read again
    renamed = tmp_path / "no-extension"
    path.rename(renamed)
    assert list(streams.read_records([renamed])) == recs


def test_unknown_fields_pass_through(tmp_path: Path) -> None:
    rec = {"url": "http://a.com/", "mine": {"deep": [1, 2.5, "x", None, True]}, "ü": "ß"}
    path = tmp_path / "a.ndjson"
    path.write_bytes(orjson.dumps(rec) + b"\n")
    assert list(streams.read_records([path])) == [rec]


def test_bad_lines_are_reported_counted_and_skipped(tmp_path: Path) -> None:
    path = tmp_path / "mixed.ndjson"
    path.write_bytes(
        b'{"n": 1}\n'
        b"not json\n"
        b"[1, 2]\n"
        b'{"n": 2}\n'
        b"\x00\xff\xfe binary junk \x80\n"
        b"\n"
        b'{"n": 3}\r\n'
        b'{"n": 4}'  # no final newline
    )
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert [r["n"] for r in got] == [1, 2, 3, 4]
    assert rep.bad_records == 3
    lines = buf.getvalue().splitlines()
    assert any(f"{path}:2: not JSON" in line for line in lines)
    assert any(f"{path}:3: not a JSON object" in line for line in lines)
    assert any(f"{path}:5: invalid UTF-8" in line for line in lines)


def test_blank_lines_are_skipped_silently_and_null_is_no_object(tmp_path) -> None:
    path = tmp_path / "blank.ndjson"
    path.write_bytes(b' \t\x0b\x0c \n{"n": 1}\nnull\n  {"n": 2}  \n\r\n\x85\n')
    rep, buf = _reporter()
    got = list(streams.read_records_with_lines([path], rep))
    assert [(line, r["n"]) for _, line, r in got] == [(2, 1), (4, 2)]
    lines = buf.getvalue().splitlines()
    assert rep.bad_records == 2  # "null", and a byte that is no ASCII whitespace
    assert any(f"{path}:3: not a JSON object (a NoneType)" in line for line in lines)
    assert any(f"{path}:6: invalid UTF-8" in line for line in lines)


def test_empty_file_gives_no_records_and_no_errors(tmp_path: Path) -> None:
    for name, data in [
        ("e", b""),
        ("e.zst", zstandard.ZstdCompressor().compress(b"")),
        ("e.gz", gzip.compress(b"")),
    ]:
        path = tmp_path / name
        path.write_bytes(data)
        rep, _ = _reporter()
        assert list(streams.read_records([path], rep)) == []
        assert sum(rep.counts.values()) == 0


def test_truncated_zstd_keeps_records_before_the_damage(tmp_path: Path) -> None:
    recs = _records(20000)
    data = zstandard.ZstdCompressor().compress(_ndjson(recs))
    path = tmp_path / "cut.ndjson.zst"
    path.write_bytes(data[: len(data) // 2])
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert 0 < len(got) < len(recs)
    assert got == recs[: len(got)]  # exactly a prefix, nothing invented
    assert rep.counts["truncated input"] == 1
    assert "zstd stream ends inside a frame" in buf.getvalue()


def test_truncated_gzip_keeps_records_before_the_damage(tmp_path: Path) -> None:
    recs = _records(20000)
    data = gzip.compress(_ndjson(recs))
    path = tmp_path / "cut.ndjson.gz"
    path.write_bytes(data[: len(data) // 2])
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert 0 < len(got) < len(recs)
    assert got == recs[: len(got)]
    assert rep.counts["truncated input"] == 1
    assert "gzip stream ends early" in buf.getvalue()


def test_multi_frame_zstd_is_read_whole(tmp_path: Path) -> None:
    recs = _records(300)
    comp = zstandard.ZstdCompressor()
    data = b"".join(comp.compress(_ndjson(recs[i : i + 100])) for i in range(0, 300, 100))
    path = tmp_path / "frames.zst"
    path.write_bytes(data)
    assert list(streams.read_records([path])) == recs


def test_hundred_megabyte_line_is_skipped_not_held(tmp_path: Path) -> None:
    path = tmp_path / "huge.ndjson"
    with open(path, "wb") as f:
        f.write(b'{"n": 1}\n')
        f.write(b'{"blob": "')
        chunk = b"x" * (1 << 20)
        for _ in range(100):
            f.write(chunk)
        f.write(b'"}\n')
        f.write(b'{"n": 2}\n')
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep, max_line=1 << 20))
    assert [r["n"] for r in got] == [1, 2]
    assert rep.bad_records == 1
    assert f"{path}:2: line longer than" in buf.getvalue()


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.ndjson"):
        list(streams.read_records([tmp_path / "missing.ndjson"]))


def test_only_one_stdin() -> None:
    with pytest.raises(UsageError):
        list(streams.read_records(["-", "-"]))


def test_failed_output_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson.zst"
    with streams.open_output(path) as out:
        out.write_record({"v": "old"})
    with pytest.raises(RuntimeError), streams.open_output(path) as out:
        out.write_record({"v": "new"})
        raise RuntimeError("crash mid-write")
    assert list(streams.read_records([path])) == [{"v": "old"}]
    assert [p.name for p in tmp_path.iterdir()] == ["out.ndjson.zst"]  # no temp left


def test_output_is_invisible_until_complete(tmp_path: Path) -> None:
    path = tmp_path / "out.ndjson"
    out = streams.open_output(path)
    out.write_record({"a": 1})
    assert not path.exists()
    out.commit()
    assert path.exists()


@pytest.mark.parametrize("suffix", ["", ".zst", ".gz"])
def test_write_records_gives_the_bytes_of_one_record_at_a_time(tmp_path: Path, suffix: str) -> None:
    """write_records writes a file's records in batches: the file holds the very bytes
    that writing them one by one gives, batches cut anywhere (compressed or not)."""
    recs = [{"url": f"http://h{i % 97}.test/{'p' * (i % 300)}", "n": i} for i in range(5000)]
    one = tmp_path / f"one.ndjson{suffix}"
    with streams.open_output(one) as out:
        for rec in recs:
            out.write_record(rec)
    batched = tmp_path / f"batched.ndjson{suffix}"
    with streams.open_output(batched) as out:
        assert out.write_records(iter(recs)) == len(recs)
    assert len(_ndjson(recs)) > 4 * streams._WRITE_BATCH  # several batches
    assert batched.read_bytes() == one.read_bytes()


def test_write_records_writes_what_came_before_a_failing_record() -> None:
    """A record source that fails midway: the records before it are written, as when
    each went out alone (what a caller that outlives the error finds)."""
    sink = pyio.BytesIO()
    out = streams.Output(None)
    out.path = Path("x.ndjson")  # a file's batched path, written into a buffer
    out._stream = out._raw = sink

    def failing():
        yield {"n": 1}
        yield {"n": 2}
        raise RuntimeError("bad record")

    with pytest.raises(RuntimeError):
        out.write_records(failing())
    assert sink.getvalue() == _ndjson([{"n": 1}, {"n": 2}])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=10), json_values, max_size=6), max_size=20))
def test_ndjson_round_trip_keeps_every_field(tmp_path_factory, recs: list[dict]) -> None:
    path = tmp_path_factory.mktemp("rt") / "r.ndjson.zst"
    with streams.open_output(path) as out:
        out.write_records(recs)
    assert list(streams.read_records([path])) == recs


def test_a_large_write_to_a_closed_pipe_raises_instead_of_counting_as_written() -> None:
    # A write larger than the stdout buffer goes straight to the OS; when the reader
    # leaves mid-write, BufferedWriter reports a short count instead of raising. The
    # Output must raise (BrokenPipeError), or a caller commits what never got out.
    code = (
        "import sys\n"
        "from crawlkit import streams\n"
        "out = streams.Output('-')\n"
        "try:\n"
        "    out.write(b'x' * 10**7)\n"
        "except BrokenPipeError:\n"
        "    sys.stderr.write('raised'); sys.stderr.flush(); sys.exit(3)\n"
        "sys.stderr.write('returned'); sys.stderr.flush()\n"
    )
    res = subprocess.run(
        ["bash", "-c", f'{sys.executable} -c "$0" | head -c1 > /dev/null', code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert "raised" in res.stderr, res.stderr


def _skippable(data: bytes, kind: int = 0) -> bytes:
    """A zstd skippable frame (pzstd writes one first, its index of the frames)."""
    return (0x184D2A50 + kind).to_bytes(4, "little") + len(data).to_bytes(4, "little") + data


@pytest.mark.parametrize("kind", [0, 15])
def test_a_zstd_file_that_starts_with_a_skippable_frame_is_zstd(tmp_path: Path, kind: int) -> None:
    recs = _records(300)
    path = tmp_path / "pzstd-made"
    body = zstandard.ZstdCompressor().compress(_ndjson(recs))
    path.write_bytes(_skippable(b"\x00" * 4, kind) + body)
    assert list(streams.read_records([path])) == recs
    cut = tmp_path / "cut"
    cut.write_bytes(path.read_bytes()[:-20])
    rep, buf = _reporter()
    list(streams.read_records([cut], rep))
    assert rep.counts["truncated input"] == 1 and "inside a frame" in buf.getvalue()


def test_a_byte_order_mark_before_the_first_line_is_dropped(tmp_path: Path) -> None:
    path = tmp_path / "windows.ndjson"
    path.write_bytes(b'\xef\xbb\xbf{"n": 1}\r\n{"n": 2}\r\n')
    rep, buf = _reporter()
    assert list(streams.read_records([path], rep)) == [{"n": 1}, {"n": 2}]
    assert rep.bad_records == 0, buf.getvalue()
    text = tmp_path / "seeds.txt"
    text.write_bytes(b"\xef\xbb\xbfhttp://a.test/\r\n")
    assert [t for _, _, t in streams.read_text_lines([text])] == ["http://a.test/"]


def test_a_flipped_bit_in_a_zst_output_is_noticed(tmp_path: Path) -> None:
    """Outputs (and frontier files) carry zstd's frame checksum: a bit flipped on disk
    decoded as other records, silently (a helper found no checksum in any .zst)."""
    import random

    rng = random.Random(7)
    recs = [{"url": f"http://a.test/{rng.getrandbits(128):032x}"} for _ in range(400)]
    path = tmp_path / "r.ndjson.zst"
    with streams.open_output(path) as out:
        out.write_records(recs)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    rep, buf = _reporter()
    got = list(streams.read_records([path], rep))
    assert got != recs
    assert rep.counts["corrupt input"] == 1, buf.getvalue()
