"""A round's dispute report as a page (``GET /round?site=S&table=T&round=R``): the same report as ``tablectl replay
--report``: the round rebuilt from the archive (rounds.py), settled again by the rules engine and compared with
what the table settled, rendered by controller/terminal/dispute_report.py (every value escaped). A round the archive
does not hold whole says what it lacks instead of replaying wrong."""

from __future__ import annotations

import html
from datetime import timedelta
from urllib.parse import urlencode

import psycopg

from controller.rules.profiles import known_profile
from controller.rules.rounds import InvalidRound, replay
from controller.terminal import dispute_report as report
from floor.reports.queries import table_currencies
from floor.reports.rounds import load_rounds

# the report page's own policy: its inline style, nothing else (no script, no image, no frame)
REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'"


def _lacking(title: str, lines: list[str]) -> str:
    items = "".join(f"<li>{html.escape(x)}</li>" for x in lines)
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Round not complete</title></head>'
        f"<body><h1>{html.escape(title)}</h1><p>INCOMPLETE: the archive lacks</p><ul>{items}</ul></body></html>\n"
    )


def round_report_html(conn: psycopg.Connection, site: str, table: str, round_id: str) -> str | None:
    """The page, or None when the archive knows no such round."""
    row = conn.execute(
        "SELECT min(ts) FILTER (WHERE topic = 'events/round'), max(ts)"  # the reveal may follow the settlement
        " FROM events WHERE site = %s AND table_id = %s AND topic IN ('events/round', 'events/settlement')"
        " AND data->>'round_id' = %s",
        (site, table, round_id),
    ).fetchone()
    if row is None or row[0] is None:
        return None
    until = row[1] + timedelta(seconds=1) if row[1] else None
    rnd = next((r for r in load_rounds(conn, site, table, row[0], until) if r.round_id == round_id), None)
    title = f"Table {site}/{table}, round {round_id}"
    if rnd is None:
        return _lacking(title, ["the round's dealing event"])
    if not rnd.complete:
        return _lacking(title, rnd.all_missing())
    doc = rnd.description()
    journal: dict[str, object] = {"round_id": round_id, "settlement": rnd.settlement}
    currency = table_currencies(conn).get((site, table))
    if currency:  # the table's configured currency: the report says what its amounts are in
        journal["currency"] = currency
    try:
        result, error = replay(doc, profiles=known_profile), None  # names only: the table sent it
    except InvalidRound as exc:
        result, error = None, exc
    agreement = None
    if result is not None and rnd.settlement is not None:
        agreement = report.differences(result.settlement.to_json(), rnd.settlement)
    rep = report.build(
        doc, result, error, label=f"Table {site}/{table}", agreement=agreement, journal=journal
    )
    back = ("/table?" + urlencode({"site": site, "table": table}), f"Back to table {site}/{table}")
    return report.html_page([rep], back=back)
