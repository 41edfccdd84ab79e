"""Jackpot sign line protocol: ASCII lines with an XOR checksum, one ack per command.

    $<seq>,<CMD>[,<arg>...]*<CK>\r\n

``seq`` is 0-999 (decimal, wraps), ``CK`` two upper-case hex digits, the XOR of every byte between ``$`` and
``*``. Controller -> sign: ``MTR,<amount>,<cur>`` show the meter; ``WIN,<seat>,<amount>,<cur>`` show a win;
``FLT,<text>`` show a fault; ``PND,<table>,<amount>,<cur>`` a linked progressive's prize pending at table
``<table>``, with the link's meter; ``NAV`` the linked progressive unavailable; ``CLR`` blank; ``PNG`` ping
(display unchanged). Sign -> controller:
``$<seq>,ACK*CK`` or ``$<seq>,NAK,<code>*CK`` (codes ``CKSUM``, ``BADCMD``, ``BADARG``). Amounts are integer
minor units; the sign renders them with two decimals.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MAX_LINE = 80  # bytes, terminator included
SEQ_MODULO = 1000
MAX_TEXT = 32  # characters a fault message may carry
MAX_AMOUNT_DIGITS = 15  # digits an amount (minor units) may have: the sign shows no more
COMMANDS = {"MTR": 2, "WIN": 3, "FLT": 1, "PND": 3, "NAV": 0, "CLR": 0, "PNG": 0}  # command -> argument count
REPLIES = {"ACK": 0, "NAK": 1}
NAK_CODES = ("CKSUM", "BADCMD", "BADARG")
_ARG = re.compile(r"^[\x20-\x7e]*\Z")  # printable ASCII; the separators are refused below
_FORBIDDEN = set("$,*")
_CURRENCY = re.compile(r"^[A-Z]{3}\Z")
_TABLE = re.compile(r"^[A-Za-z0-9_.-]{1,24}\Z")  # a table id as the sign shows it
_FRAME = re.compile(rb"^\$(?P<body>[^$*\r\n]*)\*(?P<ck>[0-9A-F]{2})\r?\n?$")


class ProtocolError(ValueError):
    """A line that is not a valid frame; ``code`` is the NAK code a sign would answer."""

    def __init__(self, message: str, code: str = "BADCMD", seq: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.seq = seq


@dataclass(frozen=True, slots=True)
class Frame:
    seq: int
    cmd: str
    args: tuple[str, ...] = ()


def checksum(body: bytes) -> int:
    ck = 0
    for b in body:
        ck ^= b
    return ck


def encode(seq: int, cmd: str, *args: str | int) -> bytes:
    """Build one line; raises ``ProtocolError`` for an argument the line cannot carry."""
    if not 0 <= seq < SEQ_MODULO:
        raise ProtocolError(f"seq {seq} out of range 0..{SEQ_MODULO - 1}")
    parts = [str(seq), cmd, *(str(a) for a in args)]
    for p in parts[1:]:
        if not _ARG.fullmatch(p) or _FORBIDDEN & set(p):
            raise ProtocolError(f"argument {p!r}: printable ASCII without '$', ',' or '*' only", "BADARG")
    body = ",".join(parts).encode("ascii")
    line = b"$" + body + b"*" + f"{checksum(body):02X}".encode() + b"\r\n"
    if len(line) > MAX_LINE:
        raise ProtocolError(f"line of {len(line)} bytes exceeds {MAX_LINE}", "BADARG")
    return line


def decode(line: bytes) -> Frame:
    """Parse one line (terminator optional); raises ``ProtocolError`` naming what is wrong."""
    if len(line) > MAX_LINE:
        raise ProtocolError(f"line of {len(line)} bytes exceeds {MAX_LINE}")
    m = _FRAME.fullmatch(line)
    if not m:
        raise ProtocolError(f"not a frame: {line[:40]!r}")
    body = m.group("body")
    fields = body.decode("ascii", errors="replace").split(",")
    seq = int(fields[0]) if fields[0].isdigit() and len(fields[0]) <= 3 else None
    if checksum(body) != int(m.group("ck"), 16):
        raise ProtocolError("checksum mismatch", "CKSUM", seq)
    if seq is None:
        raise ProtocolError(f"bad sequence number {fields[0]!r}")
    if len(fields) < 2:
        raise ProtocolError("missing command", "BADCMD", seq)
    return Frame(seq, fields[1], tuple(fields[2:]))


def check_command(frame: Frame) -> None:
    """Validate a controller->sign command's name and arguments (what the sign does before acking)."""
    if frame.cmd not in COMMANDS:
        raise ProtocolError(f"unknown command {frame.cmd!r}", "BADCMD", frame.seq)
    if len(frame.args) != COMMANDS[frame.cmd]:
        raise ProtocolError(f"{frame.cmd}: expected {COMMANDS[frame.cmd]} argument(s)", "BADARG", frame.seq)
    a = frame.args
    if frame.cmd == "MTR" and not (_amount(a[0]) and _CURRENCY.fullmatch(a[1])):
        raise ProtocolError(f"MTR: bad amount or currency {a!r}", "BADARG", frame.seq)
    if frame.cmd == "WIN" and not (a[0].isdigit() and 1 <= int(a[0]) <= 99 and _amount(a[1])):
        raise ProtocolError(f"WIN: bad seat or amount {a!r}", "BADARG", frame.seq)
    if frame.cmd == "WIN" and not _CURRENCY.fullmatch(a[2]):
        raise ProtocolError(f"WIN: bad currency {a[2]!r}", "BADARG", frame.seq)
    if frame.cmd == "PND" and not (_TABLE.fullmatch(a[0]) and _amount(a[1]) and _CURRENCY.fullmatch(a[2])):
        raise ProtocolError(f"PND: bad table, amount or currency {a!r}", "BADARG", frame.seq)
    if frame.cmd == "FLT" and len(a[0]) > MAX_TEXT:
        raise ProtocolError(f"FLT: text longer than {MAX_TEXT}", "BADARG", frame.seq)


def _amount(s: str) -> bool:
    return s.isdigit() and len(s) <= MAX_AMOUNT_DIGITS


def format_amount(minor: int, currency: str) -> str:
    """``1234567, 'EUR'`` -> ``'EUR 12,345.67'`` (two decimals)."""
    units, cents = divmod(minor, 100)
    return f"{currency} {units:,}.{cents:02d}"


def render(frame: Frame) -> str | None:
    """The text a sign shows for a valid command; None when the display does not change (ping)."""
    a = frame.args
    if frame.cmd == "MTR":
        return f"JACKPOT {format_amount(int(a[0]), a[1])}"
    if frame.cmd == "WIN":
        return f"WIN SEAT {int(a[0])} {format_amount(int(a[1]), a[2])}"
    if frame.cmd == "FLT":
        return f"FAULT {a[0]}"
    if frame.cmd == "PND":
        return f"PRIZE PENDING AT TABLE {a[0]} {format_amount(int(a[1]), a[2])}"
    if frame.cmd == "NAV":
        return "PROGRESSIVE UNAVAILABLE"
    if frame.cmd == "CLR":
        return ""
    return None
