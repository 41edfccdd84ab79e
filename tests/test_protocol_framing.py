"""Framing and CRC (docs/protocol.md §2-3): round trip, resync, corruption never yields a wrong frame."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from drivers.protocol.crc import crc16_ccitt_false
from drivers.protocol.framing import MAX_PAYLOAD, Frame, FrameDecoder, encode_frame

frames = st.builds(
    Frame,
    seq=st.integers(0, 255),
    type=st.integers(0, 255),
    payload=st.binary(max_size=64) | st.sampled_from([b"\x7e\x7d" * 8, bytes(range(256))]),
)


def test_crc16_ccitt_false_check_value() -> None:
    assert crc16_ccitt_false(b"123456789") == 0x29B1
    assert crc16_ccitt_false(b"") == 0xFFFF


@given(st.lists(frames, max_size=5))
def test_round_trip_concatenated(fs: list[Frame]) -> None:
    d = FrameDecoder()
    assert d.feed(b"".join(encode_frame(f.seq, f.type, f.payload) for f in fs)) == fs
    assert d.stats.crc_errors == d.stats.bad_frames == 0


@given(frames)
def test_flag_never_inside_a_frame(f: Frame) -> None:
    raw = encode_frame(f.seq, f.type, f.payload)
    assert raw[0] == raw[-1] == 0x7E and 0x7E not in raw[1:-1]


@given(frames, st.data())
def test_split_at_any_points_yields_same_frame(f: Frame, data: st.DataObject) -> None:
    raw = encode_frame(f.seq, f.type, f.payload)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(raw)), max_size=4)))
    d, out, prev = FrameDecoder(), [], 0
    for c in [*cuts, len(raw)]:
        out += d.feed(raw[prev:c])
        prev = c
    assert out == [f]


@given(st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash(data: bytes) -> None:
    d = FrameDecoder()
    for chunk in (data[: len(data) // 2], data[len(data) // 2 :]):
        for frame in d.feed(chunk):
            assert len(frame.payload) <= MAX_PAYLOAD


@given(frames, frames, st.data())
def test_lost_byte_never_yields_a_wrong_frame(a: Frame, b: Frame, data: st.DataObject) -> None:
    """A byte lost anywhere in frame A never produces a frame other than A or B, and B always survives."""
    raw_a, raw_b = encode_frame(a.seq, a.type, a.payload), encode_frame(b.seq, b.type, b.payload)
    i = data.draw(st.integers(0, len(raw_a) - 1))
    d = FrameDecoder()
    out = d.feed(raw_a[:i] + raw_a[i + 1 :] + raw_b)
    assert out[-1:] == [b]
    assert all(f in (a, b) for f in out)
    if 0 < i < len(raw_a) - 1:  # a byte of the body: frame A is rejected (length field or bad escape)
        assert out == [b]


@given(frames, st.lists(st.integers(0, 10_000), min_size=1, max_size=3, unique=True))
def test_up_to_three_bit_errors_are_always_detected(f: Frame, positions: list[int]) -> None:
    """CRC-16/CCITT has Hamming distance 4 at these lengths; stuffing damage is caught by the length field."""
    raw = bytearray(encode_frame(f.seq, f.type, f.payload))
    nbits = len(raw) * 8
    for p in {p % nbits for p in positions}:
        raw[p // 8] ^= 1 << (p % 8)
    d = FrameDecoder()
    assert d.feed(bytes(raw)) == []  # the damaged frame is never accepted, let alone as another frame
    assert d.stats.frames_ok == 0


@settings(max_examples=300)
@given(frames, st.binary(min_size=1, max_size=40), frames)
def test_garbage_between_frames_is_skipped(a: Frame, junk: bytes, b: Frame) -> None:
    d = FrameDecoder()
    out = d.feed(
        b"noise" + encode_frame(a.seq, a.type, a.payload) + junk + encode_frame(b.seq, b.type, b.payload)
    )
    assert out[0] == a and out[-1] == b
    assert d.stats.garbage_bytes == 5


def test_oversized_frame_is_counted_and_resync_works() -> None:
    d = FrameDecoder()
    body = b"\x7e" + b"\x01" * (MAX_PAYLOAD + 50) + b"\x7e"
    good = encode_frame(1, 0x40, b"ok")
    assert d.feed(body + good) == [Frame(1, 0x40, b"ok")]
    assert d.stats.oversized == 1


def test_length_field_over_maximum_is_oversized() -> None:
    from drivers.protocol.framing import _stuff

    body = (MAX_PAYLOAD + 1).to_bytes(2, "big") + b"\x00\x40"
    body += crc16_ccitt_false(body).to_bytes(2, "big")
    d = FrameDecoder()
    assert d.feed(b"\x7e" + _stuff(body) + b"\x7e") == []
    assert d.stats.oversized == 1


def test_bad_crc_and_bad_escape_are_counted() -> None:
    raw = bytearray(encode_frame(3, 0x40, b"abc"))
    raw[-2] ^= 0xFF
    d = FrameDecoder()
    assert d.feed(bytes(raw)) == []
    assert d.stats.crc_errors == 1
    assert d.feed(b"\x7e\x00\x7d\x00\x7e") == []
    assert d.stats.bad_frames == 1
