"""An MQTT client of one table, for the people and programs around it: the pit terminal, the alert console,
the demo's auto-dealer and the HIL bench.

It keeps the latest retained documents (``state/<name>``, ``status``, ``alerts/open``), queues every event,
deduplicates by ``event_id`` (QoS 1 may redeliver), and sends commands with the request/response pattern of
docs/mqtt.md: dealer commands plain, supervisor/technician commands signed with the user's Ed25519 key (its
key file opened with the PIN). Responses come back on ``cmd/<role>/response/<this account>`` (the only response
topic the broker lets the account read); a request without an answer is re-sent with the same ``request_id``
(and the same signed body), which the controller answers from its record without acting twice.
paho's network thread hands everything to the asyncio loop; nothing blocks in a callback: connecting, the
subscription and the hand-over are controller/mqtt/loop_client.py's, the paho client, its account and its TLS
(``tls``: verified against the CA) controller/mqtt/paho_client.py's.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.config.endpoint import TlsConfig
from controller.mqtt import userkeys
from controller.mqtt.command_rates import BUSY, RATE_LIMITED
from controller.mqtt.loop_client import LoopClient, Message
from controller.mqtt.paho_client import BrokerEndpoint, publish_properties
from controller.mqtt.signed_command import build_command, table_of


class CommandFailed(Exception):
    """The controller answered ``ok: false``; ``reason`` is its explanation (it cites the rule)."""

    def __init__(self, action: str, reason: str, response: dict[str, Any]) -> None:
        super().__init__(f"{action}: {reason}")
        self.reason = reason
        self.response = response


@dataclass
class Event:
    topic: str  # relative to the table prefix
    doc: dict[str, Any]

    @property
    def type(self) -> str:
        return str(self.doc.get("type", ""))

    @property
    def data(self) -> dict[str, Any]:
        return self.doc.get("data") or {}


@dataclass
class TableView:
    """What the client has seen so far."""

    status: str = "unknown"  # online | offline | unknown
    states: dict[str, dict[str, Any]] = field(default_factory=dict)  # "round" -> data
    state_ids: dict[str, int] = field(default_factory=dict)  # "round" -> event_id of the document held
    alerts_open: list[dict[str, Any]] = field(default_factory=list)
    last_event_id: int = 0
    duplicates: int = 0


class TableClient:
    def __init__(
        self,
        host: str,
        port: int,
        *,
        username: str,
        password: str,
        prefix: str,
        client_id: str | None = None,
        keep_events: int = 10_000,
        key_dir: str | Path | None = None,
        tls: TlsConfig | None = None,
        client_options: Mapping[str, Any] | None = None,
        table: tuple[str, str] | None = None,
    ) -> None:
        """``client_options`` go to paho's client (``protocol``, ``clean_session``: the bench's persistent
        monitor, tablebench/bench/recorder.py)."""
        self.prefix = prefix.rstrip("/")
        # (site, table id) a signed command names (signed: another table refuses it); from a default prefix
        self.table = table or table_of(self.prefix)
        self.view = TableView()
        self.events: asyncio.Queue[Event] = asyncio.Queue(maxsize=keep_events)
        self.on_change: list[Callable[[Event | None], None]] = []
        self._seen_ids: set[int] = set()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._reply_base = f"{self.prefix}/cmd/{{role}}/response/{username}"
        self.mqtt = LoopClient(
            BrokerEndpoint(host, port, username, password, tls),
            client_id or f"{username}-{secrets.token_hex(3)}",
            f"{self.prefix}/#",
            self._deliver,
            **(client_options or {}),
        )
        self.key_dir = Path(key_dir) if key_dir is not None else userkeys.default_key_dir()

    # ---- life cycle (controller/mqtt/loop_client.py) ----
    async def connect(self, timeout: float = 10.0) -> None:
        await self.mqtt.connect(timeout)

    async def close(self) -> None:
        await self.mqtt.close()

    @property
    def connected(self) -> bool:
        return self.mqtt.connected

    @property
    def last_error(self) -> str:
        """Why the broker is not reachable, for the screens ("" once connected)."""
        return self.mqtt.last_error

    # ---- loop side ----
    def _deliver(self, msg: Message) -> None:
        topic, payload, corr = msg.topic, msg.payload, msg.correlation
        rel = topic[len(self.prefix) + 1 :] if topic.startswith(self.prefix + "/") else topic
        if "/response" in rel and rel.startswith("cmd/"):
            self._response(payload, corr)
            return
        if rel.startswith("cmd/"):
            return  # other clients' commands
        if rel == "status":
            self.view.status = payload.decode(errors="replace")
            self._changed(None)
            return
        try:
            doc = json.loads(payload)
        except ValueError:
            return
        if not isinstance(doc, dict):
            return
        if rel.startswith("state/"):
            name, event_id = rel[len("state/") :], doc.get("event_id")
            held = self.view.state_ids.get(name, 0)
            if isinstance(event_id, int) and event_id < held:
                self._changed(None)  # an older copy (a retained republish) never overwrites newer state,
                return  # but waiters still look again: what they wait for may have changed meanwhile
            self.view.state_ids[name] = event_id if isinstance(event_id, int) else held
            self.view.states[name] = doc.get("data") or {}
        elif rel == "alerts/open":
            data = doc.get("data")
            alerts = data.get("alerts") if isinstance(data, dict) else None
            self.view.alerts_open = (
                [a for a in alerts if isinstance(a, dict)] if isinstance(alerts, list) else []
            )
        event_id = doc.get("event_id")
        if isinstance(event_id, int) and not rel.startswith("state/") and rel != "alerts/open":
            if event_id in self._seen_ids:
                self.view.duplicates += 1  # QoS 1 redelivery: consumers dedupe by event_id
                return
            self._seen_ids.add(event_id)
            self.view.last_event_id = max(self.view.last_event_id, event_id)
        event = Event(rel, doc)
        if self.events.full():
            self.events.get_nowait()  # keep the newest; the view above is always current
        self.events.put_nowait(event)
        self._changed(event)

    def _changed(self, event: Event | None) -> None:
        for cb in list(self.on_change):
            cb(event)

    def _response(self, payload: bytes, corr: bytes | None) -> None:
        try:
            doc = json.loads(payload)
        except ValueError:
            return
        request_id = (corr.decode(errors="replace") if corr else None) or doc.get("request_id")
        fut = self._pending.pop(str(request_id), None)
        if fut is not None and not fut.done():
            fut.set_result(doc)

    # ---- commands ----
    async def request(
        self, role: str, body: dict[str, Any], timeout: float = 10.0, attempts: int = 3
    ) -> dict[str, Any]:
        """Publish a command and wait for its response (MQTT v5 response topic + correlation data). Without an
        answer it is re-sent unchanged (same ``request_id``) up to ``attempts`` times within ``timeout``: the
        controller answers a repeated request id from its record and never acts twice (docs/mqtt.md)."""
        request_id = str(body["request_id"])
        fut: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[request_id] = fut
        props = publish_properties(
            response_topic=self._reply_base.format(role=role), correlation=request_id.encode()
        )
        payload = json.dumps(body)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        attempt = 0
        try:
            while True:
                self.mqtt.publish(f"{self.prefix}/cmd/{role}", payload, properties=props)
                attempt += 1
                left = deadline - loop.time()
                wait = left if attempt >= attempts else min(left, timeout / attempts)
                try:
                    answer = await asyncio.wait_for(asyncio.shield(fut), max(wait, 0.0))
                except TimeoutError:
                    if loop.time() >= deadline:
                        raise
                    continue
                if (
                    answer.get("ok") is False
                    and answer.get("reason") in (RATE_LIMITED, BUSY)
                    and loop.time() < deadline
                ):
                    # over the controller's rate limit (not parsed, not acted on): the same request again soon
                    fut = loop.create_future()
                    self._pending[request_id] = fut
                    await asyncio.sleep(min(0.25 * attempt, max(deadline - loop.time(), 0.0)))
                    continue
                return answer
        finally:
            self._pending.pop(request_id, None)
            if not fut.done():
                fut.cancel()

    async def dealer(self, action: str, **args: Any) -> dict[str, Any]:
        """A dealer input; raises CommandFailed with the controller's reason when refused."""
        body = {"request_id": f"d-{secrets.token_hex(6)}", "action": action, "args": args}
        return self._checked(action, await self.request("dealer", body))

    async def signed(self, role: str, user: str, pin: str, action: str, **args: Any) -> dict[str, Any]:
        """A supervisor/technician action signed with the user's key (``<key_dir>/<user>.key`` opened with the
        PIN; scrypt takes ~0.5 s, off the loop). A wrong PIN raises ``CommandFailed`` before anything is sent."""
        try:
            key = await asyncio.to_thread(self._private_key, user, pin)
        except userkeys.KeyFileError as exc:
            raise CommandFailed(action, str(exc), {"ok": False, "reason": str(exc)}) from None
        if self.table is None:
            why = f"the table this client commands is not known ({self.prefix}): give site and table"
            raise CommandFailed(action, why, {"ok": False, "reason": why})
        site, table = self.table
        body = build_command(user, pin, role, action, args, site=site, table=table, private_key=key)
        return self._checked(action, await self.request(role, body))

    def _private_key(self, user: str, pin: str) -> Ed25519PrivateKey:
        return userkeys.load_key_file(userkeys.key_path(self.key_dir, user), user, pin)

    async def supervisor(self, user: str, pin: str, action: str, **args: Any) -> dict[str, Any]:
        return await self.signed("supervisor", user, pin, action, **args)

    @staticmethod
    def _checked(action: str, response: dict[str, Any]) -> dict[str, Any]:
        if not response.get("ok"):
            raise CommandFailed(action, str(response.get("reason", "refused")), response)
        return response

    # ---- waiting ----
    async def wait_for(self, predicate: Callable[[TableView], bool], timeout: float = 10.0) -> None:
        """Wait until ``predicate(view)`` holds (checked on every message)."""
        if predicate(self.view):
            return
        done = asyncio.get_running_loop().create_future()

        def check(_: Event | None) -> None:
            if not done.done() and predicate(self.view):
                done.set_result(None)

        self.on_change.append(check)
        try:
            await asyncio.wait_for(done, timeout)
        finally:
            self.on_change.remove(check)

    async def next_event(self, topic: str | None = None, timeout: float = 10.0) -> Event:
        """The next queued event (optionally of one relative topic, e.g. "events/card")."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise TimeoutError(f"no {topic or 'event'} within {timeout} s")
            event = await asyncio.wait_for(self.events.get(), remaining)
            if topic is None or event.topic == topic:
                return event
