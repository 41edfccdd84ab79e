"""Event re-fetch (``cmd/replay``, docs/reliability.md): a consumer that finds a gap in the event ids asks for the
range again.

Request (``schemas/mqtt/cmd_replay.schema.json``, not signed: it is read-only)::

    {"request_id": "<1-64 chars>", "from_event_id": A, "to_event_id": B}      # A <= B, B - A < 10,000

The answer goes to the request's MQTT v5 response topic, which must be ``<prefix>/cmd/replay/response/<one
level>`` (the requester's username: the broker ACL lets an account read only its own, so naming another account
only sends the answer where the requester cannot read it). Without a usable response topic the refusal goes to
``cmd/replay/response``. First each kept event with an id in [A, B], byte-identical to the envelope as first
published, in id order, QoS 1, not retained, each on ``<response topic>/<the topic it was first published on>``
(``.../cmd/replay/response/archive/state/round``: the journal keeps the topic, the envelope does not name it, and a
state document's topic cannot be told from its type; the ACL's ``response/<account>/#`` and the bridge's
``cmd/+/response/#`` carry it); then, on the response topic itself, one closing document ``{"request_id", "ok": true,
"from_event_id", "to_event_id", "sent", "missing": [ids not kept or never existing]}`` or ``{"request_id",
"ok": false, "reason"}``.

Every kept event is checked against the journal's chain before it is sent (``Journal.is_chained``): a row edited
or inserted in the file is never sent (it is reported as missing, counted, and ``on_forged`` is told).
Bounds: payload <= 1 KiB, one range < 10,000 ids, per requester ``RATE_PER_KEY`` requests per ``RATE_WINDOW_S``
and ``RATE_GLOBAL`` overall, at most ``QUEUE`` requests waiting (then "busy"). Every refusal is answered with the
reason; refusals are journaled (``replay_refused``: requester, request id, reason), the rate-limited ones once per
window per requester with a count, so a flood cannot fill the journal.

The head: every ``HEAD_EVERY_S`` (and at once after each connect) the server publishes ``link/head``
``{"last_event_id": N, "ts"}`` (retained, QoS 0, not journaled: no event, no id of its own), N the newest event id
the journal holds: every id up to N can be asked for here. A consumer that lost the end of the stream (the table's
last event dropped by a broker, the table idle since) learns of it from the head within ``HEAD_EVERY_S`` and asks.

Retention: the journal keeps every published envelope (``events`` table) for ``retention_days`` after it was
published; ``prune`` (hourly, and at start) forgets older ones that left the outbox. The chain keeps their digests,
so it stays verifiable; a pruned id is answered as missing. Once ``tablectl journal prune`` has deleted the records
that chained them (controller/ops/prune.py), the closing document also says so: ``"pruned": {"up_to_event_id":
N, "see": ...}`` when a missing id is at or below N (the events are only in the journal archive and the floor's).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from controller.journal.store import Journal, iso_ts
from controller.mqtt.link import InboundMessage, MqttLink
from controller.mqtt.schemas import MessageInvalid, check, parse_json
from controller.topics import CMD_REPLAY, EVENT_HEAD
from drivers.aio import cancel_tasks

log = logging.getLogger(__name__)

MAX_RANGE = 10_000  # B - A < MAX_RANGE
MAX_PAYLOAD = 1024
RATE_WINDOW_S = 10.0
RATE_PER_KEY = 5
RATE_GLOBAL = 30
QUEUE = 8
# Reason prefixes of the refusals a requester should retry after RATE_WINDOW_S (the floor archive paces to
# RATE_PER_KEY / RATE_WINDOW_S and backs off on these: floor/archive/repair.py); every other refusal is final.
RATE_LIMITED = "rate limited"
BUSY = "busy"
CHUNK = 200  # events handed to paho between two yields to the loop
PRUNE_EVERY_S = 3600.0
HEAD_EVERY_S = 10.0  # link/head: the newest event id, this often (a lost tail is found within it)
RESPONSE = f"{CMD_REPLAY}/response"
_SEGMENT = re.compile(r"^[A-Za-z0-9_.@-]{1,64}\Z")
PRUNED_SEE = (
    "pruned from the table's journal: see the journal archive (tablectl journal archive) or the floor's"
)


@dataclass(slots=True)
class ReplayCounters:
    received: int = 0
    served: int = 0
    sent: int = 0  # events re-sent
    refused: int = 0
    rate_limited: int = 0
    not_chained: int = 0  # kept rows the chain does not record: never sent
    pruned: int = 0
    by_reason: dict[str, int] = field(default_factory=dict)


class ReplayRefused(Exception):
    def __init__(self, key: str, reason: str) -> None:
        super().__init__(reason)
        self.key = key
        self.reason = reason


class ReplayServer:
    def __init__(
        self,
        journal: Journal,
        link: MqttLink,
        *,
        retention_days: int = 30,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        head_every: float = HEAD_EVERY_S,
    ) -> None:
        self.journal = journal
        self.head_every = head_every
        self.link = link
        self.retention_days = retention_days
        self.clock = clock
        self.monotonic = monotonic
        self.counters = ReplayCounters()
        self.on_forged: Callable[[int, str], None] | None = None  # (event_id, reason)
        self._queue: asyncio.Queue[InboundMessage] = asyncio.Queue(QUEUE)
        self._recent: dict[str, deque[float]] = {}
        self._all: deque[float] = deque()
        self._limited: dict[
            str, tuple[float, int]
        ] = {}  # requester -> (window start, refusals not journaled)
        self._tasks: list[asyncio.Task[None]] = []

    # ---- wiring ----
    def start(self) -> None:
        """Subscribe (call before ``link.start()``), prune once, start the worker and the hourly prune."""
        self.link.subscribe(CMD_REPLAY, self._enqueue)
        self.prune()
        self._tasks.append(asyncio.create_task(self._work(), name="replay-server"))
        self._tasks.append(asyncio.create_task(self._prune_loop(), name="replay-prune"))
        self._tasks.append(asyncio.create_task(self._head_loop(), name="replay-head"))
        self.link.on_connected(self.publish_head)

    async def stop(self) -> None:
        await cancel_tasks(self._tasks)
        self._tasks.clear()

    def prune(self) -> int:
        try:
            n = self.journal.prune_events(self.clock() - self.retention_days * 86400)
        except Exception as exc:  # a busy or failing journal: try again at the next round
            log.warning("replay: pruning kept events failed: %s", exc)
            return 0
        self.counters.pruned += n
        return n

    async def _prune_loop(self) -> None:
        while True:
            await asyncio.sleep(PRUNE_EVERY_S)
            self.prune()

    def publish_head(self) -> None:
        """``link/head``: the newest event id the journal holds (nothing when the link is down: the next one)."""
        body = json.dumps({"last_event_id": self.journal.last_event_id, "ts": iso_ts(self.clock())},
                          separators=(",", ":"))  # fmt: skip
        self.link.publish(EVENT_HEAD, body, qos=0, retain=True)

    async def _head_loop(self) -> None:
        while True:
            await asyncio.sleep(self.head_every)
            self.publish_head()

    # ---- intake ----
    def _enqueue(self, msg: InboundMessage) -> None:
        if msg.retain:
            return  # a retained request would be served again at every subscribe
        self.counters.received += 1
        requester, topic = self._answer_topic(msg)
        try:
            self._rate_check(requester)
        except ReplayRefused as exc:
            self._refuse(requester, topic, msg, None, exc)
            return
        try:
            self._queue.put_nowait(msg)
        except asyncio.QueueFull:
            self._refuse(
                requester, topic, msg, None, ReplayRefused("busy", f"{BUSY}: too many replay requests, retry")
            )

    def _answer_topic(self, msg: InboundMessage) -> tuple[str, str | None]:
        """(requester as named by the response topic, the absolute topic to answer on or None: the fallback)."""
        base = self.link.topics.abs(RESPONSE) + "/"
        resp = msg.response_topic
        if resp and resp.startswith(base) and _SEGMENT.match(resp[len(base) :]):
            return resp[len(base) :], resp
        name = _reply_to(msg.payload)  # an MQTT 3.1.1 client names its account in the request
        if name is not None:
            return name, base + name
        return "?", None

    def _rate_check(self, requester: str) -> None:
        now = self.monotonic()
        for q in (self._all, self._recent.setdefault(requester, deque())):
            while q and now - q[0] > RATE_WINDOW_S:
                q.popleft()
        if len(self._recent[requester]) >= RATE_PER_KEY or len(self._all) >= RATE_GLOBAL:
            self.counters.rate_limited += 1
            raise ReplayRefused(
                "rate_limited", f"{RATE_LIMITED}: at most {RATE_PER_KEY} requests per {RATE_WINDOW_S:g} s"
            )
        self._recent[requester].append(now)
        self._all.append(now)
        if len(self._recent) > 1000:  # bounded memory under a flood of invented names
            for key in [k for k, q in self._recent.items() if not q][:500]:
                del self._recent[key]

    async def _work(self) -> None:
        while True:
            msg = await self._queue.get()
            requester, topic = self._answer_topic(msg)
            try:
                await self.serve(msg, requester, topic)
            except Exception:  # never let one request end the server
                log.exception("replay: unexpected failure")

    # ---- one request ----
    def parse(self, payload: bytes) -> tuple[str, int, int]:
        if len(payload) > MAX_PAYLOAD:
            raise ReplayRefused("too_large", f"request larger than {MAX_PAYLOAD} bytes")
        try:
            doc = parse_json(payload)
            check("cmd_replay.schema.json", doc, CMD_REPLAY)
        except MessageInvalid as exc:
            raise ReplayRefused("malformed", str(exc)[:300]) from None
        a, b = doc["from_event_id"], doc["to_event_id"]
        if b < a:
            raise ReplayRefused("range", "to_event_id is below from_event_id")
        if b - a >= MAX_RANGE:
            raise ReplayRefused("range", f"range too large: at most {MAX_RANGE} ids per request")
        return doc["request_id"], a, b

    async def serve(self, msg: InboundMessage, requester: str, topic: str | None) -> None:
        try:
            if topic is None:
                raise ReplayRefused(
                    "no_response_topic",
                    "set the MQTT v5 response topic to <prefix>/cmd/replay/response/<your username>,"
                    " or (MQTT 3.1.1) reply_to: <your username> in the request",
                )
            request_id, a, b = self.parse(msg.payload)
        except ReplayRefused as exc:
            self._refuse(requester, topic, msg, None, exc)
            return
        kept = {row.event_id: row for row in self.journal.kept_events(a, b)}
        sent, missing = 0, []
        for n, event_id in enumerate(range(a, b + 1)):
            row = kept.get(event_id)
            if row is None:
                missing.append(event_id)
                continue
            if not self.journal.is_chained(row.event_id, row.topic, row.payload, row.qos, row.retain):
                self.counters.not_chained += 1
                missing.append(event_id)
                reason = f"kept event {event_id} on {row.topic!r} is not recorded in the journal's chain"
                log.critical("replay: refusing to send: %s", reason)
                if self.on_forged is not None:
                    self.on_forged(event_id, reason)
                continue
            if self.link.publish(f"{topic}/{row.topic}", row.payload, qos=1, absolute=True) is None:
                return  # the link went down: the requester asks again
            sent += 1
            if n % CHUNK == CHUNK - 1:
                await asyncio.sleep(0)
        self.counters.served += 1
        self.counters.sent += sent
        closing = {"request_id": request_id, "ok": True, "from_event_id": a, "to_event_id": b}
        closing |= {"sent": sent, "missing": missing}
        pruned_to = self._pruned_up_to()
        if missing and missing[0] <= pruned_to:
            closing["pruned"] = {"up_to_event_id": pruned_to, "see": PRUNED_SEE}
        self._publish(topic, closing, msg)
        log.info("replay: %s asked %d-%d: %d sent, %d missing", requester, a, b, sent, len(missing))

    def _pruned_up_to(self) -> int:
        """The last event id whose chaining record ``tablectl journal prune`` deleted (0: never pruned)."""
        try:
            info = self.journal.last_prune()
            return int(info["last_event_id_pruned"]) if info else 0
        except (ValueError, KeyError, TypeError):
            return 0

    # ---- refusals: answered, counted, journaled ----
    def _refuse(
        self,
        requester: str,
        topic: str | None,
        msg: InboundMessage,
        request_id: str | None,
        exc: ReplayRefused,
    ) -> None:
        self.counters.refused += 1
        self.counters.by_reason[exc.key] = self.counters.by_reason.get(exc.key, 0) + 1
        rid = request_id or _request_id_safe(msg.payload)
        self._publish(topic, {"request_id": rid, "ok": False, "reason": exc.reason}, msg)
        self._journal_refusal(requester, rid, exc)

    def _journal_refusal(self, requester: str, request_id: str | None, exc: ReplayRefused) -> None:
        data: dict[str, Any] = {
            "requester": requester[:64],
            "request_id": request_id or "",
            "reason": exc.reason,
        }
        if exc.key in ("rate_limited", "busy"):
            start, held = self._limited.get(requester, (0.0, 0))
            now = self.monotonic()
            if now - start < RATE_WINDOW_S:
                self._limited[requester] = (start, held + 1)
                return  # counted; journaled with the next window's first refusal
            self._limited[requester] = (now, 0)
            data["count"] = held + 1
        try:
            with self.journal.transaction() as tx:
                tx.append("replay_refused", data)
        except Exception as exc2:  # the journal's own fault is raised elsewhere; never fail the answer
            log.warning("replay: refusal not journaled: %s", exc2)

    def _publish(self, topic: str | None, doc: dict[str, Any], msg: InboundMessage) -> None:
        body = json.dumps(doc, separators=(",", ":"))
        if topic is None:
            self.link.publish(RESPONSE, body, qos=1, correlation_data=msg.correlation_data)
        else:
            self.link.publish(topic, body, qos=1, absolute=True, correlation_data=msg.correlation_data)


def _request_id_safe(payload: bytes) -> str | None:
    try:
        doc = json.loads(payload[:MAX_PAYLOAD])
    except Exception:
        return None
    rid = doc.get("request_id") if isinstance(doc, dict) else None
    return rid if isinstance(rid, str) and 0 < len(rid) <= 64 and rid.isprintable() else None


def _reply_to(payload: bytes) -> str | None:
    """``reply_to`` of a request (MQTT 3.1.1 has no response topic): the account whose answer topic
    ``cmd/replay/response/<reply_to>`` gets the answer. Safe to take as claimed: the ACL lets only that account
    read it, so a false name sends the events where the requester cannot read them."""
    if len(payload) > MAX_PAYLOAD:
        return None
    try:
        doc = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    name = doc.get("reply_to") if isinstance(doc, dict) else None
    return name if isinstance(name, str) and _SEGMENT.match(name) else None
