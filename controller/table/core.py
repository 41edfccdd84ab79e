"""The table's pure core: a deterministic state machine from inputs to effects.

No I/O, no clock, no asyncio: ``apply(input, now)`` changes the state and returns the effects (journal
records, outbox events, alerts, shoe commands, GPIO writes) for the shell to commit and execute. The same
inputs from the same snapshot always give the same state: recovery relies on it (re-apply journaled inputs).
A rejected dealer input or supervisor action raises ``Rejected`` and leaves the state exactly as it was.

``TableCore`` is assembled from one class per concern (docs/architecture.md, "The table core"): the state
(state.py), the retained documents (documents.py), the shoe link (link.py), the shoe cycle (shoe_cycle.py),
cards (cards.py), the lid (lid.py), faults and recovery (faults.py), the round flow (round_flow.py), dealer
inputs (dealer.py) and supervisor actions (supervisor.py); which input goes where is in dispatch.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.table import inputs as i
from controller.table import machine as m
from controller.table.base import CARD_CODES, LID_OPEN_TIMEOUT_S
from controller.table.cards import CardFlow
from controller.table.dealer import DealerInputs
from controller.table.dealer_duty import DealerDuty
from controller.table.dispatch import DEALER_HANDLERS, DEVICE_HANDLERS, SUPERVISOR_HANDLERS
from controller.table.documents import StateDocuments
from controller.table.effects import Effect, Rejected
from controller.table.faults import Faults
from controller.table.jackpot_seam import JackpotSeam
from controller.table.lid import Lid
from controller.table.lid_machine import build_lid_machine
from controller.table.link import ShoeLink
from controller.table.outputs import SafetyOutputs
from controller.table.round_flow import RoundFlow
from controller.table.rounds import EngineFactory, default_card, default_engine_factory
from controller.table.shoe_cycle import ShoeCycle
from controller.table.state import StateStore
from controller.table.supervisor import SupervisorActions
from drivers import events as ev

__all__ = ["CARD_CODES", "LID_OPEN_TIMEOUT_S", "JackpotSeam", "Step", "TableCore"]


@dataclass
class Step:
    effects: list[Effect]
    result: dict[str, Any] = field(default_factory=dict)


class TableCore(
    StateStore,
    StateDocuments,
    ShoeLink,
    ShoeCycle,
    CardFlow,
    Lid,
    Faults,
    RoundFlow,
    DealerInputs,
    DealerDuty,
    SupervisorActions,
    SafetyOutputs,
):
    def __init__(
        self,
        load_profile: Callable[[str], Any],
        *,
        engine_factory: EngineFactory = default_engine_factory,
        make_card: Callable[[str], Any] = default_card,
        jackpot: JackpotSeam | None = None,
    ) -> None:
        self._load_profile = load_profile
        self._engine_factory = engine_factory
        self._make_card = make_card
        self.jackpot = jackpot or JackpotSeam()
        self.machine = m.build_machine(self)  # the authority on the state (machine.py)
        self._fx: list[Effect] = []
        self._result: dict[str, Any] = {}
        self.now = 0.0
        self._reset()
        self.lid_machine = build_lid_machine(self)  # the lid sub-machine (lid_machine.py), on self.lid

    # ================================================================ entry point
    def apply(self, inp: i.Input, now: float, *, states: bool = True) -> Step:
        """Apply one input. Raises ``Rejected`` (state unchanged) for a forbidden dealer/supervisor input.

        ``states=False``: leave the retained state documents out of this step; the caller takes them with
        ``publish_states()`` after the last input of a burst (a document superseded within one commit would
        never be read by anyone, and building it is most of the core's cost per card)."""
        before = self._frozen()
        self.undo = before  # the shell restores this if the journal commit fails
        self._fx, self._result, self.now = [], {}, float(now)
        try:
            handler = INPUT_HANDLERS.get(type(inp))
            if handler is None:
                raise Rejected(f"unknown input {type(inp).__name__}")
            handler(self, inp)
            self._sync_outputs()
            if states:
                self._state_documents()
            self._hole_card_event()  # every input, in order with the card events (never deferred)
        except BaseException:
            self.restore(before)
            raise
        return Step(self._fx, self._result)

    # ================================================================ dispatch (tables: dispatch.py)
    def _device(self, e: ev.DeviceEvent) -> None:
        if e.event_no:  # the shoe's resume point: committed with this input (docs/protocol.md §5a)
            self.device.event_no = e.event_no
        DEVICE_HANDLERS[type(e)](self, e)  # complete: checked when dispatch.py is imported

    def _dealer(self, action: str, args: dict[str, Any]) -> None:
        self._blocked()
        handler = DEALER_HANDLERS.get(action)
        if handler is None:
            raise Rejected(f"unknown dealer action {action!r}")
        handler(self, action, args)

    def _supervisor(self, user: str, role: str, action: str, args: dict[str, Any]) -> None:
        self._authorise(user, role, action)
        handler = SUPERVISOR_HANDLERS.get(action)
        if handler is None:
            raise Rejected(f"unknown supervisor action {action!r}")
        handler(self, user, args)
        self._record("supervisor_action", user=user, role=role, action=action, args=args, at=self._ts())


InputHandler = Callable[[TableCore, Any], None]  # (core, the input of the type it is registered for)

# The input types (controller/table/inputs.py), by type; anything else is refused.
INPUT_HANDLERS: dict[type[i.Input], InputHandler] = {
    i.DeviceInput: lambda core, inp: core._device(inp.event),
    i.DealerInput: lambda core, inp: core._dealer(inp.action, dict(inp.args)),
    i.SupervisorInput: lambda core, inp: core._supervisor(inp.user, inp.role, inp.action, dict(inp.args)),
    i.Tick: lambda core, _inp: core._tick(),
    i.GpioInput: lambda core, inp: core._gpio(inp.name, inp.value),
    i.CommandFailed: lambda core, inp: core._command_failed(inp.command, inp.text, inp.link),
    i.Restart: lambda core, _inp: core._restart(),
    # the jackpot sign's link (PT-2001 r.41), journaled
    i.JackpotDisplay: lambda core, inp: core._fx.extend(core.jackpot.on_display(inp.connected)),
    # the shell's journal commit failed (issue 14 item 3)
    i.JournalFault: lambda core, inp: core._journal_fault(inp.kind, inp.text),
    # chain, snapshot or pinned configuration (issue 13 §1-2)
    i.IntegrityFault: lambda core, inp: core._integrity_fault(inp.reason, dict(inp.details)),
}
