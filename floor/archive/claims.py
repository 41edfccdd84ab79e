"""What a table may claim is bounded by what it has proved (issue 37).

An envelope's ``event_id`` is the table account's word. Left unchecked, one envelope far ahead (``event_id``
990,000,001) makes every id below it a hole: gap repair asks the real table for each, records each missing and
alerts per re-fetch (the floor would write ~990 million rows). So before an envelope is archived its id is held
against the table's **ceiling**:

    ceiling = proven + HEADROOM + MAX_EVENT_RATE * seconds since it was proven

where ``proven`` is the ``last_event_id`` of the table's newest checkpoint whose signature verified with the
table's trusted key (floor/archive/chain.py) and the seconds run from that checkpoint's signed time; for a table with no
verified checkpoint, ``proven`` is 0 and the seconds run from when the floor first heard of it. Nothing else the
table account publishes (an arrived id, the watermark, a re-fetch answer) raises the ceiling, so it cannot be
ratcheted up from forged ids.

An envelope above the ceiling is **unproven**: kept aside (``quarantined_events``, reason ``UNPROVEN``), never
archived as the table's, never a hole, never asked from the table. At most ``UNPROVEN_KEPT`` per table are kept
aside (later ones are dropped: a table that proves them resends them on re-fetch). The table gets one critical
``event_unproven`` floor alert while unacknowledged, naming the range of unproven ids seen. A checkpoint
envelope above the ceiling is still recorded in ``checkpoints`` (its signature is what may raise the ceiling).

``release`` (each maintenance pass): unproven envelopes now at or below the ceiling (a verified checkpoint
reached them) are archived as if they had just arrived, and a verified checkpoint above what the floor knows the
table wrote is announced to the gap finder (a ``floor_arrivals`` row), so events dropped above the ceiling are
asked from the table once proven."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import psycopg
from psycopg.types.json import Jsonb

from floor.archive.quarantine import CONFLICT, digest, keep_aside
from floor.common.alerts import raise_alert
from floor.common.messages import CHECKPOINT_TYPE, Envelope, TableRef

HEADROOM = 10_000  # ids a table may run ahead of its proof at any time (one re-fetch range, MAX_RANGE)
MAX_EVENT_RATE = 50  # events/s a table may write after its proof (a dealer's pace: ~1.8, docs/floor.md)
UNPROVEN_KEPT = 100  # unproven envelopes kept aside per table; later ones are dropped
UNPROVEN = "unproven: beyond what the table has proved"
UNPROVEN_ALERT = "event_unproven"
CACHE_S = 2.0  # a worker reads a table's ceiling at most this often (a newer proof is seen by ``release``)

# per process and database: when read (monotonic), the ceiling then
_cache: dict[tuple[str, int, str, TableRef], tuple[float, Ceiling]] = {}


@dataclass(frozen=True, slots=True)
class Ceiling:
    proven: int  # last_event_id of the newest verified checkpoint (0: none)
    seconds: float  # since then (since first heard of, without one)

    @property
    def limit(self) -> int:
        return self.proven + HEADROOM + int(MAX_EVENT_RATE * self.seconds)


def _seconds_since(ts: object, now: datetime) -> float | None:
    if not isinstance(ts, str):
        return None
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (now - when).total_seconds())


def ceilings(cur: psycopg.Cursor, tables: list[TableRef]) -> dict[TableRef, Ceiling]:
    """The ceiling of each table (one query; a table the floor never heard of has none: ceiling HEADROOM)."""
    order = sorted(set(tables), key=lambda t: (t.site, t.table_id))
    out: dict[TableRef, Ceiling] = {}
    rows = cur.execute(
        "SELECT f.site, f.table_id, now(), f.first_seen, c.last_event_id, c.doc->>'ts' FROM floor_tables f"
        " JOIN unnest(%s::text[], %s::text[]) AS b(site, table_id) USING (site, table_id)"
        " LEFT JOIN LATERAL (SELECT last_event_id, doc FROM checkpoints k WHERE k.site = f.site"
        " AND k.table_id = f.table_id AND k.signature_ok ORDER BY k.seq DESC LIMIT 1) c ON true",
        ([t.site for t in order], [t.table_id for t in order]),
    ).fetchall()
    for site, table_id, now, first_seen, last_event_id, cp_ts in rows:
        since_first = max(0.0, (now - first_seen).total_seconds())
        if last_event_id is None:
            out[TableRef(site, table_id)] = Ceiling(0, since_first)
        else:
            seconds = _seconds_since(cp_ts, now)
            out[TableRef(site, table_id)] = Ceiling(int(last_event_id), 0.0 if seconds is None else seconds)
    for t in order:
        out.setdefault(t, Ceiling(0, 0.0))
    return out


def _cached_ceilings(cur: psycopg.Cursor, tables: list[TableRef]) -> dict[TableRef, Ceiling]:
    """``ceilings`` read at most every ``CACHE_S`` per table (the archive's hot path: one query per batch at
    most); the seconds since the proof keep counting meanwhile, so only a proof newer than the read is missed."""
    now = time.monotonic()
    info = cur.connection.info
    db = (info.host, info.port, info.dbname)
    out: dict[TableRef, Ceiling] = {}
    stale = []
    for t in set(tables):
        hit = _cache.get((*db, t))
        if hit is not None and now - hit[0] < CACHE_S:
            out[t] = Ceiling(hit[1].proven, hit[1].seconds + (now - hit[0]))
        else:
            stale.append(t)
    if stale:
        for t, c in ceilings(cur, stale).items():
            _cache[(*db, t)] = (now, c)
            out[t] = c
        if len(_cache) > 100_000:  # tables come and go: never grows without bound
            _cache.clear()
    return out


def hold_unproven(
    cur: psycopg.Cursor,
    envelopes: list[Envelope],
    record_checkpoint: Callable[[psycopg.Cursor, Envelope], None],
) -> list[Envelope]:
    """The envelopes at or below their table's ceiling; the others are kept aside (at most ``UNPROVEN_KEPT`` per
    table) and alerted, a checkpoint among them still recorded."""
    if not envelopes:
        return envelopes
    limits = _cached_ceilings(cur, [e.table for e in envelopes])
    limit = {t: c.limit for t, c in limits.items()}  # each table's once, not each envelope's
    within: list[Envelope] = []
    above: dict[TableRef, list[Envelope]] = defaultdict(list)
    for e in envelopes:
        (within if e.event_id <= limit[e.table] else above[e.table]).append(e)
    for table, held in above.items():
        kept = _kept_count(cur, table)
        for e in held:
            if e.type == CHECKPOINT_TYPE:
                record_checkpoint(cur, e)
            if kept < UNPROVEN_KEPT:
                keep_aside(cur, e, digest(e.raw), UNPROVEN)
                kept += 1
        _alert(cur, table, limits[table], [e.event_id for e in held])
    return within


def _kept_count(cur: psycopg.Cursor, table: TableRef) -> int:
    row = cur.execute(
        "SELECT count(*) FROM quarantined_events WHERE site = %s AND table_id = %s AND reason = %s",
        (table.site, table.table_id, UNPROVEN),
    ).fetchone()
    return int(row[0]) if row else 0


def _alert(cur: psycopg.Cursor, table: TableRef, ceiling: Ceiling, ids: list[int]) -> None:
    """One open alert per table naming the range of unproven ids seen: widened, never multiplied."""
    lo, hi = min(ids), max(ids)
    row = cur.execute(
        "SELECT alert_id, details FROM floor_alerts WHERE site = %s AND table_id = %s AND kind = %s"
        " AND acknowledged_at IS NULL ORDER BY alert_id DESC LIMIT 1",
        (table.site, table.table_id, UNPROVEN_ALERT),
    ).fetchone()
    if row is not None:
        d = row[1] if isinstance(row[1], dict) else {}
        lo = min(lo, _whole(d.get("from_event_id"), lo))
        hi = max(hi, _whole(d.get("to_event_id"), hi))
        count = _whole(d.get("count"), 0) + len(ids)
    else:
        count = len(ids)
    message = (
        f"event ids {lo}-{hi} ({count} envelope(s)) are beyond what the table has proved (ceiling"
        f" {ceiling.limit}: its last verified checkpoint covers {ceiling.proven}); kept aside as unproven,"
        " not asked from the table"
    )
    details = {"from_event_id": lo, "to_event_id": hi, "count": count, "ceiling": ceiling.limit,
               "proven_to": ceiling.proven}  # fmt: skip
    if row is not None:
        cur.execute(
            "UPDATE floor_alerts SET message = %s, details = %s WHERE alert_id = %s",
            (message, Jsonb(details), row[0]),
        )
        return
    raise_alert(cur, table, UNPROVEN_ALERT, "critical", message, details,
                f"{UNPROVEN_ALERT}:{table.site}:{table.table_id}:{lo}:{time.time_ns()}")  # fmt: skip


def _whole(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def announce(cur: psycopg.Cursor, table: TableRef, last_event_id: int) -> None:
    """A checkpoint verified with the table's key proves the table wrote every id up to ``last_event_id``: the gap
    finder learns it (its own envelope may have been above the ceiling, never archived)."""
    if last_event_id >= 1:
        cur.execute(
            "INSERT INTO floor_arrivals (site, table_id, lo, hi) VALUES (%s, %s, %s, %s)",
            (table.site, table.table_id, last_event_id, last_event_id),
        )


def release(cur: psycopg.Cursor) -> int:
    """Archive the unproven envelopes a verified checkpoint has since brought under their table's ceiling (as if
    they had just arrived; one whose id was archived meanwhile with other bytes stays aside as a conflict).
    Returns how many were archived."""
    tables = [
        TableRef(*r)
        for r in cur.execute(
            "SELECT DISTINCT site, table_id FROM quarantined_events WHERE reason = %s", (UNPROVEN,)
        ).fetchall()
    ]
    if not tables:
        return 0
    limits = ceilings(cur, tables)
    archived = 0
    for table in sorted(tables, key=lambda t: (t.site, t.table_id)):
        rows = cur.execute(
            "DELETE FROM quarantined_events WHERE site = %s AND table_id = %s AND reason = %s AND event_id <= %s"
            " RETURNING event_id, digest, topic, type, ts, data, raw, source, prev, chain",
            (table.site, table.table_id, UNPROVEN, limits[table].limit),
        ).fetchall()
        if not rows:
            continue
        ids = []
        for event_id, d, topic, kind, ts, data, raw, source, prev, chain in sorted(rows, key=lambda r: r[0]):
            cur.execute(
                "INSERT INTO events (site, table_id, event_id, topic, type, ts, data, raw, source, prev, chain)"
                " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (
                    table.site,
                    table.table_id,
                    event_id,
                    topic,
                    kind,
                    ts,
                    Jsonb(data),
                    raw,
                    source,
                    prev,
                    chain,
                ),
            )
            if cur.rowcount == 1:
                archived += 1
                ids.append(event_id)
                continue
            other = cur.execute(
                "SELECT encode(sha256(raw), 'hex') FROM events WHERE site = %s AND table_id = %s AND event_id = %s",
                (table.site, table.table_id, event_id),
            ).fetchone()
            if other is not None and other[0] != d:
                cur.execute(
                    "INSERT INTO quarantined_events (site, table_id, event_id, digest, topic, type, ts, data, raw,"
                    " source, prev, chain, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                    " ON CONFLICT DO NOTHING",
                    (table.site, table.table_id, event_id, d, topic, kind, ts, Jsonb(data), raw, source, prev,
                     chain, CONFLICT),
                )  # fmt: skip
        if ids:
            cur.execute(
                "INSERT INTO floor_arrivals (site, table_id, lo, hi) VALUES (%s, %s, %s, %s)",
                (table.site, table.table_id, ids[0], ids[-1]),
            )
    return archived
