"""The MQTT topic tree of one table, under a configurable prefix (default ``casino/<site>/table/<id>``).

Every topic the controller publishes or listens to is declared once in ``SPECS`` (who publishes, retained or
not, QoS, payload schema); ``docs/mqtt.md`` lists the same table and a test keeps the two in step. The
journal's outbox stores topics RELATIVE to the prefix; ``Topics.abs``/``Topics.rel`` convert.

Nothing on any topic reveals the cards still inside the shoe (no upcoming cards, no shuffle results): the
schemas have no such field and ``schemas.validate_message`` refuses any key that looks like one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ROLES = ("dealer", "supervisor", "technician")
SIGNED_ROLES = ("supervisor", "technician")  # actions that need an HMAC credential on top of the broker ACL

STATUS = "status"
STATE_NAMES = ("table", "shoe", "lid", "jam", "round", "jackpot")
STATE_TYPE = "state"  # envelope ``type`` of every state/<name> payload
SOFTWARE_STATE = "state/software"  # the service's own document (not the core's): version, digests in force
EVENT_TYPES = (
    "card", "round", "settlement", "shoe", "lid", "jam", "deck_check", "dealer_error", "jackpot",
    "session", "fault",
)  # fmt: skip
ALERTS_OPEN = "alerts/open"
ALERTS_EVENTS = "alerts/events"
ALERTS_OPEN_TYPE = "alerts_open"
ALERT_TYPE = "alert"


def state_topic(name: str) -> str:
    if name not in STATE_NAMES:
        raise ValueError(f"unknown state topic {name!r} (expected one of {', '.join(STATE_NAMES)})")
    return f"state/{name}"


def event_topic(event_type: str) -> str:
    """``events/<type>``: publish with ``tx.publish(event_topic("card"), "card", data)``."""
    if event_type not in EVENT_TYPES:
        raise ValueError(f"unknown event type {event_type!r} (expected one of {', '.join(EVENT_TYPES)})")
    return f"events/{event_type}"


def cmd_topic(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"unknown role {role!r}")
    return f"cmd/{role}"


def response_topic(role: str) -> str:
    """Plain-topic fallback for command responses (MQTT 3.1.1 clients, or no response topic given)."""
    return f"{cmd_topic(role)}/response"


@dataclass(frozen=True, slots=True)
class TopicSpec:
    pattern: str  # relative; "+" matches one level
    publisher: str
    retained: bool
    qos: int
    schema: str  # file name in schemas/mqtt/
    description: str

    def matches(self, rel: str) -> bool:
        return _match(self.pattern, rel)


def _match(pattern: str, topic: str) -> bool:
    p, t = pattern.split("/"), topic.split("/")
    if p and p[-1] == "#":
        return len(t) >= len(p) - 1 and all(a in ("+", b) for a, b in zip(p[:-1], t, strict=False))
    return len(p) == len(t) and all(a in ("+", b) for a, b in zip(p, t, strict=True))


SPECS: tuple[TopicSpec, ...] = (
    TopicSpec(
        STATUS,
        "controller (last will: broker)",
        True,
        1,
        "status.schema.json",
        "`online` on every (re)connect, `offline` on clean stop or as the last will when the link dies",
    ),
    *(
        TopicSpec(f"state/{n}", "controller", True, 1, f"state_{n}.schema.json", f"current {n} state")
        for n in STATE_NAMES
    ),
    TopicSpec(
        SOFTWARE_STATE,
        "controller",
        True,
        1,
        "state_software.schema.json",
        "software version, rule profile and book, SHA-256 digests in force, audit public key",
    ),
    *(
        TopicSpec(f"events/{t}", "controller", False, 1, f"event_{t}.schema.json", f"{t} events")
        for t in EVENT_TYPES
    ),
    TopicSpec(
        ALERTS_OPEN,
        "controller",
        True,
        1,
        "alerts_open.schema.json",
        "every alert not yet acknowledged (a console connecting later sees them)",
    ),
    TopicSpec(
        ALERTS_EVENTS,
        "controller",
        False,
        1,
        "alert_event.schema.json",
        "alert raised / acknowledged / escalated",
    ),
    TopicSpec(
        "cmd/dealer",
        "pit terminal (`dealer`)",
        False,
        1,
        "cmd_dealer.schema.json",
        "dealer actions; broker ACL only",
    ),
    TopicSpec(
        "cmd/supervisor",
        "`supervisor*` accounts",
        False,
        1,
        "cmd_signed.schema.json",
        "supervisor actions, HMAC-signed",
    ),
    TopicSpec(
        "cmd/technician",
        "`technician`",
        False,
        1,
        "cmd_signed.schema.json",
        "technician actions, HMAC-signed",
    ),
    TopicSpec(
        "cmd/+/response",
        "controller",
        False,
        1,
        "cmd_response.schema.json",
        "response fallback, `request_id` echoed",
    ),
    TopicSpec(
        "cmd/+/response/#",
        "controller",
        False,
        1,
        "cmd_response.schema.json",
        "MQTT v5 response topic chosen by the requester (must lie here), correlation data echoed",
    ),
)


def spec_for(rel: str) -> TopicSpec | None:
    # Most specific first: "cmd/+/response" must win over nothing else, and cmd/<role> are exact.
    for spec in SPECS:
        if spec.matches(rel):
            return spec
    return None


_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]+$")


class Topics:
    """Absolute topics of one table."""

    def __init__(self, site: str, table_id: str, prefix: str | None = None) -> None:
        for name, value in (("site", site), ("table_id", table_id)):
            if not _SEGMENT.match(value):
                raise ValueError(
                    f"{name} {value!r}: only letters, digits, '_', '.', '-' allowed in a topic level"
                )
        self.site = site
        self.table_id = table_id
        self.prefix = (prefix or f"casino/{site}/table/{table_id}").rstrip("/")
        if any(c in self.prefix for c in "+#") or not self.prefix:
            raise ValueError(f"prefix {self.prefix!r}: must be non-empty and free of wildcards")

    def abs(self, rel: str) -> str:
        return f"{self.prefix}/{rel}"

    def rel(self, topic: str) -> str | None:
        head = self.prefix + "/"
        return topic[len(head) :] if topic.startswith(head) else None

    def __repr__(self) -> str:
        return f"Topics({self.prefix!r})"
