"""The bench's MQTT consumer: a TableClient that validates every message against its schema and records
every event id it receives, with a persistent session so that nothing published while it was away is lost.

The persistent session is MQTT 3.1.1 with ``clean_session=False``, not v5 with a session expiry interval:
mosquitto 2.0.11 (Debian 12) saves v5 sessions on a clean stop but does not restore them when it starts
again, so a v5 consumer missed every event the controller resent before that consumer had subscribed again
(docs/reliability.md, "Consumers across a broker restart"). The monitor sends no commands, so it needs no v5
property.

`validate_message` (controller/mqtt/schemas.py) runs on the raw payload of every message the bench sees;
a message that fails is kept in ``invalid`` (topic, error) and the tests assert the list is empty.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt

from controller.client import TableClient
from controller.mqtt.loop_client import Message
from controller.mqtt.schemas import MessageInvalid, validate_message


@dataclass
class Received:
    """Every message in arrival order: (event_id or None, relative topic, retained flag)."""

    log: list[tuple[int | None, str, bool]] = field(default_factory=list)
    invalid: list[tuple[str, str]] = field(default_factory=list)
    state_gen: dict[str, int] = field(default_factory=dict)  # per state topic: messages received so far
    responses: int = 0
    max_event_id: int = 0
    contiguous: int = 0  # every event id <= this one has arrived (the barrier waits on it)
    seen: set[int] = field(default_factory=set)
    state_ids: dict[str, int] = field(default_factory=dict)  # newest event id applied per state topic
    stale_states: int = 0  # older state documents that arrived after newer ones (docs/reliability.md F1)
    carried: set[str] = field(default_factory=set)  # rounds whose cards stayed out (PT-2001 r.61)
    written_off: list[int] = field(default_factory=list)  # ids a broker crash destroyed (never received)
    refetched: list[int] = field(default_factory=list)  # ids first received through cmd/replay (re-fetch)
    replay_done: dict[str, dict[str, Any]] = field(default_factory=dict)  # request_id -> closing document


class BenchClient(TableClient):
    def __init__(self, *args: Any, persistent: bool = False, **kwargs: Any) -> None:
        if persistent:
            kwargs.setdefault("client_id", f"bench-{secrets.token_hex(4)}")
            kwargs["client_options"] = {"protocol": mqtt.MQTTv311, "clean_session": False}
        self.received = Received()
        super().__init__(*args, **kwargs)
        self.persistent = persistent

    def _deliver(self, msg: Message) -> None:
        """Every message recorded (and validated), then the client's view of it (controller/client.py)."""
        if self._record(msg):
            super()._deliver(msg)

    def _record(self, msg: Message) -> bool:
        """False: an older state document, kept out of the view."""
        topic, payload, retain = msg.topic, msg.payload, msg.retain
        rel = topic[len(self.prefix) + 1 :] if topic.startswith(self.prefix + "/") else topic
        try:
            validate_message(rel, payload)
        except MessageInvalid as exc:
            self.received.invalid.append((rel, str(exc)))
        event_id: int | None = None
        if rel.startswith("cmd/replay/response/"):
            self._replay_answer(payload)
        elif rel.startswith("cmd/"):
            self.received.responses += "/response" in rel
        elif rel != "status":
            doc: Any = None
            try:
                doc = json.loads(payload)
                event_id = doc.get("event_id") if isinstance(doc, dict) else None
            except ValueError:
                pass
            self.received.log.append((event_id, rel, retain))
            if isinstance(event_id, int):
                r = self.received
                r.max_event_id = max(r.max_event_id, event_id)
                r.seen.add(event_id)
                while r.contiguous + 1 in r.seen:
                    r.contiguous += 1
                if rel.startswith("state/"):
                    if event_id < r.state_ids.get(rel, 0):
                        r.stale_states += 1
                        self._changed(None)  # the view stays, but waiters (e.g. contiguous ids) look again
                        return False  # never let an older state document overwrite a newer one in the view
                    r.state_ids[rel] = event_id
            if rel == "events/shoe" and isinstance(doc, dict):
                data = doc.get("data") or {}
                if data.get("procedure") == "cards_carried":
                    self.received.carried.update(str(r) for r in data.get("rounds") or [])
            if rel.startswith("state/"):
                name = rel[len("state/") :]
                self.received.state_gen[name] = self.received.state_gen.get(name, 0) + 1
        return True

    def _replay_answer(self, payload: bytes) -> None:
        """An event sent again on request (re-fetch: the envelope as first published, no request_id)
        or the closing document of a request (with request_id)."""
        try:
            doc = json.loads(payload)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        r = self.received
        if "request_id" in doc:
            r.replay_done[str(doc["request_id"])] = doc
        elif isinstance(doc.get("event_id"), int) and "type" in doc:
            event_id = int(doc["event_id"])
            if event_id not in r.seen:
                r.refetched.append(event_id)
            r.log.append((event_id, "cmd/replay/response", False))
            r.seen.add(event_id)
            while r.contiguous + 1 in r.seen:
                r.contiguous += 1
        self._changed(None)

    async def refetch(self, ids: list[int], timeout: float = 10.0) -> list[int]:
        """Ask the table to send these event ids again (``cmd/replay``, docs/reliability.md) and wait for the
        answers; returns the ids still missing. A table (or an ACL) that does not serve replays: all of them."""
        missing = sorted(set(ids))
        if not missing:
            return []
        pending: list[str] = []
        lo = missing[0]
        while lo <= missing[-1]:
            hi = min(missing[-1], lo + 9_999)
            rid = f"observer-{secrets.token_hex(6)}"
            # MQTT 3.1.1 (the persistent session): the answer's account is named in the request
            body = {
                "request_id": rid,
                "from_event_id": lo,
                "to_event_id": hi,
                "reply_to": self.mqtt.endpoint.username,
            }
            self.mqtt.publish(f"{self.prefix}/cmd/replay", json.dumps(body))
            pending.append(rid)
            lo = hi + 1
        with contextlib.suppress(TimeoutError):
            await self.wait_for(lambda v: all(p in self.received.replay_done for p in pending), timeout)
        return [i for i in missing if i not in self.received.seen]

    def gen(self, state: str) -> int:
        return self.received.state_gen.get(state, 0)

    def first_seen_ids(self) -> list[int]:
        """Event ids in the order they first arrived (the consumer's view after dedupe)."""
        seen: set[int] = set()
        out: list[int] = []
        for event_id, _rel, _retain in self.received.log:
            if isinstance(event_id, int) and event_id not in seen:
                seen.add(event_id)
                out.append(event_id)
        return out
