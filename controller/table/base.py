"""Helpers every concern of the core uses: effects (records, events, alerts, commands), the safe outputs."""

from __future__ import annotations

import pickle
import time
from typing import Any

from controller.actions import DEALER_PLAY
from controller.mqtt.topics import event_topic
from controller.table import machine as m
from controller.table.effects import Alert, GpioWrite, JournalRecord, Publish, ShoeCommand
from controller.table.rounds import (
    jsonable,
)
from drivers import events as ev

LID_OPEN_TIMEOUT_S = (
    10.0  # after OpenLid, how long the lid has to open before the round's cards are carried (r.61)
)
CARD_CODES = [r + s for s in ev.SUITS for r in ev.RANKS]
PLAY_ACTIONS = DEALER_PLAY
SUPERVISOR_ROLES = ("supervisor",)
FAULT_TRIGGER = {
    "jam": "jam",
    "link_down": "link_lost",
    "tamper": "forced",
    "journal_io": "journal_failed",
    "integrity": "integrity_failed",
    "shoe_sequence": "sequence_fault",
    "card_count": "count_fault",
}
NO_SESSION = ("closed", "deck_check_failed")  # no fault state to enter: the fault is only listed
PROFILE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _parse_profile_text(text: str, name: str) -> Any:
    """A rule profile from the TOML text pinned in the session (no file is read)."""
    import tomllib

    from controller.rules.profiles import profile_from_dict

    return profile_from_dict(tomllib.loads(text), source=f"{name} (pinned in the session)")


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return pickle.loads(pickle.dumps(data, pickle.HIGHEST_PROTOCOL))


def _card_valid(code: str) -> bool:
    return code in CARD_CODES


class CoreBase:
    """Attributes: see ``StateStore._reset`` (controller/table/state.py)."""

    def _record(self, kind: str, /, **data: Any) -> None:
        self._fx.append(JournalRecord(kind, jsonable(data)))

    def _publish(self, topic: str, event_type: str, data: dict[str, Any], retain: bool = False) -> None:
        self._fx.append(Publish(topic, event_type, jsonable(data), retain))

    def _event(self, kind: str, /, **data: Any) -> None:
        """An ``events/<kind>`` message (docs/mqtt.md), committed with the input that caused it."""
        self._publish(event_topic(kind), kind, data)

    def _alert(self, kind: str, severity: str, reason: str, /, **details: Any) -> None:
        self._fx.append(Alert(kind, severity, reason, jsonable(details)))
        # "alert" records belong to the AlertManager, which journals the alert itself when it raises it.
        self._record("alert_requested", kind=kind, severity=severity, reason=reason, details=details)

    def _cmd(self, command: ev.Command) -> None:
        self._fx.append(ShoeCommand(command))

    def _go(self, trigger: str) -> None:
        getattr(self, trigger)()

    def _sync_outputs(self) -> None:
        """Safe outputs on every fault (PT-2001 r.51): light on, lid locked unless an opening is allowed."""
        want = {
            "lid_lock": self.lid.unlock is None,
            "warning_light": self.state in m.FAULT_STATES
            or any(f in self.faults for f in m.SERVICE_FAULTS)  # also on a closed table
            or self.state == "deck_check_failed"
            or self.pending_replacement is not None,
        }
        for name, value in want.items():
            if self.outputs.get(name) != value:
                self.outputs[name] = value
                self._fx.append(GpioWrite(name, value))
                if name == "warning_light":
                    self._cmd(ev.SetWarningLight(value))

    def _ts(self) -> str:
        return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.now))
