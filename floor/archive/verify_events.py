"""Archived events proven the table's by its signed checkpoints, not taken on the broker's word (issue 25).

Each envelope carries the published events' hash chain (``prev``, ``chain``: controller/journal/event_chain.py)
and every checkpoint signed with the table's key names the chain value at its ``last_event_id``
(``event_chain``). From each such checkpoint the floor walks BACK: the event at ``last_event_id`` must carry the
signed value and hash to it; the one before must carry the ``prev`` of the one just proven; and so on, until an
event already proven (an earlier checkpoint's walk goes on from there), the start of the table's chain (``prev``
all zeros) or an id given up as missing. Each proven event gets ``verified``; events after the newest checkpoint
stay not yet verified until the next one covers them.

At each id, the archived payload and any kept aside for it (floor/archive/quarantine.py) are candidates; the
one with the expected chain value wins (a kept-aside one is swapped in, the archived one kept aside: critical
``event_rejected``). With none, the archived one (if any) is kept aside and the id asked from the table again;
the walk resumes there on a later pass (``checkpoints.walk_next``/``walk_expect``). An event still walked over
when nothing can prove it stays unverified: never stored as proven."""

from __future__ import annotations

import psycopg

from controller.journal.event_chain import EVENT_GENESIS, read_chain
from floor.archive.quarantine import Candidate, candidates, evict, promote
from floor.common.messages import TableRef

BATCH = 1000  # ids read per query while walking back, at most
FIRST = 128  # ids read by a walk's first query (a checkpoint's walk usually ends a round back, ~75 ids): the
# window doubles up to BATCH while the walk goes on, so a short walk does not read a thousand payloads


def _proves(c: Candidate, expected: str) -> bool:
    if c.chain != expected or c.prev is None:
        return False
    chained = read_chain(c.raw, c.prev)
    return chained is not None and chained.self_consistent


def prove_events(cur: psycopg.Cursor, table: TableRef) -> int:
    """Walk every signed checkpoint of ``table`` whose events are not all proven yet (newest first). Returns how
    many archived events were kept aside to be asked from the table again (the gap finder must look again)."""
    rows = cur.execute(
        "SELECT seq, walk_next, walk_expect FROM checkpoints WHERE site = %s AND table_id = %s"
        " AND signature_ok AND event_chain IS NOT NULL AND NOT events_proven ORDER BY seq DESC",
        (table.site, table.table_id),
    ).fetchall()
    evicted = 0
    for seq, walk_next, walk_expect in rows:
        next_id, expect, done, gone = _walk(cur, table, seq, walk_next, walk_expect)
        evicted += gone
        cur.execute(
            "UPDATE checkpoints SET walk_next = %s, walk_expect = %s, events_proven = %s"
            " WHERE site = %s AND table_id = %s AND seq = %s",
            (next_id, expect, done, table.site, table.table_id, seq),
        )
    return evicted


def _walk(
    cur: psycopg.Cursor, table: TableRef, seq: int, n: int, expected: str
) -> tuple[int, str, bool, int]:
    """(where to resume, the chain value expected there, complete, events kept aside to be asked again)."""
    window = FIRST
    while n >= 1:
        low = max(1, n - window + 1)
        window = min(BATCH, window * 2)
        found = candidates(cur, table, low, n)  # the archived row's ``verified`` read with it
        proven: list[int] = []
        for event_id in range(n, low - 1, -1):
            here = found.get(event_id, [])
            archived = next((c for c in here if c.archived), None)
            if archived is not None and archived.verified and archived.chain == expected:
                _mark(cur, table, proven)
                return event_id, expected, True, 0  # proven already: an earlier walk goes on from here
            winner = next((c for c in here if _proves(c, expected)), None)
            if winner is None:
                _mark(cur, table, proven)
                if archived is not None:
                    evict(cur, table, event_id, f"its chain value is not the one checkpoint {seq} proves")
                    return event_id, expected, False, 1
                return event_id, expected, _given_up(cur, table, event_id), 0  # asked again, or never to come
            if not winner.archived:
                if archived is not None:
                    reason = f"checkpoint {seq} proves another payload ({winner.digest[:12]}...)"
                    evict(cur, table, event_id, reason, refetch=False)
                promote(cur, table, event_id, winner.digest)
            proven.append(event_id)
            expected = winner.prev or EVENT_GENESIS
            if expected == EVENT_GENESIS:
                _mark(cur, table, proven)
                return event_id, expected, True, 0  # the start of the table's chain
        _mark(cur, table, proven)
        n = low - 1
    return 0, expected, True, 0


def _given_up(cur: psycopg.Cursor, table: TableRef, event_id: int) -> bool:
    """Whether ``event_id`` is recorded missing for good (the table no longer has it: never to come)."""
    return (
        cur.execute(
            "SELECT 1 FROM missing_events WHERE site = %s AND table_id = %s AND event_id = %s",
            (table.site, table.table_id, event_id),
        ).fetchone()
        is not None
    )


def _mark(cur: psycopg.Cursor, table: TableRef, event_ids: list[int]) -> None:
    if event_ids:
        cur.execute(
            "UPDATE events SET verified = true WHERE site = %s AND table_id = %s AND event_id = ANY(%s)",
            (table.site, table.table_id, event_ids),
        )
        event_ids.clear()
