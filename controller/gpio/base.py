"""The GPIO interface the controller sees: named signals, not pin numbers.

Outputs have a *safe value* (Klipper's shutdown value per pin): applied at start-up, on every fault and on
shutdown, so a dead or crashing controller leaves the lid locked and the warning light on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Protocol

# Outputs and their safe values (Klipper's shutdown value): a dead controller leaves the lid locked and
# the warning light on (PT-2001 r.60: the lid never opens by hand; r.51: the light signals a fault). Fixed in
# code, not configurable, so no configuration can make a fault unlock the lid. The one definition: the config
# gives each output pin its safe_value from here, the table shell drives them on start-up, fault and stop.
OUTPUT_SAFE_VALUES: Mapping[str, bool] = MappingProxyType({"lid_lock": True, "warning_light": True})


class GpioBackend(StrEnum):
    """The ``[gpio] backend``: the board the pins are on."""

    FAKE = "fake"  # in memory, no pins (a table without a GPIO board, the demo, the tests)
    RPI = "rpi"  # the RPi.GPIO API (rpi-lgpio on a Pi 5)


class Edge(StrEnum):
    RISING = "rising"
    FALLING = "falling"


@dataclass(frozen=True, slots=True)
class PinSpec:
    name: str  # e.g. "lid_lock", "warning_light", "lid_switch", "button_hit", "chip_slot_3"
    pin: int  # BCM number
    output: bool
    safe_value: bool = False  # outputs only: value on start-up, fault and shutdown
    active_low: bool = False
    debounce_ms: int = 20  # inputs only


class GpioBoard(Protocol):
    def setup(self, specs: list[PinSpec]) -> None: ...

    def write(self, name: str, value: bool) -> None: ...

    def read(self, name: str) -> bool: ...

    def on_edge(self, name: str, callback: Callable[[str, bool], None]) -> None:
        """Call ``callback(name, new_value)`` on a debounced change of an input. May run on another thread."""
        ...

    def safe_state(self) -> None:
        """Drive every output to its safe value."""
        ...

    def close(self) -> None: ...
