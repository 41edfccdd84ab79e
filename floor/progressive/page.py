"""A link's page for the dashboard (``/progressive?link=L``, floor/web/progressive.py): the report of
floor/progressive/report.py as a self-contained HTML page, every value from the database escaped (text, never
markup), no script (the page's Content-Security-Policy allows none)."""

from __future__ import annotations

from html import escape

from controller.jackpot.meter import UNIT
from controller.words import money
from floor.progressive.report import LAST_WINS, LinkReport


def _row(*cells: object) -> str:
    return "<tr>" + "".join(f"<td>{escape(str(c))}</td>" for c in cells) + "</tr>"


def _table(head: tuple[str, ...], rows: list[str]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    return f"<table><tr>{th}</tr>{''.join(rows) or _row('none')}</table>"


def link_page(r: LinkReport) -> str:
    link, p, m = r.link, r.link.params, r.link.meter
    cur = p.currency
    summary = [
        _row("status", link.status.value),
        _row("meter", money(m.meter_units // UNIT, cur)),
        _row("reserve", money(m.reserve_units // UNIT, cur)),
        _row("overflow", money(m.overflow_units // UNIT, cur)),
        _row("base / limit", f"{money(p.base_minor, cur)} / {money(p.limit_minor, cur)}"),
        _row(
            "jackpot chip",
            f"{money(p.bet_value, cur)}: {p.increment_bp} bp to the meter, {p.reserve_bp} bp to the reserve",
        ),
        _row("members", ", ".join(p.members)),
        _row("hits", ", ".join(f"{k} {v}" for k, v in sorted(r.hits_by_status.items())) or "none"),
        _row(
            "journal", "intact" if not r.journal_problems else "BROKEN: " + "; ".join(r.journal_problems[:3])
        ),
        _row("parameters", f"version {link.params_version}"),
    ]
    wins = [_row(h.order, f"{h.ordered_at:%Y-%m-%d %H:%M:%S}", h.table_id, h.seat, h.round_id, h.combination,
                 money(h.amount_minor, cur), h.status.value) for h in r.last_wins]  # fmt: skip
    tables = [_row(t.table_id, t.contributions, t.chips, money(t.amount_minor, cur)) for t in r.per_table]
    shifts = [_row(f"{s.shift_start:%Y-%m-%d %H:%M}Z", s.table_id, s.contributions, money(s.amount_minor, cur))
              for s in r.per_shift[:500]]  # fmt: skip
    title = escape(f"Linked progressive {link.link}")
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>{title}</title><style>body{{font-family:sans-serif}}td,th{{padding:2px 8px;text-align:left}}"
        "</style></head><body>"
        f"<h1>{title}</h1>{_table(('', ''), summary)}"
        f"<h2>Last {LAST_WINS} wins</h2>"
        f"{_table(('order', 'ordered', 'table', 'seat', 'round', 'combination', 'amount', 'status'), wins)}"
        f"<h2>Contributions per table</h2>{_table(('table', 'rounds', 'chips', 'amount'), tables)}"
        f"<h2>Contributions per shift</h2>{_table(('shift', 'table', 'rounds', 'amount'), shifts)}"
        "</body></html>"
    )
