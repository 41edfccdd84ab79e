"""Fault injection on the emulated shoe's serial line: noise on the bytes (bit errors, byte errors, dropped
bytes, in one direction or both) and acks of its frame in flight taken as lost. The control socket
(bench/tablebench/emulator/control.py) turns both at run time; the product's link (drivers/link.py) has neither."""

from __future__ import annotations

import random
from typing import Any, Literal

from drivers.link import ReliableLink
from drivers.protocol.framing import Frame

NoiseDirection = Literal["both", "to_host", "to_device"]


class LossyAckLink(ReliableLink):
    """The emulated shoe's link: the control socket's ``lose_acks`` makes it pretend the next N acks of its
    frame in flight were lost (it sends the frame again). Fault injection lives here, not in drivers/link.py."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.ignore_acks = 0

    def _ack_taken(self, frame: Frame) -> bool:
        if self.ignore_acks > 0:
            self.ignore_acks -= 1
            return False
        return True


class LineNoise:
    """A bad line: each byte may be dropped (``drop_rate``), replaced (``byte_error_rate``) or have bits flipped
    (``bit_error_rate``), in the ``direction`` given; the same seed gives the same noise."""

    def __init__(
        self, *, bit_error_rate: float, byte_error_rate: float, drop_rate: float, seed: int | None
    ) -> None:
        self.bit_error_rate = bit_error_rate
        self.byte_error_rate = byte_error_rate
        self.drop_rate = drop_rate
        self.direction: NoiseDirection = "both"  # or a line bad in one direction only
        self._rng = random.Random(seed)

    def apply(self, data: bytes, *, to_device: bool) -> bytes:
        if not (self.bit_error_rate or self.byte_error_rate or self.drop_rate):
            return data
        if self.direction != "both" and (self.direction == "to_device") != to_device:
            return data
        rng, out = self._rng, bytearray()
        for b in data:
            if self.drop_rate and rng.random() < self.drop_rate:
                continue
            if self.byte_error_rate and rng.random() < self.byte_error_rate:
                b = rng.randrange(256)
            if self.bit_error_rate:
                for bit in range(8):
                    if rng.random() < self.bit_error_rate:
                        b ^= 1 << bit
            out.append(b)
        return bytes(out)
