"""Command intake: MQTT command topics → validated, authorised ``CommandRequest`` → the table's handler →
response.

Two layers of authorisation: the broker ACL decides who may publish on ``cmd/<role>`` at all (and only the
controller may read it); for supervisor and technician actions the controller also requires a valid Ed25519
signature of an enrolled user (``auth.py``). Dealer commands are only schema-validated.

Anything refused (malformed, forged, stale, replayed, locked out, not allowed) never reaches the handler,
changes no state, is counted, answered ``{"ok": false, "reason": ...}`` and journaled as a chained
``command_refused`` record with who (user), from where (topic, reply account) and why. A sender of a signed
command that fails authorisation reads ``"not authorised"``, or ``"your key is not enrolled at table T2"`` when
the signature does not verify with a key the table holds for that user and role; the journal keeps the detail. Refusals
of signed roles raise a ``command_rejected`` alert; repeats of the same (role, user, account) aggregate into
that one open alert with a count, and beyond ``REJECTION_ALERT_CAP`` distinct open alerts every further
refusal aggregates into one overflow alert: no refusal goes without an alert. 5 failed signatures in 10
minutes lock the user / source out for 15 minutes (``auth.Lockout``) with a critical ``command_lockout`` alert.

Rate limits (``RateLimits``): a token bucket per source (command topic + reply account), and one for sources
not seen before, checked BEFORE a message is queued; a message over the limit is dropped, answered "rate
limited" without being parsed, counted, and journaled in aggregate (one ``command_dropped`` record per source
per flush, not one row per message), so a flood neither starves real commands nor grows the journal by a row per
message.

Responses go to the MQTT v5 response topic of the request, which must be
``<prefix>/cmd/<role>/response/<account>[/...]`` (the broker ACL lets each account read only its own
``.../response/<its username>``): a wrong account name only sends the answer where the requester cannot read it.
Without a valid response topic the answer goes to ``cmd/<role>/response`` (which no client account may read).
A response is sent after the handler returned, i.e. after the state it reports is committed.

Idempotency: a ``request_id`` already answered for the same role and user gets the recorded answer again and
the handler is not called twice (``command_result`` records, rebuilt from the journal at start-up; kept for
``RESULT_RETENTION`` results).

This module is the intake itself (subscriptions, queue, worker, the order of the checks, the answers); its parts:
``command_request.py`` (the request, ``CommandRejected``, the counters), ``command_payload.py`` (nesting and
encodability checks before the schemas), ``command_rates.py`` (rate limits), ``command_refusals.py`` (journal,
alerts and lockout of a refusal or a drop), ``command_results.py`` (idempotency), ``command_log.py`` (logging).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import re
import time
from collections.abc import Callable
from typing import Any

from controller.actions import ROLES, SIGNED_ROLES
from controller.journal.store import Journal
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import OLD_FORMAT, REFUSED_RECORD, Authenticator, AuthError
from controller.mqtt.command_log import intake_log as log
from controller.mqtt.command_payload import journal_text, request_id_safe, well_formed
from controller.mqtt.command_rates import BUSY, RATE_LIMITED, RateLimits, SourceLimiter
from controller.mqtt.command_refusals import RefusalLog
from controller.mqtt.command_request import CommandRejected, CommandRequest, Handler, IntakeCounters
from controller.mqtt.command_results import ResultBook
from controller.mqtt.link import InboundMessage, MqttLink
from controller.mqtt.schemas import MessageInvalid, check, parse_json
from controller.topics import cmd_topic, response_topic
from drivers.aio import cancel_tasks

__all__ = ["CommandIntake", "CommandRejected", "CommandRequest", "Handler", "RateLimits"]

_ACCOUNT = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")


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
        limits: RateLimits | None = None,
    ) -> None:
        self.handler = handler
        self.auth = auth
        self.alerts = alerts
        self.journal: Journal = alerts.journal
        self.link = link
        self.clock = clock
        self.limits = limits or RateLimits()
        self.counters = IntakeCounters()
        self._queue: asyncio.Queue[tuple[str, InboundMessage]] = asyncio.Queue(queue_size)
        self._worker: asyncio.Task[None] | None = None
        self._limiter = SourceLimiter(self.limits)
        self._refusals = RefusalLog(auth=auth, alerts=alerts, counters=self.counters, clock=clock)
        self._results = ResultBook(self.journal)

    # ---- wiring ----
    def start(self) -> None:
        """Subscribe to the command topics (call before ``link.start()``) and start the worker."""
        assert self.link is not None
        for role in ROLES:
            self.link.subscribe(cmd_topic(role), functools.partial(self._enqueue, role))
        self._worker = asyncio.create_task(self._work(), name="mqtt-command-intake")

    async def stop(self) -> None:
        if self._worker is not None:
            await cancel_tasks([self._worker])
        self.flush_drops()
        self.flush_results()

    def account_of(self, role: str, msg: InboundMessage) -> str:
        """The reply account the request names (``cmd/<role>/response/<account>``), or "-"."""
        if self.link is None or not msg.response_topic:
            return "-"
        base = self.link.topics.abs(response_topic(role)) + "/"
        if not msg.response_topic.startswith(base):
            return "-"
        name = msg.response_topic[len(base) :].split("/", 1)[0]
        return name if _ACCOUNT.match(name) else "-"

    def admit(self, role: str, account: str) -> bool:
        """Rate limits: the source's own bucket (a new source first needs a new-source token)."""
        return self._limiter.admit(role, account)

    def _enqueue(self, role: str, msg: InboundMessage) -> None:
        account = self.account_of(role, msg)
        if msg.retain:
            # a retained command would re-run on every subscribe
            self._refusals.drop(role, account, "retained")
            return
        if not self.admit(role, account):
            self._refusals.drop(role, account, "rate limited")
            self._respond(role, msg, {"request_id": None, "ok": False, "reason": RATE_LIMITED})
            return
        try:
            self._queue.put_nowait((role, msg))
        except asyncio.QueueFull:
            self._refusals.drop(role, account, "queue full")
            self._respond(role, msg, {"request_id": None, "ok": False, "reason": BUSY})

    def flush_drops(self) -> None:
        """Journal the drops since the last flush: one record per source, one aggregated alert."""
        self._refusals.flush_drops()

    def flush_results(self) -> None:
        """Journal the answers given since the last flush (one transaction)."""
        self._results.flush()

    async def _work(self) -> None:
        while True:
            role, msg = await self._queue.get()
            try:
                response = await self.process(role, msg.payload, account=self.account_of(role, msg))
                self._respond(role, msg, response)
            except Exception:  # never let one message end the intake
                log.exception("commands: unexpected failure")

    def _respond(self, role: str, msg: InboundMessage, response: dict[str, Any]) -> None:
        if self.link is None:
            return
        body = json.dumps(response, separators=(",", ":"))
        resp = msg.response_topic
        if self.account_of(role, msg) != "-" and resp and "+" not in resp and "#" not in resp:
            self.link.publish(resp, body, qos=1, absolute=True, correlation_data=msg.correlation_data)
        else:
            self.link.publish(response_topic(role), body, qos=1, correlation_data=msg.correlation_data)

    # ---- the core: bytes in, response out ----
    def authorise(self, role: str, payload: bytes, account: str = "-") -> CommandRequest:
        """Parse, validate and authorise; raise ``CommandRejected`` (counted, journaled, alerted)."""
        self.counters.received += 1
        doc: Any = None
        try:
            if role not in ROLES:
                raise MessageInvalid(f"unknown command role {role!r}")
            doc = parse_json(payload)
            well_formed(doc)
            signed = role in SIGNED_ROLES
            if signed and isinstance(doc, dict) and "sig" in doc and not {"site", "table"} <= doc.keys():
                raise MessageInvalid(OLD_FORMAT)
            check("cmd_signed.schema.json" if signed else "cmd_dealer.schema.json", doc, f"cmd/{role}")
            if signed:
                answered = (role, doc["user"], doc["request_id"]) in self._results
                self.auth.verify(doc, role, self.clock(), account=account, answered=answered)
        except MessageInvalid as exc:
            self.counters.malformed += 1
            self._refusals.refuse(role, doc, account, "malformed", str(exc), str(exc))
        except AuthError as exc:
            self.counters.unauthorised += 1
            told = exc.told(self.journal.table_id)  # "not enrolled at table T2" or "not authorised"
            self._refusals.refuse(role, doc, account, exc.code, exc.reason, told, auth=exc)
        except RecursionError:
            self.counters.malformed += 1
            self._refusals.refuse(
                role, None, account, "malformed", "payload nested too deeply", "payload nested too deeply"
            )
        user = doc.get("user", "") if role in SIGNED_ROLES else str(doc.get("user", "dealer"))
        return CommandRequest(role, user, doc["action"], dict(doc["args"]), doc["request_id"])

    async def process(self, role: str, payload: bytes, account: str = "-") -> dict[str, Any]:
        """One command message → its response document. Never raises."""
        try:
            return await self._process(role, payload, account)
        except Exception:  # the last guard: an answer and a journal row whatever happened
            log.exception("commands: intake failure on %s", role)
            self.counters.count_reject("internal")
            with contextlib.suppress(Exception), self.journal.transaction() as tx:
                tx.append(REFUSED_RECORD, {"role": journal_text(role, 16), "user": "", "account": account,
                                           "code": "internal", "reason": "internal error (logged)"})  # fmt: skip
            return {"request_id": request_id_safe(payload), "ok": False, "reason": "internal error (logged)"}

    async def _process(self, role: str, payload: bytes, account: str) -> dict[str, Any]:
        try:
            req = self.authorise(role, payload, account)
        except CommandRejected as exc:
            return {"request_id": request_id_safe(payload), "ok": False, "reason": exc.reason}
        except Exception as exc:  # e.g. the journal cannot record the nonce (disk full): answered
            self.counters.handler_errors += 1
            self.counters.count_reject("intake_error")
            log.error("commands: %s command not processed: %s", role, exc)
            from controller.table.journal_io import classify, is_write_failure

            why = classify(exc, self.alerts.journal.path.parent).text if is_write_failure(exc) else "logged"
            reason = f"command not processed: the controller cannot record it: {why[:200]}"
            return {"request_id": request_id_safe(payload), "ok": False, "reason": reason}
        recorded = self._results.get((req.role, req.user, req.request_id))
        if recorded is not None:
            self.counters.repeated += 1
            return recorded  # a retry: the recorded answer, the action is not run twice
        try:
            result = await self.handler(req)
        except CommandRejected as exc:
            self.counters.handler_rejected += 1
            self.counters.count_reject("handler")
            response: dict[str, Any] = {"request_id": req.request_id, "ok": False, "reason": exc.reason}
        except Exception:
            self.counters.handler_errors += 1
            self.counters.count_reject("handler_error")
            log.exception("commands: handler failed on %s/%s", role, req.action)
            response = {"request_id": req.request_id, "ok": False, "reason": "internal error (logged)"}
        else:
            self.counters.accepted += 1
            response = {
                "request_id": req.request_id,
                "ok": True,
                "result": result if isinstance(result, dict) else {},
            }
        self._results.record(req, account, response)
        return response
