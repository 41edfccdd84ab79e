"""Envelopes kept aside, never read as the table's events (``quarantined_events``, issue 25).

- **A second payload for an archived event id** (``conflicting``): a table publishes each id once and a re-fetch
  resends the same bytes, so a different payload under an archived id is someone else's. It is kept aside with a
  critical ``event_conflict`` floor alert; the table's signed chain decides later which of the two is the table's
  (floor/archive/verify_events.py swaps them if the archived one is not).
- **An envelope the table's chain disproves** (``evict``): taken out of ``events`` with the reason, a critical
  ``event_rejected`` alert, and the table's watermark lowered so the gap it leaves is asked from the table again
  (floor/archive/repair.py).
An envelope already kept aside is not stored again when it is delivered again (``known``)."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.types.json import Jsonb

from floor.common.alerts import raise_alert
from floor.common.messages import Envelope, TableRef

CONFLICT = "conflict: another payload is archived under this event id"


@dataclass(frozen=True, slots=True)
class Candidate:
    """One payload for an event id: the archived row or one kept aside."""

    event_id: int
    digest: str
    raw: bytes
    prev: str | None
    chain: str | None
    archived: bool
    verified: bool = False  # the archived row is proven already (floor/archive/verify_events.py)


def digest(raw: bytes) -> str:
    return hashlib.sha256(raw).hexdigest()


def batch_keys(envelopes: list[Envelope]) -> tuple[list[str], list[str], list[int]]:
    return (
        [e.table.site for e in envelopes],
        [e.table.table_id for e in envelopes],
        [e.event_id for e in envelopes],
    )


def id_spans(envelopes: list[Envelope]) -> dict[TableRef, tuple[int, int]]:
    """Each table's lowest and highest event id in a batch, the tables in the order they first come."""
    spans: dict[TableRef, tuple[int, int]] = {}
    for e in envelopes:
        table, i = e.table, e.event_id
        span = spans.get(table)
        if span is None:
            spans[table] = (i, i)
        elif i < span[0]:
            spans[table] = (i, span[1])
        elif i > span[1]:
            spans[table] = (span[0], i)
    return spans


def span_columns(
    spans: dict[TableRef, tuple[int, int]], order: list[TableRef]
) -> tuple[list[str], list[str], list[int], list[int]]:
    """The spans as unnest's columns (site, table_id, lo, hi), the tables in ``order``."""
    return (
        [t.site for t in order],
        [t.table_id for t in order],
        [spans[t][0] for t in order],
        [spans[t][1] for t in order],
    )


BATCH_IDS = "SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS b(site, table_id, event_id)"


def known(cur: psycopg.Cursor, envelopes: list[Envelope]) -> list[Envelope]:
    """The envelopes that are not already kept aside (a forged one delivered again stays aside). One query per
    batch, by each table's span of ids (a few values a table, not three an envelope: an exact match below)."""
    spans = id_spans(envelopes)
    aside = set(
        cur.execute(
            "SELECT q.site, q.table_id, q.event_id, q.digest FROM quarantined_events q"
            " JOIN unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[]) AS b(site, table_id, lo, hi)"
            " USING (site, table_id) WHERE q.event_id BETWEEN b.lo AND b.hi",
            span_columns(spans, list(spans)),
        ).fetchall()
    )
    if not aside:
        return envelopes
    return [e for e in envelopes if (e.table.site, e.table.table_id, e.event_id, digest(e.raw)) not in aside]


def conflicting(cur: psycopg.Cursor, envelopes: list[Envelope]) -> None:
    """After the batch's inserts: each envelope whose id is archived with other bytes is kept aside and alerted."""
    stored = {
        (site, table_id, event_id): d
        for site, table_id, event_id, d in cur.execute(
            f"SELECT e.site, e.table_id, e.event_id, encode(sha256(e.raw), 'hex') FROM events e JOIN ({BATCH_IDS})"
            " b USING (site, table_id, event_id)",
            batch_keys(envelopes),
        )
    }
    for e in envelopes:
        d = digest(e.raw)
        archived = stored.get((e.table.site, e.table.table_id, e.event_id), d)
        if archived == d:
            continue
        keep_aside(cur, e, d, CONFLICT)
        raise_alert(
            cur,
            e.table,
            "event_conflict",
            "critical",
            f"event {e.event_id}: two different payloads (archived {archived[:12]}..., new {d[:12]}...);"
            " the table's signed chain decides which is its own",
            {"event_id": e.event_id, "archived": archived, "other": d},
            f"event_conflict:{e.table.site}:{e.table.table_id}:{e.event_id}:{d}",
        )


def keep_aside(cur: psycopg.Cursor, e: Envelope, d: str, reason: str) -> None:
    cur.execute(
        "INSERT INTO quarantined_events (site, table_id, event_id, digest, topic, type, ts, data, raw, source,"
        " prev, chain, reason) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT DO NOTHING",
        (e.table.site, e.table.table_id, e.event_id, d, e.topic, e.type, e.ts, Jsonb(e.data), e.raw, e.source,
         e.prev, e.chain, reason[:300]),
    )  # fmt: skip


def candidates(cur: psycopg.Cursor, table: TableRef, low: int, high: int) -> dict[int, list[Candidate]]:
    """Every payload for the ids in [low, high]: the archived one first, then those kept aside (in the order they
    were kept aside). One statement, its rows in binary (the payloads' bytes as they are, not in hex)."""
    out: dict[int, list[Candidate]] = defaultdict(list)
    aside: list[tuple[datetime, Candidate]] = []
    for event_id, archived, verified, d, raw, prev, chain, at in cur.execute(
        "SELECT event_id, true, verified, NULL::text, raw, prev, chain, NULL::timestamptz FROM events"
        " WHERE site = %s AND table_id = %s AND event_id BETWEEN %s AND %s"
        " UNION ALL SELECT event_id, false, false, digest, raw, prev, chain, quarantined_at FROM quarantined_events"
        " WHERE site = %s AND table_id = %s AND event_id BETWEEN %s AND %s",
        (table.site, table.table_id, low, high, table.site, table.table_id, low, high),
        binary=True,
    ):
        if archived:
            out[event_id].append(Candidate(event_id, digest(raw), raw, prev, chain, True, verified))
        else:
            aside.append((at, Candidate(event_id, d, raw, prev, chain, False)))
    for _, c in sorted(aside, key=lambda a: a[0]):
        out[c.event_id].append(c)
    return out


def evict(cur: psycopg.Cursor, table: TableRef, event_id: int, reason: str, *, refetch: bool = True) -> None:
    """The archived row of ``event_id`` is not the table's: keep it aside and alert; ``refetch``: no payload of
    the table's is at hand, let the repair ask the table again."""
    cur.execute(
        "WITH gone AS (DELETE FROM events WHERE site = %s AND table_id = %s AND event_id = %s RETURNING *)"
        " INSERT INTO quarantined_events (site, table_id, event_id, digest, topic, type, ts, data, raw, source,"
        " prev, chain, reason) SELECT site, table_id, event_id, encode(sha256(raw), 'hex'), topic, type, ts, data,"
        " raw, source, prev, chain, %s FROM gone ON CONFLICT DO NOTHING",
        (table.site, table.table_id, event_id, reason[:300]),
    )
    if refetch:
        cur.execute(
            "UPDATE floor_tables SET contiguous_to = %s WHERE site = %s AND table_id = %s AND contiguous_to > %s",
            (event_id - 1, table.site, table.table_id, event_id - 1),
        )
    raise_alert(
        cur,
        table,
        "event_rejected",
        "critical",
        f"event {event_id}: not the table's ({reason}); kept aside"
        + (", asked from the table again" if refetch else ", the table's own payload archived instead"),
        {"event_id": event_id, "reason": reason},
        f"event_rejected:{table.site}:{table.table_id}:{event_id}",
    )


def promote(cur: psycopg.Cursor, table: TableRef, event_id: int, d: str) -> None:
    """The payload kept aside under ``d`` is the table's: it becomes the archived row (the other was evicted)."""
    cur.execute(
        "WITH back AS (DELETE FROM quarantined_events WHERE site = %s AND table_id = %s AND event_id = %s"
        " AND digest = %s RETURNING *) INSERT INTO events (site, table_id, event_id, topic, type, ts, data, raw,"
        " source, prev, chain) SELECT site, table_id, event_id, topic, type, ts, data, raw, source, prev, chain"
        " FROM back",
        (table.site, table.table_id, event_id, d),
    )
