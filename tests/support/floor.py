"""Test helpers for the floor: a throw-away PostgreSQL database and a stand-in table publisher.

``temp_database()`` (tablebench/postgres.py) creates a database on ``$FLOOR_TEST_DSN`` when that names a server,
otherwise on a PostgreSQL server of this test process's own (initdb in a private directory, a free port on
127.0.0.1, stopped and removed when the process exits): nothing needs to be running before the tests.

``StandInTable`` is NOT the table controller: it is a small publisher that implements the event re-fetch
contract (the event re-fetch of docs/reliability.md, served for real by controller/mqtt/replay.py: request
``{"request_id", "from_event_id", "to_event_id"[, "reply_to"]}`` on ``<prefix>/cmd/replay``; answer on the
request's v5 response topic if it lies under ``<prefix>/cmd/replay/response/``, else under
``.../response/<reply_to>`` (MQTT 3.1.1 clients, and whatever crossed a 3.1.1 bridge), else a refusal on the bare
``.../response``; each kept envelope byte-identical in event_id order, QoS 1, not retained, under the answer
address followed by the topic it was first published on, then on the answer address ``{"request_id",
"ok", "from_event_id", "to_event_id", "sent", "missing"}``; the same rate limit per requester as the table, a
refusal ``{"request_id", "ok": false, "reason": "rate limited: ..."}`` beyond it) exactly, so the floor's repair
can be tested with the gaps each case needs.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import paho.mqtt.client as mqtt
import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.properties import Properties

from controller.audit.checkpoint import GENESIS, public_key_hex, sign_checkpoint
from controller.canonical import canonical
from controller.journal.event_chain import EVENT_GENESIS, chained_text
from controller.mqtt.replay import RATE_LIMITED, RATE_PER_KEY, RATE_WINDOW_S
from floor.archive import store
from tablebench.postgres import temp_database as temp_database  # re-exported: the tests' throw-away databases


@contextlib.contextmanager
def migrated_database() -> Iterator[str]:
    """A throw-away floor database with the schema in place (``tablectl floor migrate``)."""
    with temp_database() as d:
        with psycopg.connect(d) as conn:
            store.migrate(conn)
        yield d


FLOOR_USERS = {
    "table-T1": "demo-table-T1",
    "table-T2": "demo-table-T2",
    "table-T3": "demo-table-T3",
    "table-T4": "demo-table-T4",
    "archive": "demo-archive",
    "supervisor1": "demo-supervisor1",
    "monitor": "demo-monitor",
}


def now_ts() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def wait_until(pred: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


class StandInTable:
    """A table publisher implementing the event re-fetch (see the module docstring); not the real controller."""

    def __init__(self, host: str, port: int, site: str, table_id: str, *, user: str | None = None) -> None:
        self.site, self.table_id = site, table_id
        self.prefix = f"casino/{site}/table/{table_id}"
        self.kept: dict[int, bytes] = {}
        self.topics: dict[int, str] = {}  # event id -> the topic it was published on (the journal keeps it)
        self.next_id = 1
        self.head = EVENT_GENESIS  # the published events' hash chain, as the table's journal keeps it
        self.requests: list[dict[str, Any]] = []
        self.refusals: list[str] = []
        self.answered = 0
        self._recent: dict[str, list[float]] = {}
        self.key = Ed25519PrivateKey.generate()
        self._cp_prev = (0, GENESIS)
        self._acked = threading.Condition()
        self._sent = self._acks = 0
        self.client = mqtt.Client(
            CallbackAPIVersion.VERSION2, client_id=f"standin-{table_id}-{uuid.uuid4().hex[:6]}",
            protocol=mqtt.MQTTv5,
        )  # fmt: skip
        user = user or f"table-{table_id}"
        self.client.username_pw_set(user, FLOOR_USERS[user])
        self.client.on_message = self._on_message
        self.client.on_publish = self._on_publish
        ready = threading.Event()
        self.client.on_connect = lambda c, u, f, r, p: (
            c.subscribe(f"{self.prefix}/cmd/replay", qos=1),
            ready.set(),
        )
        self.client.connect(host, port, 15)
        self.client.loop_start()
        assert ready.wait(10), "stand-in table could not connect"

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    @property
    def public_key(self) -> str:
        return public_key_hex(self.key.public_key())

    # ---- publishing ----
    def envelope(self, event_type: str, data: dict[str, Any]) -> tuple[int, bytes]:
        event_id = self.next_id
        self.next_id += 1
        doc = {"data": data, "event_id": event_id, "table": self.table_id, "ts": now_ts(), "type": event_type}
        text, self.head = chained_text(self.head, canonical(doc | {"prev": self.head}))  # as the journal does
        raw = text.encode()
        self.kept[event_id] = raw
        return event_id, raw

    def publish(
        self, rel: str, event_type: str, data: dict[str, Any], *, deliver: bool = True, retain: bool = False
    ) -> int:
        """Keep the envelope (as the table's outbox does) and publish it unless ``deliver`` is False."""
        event_id, raw = self.envelope(event_type, data)
        self.topics[event_id] = rel
        if deliver:
            self._send(f"{self.prefix}/{rel}", raw, retain)
        return event_id

    def publish_head(self) -> None:
        """``link/head``: the newest event id kept (retained, QoS 0), as the table's re-fetch server says it."""
        body = json.dumps({"last_event_id": self.next_id - 1, "ts": now_ts()}).encode()
        self.client.publish(f"{self.prefix}/link/head", body, qos=0, retain=True)

    def publish_raw(self, rel: str, payload: bytes) -> None:
        self._send(f"{self.prefix}/{rel}", payload, False)

    def checkpoint(self, seq: int, *, key: Ed25519PrivateKey | None = None, deliver: bool = True,
                   prev: tuple[int, str] | None = None) -> int:  # fmt: skip
        prev_seq, prev_hash = prev or self._cp_prev
        h = uuid.uuid5(uuid.NAMESPACE_OID, f"{self.prefix}/{seq}").hex * 2
        cp = sign_checkpoint(
            key or self.key, site=self.site, table=self.table_id, seq=seq, hash=h,
            last_event_id=self.next_id - 1, prev_seq=prev_seq, prev_hash=prev_hash, ts=now_ts(),
            event_chain=self.head,
        )  # fmt: skip
        if prev is None:
            self._cp_prev = (seq, h)
        return self.publish("audit/checkpoint", "checkpoint", cp.to_dict(), deliver=deliver, retain=True)

    def _send(self, topic: str, payload: bytes, retain: bool, props: Properties | None = None) -> None:
        # never hold our lock across paho's publish: its thread takes paho's locks, then ours in on_publish
        self.client.publish(topic, payload, qos=1, retain=retain, properties=props)
        with self._acked:
            self._sent += 1

    def _on_publish(self, client, userdata, mid, reason, properties) -> None:
        with self._acked:
            self._acks += 1
            self._acked.notify_all()

    def flush(self, timeout: float = 20.0) -> None:
        with self._acked:
            ok = self._acked.wait_for(lambda: self._acks >= self._sent, timeout)
        assert ok, "broker did not ack everything"

    def forget(self, *event_ids: int) -> None:
        """The retention period passed for these: the table no longer keeps them."""
        for i in event_ids:
            self.kept.pop(i, None)

    # ---- docs/mqtt.md cmd/replay: the re-fetch ----
    def _on_message(self, client, userdata, msg) -> None:
        try:
            req = json.loads(msg.payload)
        except ValueError:
            return
        self.requests.append(req)
        base = f"{self.prefix}/cmd/replay/response"
        props = getattr(msg, "properties", None)
        target = getattr(props, "ResponseTopic", None)
        if not target or not target.startswith(base + "/"):
            reply_to = req.get("reply_to")
            target = f"{base}/{reply_to}" if isinstance(reply_to, str) and reply_to else None
        if target is None:
            self._refuse(base, req, "no_response_topic: set the v5 response topic or reply_to")
            return
        now = time.monotonic()
        recent = [t for t in self._recent.get(target, []) if now - t <= RATE_WINDOW_S]
        self._recent[target] = recent
        if len(recent) >= RATE_PER_KEY:
            self._refuse(
                target, req, f"{RATE_LIMITED}: at most {RATE_PER_KEY} requests per {RATE_WINDOW_S:g} s"
            )
            return
        recent.append(now)
        self.answered += 1
        a, b = req.get("from_event_id"), req.get("to_event_id")
        if not (isinstance(a, int) and isinstance(b, int) and 0 <= b - a < 10_000):
            self._send(target, json.dumps({"request_id": req.get("request_id"), "ok": False,
                                           "reason": "bad range"}).encode(), False)  # fmt: skip
            return
        sent, missing = 0, []
        for i in range(a, b + 1):
            if i in self.kept:
                self._send(f"{target}/{self.topics[i]}", self.kept[i], False)
                sent += 1
            else:
                missing.append(i)
        closing = {"request_id": req["request_id"], "ok": True, "from_event_id": a, "to_event_id": b,
                   "sent": sent, "missing": missing}  # fmt: skip
        self._send(target, json.dumps(closing).encode(), False)

    def _refuse(self, topic: str, req: dict[str, Any], reason: str) -> None:
        self.refusals.append(reason)
        doc = {"request_id": req.get("request_id"), "ok": False, "reason": reason}
        self._send(topic, json.dumps(doc).encode(), False)
