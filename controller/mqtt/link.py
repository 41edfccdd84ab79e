"""The MQTT link: one paho-mqtt 2.x client per connection, driven from asyncio.

- The asyncio loop does the socket work (``controller/mqtt/aio.py``: no paho network thread); only the blocking
  TCP/TLS connect runs in a worker thread. Every paho callback hands its arguments on with
  ``loop.call_soon_threadsafe`` and returns, so no listener runs inside paho's read loop.
- A fresh client per connection (``reconnect_on_failure=False``) so that paho keeps no queue of its own across
  a reconnect: the journal outbox is the only queue, and the publisher resends from it in order.
- Reconnect with exponential backoff; last will ``<prefix>/status`` = ``offline`` (retained); ``online``
  (retained) on every (re)connect, then the ``on_connected`` listeners (publisher: retained state, outbox).
- MQTT v5 when the broker offers it, else 3.1.1 (``protocol="auto"``); account and TLS from the config, set by
  controller/mqtt/paho_client.py as for every client; the password is never logged (``repr=False``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import paho.mqtt.client as mqtt

from controller.config.endpoint import PLAIN_PORT, TlsConfig
from controller.mqtt.aio import LoopDriver
from controller.mqtt.paho_client import BrokerEndpoint, new_client, publish_properties
from controller.topics import STATUS, Topics

log = logging.getLogger(__name__)

ONLINE = b"online"
OFFLINE = b"offline"
_UNSUPPORTED_PROTOCOL = (132, 1)  # v5 reason code 0x84; v3 CONNACK rc 1


@dataclass(frozen=True, slots=True)
class LinkConfig:
    host: str = "127.0.0.1"
    port: int = PLAIN_PORT
    username: str = ""
    password: str = field(default="", repr=False)
    client_id: str = ""
    protocol: str = "auto"  # auto | v5 | v311
    keepalive: int = 15
    tls: TlsConfig | None = None
    reconnect_min_s: float = 0.2
    reconnect_max_s: float = 30.0


@dataclass(frozen=True, slots=True)
class InboundMessage:
    topic: str
    rel: str | None  # relative to the table prefix
    payload: bytes
    retain: bool
    response_topic: str | None = None
    correlation_data: bytes | None = None


Listener = Callable[[], Any]
PubackListener = Callable[[int, bool, str], Any]  # (mid, ok, reason)
MessageHandler = Callable[[InboundMessage], Any]


class MqttLink:
    def __init__(self, config: LinkConfig, topics: Topics) -> None:
        self.config = config
        self.topics = topics
        # The configured id (default tablectl-<site>-<id>) is only a prefix: a random suffix, new at every start,
        # makes the controller's id unguessable, so no broker account can connect under it and disconnect the
        # controller (firing its last will). docs/security.md "Commands, accounts and the broker".
        self.client_id = f"{config.client_id or topics.table_id}-{secrets.token_hex(8)}"
        self._protocol = mqtt.MQTTv311 if config.protocol == "v311" else mqtt.MQTTv5
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: mqtt.Client | None = None
        self._connected = False
        self._session_over: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._stopping = False
        self._stop_event = asyncio.Event()
        self._on_connected: list[Listener] = []
        self._on_disconnected: list[Listener] = []
        self._on_puback: list[PubackListener] = []
        # PUBACKs read but not yet handed on. paho's callbacks run in the loop's thread (controller/mqtt/aio.py),
        # inside its read loop: the listeners run after it, in one hand-over per run of PUBACKs.
        self._acks: list[tuple[mqtt.Client, int, int, str]] = []
        self._subs: dict[str, MessageHandler] = {}
        self.connects = 0
        self.last_error = ""

    # ---- listeners (all called in the asyncio loop) ----
    def on_connected(self, cb: Listener) -> None:
        self._on_connected.append(cb)

    def on_disconnected(self, cb: Listener) -> None:
        self._on_disconnected.append(cb)

    def on_puback(self, cb: PubackListener) -> None:
        self._on_puback.append(cb)

    def subscribe(self, rel_filter: str, handler: MessageHandler) -> None:
        """Subscribe (QoS 1) now and after every reconnect; ``handler(msg)`` runs in the asyncio loop."""
        topic = self.topics.abs(rel_filter)
        self._subs[topic] = handler
        if self._client is not None and self._connected:
            self._client.subscribe(topic, qos=1)

    @property
    def connected(self) -> bool:
        return self._connected

    @property
    def is_v5(self) -> bool:
        return self._protocol == mqtt.MQTTv5

    # ---- lifecycle ----
    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopping = False
        self._stop_event = asyncio.Event()
        self._task = asyncio.create_task(self._supervise(), name=f"mqtt-link-{self.client_id}")

    async def wait_connected(self, timeout: float = 10.0) -> None:
        async def _wait() -> None:
            while not self._connected:
                await asyncio.sleep(0.01)

        await asyncio.wait_for(_wait(), timeout)

    async def stop(self) -> None:
        """Clean stop: ``offline`` (retained) published and acknowledged, then DISCONNECT (no last will)."""
        self._stopping = True
        self._stop_event.set()
        client = self._client
        if client is not None and self._connected:
            info = client.publish(self.topics.abs(STATUS), OFFLINE, qos=1, retain=True)
            with contextlib.suppress(TimeoutError, RuntimeError, ValueError):
                await asyncio.wait_for(asyncio.to_thread(info.wait_for_publish, 2.0), 3.0)
            client.disconnect()
        if self._session_over is not None:
            self._session_over.set()
        if self._task is not None:
            await self._task
            self._task = None

    # ---- publishing (from the asyncio loop) ----
    def publish(
        self,
        rel_topic: str,
        payload: bytes | str,
        *,
        qos: int = 1,
        retain: bool = False,
        response_topic: str | None = None,
        correlation_data: bytes | None = None,
        absolute: bool = False,
    ) -> int | None:
        """Hand a message to paho; returns its mid, or None when not connected (nothing is queued then)."""
        client = self._client
        if client is None or not self._connected:
            return None
        props = None
        if self.is_v5 and correlation_data is not None:
            props = publish_properties(correlation=correlation_data)
        topic = rel_topic if absolute else self.topics.abs(rel_topic)
        info = client.publish(topic, payload, qos=qos, retain=retain, properties=props)
        if info.rc != mqtt.MQTT_ERR_SUCCESS:
            return None
        return info.mid

    # ---- the connection supervisor ----
    def _new_client(self) -> mqtt.Client:
        c = self.config
        client = new_client(
            BrokerEndpoint(c.host, c.port, c.username, c.password, c.tls),
            self.client_id,
            protocol=self._protocol,
            reconnect_on_failure=False,  # we make a fresh client instead (see module docstring)
            **({} if self._protocol == mqtt.MQTTv5 else {"clean_session": True}),
        )
        client.will_set(self.topics.abs(STATUS), OFFLINE, qos=1, retain=True)
        client.reconnect_delay_set(
            min_delay=max(1, int(c.reconnect_min_s)), max_delay=max(1, int(c.reconnect_max_s))
        )
        client.max_inflight_messages_set(100)
        client.on_connect = self._cb_connect
        client.on_disconnect = self._cb_disconnect
        client.on_publish = self._cb_publish
        client.on_message = self._cb_message
        return client

    async def _supervise(self) -> None:
        delay = self.config.reconnect_min_s
        while not self._stopping:
            self._session_over = asyncio.Event()
            client = self._new_client()
            self._client = client
            was_connected = False
            try:
                await asyncio.to_thread(
                    client.connect, self.config.host, self.config.port, self.config.keepalive
                )
            except (OSError, ssl.SSLError) as exc:
                self.last_error = f"connect to {self.config.host}:{self.config.port} failed: {exc}"
                log.info("mqtt: %s", self.last_error)
            else:
                driver = LoopDriver(client, asyncio.get_running_loop())
                driver.start()
                connects_before = self.connects
                await self._session_over.wait()
                was_connected = self.connects > connects_before
                driver.stop()
                if self._connected:
                    self._set_disconnected()
            self._client = None
            if self._stopping:
                break
            if was_connected:
                delay = self.config.reconnect_min_s
            with contextlib.suppress(TimeoutError):  # backoff, cut short by stop()
                await asyncio.wait_for(self._stop_event.wait(), delay)
            delay = min(delay * 2, self.config.reconnect_max_s)

    def _set_disconnected(self) -> None:
        self._connected = False
        for cb in list(self._on_disconnected):
            self._safe(cb)

    def _safe(self, cb: Callable[..., Any], *args: Any) -> None:
        try:
            cb(*args)
        except Exception:
            log.exception("mqtt: listener %r failed", cb)

    # ---- paho callbacks: network thread → asyncio loop, nothing else ----
    def _hand_over(self, fn: Callable[..., Any], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # loop closing: nothing left to tell
            loop.call_soon_threadsafe(fn, *args)

    def _cb_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        self._hand_over(self._on_connack, client, int(getattr(reason, "value", reason)), str(reason))

    def _cb_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason: Any, properties: Any
    ) -> None:
        self._hand_over(self._on_session_end, client, str(reason))

    def _cb_publish(self, client: mqtt.Client, userdata: Any, mid: int, reason: Any, properties: Any) -> None:
        # PUBACKs come in runs (one per message in flight): hand a run over in ONE loop wake-up, not one each.
        first = not self._acks
        self._acks.append((client, mid, int(getattr(reason, "value", 0) or 0), str(reason)))
        if first:
            self._hand_over(self._drain_pubacks)

    def _drain_pubacks(self) -> None:
        acks, self._acks = self._acks, []
        for client, mid, code, text in acks:  # in the order the broker sent them
            self._on_pubacked(client, mid, code, text)

    def _cb_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        props = getattr(msg, "properties", None)
        resp = getattr(props, "ResponseTopic", None) if props is not None else None
        corr = getattr(props, "CorrelationData", None) if props is not None else None
        m = InboundMessage(
            msg.topic, self.topics.rel(msg.topic), bytes(msg.payload), bool(msg.retain), resp, corr
        )
        self._hand_over(self._on_inbound, client, m)

    # ---- the same events, now in the asyncio loop ----
    def _on_connack(self, client: mqtt.Client, code: int, text: str) -> None:
        if client is not self._client:
            return
        if code != 0:
            self.last_error = f"broker refused the connection: {text}"
            log.warning("mqtt: %s", self.last_error)
            if (
                self.config.protocol == "auto"
                and self._protocol == mqtt.MQTTv5
                and code in _UNSUPPORTED_PROTOCOL
            ):
                self._protocol = mqtt.MQTTv311  # the broker does not speak v5: fall back to 3.1.1
            assert self._session_over is not None
            self._session_over.set()
            return
        self.last_error = ""
        self.connects += 1
        self._connected = True
        log.info(
            "mqtt: connected to %s:%s as %s (%s)",
            self.config.host,
            self.config.port,
            self.config.username,
            "v5" if self.is_v5 else "v3.1.1",
        )
        for topic in self._subs:
            client.subscribe(topic, qos=1)
        client.publish(self.topics.abs(STATUS), ONLINE, qos=1, retain=True)
        for cb in list(self._on_connected):
            self._safe(cb)

    def _on_session_end(self, client: mqtt.Client, text: str) -> None:
        if client is not self._client:
            return
        if self._connected:
            log.info("mqtt: disconnected (%s)", text)
            self._set_disconnected()
        if self._session_over is not None:
            self._session_over.set()

    def _on_pubacked(self, client: mqtt.Client, mid: int, code: int, text: str) -> None:
        if client is not self._client:
            return  # a PUBACK of a finished session: its mids mean nothing now
        ok = code < 0x80
        for cb in list(self._on_puback):
            self._safe(cb, mid, ok, text)

    def _on_inbound(self, client: mqtt.Client, msg: InboundMessage) -> None:
        for topic, handler in list(self._subs.items()):
            if mqtt.topic_matches_sub(topic, msg.topic):
                self._safe(handler, msg)
