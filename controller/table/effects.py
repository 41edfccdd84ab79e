"""What the pure core asks the shell to do. The shell journals ``JournalRecord`` and ``Publish`` in one
transaction and only after COMMIT executes ``Alert``, ``ShoeCommand`` and ``GpioWrite`` (CONTRIBUTING: nothing
is actuated or published before the state it reports is durable)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from drivers.events import Command


@dataclass(frozen=True, slots=True)
class JournalRecord:
    kind: str
    data: dict[str, Any]


class Publish:
    """An MQTT message (topic relative to the table prefix). Either ``data``, or ``text``: the data already
    in canonical JSON (the core has it for the state documents it compares), decoded only if someone reads
    ``data``: the journal stores the text as it is."""

    __slots__ = ("_data", "event_type", "retain", "text", "topic")

    def __init__(
        self,
        topic: str,
        event_type: str,
        data: dict[str, Any] | None = None,
        retain: bool = False,
        text: str | None = None,
    ) -> None:
        if data is None and text is None:
            raise ValueError("Publish needs data or text")
        self.topic, self.event_type, self.retain, self.text, self._data = (
            topic,
            event_type,
            retain,
            text,
            data,
        )

    @property
    def data(self) -> dict[str, Any]:
        if self._data is None:
            self._data = json.loads(self.text or "null")
        return self._data

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Publish):
            return NotImplemented
        return (self.topic, self.event_type, self.retain, self.data) == (
            other.topic,
            other.event_type,
            other.retain,
            other.data,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable cache inside: not hashable, like the dataclasses

    def __repr__(self) -> str:
        return f"Publish({self.topic!r}, {self.event_type!r}, {self.data!r}, retain={self.retain})"


@dataclass(frozen=True, slots=True)
class Alert:
    kind: str
    severity: str  # "info" | "warning" | "critical"
    reason: str  # cites the rule
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ShoeCommand:
    command: Command


@dataclass(frozen=True, slots=True)
class GpioWrite:
    name: str  # "lid_lock" (True = locked) | "warning_light" (True = on)
    value: bool


Effect = JournalRecord | Publish | Alert | ShoeCommand | GpioWrite


class Rejected(Exception):
    """A dealer input or supervisor action the rules or the current state forbid; it changed no state."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
