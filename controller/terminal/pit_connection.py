"""Where the pit terminal connects (``PitConnection``) and, for `tablectl demo` only, the emulated hardware its
demo keys play on (``DemoHardware``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from controller.config.endpoint import TlsConfig


class DemoHardware(Protocol):
    """`tablectl demo` only (tablebench/demo_terminal.py; development tooling, never on a Pi): the emulated shoe and the
    fake GPIO board, so keys stand in for the dealer's hands (docs/terminal.md). The product has none."""

    chip_sensor: bool  # a jackpot chip can be sensed on a seat (the fake GPIO board is reachable)

    async def connect(self) -> Any:
        """The emulated shoe's control: draw, insert, close_lid, state, jam, clear_jam, unreadable
        (docs/emulator.md)."""

    async def close(self) -> None: ...

    async def sense_chip(self, seat: int) -> None:
        """A chip into the seat's slot, the slot emptied first (PT-2001 r.41a)."""

    async def damaged_card(self) -> str | None:
        """The code of the last damaged card out of the emulated shoe (what the supervisor reads on the card in
        hand before putting an identical one in its place, PT-2001 r.51), or None."""


@dataclass
class PitConnection:
    """Where the terminal connects. ``demo`` is set by `tablectl demo` only: the emulated hardware, so a key
    can stand in for the dealer pulling a card (docs/emulator.md ``draw``)."""

    host: str
    port: int
    user: str
    password: str
    prefix: str
    supervisor_account: str | None = None
    supervisor_password: str | None = None
    demo: DemoHardware | None = None
    floor_console: str | None = None  # demo: the command line that attaches the floor alert console
    profile: str = "pt-2001"
    seats: int = 7
    key_dir: str | None = None  # the users' PIN-encrypted key files (default: $TABLECTL_KEY_DIR)
    tls: TlsConfig | None = None  # the broker's CA (and a client certificate): both accounts connect with it
