"""Gap repair through the table's event re-fetch (``cmd/replay``, docs/reliability.md, docs/floor.md).

``gaps.GapFinder`` keeps every table's open holes. ``Repairer`` (run by one archive worker at a time, under a
PostgreSQL advisory lock) waits ``grace`` seconds after a hole is found (another worker may be storing the event
right now), then asks the table for it on ``<prefix>/cmd/replay``. The request names its answer address twice:
``reply_to`` in the payload (what crosses the MQTT 3.1.1 bridge between the table broker and the floor broker)
and the MQTT v5 response topic ``<prefix>/cmd/replay/response/<username>`` (a table on the floor broker itself).
The replayed envelopes are stored like live ones.

Only an answer is an answer. The table's closing document ``ok: true`` settles what it covers: ids it lists as
``missing`` (no longer kept) go to ``missing_events`` at once with a critical ``event_missing`` floor alert naming
them; ids it sent are archived (a hole still open after that is asked again). A refusal (``ok: false``) settles
nothing: "rate limited" and "busy" make the archive wait the table's whole rate window before it asks again, any
other reason (or no answer at all) is retried with a growing delay and raises a ``replay_unanswered`` warning.
Requests are paced to the table's published limits (``RATE_PER_KEY`` per ``RATE_WINDOW_S`` per requester, one
range below ``MAX_RANGE`` ids; controller/mqtt/replay.py): one request in flight per table, at most
``RATE_PER_KEY - 1`` in any window. And to what the floor broker can queue for the archive's answer session:
a request asks for at most ``chunk`` ids (``tablectl floor archive --refetch-chunk``, at most the floor broker's
``max_queued_messages``) and all requests in flight together for at most ``chunk`` (a larger answer would be mostly
dropped by the broker and asked for again and again); the next waits until the answer landed.

Warnings mean what they say: an answer that is still arriving (its events being stored) is not "no answer" (the
wait restarts with each event stored), a closing document that arrives after the wait ended still counts as the
answer, and a ``replay_unanswered`` warning is closed (acknowledged by the archive) once the table's watermark
passed the hole it named.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.mqtt.replay import BUSY, MAX_RANGE, RATE_LIMITED, RATE_PER_KEY, RATE_WINDOW_S
from floor.archive.gaps import GapFinder, Hole
from floor.common.alerts import raise_alert
from floor.common.messages import ReplayClose, TableRef
from floor.common.notify import notify

PACE = max(1, RATE_PER_KEY - 1)  # requests per RATE_WINDOW_S per table: one below the table's limit
WARN_AFTER = 3  # asks without an answer, or answers without progress, before the replay_unanswered warning
MERGE_WITHIN = 500  # archived ids a request may send again to cover the next hole in the same request
PER_ID_S = 0.002  # extra answer time per id asked (10,000 events take a while through two brokers)
CHUNK = 500  # ids asked at once, over every table (below mosquitto's default max_queued_messages, 1000)
FILLED_BY = "archive: the hole was filled"  # who closes a replay_unanswered warning


@dataclass(slots=True)
class _Ask:
    request_id: str
    lo: int
    hi: int
    sent_at: float


@dataclass(slots=True)
class _TableRepair:
    sent: deque[float] = field(default_factory=deque)  # send times in the current rate window
    ask: _Ask | None = None  # the request in flight (one per table)
    not_before: float = 0.0  # backed off until then (rate limited, busy, refused, unanswered)
    answered_at: float = -1.0  # the next ask waits for a pass that began after the answer was stored
    failures: int = 0  # consecutive asks without an answer, or refused, or answered without progress
    warned: bool = False
    last_reason: str = ""


class Repairer:
    """Decides when to ask a table and what; ``send`` publishes one request body to the table."""

    def __init__(
        self,
        send: Callable[[TableRef, dict[str, Any]], None],
        *,
        username: str,
        grace: float = 2.0,
        answer_timeout: float = 10.0,
        chunk: int = CHUNK,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send, self.username = send, username
        self.chunk = max(1, min(chunk, MAX_RANGE))
        self.grace, self.answer_timeout = grace, answer_timeout
        self._clock = clock
        self.finder = GapFinder(clock)
        self._tables: dict[TableRef, _TableRepair] = {}
        self._by_request: dict[str, TableRef] = {}
        self._late: dict[str, TableRef] = {}  # asks whose wait ended: their answer still counts (bounded)
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "answers": 0, "refusals": 0, "alerts": 0}

    def open_gaps(self) -> int:
        """Gaps being repaired now: holes the gap finder knows of, over every table (waiting out the grace, or
        asked for)."""
        with self._lock:
            return sum(len(holes) for holes in self.finder.holes().values())

    def rescan(self) -> None:
        """Read every table's archive again at the next step (ids below a watermark became holes: an archived
        event the table's chain disproved was kept aside, floor/archive/verify_events.py)."""
        with self._lock:
            self.finder.reset()

    def step(self, conn: psycopg.Connection) -> None:
        started = self._clock()
        with self._lock:  # answered() (the writer thread) settles holes too
            try:
                self.finder.step(conn)
            except Exception:
                self.finder.reset()  # arrivals may be consumed and not applied: read everything again
                raise
            holes = self.finder.holes()
            now = self._clock()
            for table in [t for t, s in self._tables.items() if t not in holes and _idle(s, now)]:
                del self._tables[table]  # nothing open, nothing in flight, its rate window is over
            for table, open_holes in sorted(holes.items(), key=lambda kv: (kv[0].site, kv[0].table_id)):
                state = self._tables.setdefault(table, _TableRepair())
                self._advance(conn, table, state, open_holes, started)
            self._close_filled(conn)

    def progress(self, table: TableRef) -> None:
        """Events of a re-fetch answer of ``table`` were stored (the writer thread): the answer is arriving, the
        wait for it starts again."""
        with self._lock:
            s = self._tables.get(table)
            if s is not None and s.ask is not None:
                s.ask.sent_at = self._clock()

    def _in_flight(self) -> int:
        return sum(s.ask.hi - s.ask.lo + 1 for s in self._tables.values() if s.ask is not None)

    def _close_filled(self, conn: psycopg.Connection) -> None:
        """Close every open replay_unanswered warning whose hole lies below its table's watermark now."""
        with conn.transaction():
            cur = conn.execute(
                "UPDATE floor_alerts a SET acknowledged_by = %s, acknowledged_at = now() FROM floor_tables t"
                " WHERE a.kind = 'replay_unanswered' AND a.acknowledged_at IS NULL AND t.site = a.site"
                " AND t.table_id = a.table_id AND t.contiguous_to >= (a.details->>'to_event_id')::bigint",
                (FILLED_BY,),
            )
            if cur.rowcount:
                notify(conn.cursor())

    def _advance(self, conn: psycopg.Connection, table: TableRef, s: _TableRepair, holes: list[Hole],
                 started: float) -> None:  # fmt: skip
        now = self._clock()
        if s.ask is not None:
            size = s.ask.hi - s.ask.lo + 1
            if now - s.ask.sent_at < self.answer_timeout + size * PER_ID_S:
                return  # waiting for the answer
            self._by_request.pop(s.ask.request_id, None)
            self._late[s.ask.request_id] = table
            while len(self._late) > 1000:
                del self._late[next(iter(self._late))]
            s.ask = None
            self._failed(conn, table, s, now, "no answer")
        if now < s.not_before or s.answered_at >= started:
            return
        while s.sent and now - s.sent[0] > RATE_WINDOW_S:
            s.sent.popleft()
        if len(s.sent) >= PACE:
            return  # the table's rate window is full: wait, never be refused
        due = [h for h in holes if now - h.first_seen >= self.grace]
        if not due:
            return
        in_flight = self._in_flight()
        room = self.chunk - in_flight
        if room <= 0 or (in_flight and room < min(self.chunk, due[0].hi - due[0].lo + 1) // 2):
            return  # the answers in flight fill what the floor broker can queue: wait for them to land
        span = min(room, MAX_RANGE)
        lo, hi = due[0].lo, min(due[0].hi, due[0].lo + span - 1)
        for h in due[1:]:  # one request covers the next holes too when few archived ids lie between
            if h.lo - hi > MERGE_WITHIN or h.lo >= lo + span:
                break
            hi = min(h.hi, lo + span - 1)
        ask = _Ask(f"floor-{secrets.token_hex(8)}", lo, hi, now)
        body = {
            "request_id": ask.request_id,
            "from_event_id": ask.lo,
            "to_event_id": ask.hi,
            "reply_to": self.username,  # MQTT 3.1.1 (the bridge) has no response topic
        }
        with conn.transaction():
            conn.execute(
                "INSERT INTO replay_requests (request_id, site, table_id, from_event_id, to_event_id)"
                " VALUES (%s, %s, %s, %s, %s)",
                (ask.request_id, table.site, table.table_id, ask.lo, ask.hi),
            )
        s.ask = ask
        s.sent.append(now)
        self._by_request[ask.request_id] = table
        self.stats["requests"] += 1
        self._send(table, body)

    def _failed(
        self, conn: psycopg.Connection, table: TableRef, s: _TableRepair, now: float, why: str
    ) -> None:
        """No answer, a final refusal, or an answer that filled nothing: ask again later, warn once."""
        s.failures += 1
        s.last_reason = why
        s.not_before = now + min(self.answer_timeout * s.failures, 120.0)
        if s.failures >= WARN_AFTER and not s.warned:
            s.warned = True
            hole = self.finder.holes().get(table, [Hole(0, 0, 0.0)])[0]
            open_already = conn.execute(
                "SELECT 1 FROM floor_alerts WHERE kind = 'replay_unanswered' AND site = %s AND table_id = %s"
                " AND acknowledged_at IS NULL LIMIT 1",
                (table.site, table.table_id),
            ).fetchone()
            if open_already:
                return  # one open warning per table (closed when its hole is filled)
            with conn.transaction():
                raise_alert(
                    conn.cursor(),
                    table,
                    "replay_unanswered",
                    "warning",
                    f"events from {hole.lo} missing and the table's re-fetch does not serve them ({why});"
                    " still asking",
                    {"from_event_id": hole.lo, "to_event_id": hole.hi, "reason": why[:200]},
                    f"replay_unanswered:{table.site}:{table.table_id}:{hole.lo}:{secrets.token_hex(4)}",
                )

    def answered(self, conn: psycopg.Connection, close: ReplayClose) -> None:
        """The closing document of a re-fetch (its replayed events are already committed)."""
        doc = close.doc
        request_id = str(doc.get("request_id"))[:64]
        ok = doc.get("ok") is True
        reason = str(doc.get("reason"))[:200] if not ok else None
        raw_missing = v if isinstance(v := doc.get("missing"), list) else []
        missing = sorted(
            {
                i
                for i in raw_missing[: MAX_RANGE + 1]
                if isinstance(i, int) and not isinstance(i, bool) and i > 0
            }
        )
        with conn.transaction():
            conn.execute(
                "UPDATE replay_requests SET answered_at = now(), ok = %s, sent = %s, missing = %s, reason = %s"
                " WHERE request_id = %s AND site = %s AND table_id = %s AND answered_at IS NULL",
                (
                    ok,
                    doc.get("sent") if isinstance(doc.get("sent"), int) else None,
                    Jsonb(missing),
                    reason,
                    request_id,
                    close.table.site,
                    close.table.table_id,
                ),
            )
        with self._lock:
            if (
                self._late.get(request_id) == close.table
            ):  # answered after the wait ended: an answer all the same
                del self._late[request_id]
                late = self._tables.get(close.table)
                if late is not None and ok and (doc.get("sent") or missing):
                    late.failures, late.warned = 0, False
                    late.not_before = min(late.not_before, self._clock())
                return
            if self._by_request.get(request_id) != close.table:
                return  # not ours (another worker's, an old one, or a forgery naming another table)
            del self._by_request[request_id]
            s = self._tables.get(close.table)
            if s is None or s.ask is None or s.ask.request_id != request_id:
                return
            ask, s.ask, now = s.ask, None, self._clock()
            if not ok:
                self.stats["refusals"] += 1
                if reason is not None and reason.startswith((RATE_LIMITED, BUSY)):
                    s.not_before = now + RATE_WINDOW_S  # the table's window: then ask again
                    s.sent.clear()
                else:
                    self._failed(conn, close.table, s, now, f"refused: {reason}")
                return
            self.stats["answers"] += 1
            s.answered_at = now
            s.failures, s.warned = (
                (s.failures, s.warned) if doc.get("sent") == 0 and not missing else (0, False)
            )
            gone = [i for i in missing if ask.lo <= i <= ask.hi]
            if gone:
                self._give_up(conn, close.table, gone, doc)

    def _give_up(
        self, conn: psycopg.Connection, table: TableRef, ids: list[int], doc: dict[str, Any]
    ) -> None:
        """The table answered that it no longer keeps these: recorded missing at once, named in the alert."""
        with conn.transaction():
            cur = conn.cursor()
            have = {
                r[0]
                for r in cur.execute(
                    "SELECT event_id FROM events WHERE site = %s AND table_id = %s AND event_id = ANY(%s)",
                    (table.site, table.table_id, ids),
                ).fetchall()
            }
            ids = [i for i in ids if i not in have]  # one may have arrived live meanwhile
            if not ids:
                return
            span = f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}-{ids[-1]} ({len(ids)} ids)"
            answer = {
                k: doc[k]
                for k in ("request_id", "from_event_id", "to_event_id", "sent", "pruned")
                if k in doc
            }
            alert_id = raise_alert(
                cur,
                table,
                "event_missing",
                "critical",
                f"event(s) {span} never reached the floor: the table no longer keeps them (re-fetch answered"
                " missing)",
                {"event_ids": ids[:1000], "count": len(ids), "answer": answer},
                f"event_missing:{table.site}:{table.table_id}:{ids[0]}-{ids[-1]}",
            )
            cur.executemany(
                "INSERT INTO missing_events (site, table_id, event_id, alert_id) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [(table.site, table.table_id, i, alert_id) for i in ids],
            )
            self.finder.fill(conn, table, ids)
        self.stats["alerts"] += 1


def _idle(s: _TableRepair, now: float) -> bool:
    return s.ask is None and now >= s.not_before and (not s.sent or now - s.sent[-1] > RATE_WINDOW_S)


def request_payload(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
