"""Jackpot sign line protocol (docs/display.md): framing, checksum, command checks, rendering."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from drivers.display.protocol import (
    Frame,
    ProtocolError,
    check_command,
    decode,
    encode,
    format_amount,
    render,
)


def test_encode_known_line() -> None:
    line = encode(7, "MTR", 1234567, "EUR")
    assert line.startswith(b"$7,MTR,1234567,EUR*") and line.endswith(b"\r\n")
    body = b"7,MTR,1234567,EUR"
    ck = 0
    for b in body:
        ck ^= b
    assert line == b"$" + body + b"*" + f"{ck:02X}".encode() + b"\r\n"
    assert decode(line) == Frame(7, "MTR", ("1234567", "EUR"))


def test_checksum_error_keeps_seq_for_the_nak() -> None:
    line = bytearray(encode(12, "PNG"))
    line[-3] ^= 0x01  # flip one checksum digit bit
    with pytest.raises(ProtocolError) as exc:
        decode(bytes(line))
    assert exc.value.code == "CKSUM" and exc.value.seq == 12


@pytest.mark.parametrize(
    "line",
    [b"", b"garbage\n", b"$1,PNG\n", b"$1,PNG*zz\n", b"$" + b"9" * 100 + b"*00\n", b"$x,PNG*" + b"00\n"],
)
def test_bad_lines_rejected(line: bytes) -> None:
    with pytest.raises(ProtocolError):
        decode(line)


@pytest.mark.parametrize(
    "frame",
    [
        Frame(1, "NOPE"),
        Frame(1, "MTR", ("12",)),
        Frame(1, "MTR", ("-5", "EUR")),
        Frame(1, "MTR", ("5", "eur")),
        Frame(1, "WIN", ("0", "5", "EUR")),
        Frame(1, "WIN", ("3", "5", "E")),
        Frame(1, "FLT", ("x" * 33,)),
    ],
)
def test_sign_side_command_checks(frame: Frame) -> None:
    with pytest.raises(ProtocolError):
        check_command(frame)


def test_arguments_that_break_framing_are_refused() -> None:
    for bad in ("a,b", "a*b", "$", "é", "line\n"):
        with pytest.raises(ProtocolError):
            encode(1, "FLT", bad)
    with pytest.raises(ProtocolError):
        encode(1000, "PNG")


def test_render() -> None:
    assert render(Frame(1, "MTR", ("1234567", "EUR"))) == "JACKPOT EUR 12,345.67"
    assert render(Frame(1, "WIN", ("3", "25000", "EUR"))) == "WIN SEAT 3 EUR 250.00"
    assert render(Frame(1, "FLT", ("DISPLAY CHECK",))) == "FAULT DISPLAY CHECK"
    assert render(Frame(1, "PNG")) is None and render(Frame(1, "CLR")) == ""
    assert format_amount(5, "EUR") == "EUR 0.05"


text = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E, exclude_characters="$,*"), max_size=32)


@given(
    st.integers(0, 999),
    st.sampled_from(["MTR", "WIN", "FLT", "PNG", "ACK", "NAK"]),
    st.lists(text, max_size=3),
)
def test_round_trip_property(seq: int, cmd: str, args: list[str]) -> None:
    try:
        line = encode(seq, cmd, *args)
    except ProtocolError:
        return  # too long for one line
    assert decode(line) == Frame(seq, cmd, tuple(args))


@given(st.binary(max_size=100))
def test_decode_never_crashes(data: bytes) -> None:
    try:
        frame = decode(data)
    except ProtocolError:
        return
    assert 0 <= frame.seq <= 999
