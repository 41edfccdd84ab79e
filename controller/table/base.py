"""Helpers every concern of the core uses: effects (records, events, alerts, commands), the machine's answers."""

from __future__ import annotations

import pickle
import time
from typing import Any

from controller.actions import DEALER_PLAY, SUPERVISOR
from controller.effects import Alert, Event, EventKind, JournalRecord, Rejected, ShoeCommand
from controller.rules.profiles import parse_profile
from controller.table import machine as m
from controller.table.rounds import (
    jsonable,
)
from drivers import events as ev
from drivers.cards import CARD_CODES

LID_OPEN_TIMEOUT_S = (
    10.0  # after OpenLid, how long the lid has to open before the round's cards are carried (r.61)
)
PLAY_ACTIONS = DEALER_PLAY
SUPERVISOR_ROLES = (SUPERVISOR,)
FAULT_TRIGGER = {
    "jam": "jam",
    "link_down": "link_lost",
    "tamper": "forced",
    "journal_io": "journal_failed",
    "integrity": "integrity_failed",
    "shoe_sequence": "sequence_fault",
    "card_count": "count_fault",
}
PROFILE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _parse_profile_text(text: str, name: str) -> Any:
    """A rule profile from the TOML text pinned in the session (no file is read)."""
    return parse_profile(text, source=f"{name} (pinned in the session)")


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return pickle.loads(pickle.dumps(data, pickle.HIGHEST_PROTOCOL))


def _card_valid(code: str) -> bool:
    return code in CARD_CODES


class CoreBase:
    """Attributes: see ``StateStore._reset`` (controller/table/state.py)."""

    def _record(self, kind: str, /, **data: Any) -> None:
        self._fx.append(JournalRecord(kind, jsonable(data)))

    def _event(self, kind: str, /, **data: Any) -> None:
        """A domain event (docs/mqtt.md "events"), committed with the input that caused it."""
        self._fx.append(Event(EventKind(kind), jsonable(data)))

    def _alert(self, kind: str, severity: str, reason: str, /, **details: Any) -> None:
        self._fx.append(Alert(kind, severity, reason, jsonable(details)))
        # "alert" records belong to the AlertManager, which journals the alert itself when it raises it.
        self._record("alert_requested", kind=kind, severity=severity, reason=reason, details=details)

    def _cmd(self, command: ev.Command) -> None:
        self._fx.append(ShoeCommand(command))

    @property
    def state(self) -> str:
        """The leaf state ("betting", "jammed"): the name in snapshots and documents (machine.py)."""
        return m.LEAF[self.machine_state]

    def _go(self, trigger: str) -> None:
        """Fire a transition the machine allows now (the caller asked ``may_<trigger>()`` or knows)."""
        if not self.trigger(trigger):  # a guard said no: a bug in the caller, never silently ignored
            raise RuntimeError(f"transition {trigger} refused in state {self.state}")

    def _allow(self, trigger: str, action: str) -> None:
        """Refuse ``action`` unless the machine may fire ``trigger`` now (its states and guards)."""
        if not self.may_trigger(trigger):
            raise Rejected(m.refusal(self, trigger, action))

    def _ts(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))
