"""The shift's figures as a terminal reads them (``tablectl floor shift`` without ``--csv``/``--html``): one
aligned table in money with the currency (``1,005.00 EUR``), headed in words (floor/reports/figures.py's labels), the
first columns of the page (``shift_html.cells_text``: the rest are in the CSV and the page), then the dealers.
Every name from a table or the layout is shown as text (``floor.common.text.safe``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from decimal import Decimal

from floor.common.text import safe
from floor.reports.shift import NOBODY_SIGNED_IN, ShiftRow
from floor.reports.shift_dealers import DealerRow
from floor.reports.shift_html import HEAD, TEXT_CELLS, cells_text

SHOWN = 9  # table / pit, archive, rounds, rounds per hour open, handle, win, hold, paid, theoretical win


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], text_cells: int) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < text_cells else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        ).rstrip()

    return [line(head), "  ".join("-" * w for w in widths), *(line(r) for r in rows)]


def to_text(rows: list[ShiftRow], dealers: Sequence[DealerRow], since: datetime, until: datetime) -> str:
    cells = [[safe(c, 64) for c in cells_text(r)[:SHOWN]] for r in rows]
    out = [f"Shift {since:%Y-%m-%d %H:%M} to {until:%Y-%m-%d %H:%M} UTC (win and hold: the house's, + when it won)",
           "", *_table(HEAD[:SHOWN], cells, TEXT_CELLS)]  # fmt: skip
    if dealers:
        head = ("dealer", "tables", "rounds", "hours on duty", "rounds per hour on duty", "dealer errors")
        body = [[safe(d.dealer if d.dealer is not None else NOBODY_SIGNED_IN, 64), safe(" ".join(d.tables), 120),
                 str(d.rounds), str(d.hours.quantize(Decimal("0.01"))), str(d.rounds_per_hour() or "—"),
                 str(d.dealer_errors)] for d in dealers]  # fmt: skip
        out += ["", *_table(head, body, 2)]
    if any(r.currency is None and not r.mixed_currency for r in rows if r.level == "table"):
        out += [
            "",
            "Amounts without a currency: those tables configured none (table.currency, docs/deploy.md).",
        ]
    out += ["", "Every figure (main bets, side bets, insurance, jackpot, faults ...) with --csv or --html;",
            "what each means: docs/floor.md, \"What the figures mean\"."]  # fmt: skip
    return "\n".join(out) + "\n"
