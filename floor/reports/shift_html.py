"""The shift report as a self-contained HTML page (``tablectl floor shift --html``): inline CSS and SVG, no script,
no external resource (a Content-Security-Policy forbids both), every string escaped. Money in major units with the
currency; plots of the house's win over the shift, rounds settled in each hour and each table's jackpot meter;
rows whose archive is not complete for the window are marked INCOMPLETE with what they lack; under them what
each figure means (figures.GLOSSARY)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import datetime, timedelta
from decimal import Decimal

from floor.reports.day_html import money
from floor.reports.figures import (
    GLOSSARY,
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
)
from floor.reports.shift import NOBODY_SIGNED_IN, ShiftRow, dealer_incomplete
from floor.reports.shift_dealers import DealerRow

_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:1em 0}"
    "th,td{border:1px solid #bbb;padding:.25em .5em;text-align:right}th{background:#eee}"
    "td.t{text-align:left}tr.pit td{font-weight:bold;background:#f4f4f4}tr.floor td{font-weight:bold;"
    "background:#e8e8e8}.bad{color:#a00;font-weight:bold}svg{background:#fafafa;border:1px solid #ddd}"
)
_W, _H, _PAD = 720, 180, 40


def _x(ts: datetime, since: datetime, until: datetime) -> float:
    span = max((until - since).total_seconds(), 1.0)
    return _PAD + (ts - since).total_seconds() / span * (_W - 2 * _PAD)


def _svg(title: str, body: str, lo: str, hi: str, since: datetime, until: datetime) -> str:
    e = html.escape
    return (
        f'<figure><figcaption>{e(title)}</figcaption><svg width="{_W}" height="{_H}" role="img" '
        f'aria-label="{e(title)}"><text x="2" y="14" font-size="11">{e(hi)}</text>'
        f'<text x="2" y="{_H - _PAD + 4}" font-size="11">{e(lo)}</text>'
        f'<text x="{_PAD}" y="{_H - 8}" font-size="11">{e(since.strftime("%Y-%m-%d %H:%M"))} UTC</text>'
        f'<text x="{_W - _PAD - 120}" y="{_H - 8}" font-size="11">{e(until.strftime("%Y-%m-%d %H:%M"))} UTC</text>'
        f"{body}</svg></figure>"
    )


def win_plot(
    points: list[tuple[datetime, int]], since: datetime, until: datetime, currency: str | None
) -> str:
    """The house's win accumulated over the shift (x: time, y: win so far)."""
    if not points:
        return "<p>no rounds settled in the window</p>"
    acc, line = 0, []
    for ts, v in points:
        acc += v
        line.append((ts, acc))
    lo, hi = min(0, *(v for _, v in line)), max(0, *(v for _, v in line))
    span = max(hi - lo, 1)

    def y(v: int) -> float:
        return _H - _PAD - (v - lo) / span * (_H - 2 * _PAD)

    pts = " ".join(f"{_x(ts, since, until):.1f},{y(v):.1f}" for ts, v in line)
    zero = f'<line x1="{_PAD}" x2="{_W - _PAD}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="#999"/>'
    body = zero + f'<polyline fill="none" stroke="#06c" stroke-width="1.5" points="{pts}"/>'
    return _svg("win over the shift", body, money(lo, currency), money(hi, currency), since, until)


def rounds_plot(points: list[tuple[datetime, int]], since: datetime, until: datetime) -> str:
    """Rounds settled in each hour of the window, as bars."""
    hours = max(
        1, int((until - since).total_seconds() // 3600) + (1 if (until - since) % timedelta(hours=1) else 0)
    )
    counts = [0] * hours
    for ts, _ in points:
        counts[min(hours - 1, int((ts - since).total_seconds() // 3600))] += 1
    top = max(counts) or 1
    bar = (_W - 2 * _PAD) / hours
    body = "".join(
        f'<rect x="{_PAD + i * bar:.1f}" y="{_H - _PAD - n / top * (_H - 2 * _PAD):.1f}" width="{bar * 0.8:.1f}" '
        f'height="{n / top * (_H - 2 * _PAD):.1f}" fill="#4a4"><title>{n} rounds</title></rect>'
        for i, n in enumerate(counts)
    )
    return _svg("rounds settled in each hour of the window", body, "0", str(top), since, until)


def meter_plot(history: dict[str, list[tuple[datetime, int]]], since: datetime, until: datetime) -> str:
    """Each table's jackpot meter over the window."""
    if not any(history.values()):
        return "<p>no jackpot events in the window</p>"
    values = [v for pts in history.values() for _, v in pts]
    lo, hi = min(values), max(values)
    span = max(hi - lo, 1)
    lines = []
    for pts in history.values():
        if pts:
            xy = " ".join(
                f"{_x(ts, since, until):.1f},{_H - _PAD - (v - lo) / span * (_H - 2 * _PAD):.1f}"
                for ts, v in pts
            )
            lines.append(f'<polyline fill="none" stroke="#b60" points="{xy}"/>')
    return _svg("jackpot meter, each table", "".join(lines), money(lo), money(hi), since, until)


def cells_text(r: ShiftRow) -> list[str]:
    """A row's cells as a person reads them, in ``HEAD``'s order (plain text; the dashboard's shift page, this
    page's table and the terminal's). The figures people compare come first (win and hold fit a tablet)."""
    f, cur = r.figures, (None if r.mixed_currency else r.currency)

    def m(v: int, sign: bool = False) -> str:
        return "mixed currencies" if r.mixed_currency else money(v, cur, sign=sign)

    def opt(v: object) -> str:
        return "—" if v is None else str(v)

    archive = "complete" if r.complete else "INCOMPLETE"
    name = r.name if r.level != "floor" else "whole floor"
    hold = f.hold_pct()
    return [name, archive, str(f.rounds), opt(r.rounds_per_hour()), m(f.handle), m(f.win, sign=True),
            "—" if hold is None else f"{hold:+}%" if hold else "0.00%", m(f.paid),
            m(f.theoretical_win, sign=True), m(f.initial_bets), str(r.hours.quantize(Decimal("0.01"))),
            m(f.handle_main), m(f.handle_side), m(f.handle_insurance), str(f.dealer_errors),
            opt(f.errors_per_100()), str(f.faults), str(f.voids), m(f.jackpot_handle), m(f.jackpot_contributions),
            m(f.jackpot_payouts), m(f.linked_contributions), m(f.linked_paid), r.area]  # fmt: skip


ARCHIVE_CELL = 1  # the index of the archive verdict in ``cells_text``
TEXT_CELLS = 2  # the first cells, left-aligned (names and the verdict)


def _cells(r: ShiftRow) -> list[str]:
    cells = [html.escape(c) for c in cells_text(r)]
    if not r.complete:
        cells[ARCHIVE_CELL] = '<span class="bad">INCOMPLETE</span>'
    return cells


HEAD = ("table / pit", "archive", ROUNDS.label, ROUNDS_PER_HOUR.label, HANDLE.label, WIN.label, HOLD.label,
        PAID.label, THEORETICAL_WIN.label, INITIAL_BETS.label, HOURS_OPEN.label, "main bets", "side bets",
        "insurance", "dealer errors", "errors per 100 rounds", "faults", "voided rounds", JACKPOT_HANDLE.label,
        JACKPOT_CONTRIBUTIONS.label, JACKPOT_PAYOUTS.label, LINKED_CONTRIBUTIONS.label, LINKED_PAID.label,
        "area")  # fmt: skip


def to_html(
    rows: list[ShiftRow],
    since: datetime,
    until: datetime,
    wins: list[tuple[datetime, int]],
    meters: dict[str, list[tuple[datetime, int]]],
    dealers: Sequence[DealerRow] = (),
) -> str:
    e = html.escape
    floor = rows[-1]
    cur = None if floor.mixed_currency else floor.currency
    head = "".join(f"<th>{e(h)}</th>" for h in HEAD)
    body = []
    for r in rows:
        tds = "".join(
            f'<td class="t">{c}</td>' if i < TEXT_CELLS else f"<td>{c}</td>" for i, c in enumerate(_cells(r))
        )
        body.append(f'<tr class="{r.level}">{tds}</tr>')
    gaps = [f"<li>{e(x)}</li>" for x in floor.incomplete]
    title = f"Shift report {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        + (
            f'<p class="bad">INCOMPLETE: the archive lacks events that may fall in this window; the figures below '
            f"are sums of what is archived.</p><ul>{''.join(gaps)}</ul>"
            if gaps
            else "<p>The archive is complete for this window: every figure counts every event.</p>"
        )
        + f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        + dealers_table(dealers, rows)
        + win_plot(wins, since, until, cur)
        + rounds_plot(wins, since, until)
        + meter_plot(meters, since, until)
        + glossary_html()
        + "</body></html>"
    )


def glossary_html() -> str:
    """What each figure means and which way its sign goes (figures.py), under every page that shows them."""
    e = html.escape
    items = "".join(f"<dt>{e(g.label)}</dt><dd>{e(g.doc)}</dd>" for g in GLOSSARY)
    return f'<h2>What the figures mean</h2><dl class="glossary">{items}</dl>'


_DEALER_HEAD = ("dealer", "tables", "archive", "rounds", "hours on duty", "rounds per hour on duty", "dealer errors",
                "per 100 rounds")  # fmt: skip


def dealers_table(dealers: Sequence[DealerRow], rows: list[ShiftRow]) -> str:
    """Per dealer (issue 29): the names are text from the tables, escaped."""
    if not dealers:
        return ""
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in _DEALER_HEAD)
    body = []
    for d in dealers:
        cells = (d.dealer if d.dealer is not None else NOBODY_SIGNED_IN, " ".join(d.tables),
                 "INCOMPLETE" if dealer_incomplete(d, rows) else "complete", d.rounds,
                 d.hours.quantize(Decimal("0.01")), d.rounds_per_hour() or "", d.dealer_errors,
                 d.errors_per_100() or "")  # fmt: skip
        tds = "".join(f'<td class="t">{e(str(c))}</td>' if i < 3 else f"<td>{e(str(c))}</td>"
                      for i, c in enumerate(cells))  # fmt: skip
        body.append(f'<tr class="dealer">{tds}</tr>')
    return f"<h2>Dealers</h2><table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
