"""Test helpers around a real TableController (SQLite journal, fake GPIO board): the safety pin map and a
continuous-shuffler session opened as the floor does it (PT-2001 r.53-54: loaded in two packets)."""

from __future__ import annotations

from controller.gpio import PinSpec
from controller.shell import TableController
from controller.table import inputs
from drivers import events as ev

# The outputs with their safe values (lid locked, light on: PT-2001 r.51, r.60) and the lid switch.
SAFETY_PINS = [
    PinSpec("lid_lock", 17, True, safe_value=True),
    PinSpec("warning_light", 27, True, safe_value=True),
    PinSpec("lid_switch", 22, False),
]


async def open_continuous(tc: TableController, user: str = "ana", total: int = 312) -> None:
    """A supervisor opens a pt-2001 continuous table; the empty machine is loaded in two packets with the lid
    opened for it, closed, and shuffled (PT-2001 r.53-54): the table is then betting."""
    await tc.supervisor_action(user, "open_table", {"profile": "pt-2001", "shuffler": "continuous"})
    for e in (
        ev.LidChanged(ev.LidState.OPEN),
        ev.DiscardInserted(total // 2),
        ev.DiscardInserted(total - total // 2),
        ev.LidChanged(ev.LidState.CLOSED),
        ev.ShuffleFinished(total),
    ):
        await tc.submit(inputs.DeviceInput(e))
