"""The table's safety outputs (product guide: on any fault the lid stays locked and the light shows what is wrong
until an authorised person clears it; PT-2001 r.51, r.60).

One pure function derives both outputs from the typed state (``derive_outputs``); one method writes them
(``SafetyOutputs.sync``, after every input): a ``GpioWrite`` when a derived value changes, and for the
light the shoe's own light too. Nothing else writes a ``GpioWrite``. Whether the lid may open is the lid's
``unlock`` (``LidStatus``), changed only by ``Lid.grant_opening`` / ``Lid.relock`` (lid.py)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from controller.effects import GpioWrite
from controller.gpio.base import OUTPUT_SAFE_VALUES
from controller.table import machine as m
from controller.table.concern import NO_HANDLERS, Handlers
from controller.table.machine_names import TableState
from controller.table.sink import EffectSink
from drivers import events as ev

if TYPE_CHECKING:
    from controller.table.state import LidStatus

# The safe state: at start-up, on shutdown, and what the shell has applied when the core hears ``restart``.
SAFE_OUTPUTS: Mapping[str, bool] = OUTPUT_SAFE_VALUES  # defined once: controller/gpio/base.py


def derive_outputs(
    state: TableState, lid: LidStatus, faults: Mapping[str, Any], awaiting_replacement: bool
) -> dict[str, bool]:
    """``lid_lock``: locked unless an opening is allowed now; ``warning_light``: on in a fault state, on a
    service fault (also on a closed table), after a failed deck check (r.55) and while a damaged card awaits
    the chief inspector (r.51)."""
    return {
        "lid_lock": lid.unlock is None,
        "warning_light": state in m.FAULT_STATES
        or any(f in faults for f in m.SERVICE_FAULTS)
        or state == TableState.DECK_CHECK_FAILED
        or awaiting_replacement,
    }


class SafetyOutputs:
    """Owns the outputs' last written values (snapshot ``outputs``); the core syncs them after every input."""

    name: ClassVar[str] = "safety"

    def __init__(self, fx: EffectSink) -> None:
        self.fx = fx
        self.values: dict[str, bool] = dict(SAFE_OUTPUTS)

    def handlers(self) -> Handlers:
        return NO_HANDLERS

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap["outputs"] = self.values

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.values = snap["outputs"]

    def sync(
        self, state: TableState, lid: LidStatus, faults: Mapping[str, Any], awaiting_replacement: bool
    ) -> None:
        """The one writer of the outputs: each derived value that changed is written, once."""
        want = derive_outputs(state, lid, faults, awaiting_replacement)
        for name, value in want.items():
            if self.values.get(name) != value:
                self.values[name] = value
                self.fx.items.append(GpioWrite(name, value))
                if name == "warning_light":
                    self.fx.cmd(ev.SetWarningLight(value))

    def made_safe(self) -> None:
        """The shell applied the safe outputs (start-up after a restart): what the outputs are now."""
        self.values = dict(SAFE_OUTPUTS)

    def to_rebooted_shoe(self, *, locked: bool) -> None:
        """A shoe back on the link may have rebooted: its lock (``locked``: no opening allowed now) and its
        light are told again (r.60)."""
        if locked:
            self.fx.cmd(ev.LockLid())
        if self.values.get("warning_light"):
            self.fx.cmd(ev.SetWarningLight(True))
