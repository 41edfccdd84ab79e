"""Play sessions as CSV and as a self-contained HTML page (``tablectl floor sessions``), with a bet-versus-count
plot per session. The page has inline CSS and SVG only (no script, no external resource), every string escaped;
the CSV quotes cells a spreadsheet would run as formulas. Surveillance material: the count of a shoe is in it."""

from __future__ import annotations

import csv
import html
import io
from datetime import datetime

from floor.protection.advantage import Thresholds, assess
from floor.reports.day import csv_cell
from floor.reports.day_html import money
from floor.reports.figures import HANDLE, INITIAL_BETS, THEORETICAL_WIN, WIN
from floor.reports.sessions_play import PlaySession

NOT_APPLICABLE = "not applicable (continuous shuffler)"
PLOT_POINTS = 2000  # rounds drawn per session's plot (every one is in the figures)

COLUMNS = ("level", "site", "table", "seat", "player", "first_round", "last_round", "shoes", "rounds",
           HANDLE.column, INITIAL_BETS.column, "average_bet_minor", "largest_bet_minor", "smallest_bet_minor",
           "bet_spread", WIN.column, THEORETICAL_WIN.column, "decisions", "precision_pct", "decision_cost_minor",
           "count_measure", "counted_rounds", "bet_count_rho", "bet_count_p", "mean_true_count", "skipped_rounds",
           "count_above_skipped", "entry_p",
           "flags", "currency")  # fmt: skip


# The page's row headers: the figures' labels (figures.py); the other columns' names in words.
LABELS = {f.column: f.label for f in (HANDLE, INITIAL_BETS, WIN, THEORETICAL_WIN)}


def _r(v: float | None, digits: int) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def _p(v: float | None) -> str:
    return "" if v is None else f"{v:.3g}"


def row_values(s: PlaySession, th: Thresholds, currency: str | None) -> list[object]:
    trend, entry = s.trend(), s.entry()
    shoes = sorted({x for x in s.shoes if x is not None})
    measure = (
        NOT_APPLICABLE if trend is None else ("applicable" if s.counted() else "no count (shoe not whole)")
    )
    return [s.level, s.site, s.table, "" if s.seat is None else s.seat, s.player or "",
            s.round_ids[0] if s.round_ids else "", s.round_ids[-1] if s.round_ids else "",
            " ".join(str(x) for x in shoes), len(s.rounds), s.handle, s.initial_bets, round(s.average), s.largest,
            s.smallest, _r(s.spread, 1), s.win, s.theoretical_win, s.decisions,
            _r(None if s.precision is None else s.precision * 100, 1), s.cost, measure,
            len(s.counted()) if trend is not None else "", _r(trend.rho if trend else None, 3),
            _p(trend.p_value if trend else None), _r(entry.mean if entry else None, 2),
            entry.skipped if entry else "", _r(entry.difference if entry else None, 2),
            _p(entry.p_value if entry else None), " ".join(f.kind for f in assess(s, th)),
            currency or ""]  # fmt: skip


def to_csv(sessions: list[PlaySession], th: Thresholds, currencies: dict[tuple[str, str], str]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for s in sessions:
        w.writerow([csv_cell(v) for v in row_values(s, th, currencies.get((s.site, s.table)))])
    return buf.getvalue()


_STYLE = (
    "body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}"
    "th,td{border:1px solid #bbb;padding:.2em .45em;text-align:right}th{background:#eee}td.t{text-align:left}"
    ".flag{color:#a00;font-weight:bold}section{margin:1.5em 0;border-top:1px solid #ccc}"
    "svg{background:#fafafa;border:1px solid #ddd}"
)
_W, _H, _PAD = 420, 220, 40


def bet_count_plot(s: PlaySession, currency: str | None) -> str:
    """Each round as a dot: x the true count at bet time, y the bet; a counter's dots climb to the right."""
    e = html.escape
    if s.trend() is None:
        return f"<p>bet versus count: {e(NOT_APPLICABLE)}</p>"
    pts = [(r.true_count, r.bet) for r in s.counted()][:PLOT_POINTS]
    if not pts:
        return "<p>bet versus count: no count (the shoe is not archived whole from its shuffle)</p>"
    xs, ys = [x for x, _ in pts], [y for _, y in pts]
    x0, x1 = min(-2.0, *xs), max(4.0, *xs)
    y1 = max(ys)

    def px(x: float) -> float:
        return _PAD + (x - x0) / (x1 - x0) * (_W - 2 * _PAD)

    def py(y: int) -> float:
        return _H - _PAD - y / y1 * (_H - 2 * _PAD)

    dots = "".join(
        f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="#06c" fill-opacity=".5"/>' for x, y in pts
    )
    zero = f'<line x1="{px(0):.1f}" x2="{px(0):.1f}" y1="{_PAD}" y2="{_H - _PAD}" stroke="#999"/>'
    title = f"bet versus true count, {s.key}"
    return (
        f'<figure><figcaption>{e(title)}</figcaption><svg width="{_W}" height="{_H}" role="img" '
        f'aria-label="{e(title)}">{zero}{dots}'
        f'<text x="2" y="{_PAD}" font-size="11">{e(money(y1, currency))}</text>'
        f'<text x="{_PAD}" y="{_H - 8}" font-size="11">true count {x0:.1f}</text>'
        f'<text x="{_W - _PAD - 60}" y="{_H - 8}" font-size="11">{x1:.1f}</text></svg></figure>'
    )


def to_html(
    sessions: list[PlaySession],
    th: Thresholds,
    currencies: dict[tuple[str, str], str],
    since: datetime,
    until: datetime,
) -> str:
    e = html.escape
    title = f"Play sessions {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC"
    parts = []
    for s in sessions:
        cur = currencies.get((s.site, s.table))
        values = dict(zip(COLUMNS, row_values(s, th, cur), strict=True))
        money_cols = {k for k in COLUMNS if k.endswith("_minor")}
        cells = "".join(
            f'<tr><th>{e(LABELS.get(k, k.removesuffix("_minor").replace("_", " ")))}</th><td class="t">'
            f"{e(money(v, cur, sign=k == WIN.column) if k in money_cols and isinstance(v, int) else str(v))}</td></tr>"
            for k, v in values.items()
        )
        flags = assess(s, th)
        flag = "".join(f'<p class="flag">{e(f.words)}</p>' for f in flags)
        parts.append(
            f"<section><h2>{e(s.key)}</h2>{flag}<table>{cells}</table>{bet_count_plot(s, cur)}</section>"
        )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        f"<title>{e(title)}</title><style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        "<p>Surveillance material: counts are computed from archived cards only. How each figure is computed: "
        "docs/floor.md, “Play sessions”.</p>" + "".join(parts) + "</body></html>"
    )
