"""Inputs to the core as plain JSON-able dicts, so every input can be journaled and re-applied on recovery.

Shapes: ``{"type": "device", "event": <DeviceEvent name>, "fields": {...}}``, ``{"type": "dealer", "action",
"args"}``, ``{"type": "supervisor", "user", "role", "action", "args"}``, ``{"type": "tick"}``, ``{"type":
"gpio", "name", "value"}`` (buttons, lid switch, ``chip_slot_<seat>``), ``{"type": "command_failed", "command",
"text"}``, ``{"type": "jackpot_display", "connected"}`` (the jackpot sign's link), ``{"type": "restart"}``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from drivers import events as ev

_EVENT_TYPES: dict[str, type[ev.DeviceEvent]] = {
    cls.__name__: cls
    for cls in vars(ev).values()
    if isinstance(cls, type) and issubclass(cls, ev.DeviceEvent) and cls is not ev.DeviceEvent
}


def encode_event(event: ev.DeviceEvent) -> dict[str, Any]:
    fields = {f.name: getattr(event, f.name) for f in dataclasses.fields(event)}
    for key, value in fields.items():
        if isinstance(value, ev.StrEnum):
            fields[key] = str(value)
    return {"type": "device", "event": type(event).__name__, "fields": fields}


def decode_event(data: dict[str, Any]) -> ev.DeviceEvent:
    name = data.get("event")
    cls = _EVENT_TYPES.get(str(name))
    if cls is None:
        raise ValueError(f"unknown device event {name!r}")
    fields = dict(data.get("fields") or {})
    if cls is ev.LidChanged:
        fields["state"] = ev.LidState(fields["state"])
    if cls is ev.Jammed:
        fields["location"] = ev.JamLocation(fields["location"])
    return cls(**fields)


def dealer(action: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "dealer", "action": action, "args": dict(args or {})}


def supervisor(
    user: str, action: str, args: dict[str, Any] | None = None, role: str = "supervisor"
) -> dict[str, Any]:
    return {"type": "supervisor", "user": user, "role": role, "action": action, "args": dict(args or {})}
