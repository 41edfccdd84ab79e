"""A shift's figures (``tablectl floor shift``) per table, pit and floor, for any window, from the archived events.

What a table-games manager reads, each figure from the tables' own published events; names, meanings and signs
are floor/reports/figures.py's (the glossary in docs/floor.md), the same in every report:

| figure | how |
|---|---|
| ``rounds`` | ``events/settlement`` in the window |
| ``hours_open`` | hours within the window the table had a session open (``events/session`` opened → closed); a pit's
  and the floor's: the sum over their tables (table-hours) |
| ``rounds_per_hour`` | rounds ÷ hours open: the game's pace, whatever the window (a pit's: per table open) |
| ``handle_main`` | Σ the settlements' hand stakes (doubles and splits included) |
| ``handle_side`` / ``handle_insurance`` | Σ side-bet stakes / Σ insurance amounts |
| ``handle`` | main + side + insurance: what the players staked against the house |
| ``paid`` | what went back to the players: handle + Σ ``total_net`` (stakes returned on wins and pushes + winnings) |
| ``win`` | the house's result: −Σ ``total_net`` (= handle − paid), positive when the house won |
| ``hold_pct`` | win ÷ handle × 100 (empty without handle) |
| ``initial_bets`` | Σ original main bets (each seat's first hand, halved if doubled): theoretical win's basis |
| ``theoretical_win`` | initial bets × the profile's house edge |
| ``dealer_errors`` / ``errors_per_100`` | ``events/dealer_error``; per 100 rounds |
| ``faults`` / ``voids`` | ``events/fault`` raised; ``events/round`` with phase ``void`` (bets returned) |
| ``jackpot_handle`` | the table's own meter: chips collected (``events/jackpot`` ``contribution`` without ``link``)
  × the chip value (PT-2001 r.47) |
| ``jackpot_contributions`` | what those chips added to the own meter (meter after each contribution − before it) |
| ``jackpot_payouts`` | Σ ``events/jackpot`` ``paid`` amounts without ``link`` |
| ``linked_jackpot_contributions`` | Σ ``amount_minor`` of the ``contribution`` with a ``link`` (the link's meter) |
| ``linked_jackpot_paid`` | Σ ``amount_minor`` of the ``paid`` with a ``link`` (the link's prizes paid here) |

The house edge is the settlement's profile's (controller/rules/strategy.py: basic strategy, infinite deck); a
profile the floor does not know adds nothing to ``theoretical_win``. Against ``win`` it tells luck from leak.

The jackpot's figures are staked on and paid from the progressive pool, not against the house: they are not in
``handle`` or ``win``. The chip value is the table's newest ``state/jackpot`` ``bet_value``. A table's own jackpot
figures read only the events of its own meter (no ``link``); what it sent to a linked progressive (issue 40) and
the link's prizes paid at it are the linked figures, each positive (into the pool / out of it).

A pit sums its tables, the floor its pits (pits from the floor's layout, layout.py). Each row says whether the
archive is complete for its window (coverage.py): a table's row is INCOMPLETE when a hole of its archive may fall
in the window, a pit's or the floor's when one of its tables' is; their sums are then of what is archived, and
the row says so. Money is integer minor units with the table's configured currency; rows whose tables use more
than one currency leave money empty. Every query of a report reads one snapshot of the archive
(queries.consistent_read).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import psycopg

from controller.rules.profiles import ProfileError
from floor.common.layout import Layout
from floor.reports.coverage import UNKNOWN_TABLE, Coverage, coverage
from floor.reports.day import ONE_TABLE, TOTAL_NET_SQL, csv_cell, event_counts, num_sql, sum_of_sql
from floor.reports.figures import (
    HANDLE,
    HOLD,
    HOURS_OPEN,
    INITIAL_BETS,
    JACKPOT_CONTRIBUTIONS,
    JACKPOT_HANDLE,
    JACKPOT_PAYOUTS,
    LINKED_CONTRIBUTIONS,
    LINKED_PAID,
    PAID,
    ROUNDS,
    ROUNDS_PER_HOUR,
    THEORETICAL_WIN,
    WIN,
    hold_pct,
    house_win,
    paid,
    per_hour,
)
from floor.reports.play_rounds import profile_edge
from floor.reports.queries import table_currencies
from floor.reports.shift_dealers import DealerRow

MAX_WINDOW = timedelta(days=31)  # the longest window of a shift or sessions query (command line, dashboard)
SERIES_LIMIT = 20_000  # settlements drawn in the page's plots (the figures count every one)


_BET_VALUE = num_sql("data->'bet_value'")
_AMOUNT_MINOR = num_sql("data->'amount_minor'")


@dataclass
class Figures:
    rounds: int = 0
    handle_main: int = 0
    handle_side: int = 0
    handle_insurance: int = 0
    win: int = 0  # the house's (figures.WIN)
    initial_bets: int = 0
    dealer_errors: int = 0
    faults: int = 0
    voids: int = 0
    jackpot_handle: int = 0
    jackpot_contributions: int = 0
    jackpot_payouts: int = 0
    linked_contributions: int = 0  # figures.LINKED_CONTRIBUTIONS
    linked_paid: int = 0  # figures.LINKED_PAID
    theoretical_win: int = 0

    @property
    def handle(self) -> int:
        return self.handle_main + self.handle_side + self.handle_insurance

    @property
    def paid(self) -> int:
        return paid(self.handle, self.win)

    def hold_pct(self) -> Decimal | None:
        return hold_pct(self.win, self.handle)

    def errors_per_100(self) -> Decimal | None:
        return (
            (Decimal(self.dealer_errors) * 100 / self.rounds).quantize(Decimal("0.1"))
            if self.rounds
            else None
        )

    def add(self, other: Figures) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


FiguresOf = Callable[[str, str], Figures]  # (site, table id) -> the figures of that table, made on first use


@dataclass
class ShiftRow:
    level: str  # "table" | "pit" | "floor"
    name: str  # table id, pit name or "floor"
    pit: str
    area: str
    figures: Figures = field(default_factory=Figures)
    hours: Decimal = Decimal(0)  # open (figures.HOURS_OPEN); a pit's and the floor's: Σ its tables'
    currency: str | None = None  # None: none published, or several (money then not summed)
    mixed_currency: bool = False
    tables: list[str] = field(default_factory=list)
    incomplete: list[str] = field(default_factory=list)  # the tables (with what they lack) not complete
    coverage: Coverage | None = None  # a table's own

    @property
    def complete(self) -> bool:
        return not self.incomplete

    def rounds_per_hour(self) -> Decimal | None:
        return per_hour(self.figures.rounds, self.hours)


def _table_figures(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None
) -> dict[tuple[str, str], Figures]:
    out: dict[tuple[str, str], Figures] = {}

    def get(site: str, table_id: str) -> Figures:
        return out.setdefault((site, table_id), Figures())

    main, side = sum_of_sql(num_sql("x->'stake'"), "hands"), sum_of_sql(num_sql("x->'stake'"), "side_bets")
    ins, net = sum_of_sql(num_sql("x->'amount'"), "insurance"), TOTAL_NET_SQL
    for site, table_id, n, m, s, i, t in conn.execute(
        f"SELECT site, table_id, count(*), coalesce(sum({main}), 0), coalesce(sum({side}), 0),"
        f" coalesce(sum({ins}), 0), coalesce(sum({net}), 0) FROM events WHERE topic = 'events/settlement'"
        f" AND ts >= %s AND ts < %s AND {ONE_TABLE} GROUP BY 1, 2",
        (since, until, table, table),
    ).fetchall():
        f = get(site, table_id)
        f.rounds, f.handle_main, f.handle_side, f.handle_insurance = int(n), int(m), int(s), int(i)
        f.win = house_win(int(t))
    for site, table_id, attr, n in event_counts(conn, since, until, table):
        setattr(get(site, table_id), attr, n)
    _jackpot(conn, since, until, get, table)
    _linked(conn, since, until, get, table)
    _theoretical(conn, since, until, get, table)
    return out


def _theoretical(
    conn: psycopg.Connection, since: datetime, until: datetime, get: FiguresOf, table: str | None
) -> None:
    """Σ original main bets × the house edge of each settlement's profile (per table and profile)."""
    stake = num_sql("x->'stake'")
    half = "(CASE WHEN x->>'doubled' = 'true' THEN 2 ELSE 1 END)"
    first = f"(CASE WHEN x->>'hand' = '0' THEN {stake} / {half} ELSE 0 END)"
    for site, table_id, profile, bets in conn.execute(
        f"SELECT site, table_id, data->>'profile', coalesce(sum({sum_of_sql(first, 'hands')}), 0) FROM events"
        f" WHERE topic = 'events/settlement' AND ts >= %s AND ts < %s AND {ONE_TABLE} GROUP BY 1, 2, 3",
        (since, until, table, table),
    ).fetchall():
        try:
            edge = profile_edge(profile) if isinstance(profile, str) else 0.0
        except ProfileError:
            edge = 0.0
        get(site, table_id).initial_bets += int(bets)
        get(site, table_id).theoretical_win += round(int(bets) * edge)


_E_METER, _E_CHIPS, _E_AMOUNT = (num_sql(f"e.data->'{k}'") for k in ("meter", "chips", "amount"))
# A table's own meter's jackpot events (``_jackpot``), with the alias of the events read.
_OWN_METER = (
    "{e}.topic = 'events/jackpot' AND NOT ({e}.data ? 'link') AND jsonb_typeof({e}.data->'meter') = 'number'"
)
# Per table with own-meter events in the window (ids lo..hi): the events from the last one before lo (the meter
# before the window's first) to hi, each with the meter of the one before it (none before: NULL); as the lag
# over all the table's events before ``until``, read from the window on.
_OWN_METER_EVENTS = (
    "WITH w AS (SELECT site, table_id, min(event_id) AS lo, max(event_id) AS hi FROM events e WHERE"
    f" {_OWN_METER.format(e='e')} AND ts >= %(since)s AND ts < %(until)s"
    " AND (%(table)s::text IS NULL OR table_id = %(table)s) GROUP BY 1, 2)"
    " SELECT w.site, w.table_id, j.ts, j.action, j.meter, j.chips, j.amount, j.before FROM w CROSS JOIN LATERAL"
    f" (SELECT e.event_id, e.ts, e.data->>'action' AS action, {_E_METER} AS meter, {_E_CHIPS} AS chips,"
    f" {_E_AMOUNT} AS amount, lag({_E_METER}) OVER (ORDER BY e.event_id) AS before"
    f" FROM events e WHERE e.site = w.site AND e.table_id = w.table_id AND {_OWN_METER.format(e='e')}"
    " AND e.ts < %(until)s AND e.event_id <= w.hi AND e.event_id >= coalesce((SELECT max(p.event_id) FROM events p"
    f"  WHERE p.site = w.site AND p.table_id = w.table_id AND {_OWN_METER.format(e='p')} AND p.ts < %(until)s"
    "  AND p.event_id < w.lo), w.lo)) j ORDER BY 1, 2, j.event_id"
)


def _jackpot(
    conn: psycopg.Connection, since: datetime, until: datetime, get: FiguresOf, table: str | None
) -> None:
    """Chips × chip value, what the contributions added to the meter (after minus the meter before, from the
    table's previous jackpot event, which may lie before the window), and the payouts: the table's own meter
    only (an event with a ``link`` is the linked progressive's, ``_linked``)."""
    values = dict(
        ((s, t), int(v))
        for s, t, v in conn.execute(
            "SELECT t.site, t.table_id, e.v FROM floor_tables t CROSS JOIN LATERAL (SELECT"
            f" {_BET_VALUE} AS v FROM events"
            " WHERE site = t.site AND table_id = t.table_id AND topic = 'state/jackpot'"
            " ORDER BY event_id DESC LIMIT 1) e WHERE (%s::text IS NULL OR t.table_id = %s)",
            (table, table),
        ).fetchall()
    )
    rows = conn.execute(_OWN_METER_EVENTS, {"since": since, "until": until, "table": table}).fetchall()
    for site, table_id, ts, action, meter, chips, amount, before in rows:
        if ts < since:
            continue
        f = get(site, table_id)
        if action == "contribution":
            f.jackpot_handle += int(chips) * values.get((site, table_id), 0)
            f.jackpot_contributions += int(meter - before) if before is not None else 0
        elif action == "paid":
            f.jackpot_payouts += int(amount)


_LINKED_ADDS = {"contribution": "linked_contributions", "paid": "linked_paid"}  # action -> Figures attribute


def _linked(
    conn: psycopg.Connection, since: datetime, until: datetime, get: FiguresOf, table: str | None
) -> None:
    """What each table sent to a linked progressive and the link's prizes paid at it (figures.LINKED_*): Σ the
    ``amount_minor`` of its ``events/jackpot`` with a ``link``, as the table published them."""
    for site, table_id, action, amount in conn.execute(
        f"SELECT site, table_id, data->>'action', coalesce(sum({_AMOUNT_MINOR}), 0) FROM events"
        " WHERE topic = 'events/jackpot' AND data ? 'link' AND data->>'action' = ANY(%s)"
        f" AND ts >= %s AND ts < %s AND {ONE_TABLE} GROUP BY 1, 2, 3",
        (list(_LINKED_ADDS), since, until, table, table),
    ).fetchall():
        f = get(site, table_id)
        attr = _LINKED_ADDS[action]
        setattr(f, attr, getattr(f, attr) + int(amount))


# Each table's session events in the window, and its last one before it (whether it was open at the start: one
# index lookup per table, not a scan of the sessions' history).
_SESSION_EVENTS = (
    "SELECT site, table_id, event_id, ts, data->>'action' FROM events"
    " WHERE topic = 'events/session' AND ts >= %(since)s AND ts < %(until)s"
    " AND (%(table)s::text IS NULL OR table_id = %(table)s)"
    " UNION ALL SELECT t.site, t.table_id, e.* FROM floor_tables t CROSS JOIN LATERAL (SELECT event_id, ts,"
    " data->>'action' FROM events WHERE site = t.site AND table_id = t.table_id AND topic = 'events/session'"
    " AND ts < %(since)s ORDER BY event_id DESC LIMIT 1) e WHERE (%(table)s::text IS NULL OR t.table_id = %(table)s)"
    " ORDER BY 1, 2, 3"
)


def open_hours(
    conn: psycopg.Connection,
    since: datetime,
    until: datetime,
    now: datetime | None = None,
    table: str | None = None,
) -> dict[tuple[str, str], Decimal]:
    """Hours within ``[since, until)`` each table had a session open (figures.HOURS_OPEN): from each
    ``events/session`` ``opened`` to the next session event; one still open counts to ``until`` or ``now``,
    whichever is earlier (the future is not open time)."""
    end = min(until, now or datetime.now(UTC))
    seconds: dict[tuple[str, str], float] = {}
    opened: dict[tuple[str, str], datetime] = {}

    def add(key: tuple[str, str], start: datetime, stop: datetime) -> None:
        start, stop = max(start, since), min(stop, end)
        if stop > start:
            seconds[key] = seconds.get(key, 0.0) + (stop - start).total_seconds()

    window = {"since": since, "until": until, "table": table}
    for site, table_id, _eid, ts, action in conn.execute(_SESSION_EVENTS, window).fetchall():
        key = (site, table_id)
        at = opened.pop(key, None)
        if at is not None:
            add(key, at, ts)
        if action == "opened":
            opened[key] = ts
    for key, at in opened.items():
        add(key, at, end)
    return {k: Decimal(str(v)) / 3600 for k, v in seconds.items()}


def shift_report(
    conn: psycopg.Connection,
    since: datetime,
    until: datetime,
    layout: Layout,
    now: datetime | None = None,
    table: str | None = None,
) -> list[ShiftRow]:
    """Rows for every table with anything in the window or a hole touching it (``table``: that table id's only),
    each pit and the floor: tables first (by pit in the layout's order), then pits, then the floor. Call it inside
    ``consistent_read``."""
    figures = _table_figures(conn, since, until, table)
    covers = coverage(conn, since, until, table)
    currencies = table_currencies(conn, table=table)
    keys = sorted(set(figures) | {k for k, c in covers.items() if not c.complete})
    hours = open_hours(conn, since, until, now, table)
    tables: list[ShiftRow] = []
    for site, table_id in keys:
        pit = layout.pit_of(table_id)
        row = ShiftRow("table", table_id, pit.name, pit.area, figures.get((site, table_id), Figures()),
                       hours.get((site, table_id), Decimal(0)))  # fmt: skip
        row.currency, row.tables = currencies.get((site, table_id)), [table_id]
        row.coverage = covers.get((site, table_id))
        if row.coverage is None or not row.coverage.complete:
            row.incomplete = [f"{table_id}: {row.coverage.summary() if row.coverage else UNKNOWN_TABLE}"]
        tables.append(row)
    order = layout.order()
    tables.sort(key=lambda r: (order.get(r.pit, len(order)), r.pit, r.name))
    pits: dict[str, ShiftRow] = {}
    floor = ShiftRow("floor", "floor", "", "")
    for row in tables:
        pit_row = pits.setdefault(row.pit, ShiftRow("pit", row.pit, row.pit, row.area))
        for group in (pit_row, floor):
            _sum_into(group, row)
    return [*tables, *pits.values(), floor]


def _sum_into(group: ShiftRow, row: ShiftRow) -> None:
    group.figures.add(row.figures)
    group.hours += row.hours
    group.tables.append(row.name)
    group.incomplete += row.incomplete
    if row.currency and group.currency not in (None, row.currency):
        group.mixed_currency = True
    group.currency = group.currency or row.currency


HOURS_ON_DUTY = "hours_on_duty"  # a dealer's row: the hours its rounds per hour are counted over
COLUMNS = ("level", "area", "pit", "table", "archive", ROUNDS.column, HOURS_OPEN.column, HOURS_ON_DUTY,
           ROUNDS_PER_HOUR.column,
           HANDLE.column, "handle_main_minor", "handle_side_minor", "handle_insurance_minor", PAID.column,
           WIN.column, HOLD.column, INITIAL_BETS.column, THEORETICAL_WIN.column, "dealer_errors",
           "errors_per_100_rounds", "faults", "voids",
           JACKPOT_HANDLE.column, JACKPOT_CONTRIBUTIONS.column, JACKPOT_PAYOUTS.column,
           LINKED_CONTRIBUTIONS.column, LINKED_PAID.column, "currency",
           "incomplete", "dealer")  # fmt: skip


def row_values(r: ShiftRow) -> list[object]:
    f = r.figures
    money = (f.handle, f.handle_main, f.handle_side, f.handle_insurance, f.paid, f.win, f.jackpot_handle,
             f.jackpot_contributions, f.jackpot_payouts, f.theoretical_win, f.initial_bets,
             f.linked_contributions, f.linked_paid)  # fmt: skip
    m = [None if r.mixed_currency else v for v in money]
    table = r.name if r.level == "table" else ""
    return [r.level, r.area, r.pit, table, "complete" if r.complete else "INCOMPLETE", f.rounds,
            r.hours.quantize(Decimal("0.01")), None, r.rounds_per_hour(), m[0], m[1], m[2], m[3], m[4], m[5],
            f.hold_pct(), m[10], m[9], f.dealer_errors, f.errors_per_100(), f.faults, f.voids, m[6], m[7], m[8],
            m[11], m[12], "mixed" if r.mixed_currency else (r.currency or ""), "; ".join(r.incomplete), ""]  # fmt: skip


def dealer_incomplete(d: DealerRow, rows: list[ShiftRow]) -> list[str]:
    """A dealer's figures are as complete as the archives of the tables dealt."""
    return [line for r in rows if r.level == "table" and r.name in d.tables for line in r.incomplete]


def dealer_values(d: DealerRow, rows: list[ShiftRow]) -> list[object]:
    """A dealer's row in the table's columns (issue 29): the tables dealt, rounds, hours on duty (its own
    column), rounds per hour on duty, dealer errors and per 100 rounds; the money columns stay empty (the
    house's figures are the tables')."""
    missing = dealer_incomplete(d, rows)
    values: dict[str, object] = {
        "level": "dealer", "table": " ".join(d.tables), "archive": "INCOMPLETE" if missing else "complete",
        "rounds": d.rounds, HOURS_ON_DUTY: d.hours.quantize(Decimal("0.01")),
        ROUNDS_PER_HOUR.column: d.rounds_per_hour(),
        "dealer_errors": d.dealer_errors, "errors_per_100_rounds": d.errors_per_100(),
        "incomplete": "; ".join(missing), "dealer": d.dealer if d.dealer is not None else NOBODY_SIGNED_IN,
    }  # fmt: skip
    return [values.get(c) for c in COLUMNS]


NOBODY_SIGNED_IN = "(nobody signed in)"


def to_csv(rows: list[ShiftRow], dealers: Sequence[DealerRow] = ()) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([csv_cell("" if v is None else v) for v in row_values(r)])
    for d in dealers:
        w.writerow([csv_cell("" if v is None else v) for v in dealer_values(d, rows)])
    return buf.getvalue()


def win_series(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> list[tuple[datetime, int]]:
    """(ts, the house's result of that round) of the window's settlements in time order, for the plots."""
    rows = conn.execute(
        f"SELECT ts, {TOTAL_NET_SQL} FROM events WHERE topic = 'events/settlement'"
        f" AND ts >= %s AND ts < %s AND {ONE_TABLE} ORDER BY ts LIMIT %s",
        (since, until, table, table, SERIES_LIMIT),
    ).fetchall()
    return [(ts, house_win(int(v))) for ts, v in rows]
