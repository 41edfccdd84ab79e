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

from controller.actions import ROLES as ROLES  # the one role list (controller/actions.py)
from controller.actions import SIGNED_ROLES as SIGNED_ROLES

STATUS = "status"
STATE_NAMES = ("table", "shoe", "lid", "jam", "round", "jackpot", "players")
STATE_TYPE = "state"  # envelope ``type`` of every state/<name> payload
SOFTWARE_STATE = "state/software"  # the service's own document (not the core's): version, digests in force
EVENT_TYPES = (
    "card", "round", "settlement", "shoe", "lid", "jam", "deck_check", "dealer_error", "jackpot",
    "session", "fault", "dealer", "player",
)  # fmt: skip
ALERTS_OPEN = "alerts/open"
ALERTS_EVENTS = "alerts/events"
ALERTS_OPEN_TYPE = "alerts_open"
ALERT_TYPE = "alert"
AUDIT_CHECKPOINT = "audit/checkpoint"  # signed chain head (controller/journal/checkpointer.py)
CMD_REPLAY = "cmd/replay"  # event re-fetch requests (controller/mqtt/replay.py)
# A linked progressive's meter document (controller/jackpot/link_doc.py), carried in by the floor bridge from
# casino/<site>/progressive/<link>/meter (controller/mqtt/floor_bridge.py); only the bridge writes it here
PROGRESSIVE_METER = "progressive/meter"
EVENT_HEAD = (
    "link/head"  # the newest event id the table wrote, every HEAD_EVERY_S (controller/mqtt/replay.py)
)


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
    """Base of the response topics: answers go to ``<this>/<account>`` (the request's MQTT v5 response topic);
    the bare topic is the fallback when none is given, which no client account may read."""
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
        "supervisor actions, signed by the user (Ed25519)",
    ),
    TopicSpec(
        "cmd/technician",
        "`technician`",
        False,
        1,
        "cmd_signed.schema.json",
        "technician actions, signed by the user (Ed25519)",
    ),
    TopicSpec(
        AUDIT_CHECKPOINT,
        "controller",
        True,
        1,
        "audit_checkpoint.schema.json",
        "the journal's chain head signed with the table's Ed25519 key, at every round end and at least every 60 s"
        " while records are written; `tablectl journal verify --checkpoint` (see [Audit checkpoints]"
        "(#audit-checkpoints))",
    ),
    TopicSpec(
        EVENT_HEAD,
        "controller",
        True,
        0,
        "link_head.schema.json",
        "`{last_event_id, ts}`: the newest event id the table wrote (every id up to it can be re-fetched), every"
        " 10 s, not journaled; what tells the floor of an event lost at the end of the stream",
    ),
    TopicSpec(
        CMD_REPLAY,
        "`monitor*`, `archive*`, `supervisor*`, `dealer*`",
        False,
        1,
        "cmd_replay.schema.json",
        "ask for kept events `{request_id, from_event_id, to_event_id}` again (not signed, rate-limited;"
        " [reliability.md](reliability.md))",
    ),
    TopicSpec(
        f"{CMD_REPLAY}/response/+",
        "controller",
        False,
        1,
        "cmd_replay_response.schema.json",
        "the closing document of a re-fetch `{request_id, ok, sent, missing}` (or a refusal); the last level is"
        " the requester's MQTT username",
    ),
    TopicSpec(
        f"{CMD_REPLAY}/response/+/#",
        "controller",
        False,
        1,
        "envelope.schema.json",
        "the kept events asked for, byte-identical, in id order, each under the topic it was first published on"
        " (`cmd/replay/response/<username>/state/round`), before the closing document",
    ),
    TopicSpec(
        "cmd/+/response",
        "controller",
        False,
        1,
        "cmd_response.schema.json",
        "response fallback (no client account may read it), `request_id` echoed",
    ),
    TopicSpec(
        "cmd/+/response/#",
        "controller",
        False,
        1,
        "cmd_response.schema.json",
        "answers: `cmd/<role>/response/<account>`, readable by that account only; correlation data echoed",
    ),
)


def spec_for(rel: str) -> TopicSpec | None:
    # Most specific first: "cmd/+/response" must win over nothing else, and cmd/<role> are exact.
    for spec in SPECS:
        if spec.matches(rel):
            return spec
    return None


_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]+\Z")


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
