"""A day's summary per table (``tablectl floor report``) and the jackpot meter history (``tablectl floor jackpot``).

Per table, for one UTC day, from the archived events:

| column | from |
|---|---|
| ``archive`` | ``complete`` or ``INCOMPLETE``: whether an event of the table that may fall in the day is not archived |
| ``rounds`` | ``events/settlement`` count |
| ``handle_minor`` | Σ hand stakes (doubles and splits included) + insurance amounts + side-bet stakes |
| ``paid_minor`` | back to the players: ``handle + Σ total_net`` (stakes returned on wins and pushes + winnings) |
| ``win_minor`` | the house's: ``-Σ total_net`` (positive when the house won) |
| ``dealer_errors`` | ``events/dealer_error`` count |
| ``faults`` | ``events/fault`` with ``state: raised`` |
| ``voids`` | ``events/round`` with ``phase: void`` |
| ``jackpot_meter_minor`` | the table's own meter after the day's last ``events/jackpot`` of it (none with a ``link``) |
| ``currency`` | the table's configured currency (queries.table_currencies; empty: the table published none) |
| ``archived_to`` ``known_to`` ``missing_ids`` ``pending_ids`` | what the figures are built on (coverage.py) |

The figures' names and meanings are floor/reports/figures.py's, the same in every report.
Money is integer minor units in the CSV (``_minor`` columns) and major units with the currency on the page. A
table whose day touches a hole of its archive is listed even without an archived event that day, and marked
``INCOMPLETE`` with the ids missing: its figures are sums of what is archived, never presented as the day's.

Values the table sent that are not numbers count as 0 (the archive keeps what it received; a report never
crashes on it). The HTML page (floor/reports/day_html.py) is self-contained (inline CSS and SVG, no script, no external
resource) and every string in it is escaped.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import psycopg

from floor.common.text import safe
from floor.reports.coverage import UNKNOWN_TABLE, Coverage, HoleKind, coverage, verdict
from floor.reports.figures import HANDLE, PAID, WIN, house_win, paid
from floor.reports.queries import table_currencies

COLUMNS = ("site", "table", "archive", "rounds", HANDLE.column, PAID.column, WIN.column, "dealer_errors",
           "faults", "voids", "jackpot_meter_minor", "currency", "archived_to", "known_to", "missing_ids",
           "pending_ids")  # fmt: skip


def num_sql(expr: str) -> str:
    """SQL: the JSON value at ``expr`` as a number, 0 when the table sent something that is not one."""
    return f"(CASE WHEN jsonb_typeof({expr}) = 'number' THEN ({expr})::text::numeric ELSE 0 END)"


def sum_of_sql(n: str, arr: str) -> str:
    """SQL: the sum of ``n`` over the elements ``x`` of the array ``data->arr`` (0 when it is not an array)."""
    return (
        f"coalesce((SELECT sum({n}) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(data->'{arr}') = 'array'"
        f" THEN data->'{arr}' ELSE '[]'::jsonb END) x), 0)"
    )


TOTAL_NET_SQL = num_sql("data->'total_net'")
ONE_TABLE = "(%s::text IS NULL OR table_id = %s)"  # SQL: every table, or the one id given (twice)


@dataclass
class TableDay:
    site: str
    table_id: str
    rounds: int = 0
    handle: int = 0
    paid: int = 0
    win: int = 0  # the house's (figures.WIN)
    dealer_errors: int = 0
    faults: int = 0
    voids: int = 0
    jackpot_meter: int | None = None
    meter: list[tuple[datetime, int]] = field(default_factory=list)
    currency: str | None = None
    coverage: Coverage | None = None  # None: the table is not in floor_tables (not archived by this floor)

    @property
    def complete(self) -> bool:
        return self.coverage is not None and self.coverage.complete

    def row(self) -> list[Any]:
        cov = self.coverage
        built_on = (
            [cov.archived_to, cov.known_to, cov.ids(HoleKind.MISSING), cov.ids(HoleKind.PENDING)]
            if cov
            else [None, None, "", ""]
        )
        return [self.site, self.table_id, verdict(cov), self.rounds,
                self.handle, self.paid, self.win, self.dealer_errors, self.faults, self.voids,
                self.jackpot_meter, self.currency or "", *built_on]  # fmt: skip


# Counted per table and window: (attribute, which events).
EVENT_COUNTS = (
    ("dealer_errors", "topic = 'events/dealer_error'"),
    ("faults", "topic = 'events/fault' AND data->>'state' = 'raised'"),
    ("voids", "topic = 'events/round' AND data->>'phase' = 'void'"),
)


def event_counts(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> Iterator[tuple[str, str, str, int]]:
    """(site, table, attribute, count) of each of ``EVENT_COUNTS`` in ``[since, until)`` (of ``table`` only if
    given)."""
    for attr, where in EVENT_COUNTS:
        for site, table_id, n in conn.execute(
            f"SELECT site, table_id, count(*) FROM events WHERE {where} AND ts >= %s AND ts < %s"
            f" AND {ONE_TABLE} GROUP BY 1, 2",
            (since, until, table, table),
        ).fetchall():
            yield site, table_id, attr, int(n)


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def meter_history(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> list[tuple[str, str, int, datetime, str, int]]:
    """(site, table, event_id, ts, action, meter) of every ``events/jackpot`` of the table's own meter carrying a
    numeric meter: one with a ``link`` is a linked progressive's (issue 40), whose meter the table does not keep."""
    return conn.execute(
        "SELECT site, table_id, event_id, ts, coalesce(data->>'action', ''), (data->>'meter')::text::numeric"
        " FROM events WHERE topic = 'events/jackpot' AND NOT (data ? 'link')"
        " AND jsonb_typeof(data->'meter') = 'number' AND ts >= %s AND ts < %s"
        " AND (%s::text IS NULL OR table_id = %s) ORDER BY site, table_id, event_id",
        (since, until, table, table),
    ).fetchall()


@dataclass(frozen=True)
class JackpotRow:
    """One row of ``tablectl floor jackpot``: an event of the table's own meter (``meter`` after it, ``link``
    None) or of a linked progressive (``link`` its name, ``meter`` None: the link's controller keeps it)."""

    site: str
    table_id: str
    event_id: int
    ts: datetime
    action: str
    meter: int | None
    link: str | None
    amount: int | None  # the event's amount, minor units: ``amount`` (own), ``amount_minor`` (linked)


def jackpot_history(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> list[JackpotRow]:
    """The own meter's events (``meter_history``) and every event for a linked progressive, in each table's
    event order."""
    amount = "CASE WHEN data ? 'link' THEN data->'amount_minor' ELSE data->'amount' END"
    rows = conn.execute(
        "SELECT site, table_id, event_id, ts, coalesce(data->>'action', ''),"
        " CASE WHEN NOT (data ? 'link') THEN (data->>'meter')::text::numeric END, data->>'link',"
        f" CASE WHEN jsonb_typeof({amount}) = 'number' THEN ({amount})::text::numeric END"
        " FROM events WHERE topic = 'events/jackpot'"
        " AND (data ? 'link' OR jsonb_typeof(data->'meter') = 'number')"
        " AND ts >= %s AND ts < %s AND (%s::text IS NULL OR table_id = %s) ORDER BY site, table_id, event_id",
        (since, until, table, table),
    ).fetchall()
    out = []
    for site, t, eid, ts, action, meter, link, amt in rows:
        out.append(JackpotRow(site, t, int(eid), ts, action, None if meter is None else int(meter),
                              None if link is None else str(link), None if amt is None else int(amt)))  # fmt: skip
    return out


def day_report(conn: psycopg.Connection, day: date, table: str | None = None) -> list[TableDay]:
    """Every table's day (``table``: that table id's only)."""
    start, end = day_bounds(day)
    out: dict[tuple[str, str], TableDay] = {}

    def get(site: str, table_id: str) -> TableDay:
        return out.setdefault((site, table_id), TableDay(site, table_id))

    handle = (
        sum_of_sql(num_sql("x->'stake'"), "hands")
        + " + " + sum_of_sql(num_sql("x->'amount'"), "insurance")
        + " + " + sum_of_sql(num_sql("x->'stake'"), "side_bets")
    )  # fmt: skip
    for site, table_id, rounds, stake_sum, net_sum in conn.execute(
        f"SELECT site, table_id, count(*), coalesce(sum({handle}), 0), coalesce(sum({TOTAL_NET_SQL}), 0)"
        " FROM events WHERE topic = 'events/settlement'"
        f" AND ts >= %s AND ts < %s AND {ONE_TABLE} GROUP BY 1, 2",
        (start, end, table, table),
    ).fetchall():
        t = get(site, table_id)
        t.rounds, t.handle, t.win = int(rounds), int(stake_sum), house_win(int(net_sum))
        t.paid = paid(t.handle, t.win)
    for site, table_id, attr, n in event_counts(conn, start, end, table):
        setattr(get(site, table_id), attr, n)
    for site, table_id, _eid, ts, _action, meter in meter_history(conn, start, end, table):
        t = get(site, table_id)
        t.meter.append((ts, int(meter)))
        t.jackpot_meter = int(meter)
    for key, cov in coverage(conn, start, end, table).items():
        if key in out or not cov.complete:  # a day lost whole to a hole is listed too
            get(*key).coverage = cov
    currencies = table_currencies(conn, table=table)
    for key, t in out.items():
        t.currency = currencies.get(key)
    return [out[k] for k in sorted(out)]


# ---- output ----
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?")


def csv_cell(value: Any) -> Any:
    """Text cells a spreadsheet would run as a formula are quoted with a leading apostrophe; a number, or a
    figure written as one ("-0.079"), stays a number."""
    if (
        isinstance(value, str)
        and value[:1] in ("=", "+", "-", "@", "\t", "\r")
        and not _NUMBER.fullmatch(value)
    ):
        return "'" + value
    return "" if value is None else value


def to_csv(rows: list[TableDay]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([csv_cell(v) for v in r.row()])
    return buf.getvalue()


def built_on(rows: list[TableDay], day: date) -> list[str]:
    """One line per table: what its figures for the day are built on (for a person, e.g. on stderr)."""
    return [
        f"{safe(r.site, 64)}/{safe(r.table_id, 64)} {day.isoformat()}: "
        + (r.coverage.summary() if r.coverage else UNKNOWN_TABLE)
        for r in rows
    ]
