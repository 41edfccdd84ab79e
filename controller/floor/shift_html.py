"""The shift report as a self-contained HTML page (``tablectl floor shift --html``): inline CSS and SVG, no script,
no external resource (a Content-Security-Policy forbids both), every string escaped. Money in major units with the
currency; plots of the house's win over the shift, rounds per hour and each table's jackpot meter; rows whose
archive is not complete for the window are marked INCOMPLETE with what they lack."""

from __future__ import annotations

import html
from datetime import datetime, timedelta

from controller.floor.report_html import money
from controller.floor.shift import ShiftRow

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
    return _svg("rounds per hour", body, "0", str(top), since, until)


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


def _cells(r: ShiftRow) -> list[str]:
    f, cur = r.figures, (None if r.mixed_currency else r.currency)

    def m(v: int) -> str:
        return "mixed currencies" if r.mixed_currency else money(v, cur)

    def opt(v: object) -> str:
        return "—" if v is None else str(v)

    archive = "complete" if r.complete else '<span class="bad">INCOMPLETE</span>'
    name = html.escape(r.name if r.level != "floor" else "whole floor")
    return [name, html.escape(r.area), archive, str(f.rounds), opt(r.rounds_per_hour()), m(f.handle),
            m(f.handle_main), m(f.handle_side), m(f.handle_insurance), m(f.paid), m(f.win),
            m(f.theoretical_win), opt(f.hold_pct()) + ("%" if f.hold_pct() is not None else ""), str(f.dealer_errors),
            opt(f.errors_per_100()), str(f.faults), str(f.voids), m(f.jackpot_handle), m(f.jackpot_contributions),
            m(f.jackpot_payouts)]  # fmt: skip


_HEAD = ("table / pit", "area", "archive", "rounds", "rounds per hour", "handle", "main bets", "side bets",
         "insurance", "paid", "win", "theoretical win", "hold", "dealer errors", "errors per 100 rounds", "faults",
         "voided rounds", "jackpot chips", "jackpot contributions", "jackpot payouts")  # fmt: skip


def to_html(
    rows: list[ShiftRow],
    since: datetime,
    until: datetime,
    wins: list[tuple[datetime, int]],
    meters: dict[str, list[tuple[datetime, int]]],
) -> str:
    e = html.escape
    floor = rows[-1]
    cur = None if floor.mixed_currency else floor.currency
    head = "".join(f"<th>{e(h)}</th>" for h in _HEAD)
    body = []
    for r in rows:
        tds = "".join(
            f'<td class="t">{c}</td>' if i < 3 else f"<td>{c}</td>" for i, c in enumerate(_cells(r))
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
        + win_plot(wins, since, until, cur)
        + rounds_plot(wins, since, until)
        + meter_plot(meters, since, until)
        + "<p>How each figure is computed: docs/floor.md, “The shift’s figures”.</p></body></html>"
    )
