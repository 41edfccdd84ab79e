"""The inputs to the table core, as typed values: the drivers and the shell hand these to ``TableCore.apply``.

Each input is journaled (``encode``: a JSON-able dict, once, when the shell commits it) and re-applied on
recovery (``decode``: the journal's dict back into the input). The journal's shapes, unchanged since the first
journals in the field: ``{"type": "device", "event": <DeviceEvent name>, "fields": {...}}``, ``{"type":
"dealer", "action", "args"}``, ``{"type": "supervisor", "user", "role", "action", "args"}`` (both with an
optional ``request``: the MQTT command's idempotency key, ignored by the core), ``{"type": "tick"}``, ``{"type":
"gpio", "name", "value"}`` (buttons, lid switch, ``chip_slot_<seat>``), ``{"type": "command_failed", "command",
"text"}`` (``"link": true`` when the link failed), ``{"type": "jackpot_display", "connected"}`` (the jackpot
sign's link), ``{"type": "jackpot_link", "up", "reason", "seq"}`` (a linked progressive's meter documents valid
or not), ``{"type": "link_hit_awarded", "link", "hit_id", "round_id", "seat", "combination", "amount_minor",
"order"}`` (a prize the link's controller froze for a hit at this table), ``{"type": "restart"}``, ``{"type":
"journal_fault", "kind", "text"}``, ``{"type": "integrity_fault", "reason", "details"}``.

A journal row can lie: ``decode`` refuses an unknown input type (``Rejected``) or device event (``ValueError``)
with the name it found, never guesses.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, TypeAlias

from controller.effects import Rejected
from drivers import events as ev


@dataclass(frozen=True, slots=True)
class Request:
    """An MQTT command's idempotency key (docs/mqtt.md), journaled with its input; the core ignores it."""

    role: str
    user: str
    request_id: str


@dataclass(frozen=True, slots=True)
class DeviceInput:
    """A shoe (or card reader) event, as the driver typed it (drivers/events.py)."""

    event: ev.DeviceEvent


@dataclass(frozen=True, slots=True)
class DealerInput:
    """A dealer button or MQTT dealer command (controller/actions.py ``DEALER_ACTIONS``)."""

    action: str
    args: dict[str, Any] = field(default_factory=dict)
    request: Request | None = None


@dataclass(frozen=True, slots=True)
class SupervisorInput:
    """A supervisor's or technician's action; ``role`` "" has no authority (refused by the core)."""

    user: str
    action: str
    args: dict[str, Any] = field(default_factory=dict)
    role: str = "supervisor"
    request: Request | None = None


@dataclass(frozen=True, slots=True)
class Tick:
    """A deadline is due (the lid's: controller/table/input_feeds.py journals ticks only then)."""


@dataclass(frozen=True, slots=True)
class GpioInput:
    """A sensor edge: the lid switch or ``chip_slot_<seat>`` (the dealer buttons become ``DealerInput``)."""

    name: str
    value: bool


@dataclass(frozen=True, slots=True)
class CommandFailed:
    """A shoe command the shoe refused (``link`` False) or that never got an answer (``link`` True)."""

    command: str
    text: str = ""
    link: bool = False


@dataclass(frozen=True, slots=True)
class JackpotDisplay:
    """The jackpot sign's link came up or went down (PT-2001 r.41)."""

    connected: bool


@dataclass(frozen=True, slots=True)
class JackpotLink:
    """A linked progressive's meter documents became valid (``up``) or not: none within ``link_timeout_s``, or
    the link suspended (docs/jackpot.md "Linked progressive (table side)"). Only transitions are inputs."""

    up: bool
    reason: str = ""
    seq: int = (
        0  # the link document's seq that made the change: a replayed older one is refused after a restart
    )


@dataclass(frozen=True, slots=True)
class LinkHitAwarded:
    """A signed meter document lists a prize for a hit at this table: the link's ``hit_id``, the prize in
    minor units and its order among the link's hits (PT-2001 r.50)."""

    link: str
    hit_id: int
    round_id: str
    seat: int
    combination: str
    amount_minor: int
    order: int


@dataclass(frozen=True, slots=True)
class Restart:
    """The service started: the core re-counts the cards before anything goes on."""


@dataclass(frozen=True, slots=True)
class JournalFault:
    """The shell's journal commit failed (issue 14 item 3)."""

    kind: str = "io_error"
    text: str = ""


@dataclass(frozen=True, slots=True)
class IntegrityFault:
    """The journal's chain, a snapshot or the pinned configuration is not what it should be (issue 13 §1-2)."""

    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)


Input: TypeAlias = (
    DeviceInput
    | DealerInput
    | SupervisorInput
    | Tick
    | GpioInput
    | CommandFailed
    | JackpotDisplay
    | JackpotLink
    | LinkHitAwarded
    | Restart
    | JournalFault
    | IntegrityFault
)

# ---- device events <-> the journal's "fields" ------------------------------------------------------------

_EVENT_TYPES: dict[str, type[ev.DeviceEvent]] = {
    cls.__name__: cls
    for cls in vars(ev).values()
    if isinstance(cls, type) and issubclass(cls, ev.DeviceEvent) and cls is not ev.DeviceEvent
}
_FIELD_NAMES: dict[type[ev.DeviceEvent], tuple[str, ...]] = {
    cls: tuple(f.name for f in dataclasses.fields(cls)) for cls in _EVENT_TYPES.values()
}
_ENUM_FIELDS: dict[type[ev.DeviceEvent], dict[str, type[Enum]]] = {
    ev.LidChanged: {"state": ev.LidState},
    ev.Jammed: {"location": ev.JamLocation},
}


def encode_event(event: ev.DeviceEvent) -> dict[str, Any]:
    """A device event as the journal keeps it (enum fields as their plain string values)."""
    fields = {name: getattr(event, name) for name in _FIELD_NAMES[type(event)]}
    for name in _ENUM_FIELDS.get(type(event), ()):
        fields[name] = str(fields[name])
    return {"type": "device", "event": type(event).__name__, "fields": fields}


def decode_event(data: dict[str, Any]) -> ev.DeviceEvent:
    name = data.get("event")
    cls = _EVENT_TYPES.get(str(name))
    if cls is None:
        raise ValueError(f"unknown device event {name!r}")
    fields = dict(data.get("fields") or {})
    for key, enum in _ENUM_FIELDS.get(cls, {}).items():
        fields[key] = enum(fields[key])
    return cls(**fields)


# ---- every input <-> the journal's dict --------------------------------------------------------------------


def _with_request(data: dict[str, Any], request: Request | None) -> dict[str, Any]:
    if request is not None:
        data["request"] = {"role": request.role, "user": request.user, "request_id": request.request_id}
    return data


def _encode_dealer(inp: DealerInput) -> dict[str, Any]:
    return _with_request({"type": "dealer", "action": inp.action, "args": dict(inp.args)}, inp.request)


def _encode_supervisor(inp: SupervisorInput) -> dict[str, Any]:
    data = {
        "type": "supervisor",
        "user": inp.user,
        "role": inp.role,
        "action": inp.action,
        "args": dict(inp.args),
    }
    return _with_request(data, inp.request)


def _encode_command_failed(inp: CommandFailed) -> dict[str, Any]:
    data: dict[str, Any] = {"type": "command_failed", "command": inp.command, "text": inp.text}
    if inp.link:
        data["link"] = True
    return data


_ENCODERS: dict[type[Any], Callable[[Any], dict[str, Any]]] = {
    DeviceInput: lambda inp: encode_event(inp.event),
    DealerInput: _encode_dealer,
    SupervisorInput: _encode_supervisor,
    Tick: lambda _inp: {"type": "tick"},
    GpioInput: lambda inp: {"type": "gpio", "name": inp.name, "value": inp.value},
    CommandFailed: _encode_command_failed,
    JackpotDisplay: lambda inp: {"type": "jackpot_display", "connected": inp.connected},
    JackpotLink: lambda inp: {"type": "jackpot_link", "up": inp.up, "reason": inp.reason, "seq": inp.seq},
    LinkHitAwarded: lambda inp: {"type": "link_hit_awarded", **dataclasses.asdict(inp)},
    Restart: lambda _inp: {"type": "restart"},
    JournalFault: lambda inp: {"type": "journal_fault", "kind": inp.kind, "text": inp.text},
    IntegrityFault: lambda inp: {
        "type": "integrity_fault",
        "reason": inp.reason,
        "details": dict(inp.details),
    },
}


def encode(inp: Input) -> dict[str, Any]:
    """The input as the journal's ``input`` record keeps it (the shapes above)."""
    return _ENCODERS[type(inp)](inp)


def _request(data: dict[str, Any]) -> Request | None:
    req = data.get("request")
    if not isinstance(req, dict):
        return None
    return Request(str(req.get("role") or ""), str(req.get("user") or ""), str(req.get("request_id") or ""))


# Read as the core read the dicts before the inputs were typed: a journal of the field re-applies the same.
_DECODERS: dict[str, Callable[[dict[str, Any]], Input]] = {
    "device": lambda d: DeviceInput(decode_event(d)),
    "dealer": lambda d: DealerInput(str(d.get("action")), dict(d.get("args") or {}), _request(d)),
    "supervisor": lambda d: SupervisorInput(
        str(d.get("user") or ""),
        str(d.get("action")),
        dict(d.get("args") or {}),
        str(d.get("role") or ""),  # no role, no authority: refused by the core
        _request(d),
    ),
    "tick": lambda _d: Tick(),
    "gpio": lambda d: GpioInput(str(d.get("name")), bool(d.get("value"))),
    "command_failed": lambda d: CommandFailed(
        str(d.get("command")), str(d.get("text", "")), bool(d.get("link"))
    ),
    "jackpot_display": lambda d: JackpotDisplay(bool(d.get("connected"))),
    "jackpot_link": lambda d: JackpotLink(
        bool(d.get("up")), str(d.get("reason") or ""), int(d.get("seq") or 0)
    ),
    "link_hit_awarded": lambda d: LinkHitAwarded(
        str(d.get("link")),
        int(d["hit_id"]),
        str(d.get("round_id")),
        int(d["seat"]),
        str(d.get("combination")),
        int(d["amount_minor"]),
        int(d["order"]),
    ),
    "restart": lambda _d: Restart(),
    "journal_fault": lambda d: JournalFault(str(d.get("kind") or "io_error"), str(d.get("text") or "")),
    "integrity_fault": lambda d: IntegrityFault(str(d.get("reason") or ""), dict(d.get("details") or {})),
}


def decode(data: dict[str, Any]) -> Input:
    """A journaled input back into its type; an unknown type is refused with the name found (``Rejected``)."""
    decoder = _DECODERS.get(str(data.get("type")))
    if decoder is None:
        raise Rejected(f"unknown input type {data.get('type')!r}")
    return decoder(data)


# ---- shorthands ------------------------------------------------------------------------------------------


def dealer(action: str, args: dict[str, Any] | None = None) -> DealerInput:
    return DealerInput(action, dict(args or {}))


def supervisor(
    user: str, action: str, args: dict[str, Any] | None = None, role: str = "supervisor"
) -> SupervisorInput:
    return SupervisorInput(user, action, dict(args or {}), role)
