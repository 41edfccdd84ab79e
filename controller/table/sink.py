"""The effect sink: what one step of the core (one ``apply``) produces, in order.

Every concern of the core (docs/architecture.md, "The table core") is given the one sink in its constructor and
adds to it what its part of the step does: journal records, domain events, alerts, shoe commands; the core
collects them into its ``Step``. The sink also holds the step's clock (``now``) and its result (``result``): the
core starts a new step with ``begin`` and never reuses the lists of a step it returned."""

from __future__ import annotations

import time
from typing import Any

from controller.effects import Alert, Effect, Event, EventKind, JournalRecord, ShoeCommand
from controller.table.record_kinds import RecordKind
from controller.table.rounds import jsonable
from drivers import events as ev


class EffectSink:
    def __init__(self) -> None:
        self.items: list[Effect] = []
        self.result: dict[str, Any] = {}
        self.now = 0.0

    def begin(self, now: float) -> None:
        """A new step: fresh lists (the last step's are the caller's now)."""
        self.items, self.result, self.now = [], {}, float(now)

    def record(self, kind: RecordKind, /, **data: Any) -> None:
        self.items.append(JournalRecord(kind.value, jsonable(data)))

    def event(self, kind: str, /, **data: Any) -> None:
        """A domain event (docs/mqtt.md "events"), committed with the input that caused it."""
        self.items.append(Event(EventKind(kind), jsonable(data)))

    def alert(self, kind: str, severity: str, reason: str, /, **details: Any) -> None:
        self.items.append(Alert(kind, severity, reason, jsonable(details)))
        # "alert" records belong to the AlertManager, which journals the alert itself when it raises it.
        self.record(RecordKind.ALERT_REQUESTED, kind=kind, severity=severity, reason=reason, details=details)

    def cmd(self, command: ev.Command) -> None:
        self.items.append(ShoeCommand(command))

    def extend(self, effects: list[Effect]) -> None:
        """Effects a collaborator returned (the jackpot seam's)."""
        self.items.extend(effects)

    def ts(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))
