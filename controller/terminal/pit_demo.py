"""`tablectl demo` only: what the pit terminal's demo keys do on the emulated shoe and fake GPIO board, standing
in for the dealer's hands and the hardware (docs/terminal.md, docs/emulator.md). The product has none."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from controller.table.machine_names import TableState
from controller.terminal.pit_connection import DemoHardware
from controller.terminal.pit_keys import DEMO_KEYS

DemoStep = tuple[str, Callable[[], Awaitable[Any]]]  # what is shown, the call on the emulated parts


def demo_step(
    action: str, ctl: Any, demo: DemoHardware | None, seat: int, table_state: Any, lid_state: Any
) -> DemoStep | None:
    """The demo key ``action`` on the emulated shoe's control ``ctl``, or None (nothing to do)."""
    label = DEMO_KEYS[action][1]
    if action == "draw":  # stands in for the dealer pulling a card out of the shoe
        return label, lambda: ctl.draw(1)
    if action == "machine":
        return machine_step(ctl, table_state, lid_state)
    if action == "chip" and demo is not None and demo.chip_sensor:
        return f"Jackpot chip sensed on Seat {seat}", lambda: demo.sense_chip(seat)
    if action == "jam":
        return "Jam on the shoe's output (emulated)", lambda: ctl.jam("output")
    if action == "free":
        return "Jam freed on the device (emulated)", ctl.clear_jam
    if action == "damaged":
        return "The next card is damaged (unreadable)", lambda: ctl.unreadable(damaged=True)
    return None


def machine_step(ctl: Any, state: Any, lid: Any) -> DemoStep:
    """The dealer at the machine, by what the table waits for: the round's cards in and the lid closed
    (PT-2001 r.59-60), the cards loaded in two packets (r.53-54), or every card out before a new session."""

    async def cards_in_and_close() -> None:
        await ctl.insert()
        await ctl.close_lid()

    async def load_two_packets() -> None:
        out = int((await ctl.state())["cards_out"])
        await ctl.insert(out // 2)
        await ctl.insert()
        await ctl.close_lid()

    async def cards_out() -> None:
        inside = int((await ctl.state())["cards_inside"])
        if inside:
            await ctl.draw(inside)

    if state == TableState.LOADING:
        return "Cards loaded in two packets, lid closed", load_two_packets
    if state == TableState.CLOSED:
        return "Every card taken out of the machine", cards_out
    if lid == "open":
        return "Cards in, lid closed", cards_in_and_close
    return "Nothing to do at the machine now", _nothing


async def _nothing() -> None:
    return None
