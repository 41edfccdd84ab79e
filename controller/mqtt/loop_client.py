"""A paho client for the programs around a table (the pit terminal's ``TableClient``: controller/client.py, the
alert console's ``FleetAlerts``: controller/terminal/fleet.py, the bench's clients): paho's network thread
connects, subscribes to one topic filter on every (re)connection and hands each message to the asyncio loop;
nothing blocks in a callback. The table's own link is ``MqttLink`` (controller/mqtt/link.py), driven by the loop.

The paho client, its account and its TLS come from ``new_client`` (controller/mqtt/paho_client.py);
``last_error`` says why the broker is not reachable, for the screens ("" once connected).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any, NamedTuple

import paho.mqtt.client as mqtt
from paho.mqtt.properties import Properties

from controller.mqtt.paho_client import BrokerEndpoint, connect_failure, new_client, quick_reconnect

KEEPALIVE_S = 15


class Message(NamedTuple):
    """One message as the loop gets it; ``correlation`` is the MQTT v5 correlation data (command responses)."""

    topic: str
    payload: bytes
    retain: bool
    correlation: bytes | None


class LoopClient:
    def __init__(
        self,
        endpoint: BrokerEndpoint,
        client_id: str,
        topic_filter: str,
        on_message: Callable[[Message], None],
        **options: Any,
    ) -> None:
        """``on_message`` runs in the asyncio loop; ``options`` go to ``new_client`` (protocol, clean_session)."""
        self.endpoint = endpoint
        self.topic_filter = topic_filter  # subscribed (QoS 1) on every connection
        self.on_message = on_message
        self.last_error = ""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connected = asyncio.Event()
        self.paho = new_client(endpoint, client_id, **options)
        self.paho.on_connect = self._on_connect
        self.paho.on_connect_fail = self._on_connect_fail
        self.paho.on_disconnect = self._on_disconnect
        self.paho.on_message = self._on_message
        quick_reconnect(self.paho)

    # ---- life cycle ----
    async def connect(self, timeout: float = 10.0) -> None:
        """Start paho's network thread and wait for the first connection (paho reconnects on its own)."""
        self._loop = asyncio.get_running_loop()
        self.paho.connect_async(self.endpoint.host, self.endpoint.port, keepalive=KEEPALIVE_S)
        self.paho.loop_start()
        await self.wait_connected(timeout)

    async def wait_connected(self, timeout: float) -> None:
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.paho.disconnect()
        await asyncio.to_thread(self.paho.loop_stop)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    def publish(
        self, topic: str, payload: str | bytes, *, properties: Properties | None = None
    ) -> mqtt.MQTTMessageInfo:
        """QoS 1; paho queues it while the broker is away."""
        return self.paho.publish(topic, payload, qos=1, properties=properties)

    # ---- paho thread -> loop ----
    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        self.last_error = connect_failure()

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any
    ) -> None:
        if reason_code.is_failure:
            self.last_error = f"the broker refused the connection: {reason_code}"
            return
        self.last_error = ""
        client.subscribe(self.topic_filter, qos=1)
        self._call(self._connected.set)

    def _on_disconnect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, properties: Any
    ) -> None:
        self._call(self._connected.clear)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        props = getattr(msg, "properties", None)
        corr = getattr(props, "CorrelationData", None) if props else None
        self._call(self.on_message, Message(msg.topic, bytes(msg.payload), bool(msg.retain), corr))

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` soon in the loop (from paho's thread); nothing once the loop is gone."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)
