"""Message codecs (docs/protocol.md §4): events and commands round-trip; bad payloads raise DecodeError."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drivers import events as ev
from drivers.protocol import messages as msg
from drivers.protocol.messages import MsgType

t = st.integers(0, 2**32 - 1)
seq = st.integers(0, 0xFFFF)
code = st.builds(lambda r, s: r + s, st.sampled_from(ev.RANKS), st.sampled_from(ev.SUITS))
text = st.text(max_size=40).filter(lambda x: len(x.encode()) <= 255)

events = st.one_of(
    st.builds(
        lambda c, n, f, conf, tm: ev.CardOut(c[0], c[1], n, face_up=f, confidence=conf, device_time_ms=tm),
        code,
        seq,
        st.booleans(),
        st.integers(0, 100),
        t,
    ),
    st.builds(lambda n, d, tm: ev.CardUnreadable(n, damaged=d, device_time_ms=tm), seq, st.booleans(), t),
    st.builds(lambda tm: ev.CutCardOut(device_time_ms=tm), t),
    st.builds(lambda tm: ev.WarningCardOut(device_time_ms=tm), t),
    st.builds(lambda s, tm: ev.LidChanged(s, device_time_ms=tm), st.sampled_from(list(ev.LidState)), t),
    st.builds(lambda tm: ev.ShuffleStarted(device_time_ms=tm), t),
    st.builds(lambda n, tm: ev.ShuffleFinished(n, device_time_ms=tm), seq, t),
    st.builds(lambda loc, tm: ev.Jammed(loc, device_time_ms=tm), st.sampled_from(list(ev.JamLocation)), t),
    st.builds(lambda tm: ev.JamCleared(device_time_ms=tm), t),
    st.builds(lambda n, tm: ev.CardsInside(n, device_time_ms=tm), seq, t),
    st.builds(lambda n, tm: ev.DiscardInserted(n, device_time_ms=tm), seq, t),
    st.builds(
        lambda c, u, tm: ev.DeckCheckResult(dict(sorted(c.items())), unreadable=u, device_time_ms=tm),
        st.dictionaries(code, st.integers(0, 0xFFFF), max_size=52),
        seq,
        t,
    ),
    st.builds(lambda c, x, tm: ev.DeviceError(c, x, device_time_ms=tm), seq, text, t),
)

commands = st.one_of(
    st.sampled_from(
        [ev.LockLid(), ev.UnlockLid(), ev.OpenLid(), ev.StartShuffle(), ev.ReportCounts(), ev.RunDeckCheck()]
    ),
    st.builds(ev.Dispense, st.integers(1, 255)),
    st.builds(ev.SetWarningLight, st.booleans(), st.booleans()),
)


@given(events)
def test_every_event_round_trips(e: ev.DeviceEvent) -> None:
    type_, payload = msg.encode_event(e)
    assert type_ not in msg.UNRELIABLE and len(payload) <= 512
    assert msg.decode_event(type_, payload) == e


@given(st.integers(0, 0xFFFF), commands)
def test_every_command_round_trips(cid: int, cmd: ev.Command) -> None:
    type_, payload = msg.encode_command(cid, cmd)
    assert msg.decode_command(type_, payload) == (cid, cmd)


@given(st.integers(0, 0xFFFF), st.booleans(), st.integers(0, 0xFFFF), text, t)
def test_result_round_trips(cid: int, ok: bool, code_: int, txt: str, tm: int) -> None:
    m = msg.ResultMsg(cid, ev.CommandResult(ok, code_, txt), tm)
    assert msg.decode_result(msg.encode_result(m)) == m


def test_identify_and_hello_round_trip() -> None:
    ident = msg.Identify(
        ev.Identified(2, "CSM", "2.1", "SN9", 6, True, device_time_ms=7, boot_id=0xDEADBEEF), 0xDEADBEEF
    )
    assert msg.decode_identify(msg.encode_identify(ident)) == ident
    assert msg.decode_hello(msg.encode_hello(msg.Hello(1, 42))) == msg.Hello(1, 42)  # a v1 host's HELLO
    v2 = msg.Hello(2, 42, resume_boot_id=0xDEADBEEF, resume_after=1234)
    assert msg.decode_hello(msg.encode_hello(v2)) == v2


@given(st.integers(1, 0xFFFFFFFF), events)
def test_numbered_event_round_trips(no: int, e: ev.DeviceEvent) -> None:
    """Protocol v2 (docs/protocol.md §4): a u32 event number before the v1 payload."""
    assert msg.decode_numbered_event(*msg.encode_numbered_event(no, e)) == dataclasses.replace(e, event_no=no)


def test_numbered_event_refuses_number_zero_and_truncation() -> None:
    type_, payload = msg.encode_numbered_event(1, ev.CardOut("A", "S", 1))
    with pytest.raises(msg.DecodeError):
        msg.decode_numbered_event(type_, bytes(4) + payload[4:])
    with pytest.raises(msg.DecodeError):
        msg.decode_numbered_event(type_, payload[:3])


@given(st.booleans(), st.none() | st.integers(0, 255))
def test_heartbeat_round_trips(hears: bool, seq: int | None) -> None:
    hb = msg.Heartbeat(hears, seq)
    assert msg.decode_heartbeat(msg.encode_heartbeat(hb)) == hb
    assert msg.decode_heartbeat(b"") == msg.Heartbeat()  # a v1 heartbeat: alive


@settings(max_examples=400)
@given(st.integers(0x40, 0x4C), st.binary(max_size=12))
def test_arbitrary_payload_gives_event_or_decode_error(type_: int, payload: bytes) -> None:
    """A CRC-valid frame with nonsense inside is a DecodeError, never a crash and never a card from junk."""
    try:
        e = msg.decode_event(type_, payload)
    except msg.DecodeError:
        return
    assert msg.decode_event(*msg.encode_event(e)) == e  # only well-formed events come out


@given(st.integers(0, 255), st.binary(max_size=10))
def test_arbitrary_command_payload(type_: int, payload: bytes) -> None:
    try:
        cid, cmd = msg.decode_command(type_, payload)
    except msg.DecodeError:
        return
    assert msg.encode_command(cid, cmd) == (type_, payload)


def test_card_with_out_of_range_rank_is_rejected() -> None:
    payload = bytes(4) + b"\x00\x01" + bytes([13, 0, 0, 100])
    with pytest.raises(msg.DecodeError, match="rank=13"):
        msg.decode_event(MsgType.CARD_OUT, payload)


def test_truncated_card_names_the_message() -> None:
    with pytest.raises(msg.DecodeError, match="CARD_OUT: payload truncated"):
        msg.decode_event(MsgType.CARD_OUT, bytes(5))
