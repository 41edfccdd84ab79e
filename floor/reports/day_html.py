"""The day report as a self-contained HTML page (``tablectl floor report --html``): inline CSS and SVG, no script,
no external resource (a Content-Security-Policy forbids both), every string escaped.

Money in major units with the table's currency (``1,005.00 EUR``); a table whose day touches a hole of its archive
has its row marked INCOMPLETE and a line saying which event ids are missing or still pending."""

from __future__ import annotations

import html
from datetime import UTC, date, datetime

from controller.words import money as words_money
from floor.reports.coverage import UNKNOWN_TABLE, HoleKind
from floor.reports.day import COLUMNS, TableDay, day_bounds
from floor.reports.figures import HANDLE, PAID, WIN

# The page's column headers in words (the CSV keeps the code names and says its unit: ``_minor``); the page
# shows major units with the currency.
_HEAD = {
    "site": "site",
    "table": "table",
    "archive": "archive",
    "rounds": "rounds",
    HANDLE.column: HANDLE.label,
    PAID.column: PAID.label,
    WIN.column: WIN.label,
    "dealer_errors": "dealer errors",
    "faults": "faults",
    "voids": "void rounds",
    "jackpot_meter_minor": "jackpot meter",
    "currency": "currency",
    "archived_to": "archived to event",
    "known_to": "known to event",
    "missing_ids": "missing events",
    "pending_ids": "pending events",
}
_TEXT_COLUMNS = ("site", "table", "archive", "currency", "missing_ids", "pending_ids")  # left-aligned


def money(minor: int | None, currency: str | None = None, *, sign: bool = False) -> str:
    """``-1,234.05 EUR`` from minor units (two decimals, as every currency the tables use); ``—`` when None:
    the product's one way of writing money for people (controller/words.py)."""
    return words_money(minor, currency, sign=sign)


def meter_svg(points: list[tuple[datetime, int]], day: date, currency: str | None = None) -> str:
    """An inline SVG line of the meter over the day (x: time of day, y: meter), with its scale written."""
    width, height, pad = 640, 160, 30
    if not points:
        return '<p class="none">no jackpot events this day</p>'
    start, _ = day_bounds(day)
    lo, hi = min(v for _, v in points), max(v for _, v in points)
    span = max(hi - lo, 1)

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
        f'<text x="{pad}" y="{pad - 8}">{html.escape(money(hi, currency))}</text>'
        f'<text x="{pad}" y="{height - 8}">{html.escape(money(lo, currency))}</text>'
        f'<text x="{width - pad}" y="{height - 8}" text-anchor="end">00:00 – 24:00 UTC</text></svg>'
    )


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}
td,th{border:1px solid #bbb;padding:4px 8px;text-align:right}td.t,th.t{text-align:left}
tr.incomplete td{background:#fde8e8}.bad{color:#a00;font-weight:bold}.ok{color:#070}
.frame{fill:#fafafa;stroke:#ccc}.meter{fill:none;stroke:#0a5;stroke-width:2}svg text{font-size:11px;fill:#555}
h2{margin-top:1.5em}"""


def _row(r: TableDay) -> str:
    e = html.escape
    cur = r.currency
    cov = r.coverage
    mark = '<td class="t ok">complete</td>' if r.complete else '<td class="t bad">INCOMPLETE</td>'
    cells = [
        f'<td class="t">{e(r.site)}</td>', f'<td class="t">{e(r.table_id)}</td>', mark, f"<td>{r.rounds}</td>",
        f"<td>{e(money(r.handle, cur))}</td>", f"<td>{e(money(r.paid, cur))}</td>",
        f"<td>{e(money(r.win, cur, sign=True))}</td>", f"<td>{r.dealer_errors}</td>", f"<td>{r.faults}</td>",
        f"<td>{r.voids}</td>", f"<td>{e(money(r.jackpot_meter, cur))}</td>", f'<td class="t">{e(cur or "")}</td>',
        f"<td>{cov.archived_to if cov else ''}</td>", f"<td>{cov.known_to if cov else ''}</td>",
        f'<td class="t">{e(cov.ids(HoleKind.MISSING) if cov else "")}</td>',
        f'<td class="t">{e(cov.ids(HoleKind.PENDING) if cov else "")}</td>',
    ]  # fmt: skip
    return f'<tr class="{"complete" if r.complete else "incomplete"}">' + "".join(cells) + "</tr>"


def to_html(rows: list[TableDay], day: date, generated: datetime | None = None) -> str:
    e = html.escape
    head = "".join(f'<th class="{"t" if c in _TEXT_COLUMNS else ""}">{e(_HEAD[c])}</th>' for c in COLUMNS)
    incomplete = [r for r in rows if not r.complete]
    notes = "".join(
        f'<li class="bad">{e(r.site)}/{e(r.table_id)}: '
        f"{e(r.coverage.summary() if r.coverage else UNKNOWN_TABLE)}</li>"
        for r in incomplete
    )
    verdict = (
        f'<p class="bad">INCOMPLETE: the archive lacks events of {len(incomplete)} table(s) that may fall in this'
        " day. Their figures are sums of what is archived, not the day's.</p>"
        f"<ul>{notes}</ul>"
        if incomplete
        else '<p class="ok">Every table\'s archive is complete for this day.</p>'
    )
    plots = "".join(
        f"<h2>Jackpot meter — {e(r.site)}/{e(r.table_id)}</h2>{meter_svg(r.meter, day, r.currency)}"
        for r in rows
        if r.meter
    )
    when = (generated or datetime.now(UTC)).strftime("%Y-%m-%d %H:%M UTC")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>Floor report {e(day.isoformat())}</title><style>{_CSS}</style></head><body>"
        f"<h1>Floor report {e(day.isoformat())}</h1><p>Generated {e(when)}. Money in major units with the"
        " table's currency (no currency: the table published none).</p>"
        f"{verdict}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(_row(r) for r in rows)}</tbody></table>{plots}"
        "</body></html>\n"
    )
