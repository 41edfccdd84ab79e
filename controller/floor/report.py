"""A day's summary per table (``tablectl floor report``) and the jackpot meter history (``tablectl floor jackpot``).

Per table, for one UTC day, from the archived events:

| column | from |
|---|---|
| ``rounds`` | ``events/settlement`` count |
| ``staked`` | Σ hand stakes (doubles and splits included) + insurance amounts + side-bet stakes, minor units |
| ``paid`` | what went back to the players: ``staked + Σ total_net`` (stakes returned on wins and pushes + winnings) |
| ``house_net`` | ``-Σ total_net`` |
| ``dealer_errors`` | ``events/dealer_error`` count |
| ``faults`` | ``events/fault`` with ``state: raised`` |
| ``voids`` | ``events/round`` with ``phase: void`` |
| ``jackpot_meter`` | the meter after the day's last ``events/jackpot`` |

Values the table sent that are not numbers count as 0 (the archive keeps what it received; a report never
crashes on it). The HTML page is self-contained (inline CSS and SVG, no script, no external resource) and every
string in it is escaped.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

import psycopg

COLUMNS = ("site", "table", "rounds", "staked", "paid", "house_net", "dealer_errors", "faults", "voids",
           "jackpot_meter")  # fmt: skip


def _num(expr: str) -> str:
    return f"(CASE WHEN jsonb_typeof({expr}) = 'number' THEN ({expr})::text::numeric ELSE 0 END)"


_SUM_OF = "coalesce((SELECT sum({n}) FROM jsonb_array_elements(CASE WHEN jsonb_typeof(data->'{arr}') = 'array'" \
          " THEN data->'{arr}' ELSE '[]'::jsonb END) x), 0)"  # fmt: skip


_TOTAL_NET = _num("data->'total_net'")


@dataclass
class TableDay:
    site: str
    table_id: str
    rounds: int = 0
    staked: int = 0
    paid: int = 0
    house_net: int = 0
    dealer_errors: int = 0
    faults: int = 0
    voids: int = 0
    jackpot_meter: int | None = None
    meter: list[tuple[datetime, int]] = field(default_factory=list)

    def row(self) -> list[Any]:
        return [self.site, self.table_id, self.rounds, self.staked, self.paid, self.house_net,
                self.dealer_errors, self.faults, self.voids, self.jackpot_meter]  # fmt: skip


def day_bounds(day: date) -> tuple[datetime, datetime]:
    start = datetime.combine(day, time(0), tzinfo=UTC)
    return start, start + timedelta(days=1)


def meter_history(
    conn: psycopg.Connection, since: datetime, until: datetime, table: str | None = None
) -> list[tuple[str, str, int, datetime, str, int]]:
    """(site, table, event_id, ts, action, meter) of every ``events/jackpot`` carrying a numeric meter."""
    return conn.execute(
        "SELECT site, table_id, event_id, ts, coalesce(data->>'action', ''), (data->>'meter')::text::numeric"
        " FROM events WHERE topic = 'events/jackpot' AND jsonb_typeof(data->'meter') = 'number'"
        " AND ts >= %s AND ts < %s AND (%s::text IS NULL OR table_id = %s) ORDER BY site, table_id, event_id",
        (since, until, table, table),
    ).fetchall()


def day_report(conn: psycopg.Connection, day: date) -> list[TableDay]:
    start, end = day_bounds(day)
    out: dict[tuple[str, str], TableDay] = {}

    def get(site: str, table_id: str) -> TableDay:
        return out.setdefault((site, table_id), TableDay(site, table_id))

    staked = (
        _SUM_OF.format(n=_num("x->'stake'"), arr="hands")
        + " + " + _SUM_OF.format(n=_num("x->'amount'"), arr="insurance")
        + " + " + _SUM_OF.format(n=_num("x->'stake'"), arr="side_bets")
    )  # fmt: skip
    for site, table_id, rounds, stake_sum, net_sum in conn.execute(
        f"SELECT site, table_id, count(*), coalesce(sum({staked}), 0), coalesce(sum({_TOTAL_NET}), 0)"
        " FROM events WHERE topic = 'events/settlement'"
        " AND ts >= %s AND ts < %s GROUP BY 1, 2",
        (start, end),
    ).fetchall():
        t = get(site, table_id)
        t.rounds, t.staked = int(rounds), int(stake_sum)
        t.paid, t.house_net = int(stake_sum + net_sum), int(-net_sum)
    counts = (
        ("dealer_errors", "topic = 'events/dealer_error'"),
        ("faults", "topic = 'events/fault' AND data->>'state' = 'raised'"),
        ("voids", "topic = 'events/round' AND data->>'phase' = 'void'"),
    )
    for attr, where in counts:
        for site, table_id, n in conn.execute(
            f"SELECT site, table_id, count(*) FROM events WHERE {where} AND ts >= %s AND ts < %s GROUP BY 1, 2",
            (start, end),
        ).fetchall():
            setattr(get(site, table_id), attr, int(n))
    for site, table_id, _eid, ts, _action, meter in meter_history(conn, start, end):
        t = get(site, table_id)
        t.meter.append((ts, int(meter)))
        t.jackpot_meter = int(meter)
    return [out[k] for k in sorted(out)]


# ---- output ----
def _cell(value: Any) -> Any:
    """CSV cells a spreadsheet would run as a formula are quoted with a leading apostrophe."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value


def to_csv(rows: list[TableDay]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for r in rows:
        w.writerow([_cell(v) for v in r.row()])
    return buf.getvalue()


def money(minor: int | None) -> str:
    if minor is None:
        return "—"
    sign = "-" if minor < 0 else ""
    return f"{sign}{abs(minor) // 100:,}.{abs(minor) % 100:02d}"


def meter_svg(points: list[tuple[datetime, int]], day: date, width: int = 640, height: int = 160) -> str:
    """An inline SVG line of the meter over the day (x: time of day, y: meter), with its scale written."""
    if not points:
        return '<p class="none">no jackpot events this day</p>'
    start, _ = day_bounds(day)
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    span = max(hi - lo, 1)
    pad = 30

    def xy(ts: datetime, v: int) -> str:
        x = pad + (ts - start).total_seconds() / 86400 * (width - 2 * pad)
        y = height - pad - (v - lo) / span * (height - 2 * pad)
        return f"{x:.1f},{y:.1f}"

    pts = " ".join(xy(ts, v) for ts, v in points)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"'
        f' aria-label="jackpot meter over the day">'
        f'<rect x="{pad}" y="{pad}" width="{width - 2 * pad}" height="{height - 2 * pad}" class="frame"/>'
        f'<polyline points="{pts}" class="meter"/>'
        f'<text x="{pad}" y="{pad - 8}">{html.escape(money(hi))}</text>'
        f'<text x="{pad}" y="{height - 8}">{html.escape(money(lo))}</text>'
        f'<text x="{width - pad}" y="{height - 8}" text-anchor="end">00:00 – 24:00 UTC</text></svg>'
    )


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}td.t,th.t{text-align:left}
.frame{fill:#fafafa;stroke:#ccc}.meter{fill:none;stroke:#0a5;stroke-width:2}svg text{font-size:11px;fill:#555}
h2{margin-top:1.5em}"""


def to_html(rows: list[TableDay], day: date, generated: datetime | None = None) -> str:
    e = html.escape
    head = "".join(f'<th class="{"t" if c in ("site", "table") else ""}">{e(c)}</th>' for c in COLUMNS)
    body = []
    for r in rows:
        cells = [
            f'<td class="t">{e(r.site)}</td>', f'<td class="t">{e(r.table_id)}</td>', f"<td>{r.rounds}</td>",
            f"<td>{e(money(r.staked))}</td>", f"<td>{e(money(r.paid))}</td>", f"<td>{e(money(r.house_net))}</td>",
            f"<td>{r.dealer_errors}</td>", f"<td>{r.faults}</td>", f"<td>{r.voids}</td>",
            f"<td>{e(money(r.jackpot_meter))}</td>",
        ]  # fmt: skip
        body.append("<tr>" + "".join(cells) + "</tr>")
    plots = "".join(
        f"<h2>Jackpot meter — {e(r.site)}/{e(r.table_id)}</h2>{meter_svg(r.meter, day)}"
        for r in rows
        if r.meter
    )
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Floor report {e(day.isoformat())}</title><style>{_CSS}</style></head><body>"
        f"<h1>Floor report {e(day.isoformat())}</h1><p>Generated {e(when)}. Money in major units"
        " (minor units / 100).</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{plots}</body></html>\n"
    )
