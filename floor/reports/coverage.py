"""What a figure of the floor is built on: per table and time window, whether the archive is complete there.

A table's ``event_id`` is gapless in its journal, so an id the archive does not hold is a hole. Per table:

- ``archived_to``: every id at or below it is archived or given up (``floor_tables.contiguous_to``, the repair's
  watermark, moved up here over what is archived above it: the report does not wait for a maintenance pass);
- ``known_to``: the highest id the table is known to have published (the newest archived id, or a verified or
  not yet verified checkpoint's ``last_event_id`` above it);
- the holes: ids not archived, each run either **missing** (given up: in ``missing_events``, named in an
  ``event_missing`` floor alert) or **pending** (above the watermark, or up to ``known_to``, still expected from
  the re-fetch).

A hole lies between two archived events (the one before it and the one after, if any), so its time is bounded by
theirs; a window ``[since, until)`` is **incomplete** when a hole may fall in it: the archived event before the
hole is earlier than ``until`` and the one after it (none: still open) is not earlier than ``since``. The
event ids are committed in time order on the table, so this never calls a window complete that a hole touches.
A table the floor last heard ``offline`` is said so (later events may not have arrived), without a hole.

A table **out of reach** (floor/archive/contact.py: no contact for ``CONTACT_STALE_S``, or its bridge's link down, while
it did not say ``offline``) may have written events the floor cannot know of: every window that reaches past its last
contact is INCOMPLETE, worded by ``reach_words`` ("out of reach since 2026-11-29 03:56 UTC, figures to 03:55 UTC":
the last contact, and the time of the newest event the figures include). The report writers (``floor report``,
``floor shift``, ``floor rounds``, the table page, the dashboard) all print ``Coverage.summary``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import psycopg

from floor.archive.contact import CONTACT_STALE_S, Contact, archive_receiving
from floor.common.messages import TableRef
from floor.common.tableset import Only, floor_tables, keys_filter

HOLE_LIMIT = 10_000  # holes read per query; a table beyond it is marked incomplete for every window
UNKNOWN_TABLE = "INCOMPLETE: the table is not known to this floor's archive"


class HoleKind(StrEnum):
    MISSING = "missing"  # given up: the table no longer has it (missing_events)
    PENDING = "pending"  # not archived yet; the repair still asks the table for it


@dataclass(frozen=True, slots=True)
class Hole:
    lo: int
    hi: int
    kind: HoleKind
    after: datetime | None  # ts of the archived event just before the hole (None: none before it)
    before: datetime | None  # ts of the archived event just after it (None: nothing archived after it yet)

    @property
    def count(self) -> int:
        return self.hi - self.lo + 1

    def text(self) -> str:
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"

    def touches(self, since: datetime | None, until: datetime | None) -> bool:
        return (until is None or self.after is None or self.after < until) and (
            since is None or self.before is None or self.before >= since
        )


@dataclass(frozen=True, slots=True)
class Coverage:
    """One table over one window."""

    site: str
    table_id: str
    archived_to: int
    known_to: int
    holes: tuple[Hole, ...]  # the holes that may fall in the window
    status: str | None = None
    status_at: datetime | None = None
    truncated: bool = False  # more holes than HOLE_LIMIT: not all examined
    out_of_reach_since: datetime | None = None  # the last contact, when out of reach past the window's start
    figures_to: datetime | None = None  # the time of the newest event at or below archived_to
    archive_down: bool = False  # out_of_reach_since is when the archive stopped receiving, not the table's

    @property
    def complete(self) -> bool:
        return not self.holes and not self.truncated and self.out_of_reach_since is None

    @property
    def verdict(self) -> str:
        return verdict(self)

    def ids(self, kind: HoleKind) -> str:
        """``lo-hi`` ranges separated by spaces (CSV-safe: digits, ``-`` and spaces only)."""
        return " ".join(h.text() for h in self.holes if h.kind is kind)

    def count(self, kind: HoleKind) -> int:
        return sum(h.count for h in self.holes if h.kind is kind)

    def summary(self) -> str:
        """One line a person reads: what the figures of this table and window are built on."""
        head = f"archived to event {self.archived_to}, known to {self.known_to}"
        parts = []
        for kind, what in (
            (HoleKind.MISSING, "missing for good"),
            (HoleKind.PENDING, "pending (not archived yet)"),
        ):
            if self.count(kind):
                parts.append(f"{what}: {self.count(kind)} event(s), ids {self.ids(kind)}")
        if self.truncated:
            parts.append(f"more than {HOLE_LIMIT} holes: not all examined")
        offline = ""
        if self.status == "offline":
            when = self.status_at.isoformat() if self.status_at else "an unknown time"
            offline = f"; table offline since {when}: later events may not have arrived"
        if self.out_of_reach_since is not None:
            parts.insert(0, reach_words(self.out_of_reach_since, self.figures_to, self.archive_down))
        if not parts:
            return f"complete ({head}){offline}"
        return f"INCOMPLETE ({head}): " + "; ".join(parts) + offline


def _clock(when: datetime, day: bool) -> str:
    return when.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC" if day else "%H:%M UTC")


def reach_words(since: datetime, figures_to: datetime | None, archive_down: bool = False) -> str:
    """What a figure of a table out of reach rests on: "out of reach since 2026-11-29 03:56 UTC, figures to
    03:55 UTC" (the date again when the figures end on another day); with the archive's workers away, that instead:
    "archive not receiving since ..." (the table may be fine)."""
    what = "archive not receiving (no archive worker subscribed)" if archive_down else "out of reach"
    if figures_to is None:
        return f"{what} since {_clock(since, True)}, no figures archived"
    other_day = figures_to.astimezone(UTC).date() != since.astimezone(UTC).date()
    return f"{what} since {_clock(since, True)}, figures to {_clock(figures_to, other_day)}"


def verdict(cov: Coverage | None) -> str:
    """``complete`` or ``INCOMPLETE`` (a table the archive does not know is never complete)."""
    return "complete" if cov is not None and cov.complete else "INCOMPLETE"


@dataclass
class _Table:
    site: str
    table_id: str
    mark: int
    status: str | None
    status_at: datetime | None
    top: int  # newest archived id
    top_ts: datetime | None
    checkpoint_to: int
    holes: list[Hole]
    truncated: bool = False
    unreachable_since: datetime | None = (
        None  # out of reach now (floor/archive/contact.py): since its last contact
    )


def _tables(conn: psycopg.Connection, table: str | None, only: Only) -> dict[tuple[str, str], _Table]:
    tables, params = floor_tables(only)
    rows = conn.execute(
        "SELECT t.site, t.table_id, t.contiguous_to, t.status, t.status_at, coalesce(e.event_id, 0), e.ts,"
        f" coalesce(c.last_event_id, 0), t.link, t.link_at, t.last_contact_at, now() FROM {tables} t"
        " LEFT JOIN LATERAL (SELECT event_id, ts FROM events WHERE site = t.site AND table_id = t.table_id"
        "  ORDER BY event_id DESC LIMIT 1) e ON true"
        " LEFT JOIN LATERAL (SELECT last_event_id FROM checkpoints WHERE site = t.site AND table_id = t.table_id"
        "  AND chain <> 'rejected' AND signature_ok IS NOT FALSE ORDER BY seq DESC LIMIT 1) c ON true"
        " WHERE (%s::text IS NULL OR t.table_id = %s)",
        (*params, table, table),
    ).fetchall()
    out = {}
    for r in rows:
        t = _Table(r[0], r[1], int(r[2]), r[3], r[4], int(r[5]), r[6], int(r[7]), [])
        contact = Contact(TableRef(r[0], r[1]), r[3], r[8], r[9], r[10])
        # offline: said so, it sends nothing more; never heard from live (an archive filled otherwise): unknown
        heard = r[10] is not None or r[8] is not None
        if r[3] != "offline" and heard and not contact.reachable(r[11]):
            t.unreachable_since = r[10] or r[9] or r[11]
        out[(r[0], r[1])] = t
    return out


def _gaps_above_mark(
    conn: psycopg.Connection, table: str | None, only: Only
) -> list[tuple[str, str, int, int, datetime | None, datetime]]:
    """Runs of ids not archived above each table's watermark, with the times of the archived ids around them:
    one index range scan per table over the ids above its watermark (few while the repair keeps up)."""
    tables, params = floor_tables(only)
    return conn.execute(
        f"SELECT t.site, t.table_id, s.prev + 1, s.event_id - 1, s.prev_ts, s.ts FROM {tables} t"
        " CROSS JOIN LATERAL (SELECT event_id, ts, lag(event_id, 1, t.contiguous_to) OVER w AS prev,"
        "  lag(ts) OVER w AS prev_ts FROM events WHERE site = t.site AND table_id = t.table_id"
        "  AND event_id > t.contiguous_to WINDOW w AS (ORDER BY event_id)) s"
        " WHERE s.event_id > s.prev + 1 AND (%s::text IS NULL OR t.table_id = %s)"
        " ORDER BY t.site, t.table_id, s.prev LIMIT %s",
        (*params, table, table, HOLE_LIMIT),
    ).fetchall()


def _missing_runs(conn: psycopg.Connection, table: str | None, only: Only) -> list[tuple[str, str, int, int]]:
    """Runs of ids given up (and still not archived)."""
    bounded, params = keys_filter(only, "m")
    return conn.execute(
        "SELECT site, table_id, min(event_id), max(event_id) FROM ("
        " SELECT m.site, m.table_id, m.event_id,"
        "  m.event_id - row_number() OVER (PARTITION BY m.site, m.table_id ORDER BY m.event_id) AS run"
        f" FROM missing_events m WHERE (%s::text IS NULL OR m.table_id = %s){bounded} AND NOT EXISTS"
        " (SELECT 1 FROM events e"
        "  WHERE e.site = m.site AND e.table_id = m.table_id AND e.event_id = m.event_id)) s"
        " GROUP BY site, table_id, run ORDER BY 1, 2, 3 LIMIT %s",
        (table, table, *params, HOLE_LIMIT),
    ).fetchall()


_NEIGHBOUR = {  # the archived event just before / just after an id (one index lookup each)
    True: "SELECT ts FROM events WHERE site = %s AND table_id = %s AND event_id < %s ORDER BY event_id DESC LIMIT 1",
    False: "SELECT ts FROM events WHERE site = %s AND table_id = %s AND event_id > %s ORDER BY event_id LIMIT 1",
}


def _neighbour_ts(
    conn: psycopg.Connection, site: str, table_id: str, event_id: int, before: bool
) -> datetime | None:
    row = conn.execute(_NEIGHBOUR[before], (site, table_id, event_id)).fetchone()
    return row[0] if row else None


def _outside(lo: int, hi: int, covered: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``[lo, hi]`` in none of the ``covered`` ranges."""
    out, at = [], lo
    for c_lo, c_hi in sorted(covered):
        if c_hi < at or c_lo > hi:
            continue
        if c_lo > at:
            out.append((at, c_lo - 1))
        at = max(at, c_hi + 1)
    if at <= hi:
        out.append((at, hi))
    return out


def _split(lo: int, hi: int, missing: list[tuple[int, int]]) -> list[tuple[int, int, HoleKind]]:
    """``[lo, hi]`` cut into missing and pending runs."""
    out, at = [], lo
    for m_lo, m_hi in missing:
        if m_hi < at or m_lo > hi:
            continue
        if m_lo > at:
            out.append((at, m_lo - 1, HoleKind.PENDING))
        out.append((max(m_lo, at), min(m_hi, hi), HoleKind.MISSING))
        at = min(m_hi, hi) + 1
    if at <= hi:
        out.append((at, hi, HoleKind.PENDING))
    return out


def table_holes(
    conn: psycopg.Connection, table: str | None = None, only: Only = None
) -> dict[tuple[str, str], _Table]:
    """Every known table (or those with this table id, or of ``only``: tableset.py) with all its holes, oldest
    first."""
    tables = _tables(conn, table, only)
    missing: dict[tuple[str, str], list[tuple[int, int]]] = {}
    runs = _missing_runs(conn, table, only)
    for site, table_id, lo, hi in runs:
        missing.setdefault((site, table_id), []).append((int(lo), int(hi)))
    gaps = _gaps_above_mark(conn, table, only)
    for rows in (gaps, runs):  # read up to the limit: the last table read and those after it may have more
        if len(rows) >= HOLE_LIMIT:
            for key, t in tables.items():
                t.truncated = t.truncated or key >= (rows[-1][0], rows[-1][1])
    spans: dict[tuple[str, str], list[tuple[int, int, datetime | None, datetime | None]]] = {}
    for site, table_id, lo, hi, ts_after, ts_before in gaps:
        spans.setdefault((site, table_id), []).append((int(lo), int(hi), ts_after, ts_before))
    for key, t in tables.items():
        tail_from = max(t.top, t.mark) + 1
        if t.checkpoint_to >= tail_from:  # the table said it has more than the archive holds
            spans.setdefault(key, []).append((tail_from, t.checkpoint_to, t.top_ts, None))
        m = missing.get(key, [])
        covered = [(lo, hi) for lo, hi, _a, _b in spans.get(key, [])]
        for m_lo, m_hi in m:  # given-up runs at or below the watermark lie in no gap above it
            for lo, hi in _outside(m_lo, m_hi, covered):
                spans.setdefault(key, []).append((lo, hi, None, None))
        for lo, hi, after, before in sorted(spans.get(key, []), key=lambda s: s[0]):
            if after is None and lo > 1:
                after = _neighbour_ts(conn, t.site, t.table_id, lo, before=True)
            if before is None and hi < t.top:
                before = _neighbour_ts(conn, t.site, t.table_id, hi, before=False)
            t.holes.extend(Hole(a, b, kind, after, before) for a, b, kind in _split(lo, hi, m))
    return tables


def coverage(
    conn: psycopg.Connection,
    since: datetime | None,
    until: datetime | None,
    table: str | None = None,
    only: Only = None,
) -> dict[tuple[str, str], Coverage]:
    """Per table (of ``only``, tableset.py, when given): what the archive holds for the window ``[since, until)``
    (None: unbounded)."""
    out = {}
    health = archive_receiving(conn)
    for key, t in table_holes(conn, table, only).items():
        pending = [h.lo for h in t.holes if h.kind is HoleKind.PENDING]
        given_up = max((h.hi for h in t.holes if h.kind is HoleKind.MISSING), default=0)
        archived_to = max(t.mark, (min(pending) - 1) if pending else max(t.top, given_up))
        window = tuple(h for h in t.holes if h.touches(since, until))
        away, archive_down = t.unreachable_since, False
        if health.receiving is False and t.status != "offline":
            stopped = health.last_seen or datetime.now(UTC)
            # the table is known to be away only if it had been quiet CONTACT_STALE_S while the archive received
            if away is None or away + timedelta(seconds=CONTACT_STALE_S) >= stopped:
                away, archive_down = stopped, True
        if away is not None and until is not None and until <= away:
            away = None  # the window ended before the table went out of reach
        figures_to = None
        if away is not None:
            figures_to = (
                t.top_ts
                if archived_to >= t.top
                else _neighbour_ts(conn, t.site, t.table_id, archived_to + 1, True)
            )
        out[key] = Coverage(
            t.site,
            t.table_id,
            archived_to,
            max(t.top, t.checkpoint_to, t.mark, given_up),
            window,
            t.status,
            t.status_at,
            t.truncated,
            away,
            figures_to,
            archive_down,
        )
    return out
