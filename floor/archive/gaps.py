"""Where the archive has holes, found at a cost proportional to what arrived and what is still open.

A table's ``event_id`` has no gaps in its journal. Each stored batch appends one ``floor_arrivals`` row per table
("ids lo..hi of this table arrived", in the batch's own transaction: ``store.store_envelopes``). The maintenance
pass consumes those rows (``DELETE ... RETURNING``: a row committed meanwhile stays for the next pass), so it
looks only at tables that received something, never at every table or every row:

- ``known_to`` (``floor_tables``): the highest id the floor knows the table wrote (an arrived id, or the
  ``last_event_id`` of a checkpoint; a retained checkpoint is delivered again to every archive that subscribes,
  so events lost above the watermark are found even when the table publishes nothing newer).
- per table in memory: ``scanned`` (every id up to here was either present or is in ``holes`` when it was read)
  and the open ``holes``. A pass reads only ids above ``scanned`` (at most ``WALK_LIMIT`` a pass, continued on
  the next: no blind spot however far above an open hole), and re-reads a hole only when an arrival of that
  table overlaps it.
- ``contiguous_to`` (the watermark: everything at or below it is archived or given up) = just below the first
  hole, or ``scanned``; written when it moves.

The first pass after a start (or after a failed pass) reads every table once to rebuild the state.

A pass costs a fixed number of statements however many tables it touches (the archive's cost per event does not
grow with the number of tables): one statement counts the new ids of every table touched (a table whose ids run
without a gap needs nothing more; only a table with a gap has its ids read) and one writes every watermark that
moved. Only holes an arrival overlaps are read table by table.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

import psycopg

from floor.common.messages import TableRef

WALK_LIMIT = 50_000  # ids read per table per pass (the rest on the next pass)


@dataclass(slots=True)
class Hole:
    lo: int
    hi: int
    first_seen: float  # when it was first found (monotonic): asked only after the grace period


@dataclass(frozen=True, slots=True)
class Arrival:
    table: TableRef
    lo: int
    hi: int


@dataclass(slots=True)
class _Scan:
    mark: int  # contiguous_to as stored
    scanned: int
    known_to: int
    holes: list[Hole] = field(default_factory=list)  # sorted, disjoint, all in (mark, scanned]


class GapFinder:
    """The open holes of every table (``holes``), kept up to date by ``step``; ``fill`` removes given-up ids."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._scans: dict[TableRef, _Scan] = {}
        self._fresh = True  # rebuild from floor_tables at the next step
        self._more: set[TableRef] = set()  # tables whose walk stopped at WALK_LIMIT
        self.stats = {"passes": 0, "tables_read": 0, "ids_read": 0}

    def reset(self) -> None:
        """Forget everything (after a failed pass: arrivals may have been consumed and not applied)."""
        self._scans.clear()
        self._more.clear()
        self._fresh = True

    def holes(self) -> dict[TableRef, list[Hole]]:
        return {t: s.holes for t, s in self._scans.items() if s.holes}

    def step(self, conn: psycopg.Connection) -> None:
        """One pass: consume arrivals, re-read what they touch, walk new ids, move watermarks."""
        self.stats["passes"] += 1
        touched: dict[TableRef, tuple[int, int]] = {}
        heard: dict[TableRef, datetime] = {}  # the last arrival that is contact (not a retained hand-over)
        with conn.transaction():
            for site, table_id, lo, hi, contact, at in conn.execute(
                "DELETE FROM floor_arrivals RETURNING site, table_id, lo, hi, contact, at"
            ).fetchall():
                t = TableRef(site, table_id)
                if contact:
                    heard[t] = max(heard.get(t, at), at)
                if hi == 0:  # heard from, no ids (floor/archive/contact.py heartbeat)
                    touched.setdefault(t, (0, 0))
                    continue
                old = touched.get(t)
                touched[t] = (lo, hi) if old is None or old[1] == 0 else (min(old[0], lo), max(old[1], hi))
            self._known_to(conn, touched, heard)
            if self._fresh:
                self._scans.clear()
                rows = conn.execute(
                    "SELECT site, table_id, contiguous_to, known_to FROM floor_tables"
                ).fetchall()
                for site, table_id, mark, known in rows:
                    self._scans[TableRef(site, table_id)] = _Scan(mark, mark, max(known, mark))
                touched = {t: (s.mark + 1, s.known_to) for t, s in self._scans.items() if s.known_to > s.mark}
        self._fresh = False
        for t in self._more - touched.keys():
            touched[t] = (0, 0)
        self._more.clear()
        order = sorted(touched, key=lambda t: (t.site, t.table_id))
        self._load(conn, [t for t in order if t not in self._scans])
        walks: list[tuple[TableRef, _Scan]] = []
        for table in order:
            scan = self._scans.get(table)
            if scan is None:  # no floor_tables row
                continue
            lo, hi = touched[table]
            scan.known_to = max(scan.known_to, hi)
            if hi and scan.holes and lo <= scan.holes[-1].hi:
                self._reread_holes(conn, table, scan, lo, hi)
            if scan.known_to > scan.scanned:
                walks.append((table, scan))
        self._walk_all(conn, walks)
        self._move_marks(conn, [(t, self._scans[t]) for t in order if t in self._scans])

    def _load(self, conn: psycopg.Connection, tables: list[TableRef]) -> None:
        """The state of tables first heard of after the rebuild, from ``floor_tables`` (one query for all)."""
        if not tables:
            return
        for site, table_id, mark, known in conn.execute(
            "SELECT f.site, f.table_id, f.contiguous_to, f.known_to FROM floor_tables f"
            " JOIN unnest(%s::text[], %s::text[]) AS b(site, table_id) USING (site, table_id)",
            ([t.site for t in tables], [t.table_id for t in tables]),
        ).fetchall():
            self._scans[TableRef(site, table_id)] = _Scan(mark, mark, max(mark, known))

    def _known_to(
        self,
        conn: psycopg.Connection,
        touched: dict[TableRef, tuple[int, int]],
        heard: dict[TableRef, datetime],
    ) -> None:
        """Raise known_to of the tables that received something and the last contact of those ``heard`` (an
        arrival that is news, floor/archive/contact.py), in one statement (only this pass writes these columns: no row
        is contended with the archive workers' inserts)."""
        if not touched:
            return
        order = sorted(touched, key=lambda t: (t.site, t.table_id))
        conn.execute(
            "UPDATE floor_tables f SET known_to = greatest(f.known_to, v.hi),"
            " last_contact_at = greatest(f.last_contact_at, v.heard)"  # the time it arrived; NULL: not contact
            " FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::timestamptz[]) AS v(site, table_id, hi, heard)"
            " WHERE f.site = v.site AND f.table_id = v.table_id",
            (
                [t.site for t in order],
                [t.table_id for t in order],
                [touched[t][1] for t in order],
                [heard.get(t) for t in order],
            ),
        )
        for t in order:
            scan = self._scans.get(t)
            if scan is not None:
                scan.known_to = max(scan.known_to, touched[t][1])

    def _present(self, conn: psycopg.Connection, table: TableRef, lo: int, hi: int, limit: int) -> list[int]:
        """Archived or given-up ids in [lo, hi], ascending (the primary keys' indexes only)."""
        self.stats["tables_read"] += 1
        ids = [
            r[0]
            for r in conn.execute(
                "(SELECT event_id FROM events WHERE site = %s AND table_id = %s AND event_id BETWEEN %s AND %s)"
                " UNION (SELECT event_id FROM missing_events WHERE site = %s AND table_id = %s"
                " AND event_id BETWEEN %s AND %s) ORDER BY 1 LIMIT %s",
                (table.site, table.table_id, lo, hi, table.site, table.table_id, lo, hi, limit),
            ).fetchall()
        ]
        self.stats["ids_read"] += len(ids)
        return ids

    def _reread_holes(self, conn: psycopg.Connection, table: TableRef, scan: _Scan, lo: int, hi: int) -> None:
        kept: list[Hole] = []
        for hole in scan.holes:
            if hole.hi < lo or hole.lo > hi:
                kept.append(hole)
                continue
            present = self._present(conn, table, hole.lo, hole.hi, hole.hi - hole.lo + 1)
            kept += _split(hole, present)
        scan.holes = kept

    def _walk_all(self, conn: psycopg.Connection, walks: list[tuple[TableRef, _Scan]]) -> None:
        """Walk every table with new ids at once: one query counts the archived or given-up ids above each
        table's ``scanned`` (up to ``WALK_LIMIT``). A table whose ids run without a gap from there needs nothing
        more (the usual case: its cost is one row of that query, whatever the number of tables); only a table
        with a gap has its ids read (``_walk``)."""
        if not walks:
            return
        self.stats["tables_read"] += len(walks)
        rows = conn.execute(
            "SELECT b.site, b.table_id, x.n, x.top FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[])"
            " AS b(site, table_id, lo, hi) CROSS JOIN LATERAL (SELECT count(*) AS n, max(i.event_id) AS top FROM"
            " ((SELECT event_id FROM events e WHERE e.site = b.site AND e.table_id = b.table_id"
            " AND e.event_id BETWEEN b.lo AND b.hi) UNION (SELECT event_id FROM missing_events m"
            " WHERE m.site = b.site AND m.table_id = b.table_id AND m.event_id BETWEEN b.lo AND b.hi)"
            " ORDER BY 1 LIMIT %s) i) x",
            (
                [t.site for t, _ in walks],
                [t.table_id for t, _ in walks],
                [s.scanned + 1 for _, s in walks],
                [s.known_to for _, s in walks],
                WALK_LIMIT,
            ),
        ).fetchall()
        counted = {TableRef(site, table_id): (int(n), top) for site, table_id, n, top in rows}
        now = self._clock()
        for table, scan in walks:
            n, top = counted.get(table, (0, None))
            self.stats["ids_read"] += n
            if n and top - scan.scanned != n:  # a gap among the ids: read them
                self.stats["tables_read"] -= 1  # counted again by _present
                self._walk(conn, table, scan)
                continue
            if n < WALK_LIMIT:
                end = scan.scanned if top is None else top
                if end < scan.known_to:  # events the floor knows exist above everything it has
                    scan.holes.append(Hole(end + 1, scan.known_to, now))
                scan.scanned = scan.known_to
            else:
                scan.scanned = top
                self._more.add(table)

    def _walk(self, conn: psycopg.Connection, table: TableRef, scan: _Scan) -> None:
        ids = self._present(conn, table, scan.scanned + 1, scan.known_to, WALK_LIMIT)
        now = self._clock()
        expected = scan.scanned + 1
        for event_id in ids:
            if event_id > expected:
                scan.holes.append(Hole(expected, event_id - 1, now))
            expected = event_id + 1
        if len(ids) < WALK_LIMIT:
            if expected <= scan.known_to:  # events the floor knows exist above everything it has
                scan.holes.append(Hole(expected, scan.known_to, now))
            scan.scanned = scan.known_to
        else:
            scan.scanned = ids[-1]
            self._more.add(table)

    def _move_marks(self, conn: psycopg.Connection, scans: list[tuple[TableRef, _Scan]]) -> None:
        """Write the watermarks that moved, in one statement."""
        moved = [(t, s, s.holes[0].lo - 1 if s.holes else s.scanned) for t, s in scans]
        moved = [(t, s, mark) for t, s, mark in moved if mark > s.mark]
        if not moved:
            return
        conn.execute(
            "UPDATE floor_tables f SET contiguous_to = v.mark"
            " FROM unnest(%s::text[], %s::text[], %s::bigint[]) AS v(site, table_id, mark)"
            " WHERE f.site = v.site AND f.table_id = v.table_id AND f.contiguous_to < v.mark",
            ([t.site for t, _, _ in moved], [t.table_id for t, _, _ in moved], [m for _, _, m in moved]),
        )
        for _, scan, mark in moved:
            scan.mark = mark

    def _move_mark(self, conn: psycopg.Connection, table: TableRef, scan: _Scan) -> None:
        mark = scan.holes[0].lo - 1 if scan.holes else scan.scanned
        if mark > scan.mark:
            conn.execute(
                "UPDATE floor_tables SET contiguous_to = %s WHERE site = %s AND table_id = %s"
                " AND contiguous_to < %s",
                (mark, table.site, table.table_id, mark),
            )
            scan.mark = mark

    def fill(self, conn: psycopg.Connection, table: TableRef, ids: list[int]) -> None:
        """These ids are settled (given up and recorded missing): no longer holes."""
        scan = self._scans.get(table)
        if scan is None or not ids:
            return
        done = sorted(set(ids))
        kept: list[Hole] = []
        for hole in scan.holes:
            i, j = bisect.bisect_left(done, hole.lo), bisect.bisect_right(done, hole.hi)
            kept += _split(hole, done[i:j]) if j > i else [hole]
        scan.holes = kept
        self._move_mark(conn, table, scan)


def _split(hole: Hole, present: list[int]) -> list[Hole]:
    """What is left of ``hole`` once the ascending ``present`` ids are taken out."""
    out, expected = [], hole.lo
    for event_id in present:
        if event_id > expected:
            out.append(Hole(expected, event_id - 1, hole.first_seen))
        expected = max(expected, event_id + 1)
    if expected <= hole.hi:
        out.append(Hole(expected, hole.hi, hole.first_seen))
    return out
