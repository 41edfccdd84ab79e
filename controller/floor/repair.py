"""Gap detection and repair through the table's event re-fetch (docs/reliability.md, docs/floor.md).

Each table's ``event_id`` is gapless in its journal. ``find_gaps`` walks the archived ids above the table's
watermark (``floor_tables.contiguous_to``: everything at or below it is archived or alerted missing), moves the
watermark up and returns the holes. A checkpoint's ``last_event_id`` above the highest archived id also reveals a
hole at the end. ``Repairer`` (run by one archive worker at a time, under a PostgreSQL advisory lock) waits
``grace`` seconds (another worker may be storing the event right now), then asks the table for the range on
``<prefix>/cmd/replay`` with the response topic ``<prefix>/cmd/replay/response/<username>``; the replayed
envelopes are stored like live ones. An id the table answers ``missing`` for, or that is still absent after
``max_attempts`` answered requests, is recorded in ``missing_events`` with a critical ``event_missing`` floor
alert. A table that does not answer gets a ``replay_unanswered`` warning and keeps being asked, more slowly.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from controller.floor.alerts import raise_alert
from controller.floor.messages import ReplayClose, TableRef

MAX_RANGE = 9_999  # docs/mqtt.md cmd/replay: B - A < 10,000
WALK_LIMIT = 50_000  # ids read per table per pass


@dataclass(frozen=True, slots=True)
class Gap:
    table: TableRef
    lo: int
    hi: int


def find_gaps(conn: psycopg.Connection) -> list[Gap]:
    gaps: list[Gap] = []
    with conn.transaction():
        tables = conn.execute("SELECT site, table_id, contiguous_to FROM floor_tables").fetchall()
    for site, table_id, mark in tables:
        with conn.transaction():
            ids = [
                r[0]
                for r in conn.execute(
                    "(SELECT event_id FROM events WHERE site = %s AND table_id = %s AND event_id > %s)"
                    " UNION (SELECT event_id FROM missing_events WHERE site = %s AND table_id = %s"
                    " AND event_id > %s) ORDER BY 1 LIMIT %s",
                    (site, table_id, mark, site, table_id, mark, WALK_LIMIT),
                ).fetchall()
            ]
            top_cp = conn.execute(
                "SELECT coalesce(max(last_event_id), 0) FROM checkpoints WHERE site = %s AND table_id = %s"
                " AND chain <> 'rejected'",
                (site, table_id),
            ).fetchone()[0]
            table, expected, new_mark, hole = TableRef(site, table_id), mark + 1, mark, False
            for event_id in ids:
                if event_id > expected:
                    gaps.append(Gap(table, expected, event_id - 1))
                    hole = True
                elif not hole:
                    new_mark = event_id
                expected = event_id + 1
            if top_cp >= expected and len(ids) < WALK_LIMIT:
                gaps.append(Gap(table, expected, top_cp))
            if new_mark != mark:
                conn.execute(
                    "UPDATE floor_tables SET contiguous_to = %s WHERE site = %s AND table_id = %s"
                    " AND contiguous_to < %s",
                    (new_mark, site, table_id, new_mark),
                )
    return gaps


@dataclass
class _Pending:
    gap: Gap
    first_seen: float
    attempts: int = 0  # answered requests
    asks: int = 0  # requests sent
    request_id: str | None = None
    sent_at: float = 0.0
    warned: bool = False
    answers: list[dict[str, Any]] = field(default_factory=list)


class Repairer:
    """Decides when to ask a table again and when to give up; ``send`` publishes one request."""

    def __init__(
        self,
        send: Callable[[TableRef, dict[str, Any]], None],
        *,
        grace: float = 2.0,
        answer_timeout: float = 10.0,
        max_attempts: int = 2,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._send, self.grace, self.answer_timeout, self.max_attempts = (
            send,
            grace,
            answer_timeout,
            max_attempts,
        )
        self._clock = clock
        self._pending: dict[tuple[str, str, int, int], _Pending] = {}
        self._by_request: dict[str, tuple[str, str, int, int]] = {}
        self._lock = threading.Lock()
        self.stats = {"requests": 0, "answers": 0, "alerts": 0}

    def open_gaps(self) -> int:
        """Gaps being repaired now (waiting out the grace, or asked for)."""
        with self._lock:
            return len(self._pending)

    def step(self, conn: psycopg.Connection) -> None:
        gaps = find_gaps(conn)
        now = self._clock()
        seen = set()
        with self._lock:
            for gap in gaps:
                # a range is asked in chunks the contract allows
                for lo in range(gap.lo, gap.hi + 1, MAX_RANGE + 1):
                    part = Gap(gap.table, lo, min(gap.hi, lo + MAX_RANGE))
                    key = (part.table.site, part.table.table_id, part.lo, part.hi)
                    seen.add(key)
                    pending = self._pending.setdefault(key, _Pending(part, now))
                    self._advance(conn, key, pending, now)
            for key in list(self._pending):
                if key not in seen:  # filled (live, late, or by the re-fetch)
                    self._drop(key)

    def _drop(self, key: tuple[str, str, int, int]) -> None:
        pending = self._pending.pop(key)
        if pending.request_id:
            self._by_request.pop(pending.request_id, None)

    def _advance(self, conn: psycopg.Connection, key: Any, p: _Pending, now: float) -> None:
        if now - p.first_seen < self.grace:
            return
        if p.attempts >= self.max_attempts:
            self._give_up(conn, p, "still missing after the table's re-fetch answered")
            self._drop(key)
            return
        waiting = p.request_id is not None and now - p.sent_at < self.answer_timeout * (1 + min(p.asks, 6))
        if waiting:
            return
        if p.request_id is not None and not p.warned and p.asks >= 2:
            p.warned = True
            with conn.transaction():
                raise_alert(
                    conn.cursor(),
                    p.gap.table,
                    "replay_unanswered",
                    "warning",
                    f"events {p.gap.lo}-{p.gap.hi} missing and the table does not answer the re-fetch",
                    {"from_event_id": p.gap.lo, "to_event_id": p.gap.hi},
                    f"replay_unanswered:{key}",
                )
        if p.request_id:
            self._by_request.pop(p.request_id, None)
        p.request_id = f"floor-{secrets.token_hex(8)}"
        p.sent_at, p.asks = now, p.asks + 1
        self._by_request[p.request_id] = key
        body = {"request_id": p.request_id, "from_event_id": p.gap.lo, "to_event_id": p.gap.hi}
        with conn.transaction():
            conn.execute(
                "INSERT INTO replay_requests (request_id, site, table_id, from_event_id, to_event_id)"
                " VALUES (%s, %s, %s, %s, %s)",
                (p.request_id, p.gap.table.site, p.gap.table.table_id, p.gap.lo, p.gap.hi),
            )
        self.stats["requests"] += 1
        self._send(p.gap.table, body)

    def answered(self, conn: psycopg.Connection, close: ReplayClose) -> None:
        """The closing document of a re-fetch (its replayed events are already committed)."""
        doc = close.doc
        request_id = str(doc.get("request_id"))[:64]
        missing = [
            i for i in doc.get("missing") or [] if isinstance(i, int) and not isinstance(i, bool) and i > 0
        ][: MAX_RANGE + 1]
        ok = doc.get("ok") is True
        with conn.transaction():
            conn.execute(
                "UPDATE replay_requests SET answered_at = now(), ok = %s, sent = %s, missing = %s, reason = %s"
                " WHERE request_id = %s AND site = %s AND table_id = %s AND answered_at IS NULL",
                (
                    ok,
                    doc.get("sent") if isinstance(doc.get("sent"), int) else None,
                    Jsonb(missing),
                    str(doc.get("reason"))[:200] if not ok else None,
                    request_id,
                    close.table.site,
                    close.table.table_id,
                ),
            )
        with self._lock:
            key = self._by_request.pop(request_id, None)
            pending = self._pending.get(key) if key else None
            if pending is None or pending.gap.table != close.table:
                return
            self.stats["answers"] += 1
            pending.attempts += 1
            pending.request_id = None
            pending.answers.append(doc)
            wanted = [i for i in missing if pending.gap.lo <= i <= pending.gap.hi]
            if ok and wanted:
                self._give_up(
                    conn, pending, "the table no longer keeps them (re-fetch answered missing)", wanted
                )

    def _give_up(self, conn: psycopg.Connection, p: _Pending, why: str, ids: list[int] | None = None) -> None:
        table = p.gap.table
        with conn.transaction():
            cur = conn.cursor()
            if ids is None:
                have = {
                    r[0]
                    for r in cur.execute(
                        "SELECT event_id FROM events WHERE site = %s AND table_id = %s"
                        " AND event_id BETWEEN %s AND %s",
                        (table.site, table.table_id, p.gap.lo, p.gap.hi),
                    ).fetchall()
                }
                ids = [i for i in range(p.gap.lo, p.gap.hi + 1) if i not in have]
            if not ids:
                return
            span = f"{ids[0]}" if len(ids) == 1 else f"{ids[0]}-{ids[-1]} ({len(ids)} ids)"
            alert_id = raise_alert(
                cur,
                table,
                "event_missing",
                "critical",
                f"event(s) {span} never reached the floor: {why}",
                {"event_ids": ids[:1000], "count": len(ids), "answers": p.answers[-3:]},
                f"event_missing:{table.site}:{table.table_id}:{ids[0]}-{ids[-1]}",
            )
            cur.executemany(
                "INSERT INTO missing_events (site, table_id, event_id, alert_id) VALUES (%s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [(table.site, table.table_id, i, alert_id) for i in ids],
            )
        self.stats["alerts"] += 1


def request_payload(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":")).encode()
