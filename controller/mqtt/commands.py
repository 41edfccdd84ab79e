"""Command intake: MQTT command topics → validated, authorised ``CommandRequest`` → the table's handler →
response.

Two layers of authorisation: the broker ACL decides who may publish on ``cmd/<role>`` at all (and only the
controller may read it); for supervisor and technician actions the controller also requires a valid Ed25519
signature of an enrolled user (``auth.py``). Dealer commands are only schema-validated.

Anything refused (malformed, forged, stale, replayed, locked out, not allowed) never reaches the handler,
changes no state, is counted, answered ``{"ok": false, "reason": ...}`` and journaled as a chained
``command_refused`` record with who (user), from where (topic, reply account) and why. A sender of a signed
command that fails authorisation only ever reads ``"not authorised"``; the journal keeps the detail. Refusals
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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from controller.actions import ROLES, SIGNED_ROLES
from controller.mqtt.alerts import AlertManager
from controller.mqtt.auth import NOT_AUTHORISED, REFUSED_RECORD, Authenticator, AuthError
from controller.mqtt.link import InboundMessage, MqttLink
from controller.mqtt.schemas import MessageInvalid, check, parse_json
from controller.mqtt.topics import cmd_topic, response_topic

log = logging.getLogger(__name__)
RATE_LIMITED = "rate limited, retry later"  # answers of messages not parsed nor acted on: safe to send again
BUSY = "controller busy, retry"
REJECTION_ALERT_CAP = 20  # distinct open command_rejected alerts; beyond it refusals aggregate into one
MAX_DEPTH = 16  # nesting of a command document (the schemas need 3)
RESULT_RECORD = "command_result"
DROPPED_RECORD = "command_dropped"
RESULT_RETENTION = 10_000  # answered request ids remembered for idempotent retries
_ACCOUNT = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


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
    unauthorised: int = 0  # forged, stale, replayed, wrong role, locked out
    handler_rejected: int = 0
    handler_errors: int = 0
    dropped: int = 0  # over the rate limit (journaled in aggregate)
    repeated: int = 0  # retries answered from the recorded result
    by_reason: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class TokenBucket:
    rate: float  # tokens per second
    burst: float
    tokens: float = -1.0
    at: float = 0.0

    def take(self, now: float) -> bool:
        if self.tokens < 0:
            self.tokens, self.at = self.burst, now
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


@dataclass(frozen=True, slots=True)
class RateLimits:
    """Per source (command topic + reply account): a pit terminal sends a few per second. A source not seen
    before needs a token of the new-source bucket, so inventing reply-account names does not buy fresh buckets
    faster than ``new_source_rate``, and a known source is never held back by another source's flood."""

    source_rate: float = 20.0
    source_burst: float = 50.0
    new_source_rate: float = 10.0
    new_source_burst: float = 20.0
    max_sources: int = 1024  # buckets kept (least recently used forgotten)


def _text(value: Any, limit: int = 64) -> str:
    """A journal-safe rendering of an untrusted string (lone surrogates escaped, bounded)."""
    s = value if isinstance(value, str) else ""
    return s[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


def _request_id_of(doc: Any) -> str | None:
    rid = doc.get("request_id") if isinstance(doc, dict) else None
    if isinstance(rid, str) and 0 < len(rid) <= 64 and re.fullmatch(r"[A-Za-z0-9_.:-]+", rid):
        return rid
    return None


def _depth(doc: Any) -> int:
    """Nesting depth, iteratively (a deep document must not exhaust the stack here either)."""
    deepest, stack = 0, [(doc, 1)]
    while stack:
        value, d = stack.pop()
        deepest = max(deepest, d)
        if d > MAX_DEPTH:
            return d
        if isinstance(value, dict):
            stack.extend((v, d + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, d + 1) for v in value)
    return deepest


def _well_formed(doc: Any) -> None:
    """Refuse what the schemas and the journal cannot hold: too deep, lone surrogates."""
    if _depth(doc) > MAX_DEPTH:
        raise MessageInvalid(f"payload nested deeper than {MAX_DEPTH} levels")
    try:
        json.dumps(doc, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise MessageInvalid("payload has a lone surrogate (\\ud800-\\udfff) in a string") from None
    except (ValueError, RecursionError):
        raise MessageInvalid("payload cannot be represented") from None


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
        self.journal = alerts.journal
        self.link = link
        self.clock = clock
        self.limits = limits or RateLimits()
        self.counters = IntakeCounters()
        self._queue: asyncio.Queue[tuple[str, InboundMessage]] = asyncio.Queue(queue_size)
        self._worker: asyncio.Task[None] | None = None
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._new_sources = TokenBucket(self.limits.new_source_rate, self.limits.new_source_burst)
        self._drops: dict[tuple[str, str], list[Any]] = {}  # (role, account) -> [count, first, last, reasons]
        self._flush_handle: asyncio.TimerHandle | None = None
        self._results: OrderedDict[tuple[str, str, str], dict[str, Any]] = OrderedDict()
        self._unjournaled: list[dict[str, Any]] = []
        self._results_handle: asyncio.Handle | None = None
        with self.journal.transaction() as tx:
            rows = tx.execute(
                "SELECT data FROM records WHERE kind = ? ORDER BY seq DESC LIMIT ?",
                (RESULT_RECORD, RESULT_RETENTION),
            ).fetchall()
        for (data,) in reversed(rows):
            with contextlib.suppress(ValueError, KeyError, TypeError):
                doc = json.loads(data)
                self._remember((doc["role"], doc["user"], doc["request_id"]), doc["response"])
        self._recover_unanswered()

    def _recover_unanswered(self) -> None:
        """Inputs committed with a request id after the last recorded answer: the controller stopped between
        the commit and the answer (kill -9). Their retry must not act again: it gets an answer saying so."""
        with self.journal.transaction() as tx:
            # Results are journaled just after their answers, so an input may precede the result record of an
            # earlier request; looking back from the 100th-last result covers that overlap.
            marks = tx.execute(
                "SELECT seq FROM records WHERE kind = ? ORDER BY seq DESC LIMIT 100", (RESULT_RECORD,)
            ).fetchall()
            since = marks[-1][0] if len(marks) == 100 else 0
            rows = tx.execute(
                "SELECT data FROM records WHERE kind = 'input' AND seq > ? ORDER BY seq", (since,)
            ).fetchall()
        for (data,) in rows:
            with contextlib.suppress(ValueError, KeyError, TypeError, AttributeError):
                req = json.loads(data)["input"].get("request")
                if not isinstance(req, dict):
                    continue
                key = (str(req["role"]), str(req["user"]), str(req["request_id"]))
                if key not in self._results:
                    self._remember(
                        key,
                        {"request_id": key[2], "ok": True,
                         "result": {"recovered": True, "note": "committed before a restart; its answer was lost"}},
                    )  # fmt: skip

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
        now = time.monotonic()
        lim = self.limits
        key = f"{role}:{account}"
        bucket = self._buckets.get(key)
        if bucket is None:
            if not self._new_sources.take(now):
                return False
            bucket = self._buckets[key] = TokenBucket(lim.source_rate, lim.source_burst)
            while len(self._buckets) > lim.max_sources:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(key)
        return bucket.take(now)

    def _enqueue(self, role: str, msg: InboundMessage) -> None:
        account = self.account_of(role, msg)
        if msg.retain:
            self._drop(role, account, "retained")  # a retained command would re-run on every subscribe
            return
        if not self.admit(role, account):
            self._drop(role, account, "rate limited")
            self._respond(role, msg, {"request_id": None, "ok": False, "reason": RATE_LIMITED})
            return
        try:
            self._queue.put_nowait((role, msg))
        except asyncio.QueueFull:
            self._drop(role, account, "queue full")
            self._respond(role, msg, {"request_id": None, "ok": False, "reason": BUSY})

    def _drop(self, role: str, account: str, why: str) -> None:
        self.counters.received += 1
        self.counters.dropped += 1
        self._count_reject("dropped")
        now = self.clock()
        entry = self._drops.setdefault((role, account), [0, now, now, {}])
        entry[0] += 1
        entry[2] = now
        entry[3][why] = entry[3].get(why, 0) + 1
        if self._flush_handle is None:
            with contextlib.suppress(RuntimeError):
                self._flush_handle = asyncio.get_running_loop().call_later(1.0, self.flush_drops)

    def flush_drops(self) -> None:
        """Journal the drops since the last flush: one record per source, one aggregated alert."""
        self._flush_handle = None
        drops, self._drops = self._drops, {}
        if not drops:
            return
        try:
            with self.journal.transaction() as tx:
                for (role, account), (count, first, last, why) in drops.items():
                    tx.append(
                        DROPPED_RECORD,
                        {"role": role, "account": account, "count": count, "first": first, "last": last,
                         "reasons": why},
                    )  # fmt: skip
                    self._aggregate(
                        tx, "command_flood", "warning",
                        f"{count} commands on cmd/{role} from {account} dropped ({', '.join(sorted(why))})",
                        f"{role}:{account}", {"role": role, "account": account},
                    )  # fmt: skip
        except Exception as exc:
            if not _journal_failure(exc, f"{len(drops)} dropped-command counts"):
                log.exception("commands: could not journal %d dropped-command counts", len(drops))

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
            _well_formed(doc)
            signed = role in SIGNED_ROLES
            check("cmd_signed.schema.json" if signed else "cmd_dealer.schema.json", doc, f"cmd/{role}")
            if signed:
                answered = (role, doc["user"], doc["request_id"]) in self._results
                self.auth.verify(doc, role, self.clock(), account=account, answered=answered)
        except MessageInvalid as exc:
            self.counters.malformed += 1
            self._refuse(role, doc, account, "malformed", str(exc), str(exc))
        except AuthError as exc:
            self.counters.unauthorised += 1
            self._refuse(role, doc, account, exc.code, exc.reason, NOT_AUTHORISED, auth=exc)
        except RecursionError:
            self.counters.malformed += 1
            self._refuse(
                role, None, account, "malformed", "payload nested too deeply", "payload nested too deeply"
            )
        user = doc.get("user", "") if role in SIGNED_ROLES else str(doc.get("user", "dealer"))
        return CommandRequest(role, user, doc["action"], dict(doc["args"]), doc["request_id"])

    def _count_reject(self, key: str) -> None:
        self.counters.rejected += 1
        self.counters.by_reason[key] = self.counters.by_reason.get(key, 0) + 1

    def _refuse(
        self,
        role: str,
        doc: Any,
        account: str,
        code: str,
        detail: str,
        public: str,
        *,
        auth: AuthError | None = None,
    ) -> None:
        self._count_reject(code)
        detail = _text(detail, 300)  # it may quote the payload: lone surrogates escaped before the journal
        user = _text(doc.get("user"), 32) if isinstance(doc, dict) else ""
        log.warning(
            "commands: refused %s command (user %r, account %s): %s", role, user, account, detail[:200]
        )
        now = self.clock()
        failure = bool(auth and auth.signature_failure)
        keys = self.auth.lockout_keys(user or None, role, account) if failure else []
        record = {
            "role": _text(role, 16), "user": user, "account": account, "code": code,
            "reason": _text(detail, 300), "request_id": _request_id_of(doc) or "",
            "action": _text(doc.get("action") if isinstance(doc, dict) else None, 32),
            "signature_failure": failure, "lockout_keys": keys,
        }  # fmt: skip
        try:
            with self.journal.transaction() as tx:
                tx.append(REFUSED_RECORD, record)
                if role in SIGNED_ROLES:
                    self._alert_refusal(tx, role, user, account, detail)
                locks = self.auth.failed(user or None, role, account, now) if failure else []
                if code == "locked":
                    keys = self.auth.lockout_keys(user or None, role, account)
                    locks = [next((k for k in keys if k in detail), detail)]
                for key in locks:
                    self._aggregate(
                        tx, "command_lockout", "critical", f"{key}: {LOCKOUT_TEXT}", key,
                        {"role": role, "account": account},
                    )  # fmt: skip
        except Exception as exc:  # the answer still goes out; the failure is logged
            if not _journal_failure(exc, "a refusal"):
                log.exception("commands: could not journal a refusal")
        raise CommandRejected(public)

    def _alert_refusal(self, tx: Any, role: str, user: str, account: str, detail: str) -> None:
        self._aggregate(
            tx, "command_rejected", "warning", detail[:300], f"{role}:{user or '-'}:{account}",
            {"role": role, "user": user, "account": account},
        )  # fmt: skip

    def _aggregate(
        self, tx: Any, kind: str, severity: str, reason: str, key: str, details: dict[str, Any]
    ) -> None:
        """Raise ``kind`` for ``key`` or count one more in its open alert; beyond ``REJECTION_ALERT_CAP``
        distinct open alerts of the kind, count in one overflow alert (key "*"): invented user or account
        names can neither silence the alerts nor grow the retained alerts/open document without bound."""
        book = self.alerts._current(tx)
        if book.find(kind, key) is None and book.count(kind) >= REJECTION_ALERT_CAP:
            key = "*"
        self.alerts.raise_or_repeat(kind, severity, reason, key=key, details=details, tx=tx)

    def _remember(self, key: tuple[str, str, str], response: dict[str, Any]) -> None:
        self._results[key] = response
        self._results.move_to_end(key)
        while len(self._results) > RESULT_RETENTION:
            self._results.popitem(last=False)

    def _record_result(self, req: CommandRequest, account: str, response: dict[str, Any]) -> None:
        """Remember the answer and journal it (the dealer's ``user`` field and handler refusals included). The
        record is written just after the answer goes out, several in one transaction, so it costs the answer no
        extra disk sync; if the controller dies before, the input record (which carries the request id, written
        with the action) still makes the retry answer without acting (``_recover_unanswered``)."""
        self._remember((req.role, req.user, req.request_id), response)
        self._unjournaled.append(
            {"role": req.role, "user": _text(req.user, 64), "account": account, "action": req.action,
             "request_id": req.request_id, "response": response}
        )  # fmt: skip
        if self._results_handle is None:
            try:
                self._results_handle = asyncio.get_running_loop().call_soon(self.flush_results)
            except RuntimeError:
                self.flush_results()

    def flush_results(self) -> None:
        """Journal the answers given since the last flush (one transaction)."""
        self._results_handle = None
        pending, self._unjournaled = self._unjournaled, []
        if not pending:
            return
        try:
            with self.journal.transaction() as tx:
                for rec in pending:
                    tx.append(RESULT_RECORD, rec)
        except Exception as exc:
            if not _journal_failure(exc, f"{len(pending)} command results"):
                log.exception("commands: could not journal %d command results", len(pending))
            # kept for the next flush (the journal_io fault is up meanwhile): nothing is lost, memory bounded
            self._unjournaled = (pending + self._unjournaled)[-RESULT_RETENTION:]

    async def process(self, role: str, payload: bytes, account: str = "-") -> dict[str, Any]:
        """One command message → its response document. Never raises."""
        try:
            return await self._process(role, payload, account)
        except Exception:  # the last guard: an answer and a journal row whatever happened
            log.exception("commands: intake failure on %s", role)
            self._count_reject("internal")
            with contextlib.suppress(Exception), self.journal.transaction() as tx:
                tx.append(REFUSED_RECORD, {"role": _text(role, 16), "user": "", "account": account,
                                           "code": "internal", "reason": "internal error (logged)"})  # fmt: skip
            return {"request_id": _request_id_safe(payload), "ok": False, "reason": "internal error (logged)"}

    async def _process(self, role: str, payload: bytes, account: str) -> dict[str, Any]:
        try:
            req = self.authorise(role, payload, account)
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
        recorded = self._results.get((req.role, req.user, req.request_id))
        if recorded is not None:
            self.counters.repeated += 1
            return recorded  # a retry: the recorded answer, the action is not run twice
        try:
            result = await self.handler(req)
        except CommandRejected as exc:
            self.counters.handler_rejected += 1
            self._count_reject("handler")
            response: dict[str, Any] = {"request_id": req.request_id, "ok": False, "reason": exc.reason}
        except Exception:
            self.counters.handler_errors += 1
            self._count_reject("handler_error")
            log.exception("commands: handler failed on %s/%s", role, req.action)
            response = {"request_id": req.request_id, "ok": False, "reason": "internal error (logged)"}
        else:
            self.counters.accepted += 1
            response = {
                "request_id": req.request_id,
                "ok": True,
                "result": result if isinstance(result, dict) else {},
            }
        self._record_result(req, account, response)
        return response


LOCKOUT_TEXT = "too many failed signatures: refused for 15 minutes (issue 13)"


def _request_id_safe(payload: bytes) -> str | None:
    try:
        return _request_id_of(json.loads(payload))
    except Exception:
        return None


def _journal_failure(exc: BaseException, what: str) -> bool:
    """A disk failure (full, read-only) is the service's ``journal_io`` fault, raised by the journal's failure
    listener: one line here, no traceback. False for anything else (a bug: the caller logs the traceback)."""
    from controller.table.journal_io import is_write_failure

    if not is_write_failure(exc):
        return False
    log.error("commands: could not journal %s: %s", what, exc)
    return True
