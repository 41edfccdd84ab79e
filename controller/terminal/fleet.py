"""A small multi-table MQTT subscriber for the floor supervisor console: the open alerts of every table
(``casino/<site>/table/+/alerts/open``, retained) and the alert events (for the history of acknowledgements).
Acknowledging goes to that table's ``cmd/supervisor`` as a signed ``ack_alert`` through a per-table
:class:`controller.client.TableClient` opened on first use (same broker account, same TLS)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import paho.mqtt.client as mqtt

from controller.client import TableClient
from controller.mqtt.paho_client import BrokerEndpoint, TlsConfig, connect_failure, new_client


@dataclass(frozen=True)
class TableAlert:
    prefix: str  # casino/<site>/table/<id>
    alert: dict[str, Any]

    @property
    def table(self) -> str:
        return self.prefix.rsplit("/", 1)[-1]

    @property
    def alert_id(self) -> int:
        return int(self.alert["alert_id"])


def _is_alert(alert: Any) -> bool:
    """An alert document the console can list: an object with an integer ``alert_id`` (anything else in it
    is shown as plain text, controller/plain.py)."""
    return (
        isinstance(alert, dict)
        and isinstance(alert.get("alert_id"), int)
        and not isinstance(alert.get("alert_id"), bool)
    )


class FleetAlerts:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        username: str,
        password: str,
        site: str = "+",
        key_dir: str | None = None,
        tls: TlsConfig | None = None,
    ) -> None:
        self.site = site
        self.key_dir = key_dir  # the supervisors' PIN-encrypted key files (default: $TABLECTL_KEY_DIR)
        self.open: dict[str, list[dict[str, Any]]] = {}  # table prefix -> open alerts
        self.history: list[TableAlert] = []  # acknowledged, newest first
        self.on_change: list[Callable[[], None]] = []
        self.endpoint = BrokerEndpoint(host, port, username, password, tls)
        self._tables: dict[str, TableClient] = {}
        self._seen: set[tuple[str, int]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._connected = asyncio.Event()
        self._client = new_client(self.endpoint, f"{username}-alerts-{secrets.token_hex(3)}")
        self.last_error = ""  # why the broker is not reachable, for the banner ("" once connected)
        self._client.on_connect_fail = self._on_connect_fail
        self._client.on_connect = self._on_connect
        self._client.on_disconnect = lambda *a: self._call(self._connected.clear)
        self._client.on_message = self._on_message
        self._client.reconnect_delay_set(0.2, 5)

    @property
    def connected(self) -> bool:
        return self._connected.is_set()

    async def connect(self, timeout: float = 10.0) -> None:
        self._loop = asyncio.get_running_loop()
        self._client.connect_async(self.endpoint.host, self.endpoint.port, keepalive=15)
        self._client.loop_start()
        await asyncio.wait_for(self._connected.wait(), timeout)

    async def close(self) -> None:
        for client in self._tables.values():
            with contextlib.suppress(Exception):
                await client.close()
        with contextlib.suppress(Exception):
            self._client.disconnect()
        await asyncio.to_thread(self._client.loop_stop)

    def _on_connect_fail(self, client: mqtt.Client, userdata: Any) -> None:
        self.last_error = connect_failure()

    def _on_connect(
        self, client: mqtt.Client, userdata: Any, flags: Any, reason_code: Any, props: Any
    ) -> None:
        if reason_code.is_failure:
            self.last_error = f"the broker refused the connection: {reason_code}"
            return
        self.last_error = ""
        client.subscribe(f"casino/{self.site}/table/+/alerts/#", qos=1)
        self._call(self._connected.set)

    def _on_message(self, client: mqtt.Client, userdata: Any, msg: mqtt.MQTTMessage) -> None:
        self._call(self._deliver, msg.topic, bytes(msg.payload))

    def _call(self, fn: Callable[..., Any], *args: Any) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(fn, *args)

    def _deliver(self, topic: str, payload: bytes) -> None:
        prefix, _, rel = topic.partition("/alerts/")
        try:
            doc = json.loads(payload)
            data = doc["data"]
        except (ValueError, KeyError, TypeError, RecursionError):
            return  # not an alert document: ignored, never a crash
        if not isinstance(data, dict):
            return
        if rel == "open" and isinstance(data.get("alerts"), list):
            self.open[prefix] = [a for a in data["alerts"] if _is_alert(a)]
        elif rel == "events" and data.get("action") == "acknowledged" and _is_alert(data.get("alert")):
            alert = data["alert"]
            key = (prefix, int(alert["alert_id"]))
            if key not in self._seen:  # QoS 1 may redeliver
                self._seen.add(key)
                self.history.insert(0, TableAlert(prefix, alert))
        else:
            return
        for cb in list(self.on_change):
            cb()

    def open_alerts(self) -> list[TableAlert]:
        from controller.terminal.view import alert_sort_key

        rows = [TableAlert(p, a) for p, alerts in self.open.items() for a in alerts]
        return sorted(rows, key=lambda r: alert_sort_key(r.alert))

    async def acknowledge(self, prefix: str, user: str, pin: str, alert_id: int) -> dict[str, Any]:
        """Signed ``ack_alert {alert_id}`` to that table's cmd/supervisor; raises CommandFailed if refused."""
        client = self._tables.get(prefix)
        if client is None:
            e = self.endpoint
            client = TableClient(e.host, e.port, username=e.username, password=e.password, prefix=prefix,
                                 key_dir=self.key_dir, tls=e.tls)  # fmt: skip
            await client.connect()
            self._tables[prefix] = client
        return await client.supervisor(user, pin, "ack_alert", alert_id=alert_id)
