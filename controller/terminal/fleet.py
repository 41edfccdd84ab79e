"""A small multi-table MQTT subscriber for the floor supervisor console: the open alerts of every table
(``casino/<site>/table/+/alerts/open``, retained) and the alert events (for the history of acknowledgements).
Acknowledging goes to that table's ``cmd/supervisor`` as a signed ``ack_alert`` through a per-table
:class:`controller.client.TableClient` opened on first use (same broker account, same TLS)."""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from controller.client import TableClient
from controller.config.endpoint import TlsConfig
from controller.mqtt.loop_client import LoopClient, Message
from controller.mqtt.paho_client import BrokerEndpoint


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
        self._tables: dict[str, TableClient] = {}
        self._seen: set[tuple[str, int]] = set()
        self.mqtt = LoopClient(
            BrokerEndpoint(host, port, username, password, tls),
            f"{username}-alerts-{secrets.token_hex(3)}",
            f"casino/{site}/table/+/alerts/#",
            self._deliver,
        )

    async def connect(self, timeout: float = 10.0) -> None:
        await self.mqtt.connect(timeout)

    async def close(self) -> None:
        for client in self._tables.values():
            with contextlib.suppress(Exception):
                await client.close()
        await self.mqtt.close()

    def _deliver(self, msg: Message) -> None:
        prefix, _, rel = msg.topic.partition("/alerts/")
        try:
            doc = json.loads(msg.payload)
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
            e = self.mqtt.endpoint
            client = TableClient(e.host, e.port, username=e.username, password=e.password, prefix=prefix,
                                 key_dir=self.key_dir, tls=e.tls)  # fmt: skip
            await client.connect()
            self._tables[prefix] = client
        return await client.supervisor(user, pin, "ack_alert", alert_id=alert_id)
