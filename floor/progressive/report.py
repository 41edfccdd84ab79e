"""What a link's meters and records say (``tablectl floor progressive report``, the dashboard's link page): the
current value, reserve, overflow, base, limit, the hits by status, the last 25 wins (table, seat, round, amount),
and the contributions per table and per shift (``shift_hours`` long, starting at ``shift_anchor`` UTC), read in one
snapshot. Money in integer minor units; the meter's units (1/10,000 of a minor unit) alongside."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import datetime, time

import psycopg

from controller.jackpot.meter import UNIT
from controller.words import money
from floor.common.text import safe
from floor.progressive import journal, ledger
from floor.reports.day import csv_cell

LAST_WINS = 25


@dataclass(frozen=True, slots=True)
class TableRow:
    table_id: str
    contributions: int
    chips: int
    amount_minor: int
    to_meter_units: int


@dataclass(frozen=True, slots=True)
class ShiftRow:
    shift_start: datetime
    table_id: str
    contributions: int
    amount_minor: int
    to_meter_units: int


@dataclass(frozen=True, slots=True)
class LinkReport:
    link: ledger.Link
    hits_by_status: dict[str, int]
    last_wins: list[ledger.Hit]
    per_table: list[TableRow]
    per_shift: list[ShiftRow]
    journal_problems: list[str]


def link_report(
    conn: psycopg.Connection, link_name: str, *, shift_hours: int = 8, shift_anchor: time = time(6, 0)
) -> LinkReport | None:
    with conn.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        cur = conn.cursor()
        link = ledger.read(cur, link_name)
        if link is None:
            return None
        by_status: dict[str, int] = dict(
            cur.execute(
                "SELECT status, count(*) FROM progressive_hits WHERE link = %s GROUP BY status", (link_name,)
            ).fetchall()
        )
        tables = [
            TableRow(*r)
            for r in cur.execute(
                "SELECT table_id, count(*), sum(chips)::bigint, sum(amount_minor)::bigint, sum(to_meter_units)::bigint"
                " FROM progressive_contributions WHERE link = %s GROUP BY table_id ORDER BY table_id",
                (link_name,),
            ).fetchall()
        ]
        anchor = f"2000-01-01 {shift_anchor.strftime('%H:%M')}:00+00"
        shifts = [
            ShiftRow(*r)
            for r in cur.execute(
                "SELECT date_bin(make_interval(hours => %s), ts, %s::timestamptz) AS s, table_id, count(*),"
                " sum(amount_minor)::bigint, sum(to_meter_units)::bigint FROM progressive_contributions WHERE link = %s"
                " GROUP BY s, table_id ORDER BY s DESC, table_id LIMIT 5000",
                (shift_hours, anchor, link_name),
            ).fetchall()
        ]
        wins = ledger.last_wins(cur, link_name, LAST_WINS)
        problems = journal.verify(conn, link_name)
    return LinkReport(link, {str(k): int(v) for k, v in by_status.items()}, wins, tables, shifts, problems)


def _minor(units: int) -> str:
    whole, rest = divmod(units, UNIT)
    return f"{whole}.{rest:04d}"


def to_text(r: LinkReport) -> str:
    link, p, m = r.link, r.link.params, r.link.meter
    out = [
        f"linked progressive {safe(link.link)} (site {safe(link.site)}), {link.status.value},"
        f" parameters version {link.params_version}",
        f"  meter     {money(m.meter_units // UNIT, p.currency)} ({_minor(m.meter_units)} minor units)",
        f"  reserve   {money(m.reserve_units // UNIT, p.currency)} ({_minor(m.reserve_units)} minor units)"
        f"   overflow {money(m.overflow_units // UNIT, p.currency)} ({_minor(m.overflow_units)} minor units)",
        f"  base      {money(p.base_minor, p.currency)}   limit {money(p.limit_minor, p.currency)}"
        f"   jackpot chip {money(p.bet_value, p.currency)}"
        f"   to meter {p.increment_bp} bp, to reserve {p.reserve_bp} bp",
        f"  members   {', '.join(safe(t) for t in p.members)}",
        "  hits      " + (", ".join(f"{k} {v}" for k, v in sorted(r.hits_by_status.items())) or "none"),
        "  journal   "
        + ("intact" if not r.journal_problems else "BROKEN: " + "; ".join(r.journal_problems[:3])),
        f"last {LAST_WINS} wins (newest first):",
    ]
    out += [
        f"  #{h.order:<5} {h.ordered_at:%Y-%m-%d %H:%M:%S} table {safe(h.table_id)} seat {h.seat}"
        f" round {safe(h.round_id)} {h.combination} {money(h.amount_minor, p.currency)} {h.status.value}"
        for h in r.last_wins
    ] or ["  none"]
    out.append("contributions per table:")
    out += [
        f"  {safe(t.table_id):<12} {t.contributions:>8} rounds {t.chips:>8} chips"
        f" {money(t.amount_minor, p.currency):>16}  to meter {_minor(t.to_meter_units)} minor units"
        for t in r.per_table
    ] or ["  none"]
    out.append("contributions per shift and table:")
    out += [
        f"  {s.shift_start:%Y-%m-%d %H:%M}Z {safe(s.table_id):<12} {s.contributions:>8}"
        f" {money(s.amount_minor, p.currency):>16}"
        for s in r.per_shift
    ] or ["  none"]
    return "\n".join(out) + "\n"


CSV_HEADER = ("section", "key", "table", "seat", "round", "value_minor", "units", "status", "at")


def to_csv(r: LinkReport) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(CSV_HEADER)
    m, p = r.link.meter, r.link.params
    for key, minor, units in (
        ("meter", m.meter_units // UNIT, m.meter_units),
        ("reserve", m.reserve_units // UNIT, m.reserve_units),
        ("overflow", m.overflow_units // UNIT, m.overflow_units),
        ("base", p.base_minor, p.base_minor * UNIT),
        ("limit", p.limit_minor, p.limit_minor * UNIT),
    ):
        w.writerow(["link", key, "", "", "", minor, units, r.link.status.value, ""])
    for status, n in sorted(r.hits_by_status.items()):
        w.writerow(["hits", status, "", "", "", "", "", n, ""])
    for h in r.last_wins:
        w.writerow(
            [
                csv_cell(c)
                for c in (
                    "win",
                    h.order,
                    h.table_id,
                    h.seat,
                    h.round_id,
                    h.amount_minor,
                    "",
                    h.status.value,
                    h.ordered_at.isoformat(),
                )
            ]
        )
    for t in r.per_table:
        w.writerow(
            [
                csv_cell(c)
                for c in (
                    "table",
                    t.contributions,
                    t.table_id,
                    "",
                    "",
                    t.amount_minor,
                    t.to_meter_units,
                    "",
                    "",
                )
            ]
        )
    for s in r.per_shift:
        w.writerow(
            [
                csv_cell(c)
                for c in (
                    "shift",
                    s.contributions,
                    s.table_id,
                    "",
                    "",
                    s.amount_minor,
                    s.to_meter_units,
                    "",
                    s.shift_start.isoformat(),
                )
            ]
        )
    return buf.getvalue()
