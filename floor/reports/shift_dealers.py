"""The shift's figures per dealer (issue 29): each archived settlement and dealer error is attributed to the
dealer on duty at that table at that moment, i.e. the table's latest ``events/dealer`` before it in the table's
own event order (``signed_in``: that dealer; ``signed_out``, or none: nobody signed in). A dealer's hours are
the time on duty within the window, summed over the tables dealt: from the sign-in (or the window's start) to
the next ``events/dealer`` of that table (the next dealer, or the table's closing) or the window's end."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal

import psycopg

NOBODY = None  # rounds dealt while nobody was signed in

# The dealer on duty at a table when an event of it was committed: its latest events/dealer before it.
_ON_DUTY = (
    "SELECT e.site, e.table_id, e.topic, CASE WHEN d.data->>'action' = 'signed_in' THEN d.data->>'dealer' END,"
    " count(*) FROM events e LEFT JOIN LATERAL (SELECT x.data FROM events x WHERE x.site = e.site"
    " AND x.table_id = e.table_id AND x.topic = 'events/dealer' AND x.event_id < e.event_id"
    " ORDER BY x.event_id DESC LIMIT 1) d ON true"
    " WHERE e.topic IN ('events/settlement', 'events/dealer_error') AND e.ts >= %(since)s AND e.ts < %(until)s"
    " AND (%(table)s::text IS NULL OR e.table_id = %(table)s) GROUP BY 1, 2, 3, 4"
)
# The sign-ins and -outs in the window, and each table's last one before it (who was on duty at its start: one
# index lookup per table, not a scan of the sign-ins' history).
_DUTY_EVENTS = (
    "SELECT site, table_id, event_id, ts, data->>'action', data->>'dealer' FROM events"
    " WHERE topic = 'events/dealer' AND ts >= %(since)s AND ts < %(until)s"
    " AND (%(table)s::text IS NULL OR table_id = %(table)s)"
    " UNION ALL SELECT t.site, t.table_id, e.* FROM floor_tables t CROSS JOIN LATERAL (SELECT event_id, ts,"
    " data->>'action', data->>'dealer' FROM events WHERE site = t.site AND table_id = t.table_id"
    " AND topic = 'events/dealer' AND ts < %(since)s ORDER BY event_id DESC LIMIT 1) e"
    " WHERE (%(table)s::text IS NULL OR t.table_id = %(table)s) ORDER BY 1, 2, 3"
)


@dataclass
class DealerRow:
    dealer: str | None  # None: nobody was signed in
    tables: list[str] = field(default_factory=list)
    rounds: int = 0
    dealer_errors: int = 0
    seconds: Decimal = Decimal(0)  # on duty within the window

    @property
    def hours(self) -> Decimal:
        return self.seconds / 3600

    def rounds_per_hour(self) -> Decimal | None:
        return (self.rounds / self.hours).quantize(Decimal("0.1")) if self.seconds else None

    def errors_per_100(self) -> Decimal | None:
        return (
            (Decimal(self.dealer_errors) * 100 / self.rounds).quantize(Decimal("0.1"))
            if self.rounds
            else None
        )


def dealer_rows(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> list[DealerRow]:
    """One row per dealer with rounds, errors or time on duty in the window (by name; at ``table`` only if given),
    then, if any round was dealt with nobody signed in, that row (``dealer`` None)."""
    window = {"since": since, "until": until, "table": table}
    rows: dict[str | None, DealerRow] = {}

    def get(name: str | None, table_id: str) -> DealerRow:
        row = rows.setdefault(name, DealerRow(name))
        if table_id not in row.tables:
            row.tables.append(table_id)
        return row

    for _site, table_id, topic, name, n in conn.execute(_ON_DUTY, window).fetchall():
        row = get(name, table_id)
        if topic == "events/settlement":
            row.rounds += int(n)
        else:
            row.dealer_errors += int(n)
    events = conn.execute(_DUTY_EVENTS, window).fetchall()
    for table_id, name, start, end in _duty_spans(events, since, until):
        get(name, table_id).seconds += Decimal((end - start).total_seconds())
    named = sorted((r for k, r in rows.items() if k is not None), key=lambda r: str(r.dealer))
    for r in rows.values():
        r.tables.sort()
    nobody = rows.get(NOBODY)
    return [*named, *([nobody] if nobody is not None and (nobody.rounds or nobody.dealer_errors) else [])]


def _duty_spans(
    events: Iterable[tuple[str, str, int, datetime, str, str]], since: datetime, until: datetime
) -> list[tuple[str, str, datetime, datetime]]:
    """(table, dealer, from, to) for every stretch a dealer was on duty, clipped to the window."""
    spans: list[tuple[str, str, datetime, datetime]] = []
    current: dict[tuple[str, str], tuple[str, datetime]] = {}  # (site, table) -> (dealer, since)
    for site, table_id, _eid, ts, action, name in events:
        key = (site, table_id)
        on = current.pop(key, None)
        if on is not None:
            spans.append((table_id, on[0], max(on[1], since), ts))
        if action == "signed_in" and isinstance(name, str):
            current[key] = (name, ts)
    spans += [(t, name, max(at, since), until) for (_s, t), (name, at) in current.items()]
    return [s for s in spans if s[3] > s[2]]
