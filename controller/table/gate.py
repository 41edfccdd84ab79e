"""The concerns' narrow view of the table's state machine (machine.py): where the table is, what it may do now,
and firing a transition. The machine's model is ``TableCore``; the concerns get this gate, never the core."""

from __future__ import annotations

from typing import Any, Protocol

from controller.effects import Rejected
from controller.table import machine as m
from controller.table.machine_names import TableState, Trigger


class MachineModel(Protocol):
    """What ``transitions`` adds to the model (``TableCore``) and the core keeps beside it."""

    machine_state: str
    resume_to: TableState | None
    machine: Any

    def may_trigger(self, trigger: str) -> bool: ...
    def trigger(self, trigger: str) -> bool: ...


class Gate:
    def __init__(self, model: MachineModel) -> None:
        self._model = model

    @property
    def state(self) -> TableState:
        """The leaf state ("betting", "jammed"): the name in snapshots and documents (machine.py)."""
        return m.LEAF[self._model.machine_state]

    @property
    def resume_to(self) -> TableState | None:
        return self._model.resume_to

    def phase_state(self) -> TableState | None:
        """The round phase the table is in, or was in when a fault interrupted it."""
        state = self.state
        return self._model.resume_to if state in m.FAULT_STATES else state

    def may(self, trigger: Trigger) -> bool:
        return self._model.may_trigger(trigger)

    def has_trigger(self, trigger: Trigger) -> bool:
        """``trigger`` is defined from the current state (whatever its guards say)."""
        return trigger in self._model.machine.get_triggers(self._model.machine_state)

    def go(self, trigger: Trigger) -> None:
        """Fire a transition the machine allows now (the caller asked ``may`` or knows)."""
        if not self._model.trigger(trigger):  # a guard said no: a bug in the caller, never silently ignored
            raise RuntimeError(f"transition {trigger} refused in state {self.state}")

    def allow(self, trigger: Trigger, action: str) -> None:
        """Refuse ``action`` unless the machine may fire ``trigger`` now (its states and guards)."""
        if not self._model.may_trigger(trigger):
            raise Rejected(m.refusal(self._model, trigger, action))
