"""Command intake: MQTT command topics → validated, authorised ``CommandRequest`` → the table's handler →
response.

Two layers of authorisation: the broker ACL decides who may publish on ``cmd/<role>`` at all; for supervisor
and technician actions the controller also requires a valid HMAC credential (``auth.py``). Dealer commands are
only schema-validated. Anything refused (malformed, forged, stale, replayed, not allowed) never reaches the
handler, changes no state, is counted, answered ``{"ok": false, "reason": ...}`` and, for signed roles, raises
a ``command_rejected`` alert (capped so that a flood cannot bury the floor in alerts; every refusal is still
journaled).

Responses: MQTT v5 requests may carry a response topic (must lie under ``<prefix>/cmd/<role>/response``) and
correlation data, echoed; otherwise the response goes to ``cmd/<role>/response`` with the ``request_id``. A
response is sent after the handler returned, i.e. after the state it reports is committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import Authenticator, AuthError
from controller.mqtt.link import InboundMessage, MqttLink
from controller.mqtt.schemas import MessageInvalid, check, parse_json
from controller.mqtt.topics import ROLES, SIGNED_ROLES, cmd_topic, response_topic

log = logging.getLogger(__name__)
REJECTION_ALERT_CAP = (
    20  # open command_rejected alerts beyond which refusals are journaled without a new alert
)


class CommandRejected(Exception):
    """Raised by a handler (or the intake) to refuse a command; ``reason`` goes back to the requester."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class CommandRequest:
    role: str
    user: str
    action: str
    args: dict[str, Any]
    request_id: str


Handler = Callable[[CommandRequest], Awaitable[dict[str, Any]]]


@dataclass(slots=True)
class IntakeCounters:
    received: int = 0
    accepted: int = 0
    rejected: int = 0  # every refusal, including the ones below
    malformed: int = 0  # not JSON / schema-invalid
    unauthorised: int = 0  # forged, stale, replayed, wrong role
    handler_rejected: int = 0
    handler_errors: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


def _request_id_of(doc: Any) -> str | None:
    rid = doc.get("request_id") if isinstance(doc, dict) else None
    return rid if isinstance(rid, str) and 0 < len(rid) <= 64 else None


class CommandIntake:
    def __init__(
        self,
        *,
        handler: Handler,
        auth: Authenticator,
        alerts: AlertManager,
        link: MqttLink | None = None,
        clock: Callable[[], float] = time.time,
        queue_size: int = 100,
    ) -> None:
        self.handler = handler
        self.auth = auth
        self.alerts = alerts
        self.link = link
        self.clock = clock
        self.counters = IntakeCounters()
        self._queue: asyncio.Queue[tuple[str, InboundMessage]] = asyncio.Queue(queue_size)
        self._worker: asyncio.Task[None] | None = None

    # ---- wiring ----
    def start(self) -> None:
        """Subscribe to the command topics (call before ``link.start()``) and start the worker."""
        assert self.link is not None
        for role in ROLES:
            self.link.subscribe(cmd_topic(role), lambda msg, r=role: self._enqueue(r, msg))
        self._worker = asyncio.create_task(self._work(), name="mqtt-command-intake")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker

    def _enqueue(self, role: str, msg: InboundMessage) -> None:
        if msg.retain:
            return  # a retained command would re-run on every subscribe: never act on one
        try:
            self._queue.put_nowait((role, msg))
        except asyncio.QueueFull:
            self.counters.received += 1
            self._count_reject("busy")
            self._respond(role, msg, {"request_id": None, "ok": False, "reason": "controller busy, retry"})

    async def _work(self) -> None:
        while True:
            role, msg = await self._queue.get()
            try:
                response = await self.process(role, msg.payload)
                self._respond(role, msg, response)
            except Exception:  # never let one message end the intake
                log.exception("commands: unexpected failure")

    def _respond(self, role: str, msg: InboundMessage, response: dict[str, Any]) -> None:
        if self.link is None:
            return
        body = json.dumps(response, separators=(",", ":"))
        resp = msg.response_topic
        base = self.link.topics.abs(response_topic(role))
        if resp and (resp == base or resp.startswith(base + "/")) and "+" not in resp and "#" not in resp:
            self.link.publish(resp, body, qos=1, absolute=True, correlation_data=msg.correlation_data)
        else:
            self.link.publish(response_topic(role), body, qos=1, correlation_data=msg.correlation_data)

    # ---- the core: bytes in, response out ----
    def authorise(self, role: str, payload: bytes) -> CommandRequest:
        """Parse, validate and authorise; raise ``CommandRejected`` (counted, alerted for signed roles)."""
        self.counters.received += 1
        doc: Any = None
        try:
            if role not in ROLES:
                raise MessageInvalid(f"unknown command role {role!r}")
            doc = parse_json(payload)
            signed = role in SIGNED_ROLES
            check("cmd_signed.schema.json" if signed else "cmd_dealer.schema.json", doc, f"cmd/{role}")
            if signed:
                self.auth.verify(doc, role, self.clock())
        except MessageInvalid as exc:
            self.counters.malformed += 1
            self._refuse(role, doc, "malformed", str(exc))
        except AuthError as exc:
            self.counters.unauthorised += 1
            self._refuse(role, doc, "unauthorised", str(exc))
        user = doc.get("user", "") if role in SIGNED_ROLES else str(doc.get("user", "dealer"))
        return CommandRequest(role, user, doc["action"], dict(doc["args"]), doc["request_id"])

    def _count_reject(self, key: str) -> None:
        self.counters.rejected += 1
        self.counters.by_reason[key] = self.counters.by_reason.get(key, 0) + 1

    def _refuse(self, role: str, doc: Any, key: str, reason: str) -> None:
        self._count_reject(key)
        log.warning("commands: refused %s command: %s", role, reason)
        if role in SIGNED_ROLES:
            user = doc.get("user") if isinstance(doc, dict) and isinstance(doc.get("user"), str) else None
            details = {"role": role, "user": (user or "")[:32], "request_id": _request_id_of(doc) or ""}
            if self.alerts.book.count("command_rejected") < REJECTION_ALERT_CAP:
                self.alerts.raise_alert("command_rejected", "warning", reason[:300], details=details)
            else:
                with self.alerts.journal.transaction() as tx:
                    tx.append("command_rejected", {**details, "reason": reason[:300]})
        raise CommandRejected(reason)

    async def process(self, role: str, payload: bytes) -> dict[str, Any]:
        """One command message → its response document. Never raises for bad input."""
        try:
            req = self.authorise(role, payload)
        except CommandRejected as exc:
            return {"request_id": _request_id_safe(payload), "ok": False, "reason": exc.reason}
        except Exception as exc:  # e.g. the journal cannot record the nonce (disk full): answered
            self.counters.handler_errors += 1
            self._count_reject("intake_error")
            log.error("commands: %s command not processed: %s", role, exc)
            from controller.table.journal_io import classify, is_write_failure

            why = classify(exc, self.alerts.journal.path.parent).text if is_write_failure(exc) else "logged"
            reason = f"command not processed: the controller cannot record it: {why[:200]}"
            return {"request_id": _request_id_safe(payload), "ok": False, "reason": reason}
        try:
            result = await self.handler(req)
        except CommandRejected as exc:
            self.counters.handler_rejected += 1
            self._count_reject("handler")
            return {"request_id": req.request_id, "ok": False, "reason": exc.reason}
        except Exception:
            self.counters.handler_errors += 1
            self._count_reject("handler_error")
            log.exception("commands: handler failed on %s/%s", role, req.action)
            return {"request_id": req.request_id, "ok": False, "reason": "internal error (logged)"}
        self.counters.accepted += 1
        return {
            "request_id": req.request_id,
            "ok": True,
            "result": result if isinstance(result, dict) else {},
        }


def _request_id_safe(payload: bytes) -> str | None:
    try:
        return _request_id_of(json.loads(payload))
    except Exception:
        return None
