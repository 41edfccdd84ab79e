"""Build the GPIO board of a backend with its pins set up (the configuration's ``[gpio]`` section gives both).

Takes anything shaped like ``controller.config.GpioConfig`` (a backend and pins that give their ``PinSpec``),
so the GPIO package never imports the configuration that names its pins (it sits below it). The systemd
``ExecStopPost=`` helper that reads the configuration is ``controller.service.safe_state``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Protocol

from controller.gpio.base import GpioBackend, GpioBoard, PinSpec
from controller.gpio.fake import FakeBoard


class PinSource(Protocol):
    def spec(self) -> PinSpec: ...


class BoardConfig(Protocol):
    """What a board is built from: ``controller.config.GpioConfig`` is one."""

    @property
    def backend(self) -> GpioBackend: ...

    @property
    def pins(self) -> Sequence[PinSource]: ...


def pin_specs(gpio_config: BoardConfig) -> list[PinSpec]:
    """One PinSpec per configured signal; outputs carry their fixed safe values (lid locked, light on)."""
    return [p.spec() for p in gpio_config.pins]


def make_board(gpio_config: BoardConfig, *, loop: asyncio.AbstractEventLoop | None = None) -> GpioBoard:
    """A board of the configured backend, already set up: its outputs are at their safe values on return.

    ``loop``: for the rpi backend, edge callbacks are handed to this loop instead of running on RPi.GPIO's
    thread (the fake board calls them synchronously from ``set_input``).
    """
    board: GpioBoard
    if gpio_config.backend is GpioBackend.RPI:
        from controller.gpio.rpi import RpiBoard

        board = RpiBoard(loop=loop)
    else:
        board = FakeBoard()
    board.setup(pin_specs(gpio_config))
    return board
