"""The shell's one mapping from the core's domain effects to MQTT messages (docs/mqtt.md): an ``Event`` goes
to ``events/<kind>``, a ``StateDocument`` to ``state/<name>`` (retained). The core names no topic; this table
is the only place that turns what happened into where it is published, and it is checked complete at import
against the topic tree (controller/topics.py)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from controller.effects import DocumentName, Event, EventKind, StateDocument
from controller.topics import STATE_TYPE, event_topic, state_topic

# Each raises at import if the topic tree has no such topic: a new kind without a topic cannot be emitted.
EVENT_TOPICS: dict[EventKind, str] = {kind: event_topic(kind.value) for kind in EventKind}
DOCUMENT_TOPICS: dict[DocumentName, str] = {name: state_topic(name.value) for name in DocumentName}


class Publish:
    """One MQTT message as the journal's outbox keeps it (topic relative to the table prefix). Either
    ``data``, or ``text``: the data already in canonical JSON, decoded only if someone reads ``data``."""

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


def message_of(fx: Event | StateDocument) -> Publish:
    """Where and how the shell publishes one of the core's events or state documents."""
    if isinstance(fx, Event):
        return Publish(EVENT_TOPICS[fx.kind], fx.kind.value, fx.data)
    return Publish(DOCUMENT_TOPICS[fx.name], STATE_TYPE, retain=True, text=fx.text)


def messages(effects: Iterable[Any]) -> list[Publish]:
    """The messages among a step's effects, in order."""
    return [message_of(fx) for fx in effects if isinstance(fx, Event | StateDocument)]
