"""Frame layout (protocol v1 and v2, unchanged; docs/protocol.md §2), HDLC-style byte stuffing:

    0x7E | LEN_HI LEN_LO | SEQ | TYPE | PAYLOAD (LEN bytes) | CRC_HI CRC_LO | 0x7E

Everything between the two 0x7E flags is stuffed: 0x7E -> 0x7D 0x5E, 0x7D -> 0x7D 0x5D. The flag never appears
inside a frame, so a lost or corrupted byte can damage only the frame it is in: the next flag resynchronises.
The CRC (CRC-16/CCITT-FALSE) covers LEN..PAYLOAD. LEN must equal the unstuffed payload length, which catches
every lost byte (a lost byte always shortens the frame or aborts it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, fields

from drivers.protocol.crc import crc16_ccitt_false

FLAG = 0x7E
ESC = 0x7D
ESC_XOR = 0x20
HEADER_LEN = 4  # LEN(2) SEQ(1) TYPE(1)
CRC_LEN = 2
MAX_PAYLOAD = 512

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Frame:
    seq: int
    type: int
    payload: bytes = b""


@dataclass(slots=True)
class FramingStats:
    frames_ok: int = 0
    crc_errors: int = 0
    bad_frames: int = 0  # too short, length mismatch, bad escape
    oversized: int = 0
    garbage_bytes: int = 0  # bytes dropped while resynchronising

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _stuff(body: bytes) -> bytes:
    return body.replace(bytes([ESC]), bytes([ESC, ESC ^ ESC_XOR])).replace(
        bytes([FLAG]), bytes([ESC, FLAG ^ ESC_XOR])
    )


def encode_frame(seq: int, type_: int, payload: bytes = b"") -> bytes:
    """Encode one frame, flags included. Raises ValueError on an out-of-range field (a programming error)."""
    if not 0 <= seq <= 0xFF:
        raise ValueError(f"frame seq {seq} out of range 0..255")
    if not 0 <= type_ <= 0xFF:
        raise ValueError(f"frame type {type_} out of range 0..255")
    if len(payload) > MAX_PAYLOAD:
        raise ValueError(f"frame payload of {len(payload)} bytes exceeds {MAX_PAYLOAD}")
    body = len(payload).to_bytes(2, "big") + bytes([seq, type_]) + payload
    body += crc16_ccitt_false(body).to_bytes(2, "big")
    return bytes([FLAG]) + _stuff(body) + bytes([FLAG])


class FrameDecoder:
    """Incremental decoder: ``feed(bytes)`` returns the complete valid frames; everything else is counted."""

    def __init__(self, name: str = "link") -> None:
        self.stats = FramingStats()
        self._name = name
        self._buf = bytearray()  # unstuffed bytes of the frame being received
        self._in_frame = False  # True once a flag has been seen (until then bytes are garbage)
        self._escaped = False
        self._discard = False  # current frame is already known bad (oversized/bad escape): skip to next flag

    def feed(self, data: bytes | bytearray | memoryview) -> list[Frame]:
        out: list[Frame] = []
        for byte in bytes(data):
            if byte == FLAG:
                if self._in_frame and (self._buf or self._escaped) and not self._discard:
                    frame = self._finish()
                    if frame is not None:
                        out.append(frame)
                self._in_frame = True
                self._reset()
                continue
            if not self._in_frame:
                self.stats.garbage_bytes += 1
                continue
            if self._discard:
                continue
            if self._escaped:
                self._escaped = False
                if byte not in (FLAG ^ ESC_XOR, ESC ^ ESC_XOR):
                    self._bad(f"bad escape 0x7D 0x{byte:02X}")
                    continue
                byte ^= ESC_XOR
            elif byte == ESC:
                self._escaped = True
                continue
            self._buf.append(byte)
            if len(self._buf) > HEADER_LEN + MAX_PAYLOAD + CRC_LEN:
                self.stats.oversized += 1
                log.warning("%s: oversized frame dropped (> %d payload bytes)", self._name, MAX_PAYLOAD)
                self._discard = True
        return out

    def reset(self) -> None:
        """Drop any partial frame (new connection); the counters are kept."""
        self._in_frame = False
        self._reset()

    def _reset(self) -> None:
        self._buf.clear()
        self._escaped = False
        self._discard = False

    def _bad(self, why: str) -> None:
        self.stats.bad_frames += 1
        log.warning("%s: bad frame dropped: %s", self._name, why)
        self._discard = True

    def _finish(self) -> Frame | None:
        buf = bytes(self._buf)
        if self._escaped:
            self._bad("frame ends inside an escape")
            return None
        if len(buf) < HEADER_LEN + CRC_LEN:
            self._bad(f"frame of {len(buf)} bytes is shorter than the {HEADER_LEN + CRC_LEN}-byte minimum")
            return None
        length = int.from_bytes(buf[0:2], "big")
        if length > MAX_PAYLOAD:
            self.stats.oversized += 1
            log.warning("%s: frame announces %d payload bytes (max %d)", self._name, length, MAX_PAYLOAD)
            return None
        if len(buf) != HEADER_LEN + length + CRC_LEN:
            self._bad(
                f"length field says {length} payload bytes, frame holds {len(buf) - HEADER_LEN - CRC_LEN}"
            )
            return None
        if crc16_ccitt_false(buf[:-CRC_LEN]) != int.from_bytes(buf[-CRC_LEN:], "big"):
            self.stats.crc_errors += 1
            log.warning("%s: CRC error, frame dropped", self._name)
            return None
        self.stats.frames_ok += 1
        return Frame(seq=buf[2], type=buf[3], payload=buf[HEADER_LEN:-CRC_LEN])
