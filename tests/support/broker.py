"""Test helpers around a real mosquitto (bench/tablebench/broker.py) and a paho consumer that records what it sees.

Every message a ``Recorder`` receives under the table prefix is validated against its topic's schema
(``validate_message``); a schema failure is kept in ``invalid`` and fails the test that checks it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.broker import load_users
from controller.mqtt.link import LinkConfig
from controller.mqtt.schemas import MessageInvalid, validate_message
from controller.topics import Topics
from tablebench.broker import Broker

USERS = load_users()  # the shipped demo accounts (firmware_configs/mosquitto/users.example.toml)


def link_config(broker: Broker, user: str = "table-T1", **kw: Any) -> LinkConfig:
    return LinkConfig(host=broker.host, port=broker.port, username=user, password=USERS[user], **kw)


def new_topics(table: str = "T1") -> Topics:
    # A unique site per test keeps retained messages of one test from reaching another on a shared broker.
    return Topics(f"s{uuid.uuid4().hex[:8]}", table)


class Recorder:
    """A blocking paho client (its own network thread) that subscribes to ``filters`` and records messages."""

    def __init__(
        self,
        broker: Broker,
        user: str,
        topics: Topics,
        *,
        filters: tuple[str, ...] = ("#",),
        persistent: bool = False,
        v5: bool = True,
        validate: bool = True,
    ) -> None:
        self.broker, self.topics, self.validate = broker, topics, validate
        self.messages: list[tuple[str, bytes, bool]] = []  # (relative topic, payload, retain flag)
        self.invalid: list[str] = []
        self.pubacks: dict[int, int] = {}  # mid -> reason code
        self._cond = threading.Condition()
        self._connected = threading.Event()
        proto = mqtt.MQTTv5 if v5 else mqtt.MQTTv311
        kw: dict[str, Any] = {} if v5 else {"clean_session": not persistent}
        self.client = mqtt.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=f"rec-{user}-{uuid.uuid4().hex[:6]}",
            protocol=proto,
            **kw,
        )
        self.client.username_pw_set(user, USERS[user])
        self.client.reconnect_delay_set(1, 1)
        self.client.on_message = self._on_message
        self.client.on_connect = self._on_connect
        self.client.on_publish = self._on_publish
        self.client.on_subscribe = self._on_subscribe
        self._subscribing: set[int] = set()  # mids of subscriptions not yet acknowledged (SUBACK)
        self.filters = filters
        self._connect_kw: dict[str, Any] = {}
        if v5:
            self._connect_kw["clean_start"] = not persistent
            if persistent:
                p = Properties(PacketTypes.CONNECT)
                p.SessionExpiryInterval = 3600
                self._connect_kw["properties"] = p

    def start(self) -> Recorder:
        self.client.connect(self.broker.host, self.broker.port, 15, **self._connect_kw)
        self.client.loop_start()
        assert self._connected.wait(10), "recorder could not connect"
        return self

    def stop(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()

    def _on_connect(self, client, userdata, flags, reason, properties) -> None:
        if reason.is_failure:
            return
        with self._cond:
            for f in self.filters:
                _rc, mid = client.subscribe(self.topics.abs(f), qos=1)
                self._subscribing.add(mid)
            if not self.filters:
                self._connected.set()  # nothing to subscribe: ready at the CONNACK
        # ready only once the broker has acknowledged every subscription: a message published between the
        # CONNACK and the SUBACK would be missed (non-retained), and a test would wait for it in vain

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties) -> None:
        with self._cond:
            self._subscribing.discard(mid)
            if not self._subscribing:
                self._connected.set()

    def _on_publish(self, client, userdata, mid, reason, properties) -> None:
        with self._cond:
            self.pubacks[mid] = int(reason.value)
            self._cond.notify_all()

    def _on_message(self, client, userdata, msg) -> None:
        rel = self.topics.rel(msg.topic) or msg.topic
        if self.validate:
            try:
                validate_message(rel, bytes(msg.payload))
            except MessageInvalid as exc:
                self.invalid.append(str(exc))
        with self._cond:
            self.messages.append((rel, bytes(msg.payload), bool(msg.retain)))
            self._cond.notify_all()

    # ---- queries ----
    def wait_for(self, pred: Callable[[list[tuple[str, bytes, bool]]], bool], timeout: float = 20.0) -> None:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not pred(self.messages):
                left = deadline - time.monotonic()
                assert left > 0, f"timed out; saw {[(t, p[:80]) for t, p, _ in self.messages[-10:]]}"
                self._cond.wait(min(left, 0.2))

    async def await_for(
        self, pred: Callable[[list[tuple[str, bytes, bool]]], bool], timeout: float = 20.0
    ) -> None:
        await asyncio.to_thread(self.wait_for, pred, timeout)

    def on(self, rel: str) -> list[Any]:
        """Decoded JSON payloads seen on ``rel`` (status: the text)."""
        with self._cond:
            out = [p for t, p, _ in self.messages if t == rel]
        return [p.decode() if rel == "status" else json.loads(p) for p in out]

    def event_ids(self, prefix: str = "events/") -> list[int]:
        with self._cond:
            return [json.loads(p)["event_id"] for t, p, _ in self.messages if t.startswith(prefix)]

    def publish(self, rel: str, payload: bytes | str, *, props: Properties | None = None) -> int:
        """Publish QoS 1 and wait for the PUBACK; return its reason code (v5: >= 0x80 is a refusal)."""
        info = self.client.publish(self.topics.abs(rel), payload, qos=1, properties=props)
        with self._cond:
            deadline = time.monotonic() + 10
            while info.mid not in self.pubacks:
                assert time.monotonic() < deadline, "no PUBACK"
                self._cond.wait(0.2)
            return self.pubacks[info.mid]


def dedupe_in_order(ids: list[int]) -> list[int]:
    """What a consumer does with QoS 1 redeliveries: keep the first sighting of each event_id."""
    seen: set[int] = set()
    out = []
    for i in ids:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out
