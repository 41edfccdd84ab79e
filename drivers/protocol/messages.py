"""Message types and payload codecs (protocol v2, docs/protocol.md §4). Pure functions, no I/O.

All integers are big-endian. Strings are ``u8 length + UTF-8``. Events start with ``u32 device_time_ms``.
Commands start with ``u16 command_id``, echoed in the COMMAND_RESULT that answers them.
"""

from __future__ import annotations

import dataclasses
import struct
from dataclasses import dataclass
from enum import IntEnum

from drivers import events as ev

PROTOCOL_VERSION = 2  # v2: numbered events, the resume point in HELLO, heartbeats saying who is heard
# The shoe keeps at least this many numbered events after their ack, to send again on request (§5a).
REPLAY_BUFFER_MIN = 1024


class MsgType(IntEnum):
    # link layer (not acknowledged), both directions unless noted
    HELLO = 0x01  # host -> device
    HEARTBEAT = 0x02
    ACK = 0x03  # SEQ field = the sequence number acknowledged
    IDENTIFY = 0x04  # device -> host, answers HELLO
    # commands, host -> device (acknowledged)
    LOCK_LID = 0x10
    UNLOCK_LID = 0x11
    OPEN_LID = 0x12
    START_SHUFFLE = 0x13
    DISPENSE = 0x14
    REPORT_COUNTS = 0x15
    RUN_DECK_CHECK = 0x16
    SET_WARNING_LIGHT = 0x17
    # events, device -> host (acknowledged)
    CARD_OUT = 0x40
    CARD_UNREADABLE = 0x41
    CUT_CARD_OUT = 0x42
    WARNING_CARD_OUT = 0x43
    LID_CHANGED = 0x44
    SHUFFLE_STARTED = 0x45
    SHUFFLE_FINISHED = 0x46
    JAMMED = 0x47
    JAM_CLEARED = 0x48
    CARDS_INSIDE = 0x49
    DISCARD_INSERTED = 0x4A
    DECK_CHECK_RESULT = 0x4B
    DEVICE_ERROR = 0x4C
    COMMAND_RESULT = 0x4D


UNRELIABLE = frozenset({MsgType.HELLO, MsgType.HEARTBEAT, MsgType.ACK, MsgType.IDENTIFY})
KNOWN_TYPES = frozenset(int(t) for t in MsgType)


class ErrorCode(IntEnum):
    """Result codes of COMMAND_RESULT (0 = ok)."""

    OK = 0
    UNKNOWN_COMMAND = 1
    BAD_ARGUMENT = 2
    JAMMED = 0x10
    SHUFFLING = 0x11
    LID_OPEN = 0x12
    EMPTY = 0x13
    UNSUPPORTED = 0x14  # e.g. a lid command on a batch shoe
    WARNING_LIGHT_OFF = 0x15  # UnlockLid during a jam before the warning light is on (PT-2001 r.51)
    LID_NOT_CLOSED = 0x16


class DecodeError(ValueError):
    """A frame with a valid CRC whose payload does not parse (counted as a bad frame, never delivered)."""


# ---- primitive helpers ----------------------------------------------------------------------------------


def _str(text: str) -> bytes:
    raw = text.encode("utf-8")[:255]
    return bytes([len(raw)]) + raw


class _Reader:
    def __init__(self, data: bytes, what: str) -> None:
        self.data = data
        self.pos = 0
        self.what = what

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise DecodeError(f"{self.what}: payload truncated at byte {self.pos} (needs {n} more)")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        return int.from_bytes(self.take(2), "big")

    def u32(self) -> int:
        return int.from_bytes(self.take(4), "big")

    def text(self) -> str:
        raw = self.take(self.u8())
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DecodeError(f"{self.what}: string is not UTF-8") from exc

    def end(self) -> None:
        if self.pos != len(self.data):
            raise DecodeError(f"{self.what}: {len(self.data) - self.pos} unexpected trailing bytes")


def _card(rank: str, suit: str) -> bytes:
    return bytes([ev.RANKS.index(rank), ev.SUITS.index(suit)])


def _read_card(r: _Reader) -> tuple[str, str]:
    ri, si = r.u8(), r.u8()
    if ri >= len(ev.RANKS) or si >= len(ev.SUITS):
        raise DecodeError(f"{r.what}: card index rank={ri} suit={si} out of range")
    return ev.RANKS[ri], ev.SUITS[si]


def _flags(r: _Reader, allowed: int) -> int:
    flags = r.u8()
    if flags & ~allowed:
        raise DecodeError(f"{r.what}: reserved flag bits set (0x{flags:02X})")
    return flags


_LID = list(ev.LidState)
_JAM = list(ev.JamLocation)

# ---- handshake ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Hello:
    protocol_version: int
    host_session: int  # random per host process: the device resets its duplicate filter when it changes
    # v2 (docs/protocol.md §5a): the newest event the host has COMMITTED, as (device boot id, event number);
    # the device sends every event after it again. Boot id 0: the host holds nothing of any device.
    resume_boot_id: int = 0
    resume_after: int = 0


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """v2 heartbeat: whether the sender hears its peer (one-sided link detection, docs/protocol.md §6) and
    the last SEQ it accepted from the peer (None: none since the peer's (re)start)."""

    hears_peer: bool = True
    last_rx_seq: int | None = None


def encode_heartbeat(h: Heartbeat) -> bytes:
    flags = (1 if h.hears_peer else 0) | (2 if h.last_rx_seq is not None else 0)
    return bytes([flags, (h.last_rx_seq or 0) & 0xFF])


def decode_heartbeat(payload: bytes) -> Heartbeat:
    if not payload:  # a v1 heartbeat: "alive", nothing more
        return Heartbeat()
    r = _Reader(payload, "HEARTBEAT")
    flags, seq = _flags(r, 0x03), r.u8()
    r.end()
    return Heartbeat(bool(flags & 1), seq if flags & 2 else None)


@dataclass(frozen=True, slots=True)
class Identify:
    identified: ev.Identified
    boot_id: int  # random per device power-up: the host resets its duplicate filter when it changes


def encode_hello(h: Hello) -> bytes:
    head = struct.pack(">BI", h.protocol_version, h.host_session)
    if h.protocol_version < 2:
        return head
    return head + struct.pack(">II", h.resume_boot_id, h.resume_after)


def decode_hello(payload: bytes) -> Hello:
    """A v1 HELLO (version, session) or a v2 one (+ resume boot id, resume event number)."""
    r = _Reader(payload, "HELLO")
    version, session = r.u8(), r.u32()
    if version < 2:
        r.end()
        return Hello(version, session)
    h = Hello(version, session, r.u32(), r.u32())
    r.end()
    return h


def encode_identify(i: Identify) -> bytes:
    d = i.identified
    return (
        struct.pack(">BIBB", d.protocol_version, i.boot_id, d.decks_loaded, 1 if d.continuous else 0)
        + _str(d.model)
        + _str(d.firmware)
        + _str(d.serial_number)
        + struct.pack(">I", d.device_time_ms & 0xFFFFFFFF)
    )


def decode_identify(payload: bytes) -> Identify:
    r = _Reader(payload, "IDENTIFY")
    version, boot_id, decks, flags = r.u8(), r.u32(), r.u8(), r.u8()
    model, fw, serial = r.text(), r.text(), r.text()
    t = r.u32()
    r.end()
    ident = ev.Identified(
        version, model, fw, serial, decks, bool(flags & 1), device_time_ms=t, boot_id=boot_id
    )
    return Identify(ident, boot_id)


# ---- commands -------------------------------------------------------------------------------------------

_SIMPLE_COMMANDS: dict[type[ev.Command], MsgType] = {
    ev.LockLid: MsgType.LOCK_LID,
    ev.UnlockLid: MsgType.UNLOCK_LID,
    ev.OpenLid: MsgType.OPEN_LID,
    ev.StartShuffle: MsgType.START_SHUFFLE,
    ev.ReportCounts: MsgType.REPORT_COUNTS,
    ev.RunDeckCheck: MsgType.RUN_DECK_CHECK,
}
_SIMPLE_BY_TYPE = {t: c for c, t in _SIMPLE_COMMANDS.items()}


def encode_command(command_id: int, cmd: ev.Command) -> tuple[MsgType, bytes]:
    head = struct.pack(">H", command_id & 0xFFFF)
    if type(cmd) in _SIMPLE_COMMANDS:
        return _SIMPLE_COMMANDS[type(cmd)], head
    if isinstance(cmd, ev.Dispense):
        if not 1 <= cmd.count <= 255:
            raise ValueError(f"Dispense count {cmd.count} out of range 1..255")
        return MsgType.DISPENSE, head + bytes([cmd.count])
    if isinstance(cmd, ev.SetWarningLight):
        return MsgType.SET_WARNING_LIGHT, head + bytes([(1 if cmd.on else 0) | (2 if cmd.blink else 0)])
    raise ValueError(f"no wire encoding for command {cmd!r}")


def decode_command(type_: int, payload: bytes) -> tuple[int, ev.Command]:
    r = _Reader(payload, f"command 0x{type_:02X}")
    command_id = r.u16()
    cmd: ev.Command
    if type_ in _SIMPLE_BY_TYPE:
        cmd = _SIMPLE_BY_TYPE[MsgType(type_)]()
    elif type_ == MsgType.DISPENSE:
        count = r.u8()
        if count == 0:
            raise DecodeError("DISPENSE: count 0")
        cmd = ev.Dispense(count)
    elif type_ == MsgType.SET_WARNING_LIGHT:
        flags = _flags(r, 0x03)
        cmd = ev.SetWarningLight(on=bool(flags & 1), blink=bool(flags & 2))
    else:
        raise DecodeError(f"0x{type_:02X} is not a command")
    r.end()
    return command_id, cmd


# ---- command result -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResultMsg:
    command_id: int
    result: ev.CommandResult
    device_time_ms: int = 0


def encode_result(m: ResultMsg) -> bytes:
    res = m.result
    return struct.pack(
        ">IHBH", m.device_time_ms & 0xFFFFFFFF, m.command_id, 1 if res.ok else 0, res.error_code
    ) + (_str(res.text))


def decode_result(payload: bytes) -> ResultMsg:
    r = _Reader(payload, "COMMAND_RESULT")
    t, cid, ok, code = r.u32(), r.u16(), r.u8(), r.u16()
    text = r.text()
    r.end()
    return ResultMsg(cid, ev.CommandResult(ok=bool(ok), error_code=code, text=text), device_time_ms=t)


# ---- device events --------------------------------------------------------------------------------------


def encode_event(e: ev.DeviceEvent) -> tuple[MsgType, bytes]:
    t = struct.pack(">I", e.device_time_ms & 0xFFFFFFFF)
    match e:
        case ev.CardOut():
            flags = 1 if e.face_up else 0
            return MsgType.CARD_OUT, t + struct.pack(">H", e.shoe_seq) + _card(e.rank, e.suit) + bytes(
                [flags, max(0, min(100, e.confidence))]
            )
        case ev.CardUnreadable():
            return MsgType.CARD_UNREADABLE, t + struct.pack(">HB", e.shoe_seq, 1 if e.damaged else 0)
        case ev.CutCardOut():
            return MsgType.CUT_CARD_OUT, t
        case ev.WarningCardOut():
            return MsgType.WARNING_CARD_OUT, t
        case ev.LidChanged():
            return MsgType.LID_CHANGED, t + bytes([_LID.index(e.state)])
        case ev.ShuffleStarted():
            return MsgType.SHUFFLE_STARTED, t
        case ev.ShuffleFinished():
            return MsgType.SHUFFLE_FINISHED, t + struct.pack(">H", e.cards_inside)
        case ev.Jammed():
            return MsgType.JAMMED, t + bytes([_JAM.index(e.location)])
        case ev.JamCleared():
            return MsgType.JAM_CLEARED, t
        case ev.CardsInside():
            return MsgType.CARDS_INSIDE, t + struct.pack(">H", e.count)
        case ev.DiscardInserted():
            return MsgType.DISCARD_INSERTED, t + struct.pack(">H", e.count)
        case ev.DeckCheckResult():
            items = sorted(e.counts.items())
            body = struct.pack(">HB", e.unreadable, len(items))
            for code, n in items:
                body += _card(code[0], code[1]) + struct.pack(">H", n)
            return MsgType.DECK_CHECK_RESULT, t + body
        case ev.DeviceError():
            return MsgType.DEVICE_ERROR, t + struct.pack(">H", e.code) + _str(e.text)
    raise ValueError(f"no wire encoding for event {e!r}")


def encode_numbered_event(event_no: int, e: ev.DeviceEvent) -> tuple[MsgType, bytes]:
    """v2 device event on the serial link: u32 event number, then the v1 payload (docs/protocol.md §4)."""
    type_, payload = encode_event(e)
    return type_, struct.pack(">I", event_no & 0xFFFFFFFF) + payload


def decode_numbered_event(type_: int, payload: bytes) -> ev.DeviceEvent:
    """The event with its ``event_no`` (1-based per device boot; 0 is refused: it means "not numbered")."""
    if len(payload) < 4:
        raise DecodeError(f"0x{type_:02X}: payload truncated before the event number")
    no = int.from_bytes(payload[:4], "big")
    if no == 0:
        raise DecodeError(f"0x{type_:02X}: event number 0")
    return dataclasses.replace(decode_event(type_, payload[4:]), event_no=no)


def decode_event(type_: int, payload: bytes) -> ev.DeviceEvent:
    name = MsgType(type_).name if type_ in KNOWN_TYPES else f"0x{type_:02X}"
    r = _Reader(payload, name)
    t = r.u32()
    e: ev.DeviceEvent
    if type_ == MsgType.CARD_OUT:
        seq = r.u16()
        rank, suit = _read_card(r)
        flags, conf = _flags(r, 0x01), r.u8()
        if conf > 100:
            raise DecodeError(f"CARD_OUT: confidence {conf} > 100")
        e = ev.CardOut(rank, suit, seq, face_up=bool(flags & 1), confidence=conf, device_time_ms=t)
    elif type_ == MsgType.CARD_UNREADABLE:
        seq, flags = r.u16(), _flags(r, 0x01)
        e = ev.CardUnreadable(seq, damaged=bool(flags & 1), device_time_ms=t)
    elif type_ == MsgType.CUT_CARD_OUT:
        e = ev.CutCardOut(device_time_ms=t)
    elif type_ == MsgType.WARNING_CARD_OUT:
        e = ev.WarningCardOut(device_time_ms=t)
    elif type_ == MsgType.LID_CHANGED:
        i = r.u8()
        if i >= len(_LID):
            raise DecodeError(f"LID_CHANGED: lid state {i} unknown")
        e = ev.LidChanged(_LID[i], device_time_ms=t)
    elif type_ == MsgType.SHUFFLE_STARTED:
        e = ev.ShuffleStarted(device_time_ms=t)
    elif type_ == MsgType.SHUFFLE_FINISHED:
        e = ev.ShuffleFinished(r.u16(), device_time_ms=t)
    elif type_ == MsgType.JAMMED:
        i = r.u8()
        if i >= len(_JAM):
            raise DecodeError(f"JAMMED: location {i} unknown")
        e = ev.Jammed(_JAM[i], device_time_ms=t)
    elif type_ == MsgType.JAM_CLEARED:
        e = ev.JamCleared(device_time_ms=t)
    elif type_ == MsgType.CARDS_INSIDE:
        e = ev.CardsInside(r.u16(), device_time_ms=t)
    elif type_ == MsgType.DISCARD_INSERTED:
        e = ev.DiscardInserted(r.u16(), device_time_ms=t)
    elif type_ == MsgType.DECK_CHECK_RESULT:
        unreadable, n = r.u16(), r.u8()
        counts: dict[str, int] = {}
        for _ in range(n):
            rank, suit = _read_card(r)
            if rank + suit in counts:
                raise DecodeError(f"DECK_CHECK_RESULT: {rank + suit} listed twice")
            counts[rank + suit] = r.u16()
        e = ev.DeckCheckResult(counts, unreadable=unreadable, device_time_ms=t)
    elif type_ == MsgType.DEVICE_ERROR:
        code = r.u16()
        e = ev.DeviceError(code, r.text(), device_time_ms=t)
    else:
        raise DecodeError(f"{name} is not a device event")
    r.end()
    return e
