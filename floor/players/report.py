"""Player ratings as text, CSV and a self-contained HTML page (``tablectl floor players``), one row per visit and
one per player over the window. Headers from floor/reports/figures.py; every string from a table (an anonymous player's
description) shown as text: escaped on the page, control characters shown as codes in the terminal, quoted in
the CSV where a spreadsheet would run it. Names only when asked for (``names``): the registry's, never a table's."""

from __future__ import annotations

import csv
import html
import io
from typing import Any

from floor.common.text import safe
from floor.players.load import PlayersReport
from floor.players.ratings import Rating
from floor.protection.advantage import assess
from floor.reports.day import csv_cell
from floor.reports.day_html import money
from floor.reports.figures import (
    AVERAGE_BET,
    BUY_IN,
    COMP,
    HANDLE,
    HOURS_PLAYED,
    INITIAL_BETS,
    LARGEST_BET,
    PLAY_PRECISION,
    ROUNDS,
    THEORETICAL_WIN,
    WIN,
)

FIGURES = (ROUNDS, HOURS_PLAYED, HANDLE, INITIAL_BETS, AVERAGE_BET, LARGEST_BET, WIN, THEORETICAL_WIN,
           PLAY_PRECISION, BUY_IN, COMP)  # fmt: skip
COLUMNS = ("level", "player", "player_id", "name", "description", "tables", "seats", "from", "to", "ended",
           *(f.column for f in FIGURES), "advantage_flags")  # fmt: skip


def _values(rep: PlayersReport, r: Rating, level: str, names: bool) -> dict[str, Any]:
    p = r.play
    first, last = r.visits[0], r.visits[-1]
    precision = None if p.precision is None else round(p.precision * 100, 1)
    return {
        "level": level, "player": rep.label(r.player), "player_id": rep.player_id(r.player),
        "name": rep.name(r.player) if names else "", "description": first.description,
        "tables": " ".join(r.tables), "seats": ", ".join(r.seats),
        "from": first.start.isoformat(timespec="seconds"),
        "to": last.end.isoformat(timespec="seconds") if last.end else "",
        "ended": last.ending() if level == "visit" else "",
        ROUNDS.column: len(p.rounds), HOURS_PLAYED.column: round(r.hours, 2), HANDLE.column: p.handle,
        INITIAL_BETS.column: p.initial_bets, AVERAGE_BET.column: r.average_bet, LARGEST_BET.column: p.largest,
        WIN.column: p.win, THEORETICAL_WIN.column: p.theoretical_win, PLAY_PRECISION.column: precision,
        BUY_IN.column: r.buy_in, COMP.column: r.comp(rep.settings.comp_share_pct),
        "advantage_flags": " ".join(f.kind.value for f in assess(p)),
    }  # fmt: skip


def rows(rep: PlayersReport, names: bool = False) -> list[dict[str, Any]]:
    """The visits, then the players (each player's visits in order before his total)."""
    out = []
    for player in rep.players:
        out += [_values(rep, v, "visit", names) for v in rep.visits if v.player == player.player]
        out.append(_values(rep, player, "player", names))
    return out


def to_csv(rep: PlayersReport, names: bool = False) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for row in rows(rep, names):
        w.writerow([csv_cell("" if row[c] is None else row[c]) for c in COLUMNS])
    return buf.getvalue()


def _money_cols() -> set[str]:
    return {f.column for f in FIGURES if f.money}


def to_text(rep: PlayersReport, names: bool = False) -> str:
    lines = [f"players {rep.since:%Y-%m-%d %H:%M} to {rep.until:%Y-%m-%d %H:%M} UTC; comp share "
             f"{rep.settings.comp_share_pct} % of theoretical win"]  # fmt: skip
    for row in rows(rep, names):
        who = safe(row["player"], 80) + (f" ({safe(row['name'], 100)})" if row["name"] else "")
        if row["description"]:
            who += f" «{safe(row['description'], 60)}»"
        head = "  visit " if row["level"] == "visit" else "PLAYER "
        lines.append(f"{head}{who}: {row['seats']}, {row['from']} to {row['to'] or 'now'}"
                     + (f" ({row['ended']})" if row["ended"] else ""))  # fmt: skip
        figs = []
        for f in FIGURES:
            v = row[f.column]
            figs.append(f"{f.label} {money(v) if f.money else ('—' if v is None else v)}")
        lines.append("    " + "; ".join(figs))
        if row["advantage_flags"]:
            lines.append(f"    advantage play? {row['advantage_flags']}")
    if not rep.players:
        lines.append("no player seated in the window")
    return "\n".join(lines) + "\n"


_STYLE = ("body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse}"
          "th,td{border:1px solid #bbb;padding:.2em .45em;text-align:right}th{background:#eee}td.t{text-align:left}"
          "tr.player td{font-weight:bold;background:#f6f6f6}")  # fmt: skip
_TEXT = {"level", "player", "player_id", "name", "description", "tables", "seats", "from", "to", "ended",
         "advantage_flags"}  # fmt: skip


def to_html(rep: PlayersReport, names: bool = False) -> str:
    e = html.escape
    labels = {f.column: f.label for f in FIGURES}
    head = "".join(
        f"<th>{e(labels.get(c, c.replace('_', ' ')))}</th>" for c in COLUMNS if c != "name" or names
    )
    body = []
    for row in rows(rep, names):
        cells = []
        for c in COLUMNS:
            if c == "name" and not names:
                continue
            v = row[c]
            text = money(v) if c in _money_cols() else ("—" if v is None else str(v))
            cells.append(f'<td class="t">{e(safe(text))}</td>' if c in _TEXT else f"<td>{e(text)}</td>")
        body.append(f'<tr class="{e(row["level"])}">{"".join(cells)}</tr>')
    glossary = "".join(f"<li><b>{e(f.label)}</b>: {e(f.doc)}</li>" for f in FIGURES)
    title = f"Players {rep.since:%Y-%m-%d %H:%M} to {rep.until:%Y-%m-%d %H:%M} UTC"
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
            f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1><p>Comp share "
            f"{e(str(rep.settings.comp_share_pct))} % of theoretical win.</p><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(body)}</tbody></table><ul>{glossary}</ul></body></html>\n")  # fmt: skip
