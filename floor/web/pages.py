"""The dashboard's pages beyond the pit map, all behind the login (floor/web/auth.py's middleware):

- ``GET /table?site=S&table=T``: a table's page (``static/table.html``, ``table.js``) over ``GET /api/table``
  (floor/web/table_view.py);
- ``GET /round?site=S&table=T&round=R``: the round's dispute report (floor/reports/round_page.py), its own CSP: inline
  style only, no script;
- ``GET /shift``: the shift's figures (``static/shift.html``, ``shift.js``) over ``GET /api/shift?since=&until=``
  (shift.py: per table, pit and floor), ``/shift/report.csv`` and ``/shift/report.html`` (the self-contained
  page of ``tablectl floor shift --html``) for the same window.

Query values are checked against patterns before any query; what the archive holds is passed as data (JSON) or
escaped (the reports)."""

from __future__ import annotations

import asyncio
import re
from collections import defaultdict
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from aiohttp import web

from floor.reports.day import meter_history
from floor.reports.figures import GLOSSARY
from floor.reports.queries import consistent_read
from floor.reports.round_page import REPORT_CSP, round_report_html
from floor.reports.shift import MAX_WINDOW, shift_report, to_csv, win_series
from floor.reports.shift_dealers import dealer_rows
from floor.reports.shift_html import HEAD, cells_text, to_html
from floor.web.auth import Database
from floor.web.config import WebConfig
from floor.web.table_view import table_view

PAGE_FILES = {
    "/table": ("table.html", "text/html"),
    "/table.js": ("table.js", "text/javascript"),
    "/shift": ("shift.html", "text/html"),
    "/shift.js": ("shift.js", "text/javascript"),
    "/common.js": ("common.js", "text/javascript"),
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}\Z")
DEFAULT_SHIFT = timedelta(hours=8)


class Refused(Exception):
    """A request answered 400 (and logged with who and why, floor/web/auth.py's ``dashboard_log``)."""


def _param(request: web.Request, key: str) -> str:
    value = request.query.get(key, "")
    if not _NAME.match(value):
        raise Refused(f"{key}: expected a name of letters, digits, _ . : - (at most 64)")
    return value


def _window(request: web.Request) -> tuple[datetime, datetime]:
    """The shift's window from ``since``/``until``; anything else is refused with the reason (400, logged): not an
    ISO date-time, a date at the edge of the calendar (``0001-01-01``: the default window would start before
    it), or a window that does not start before it ends or spans more than ``MAX_WINDOW``."""
    try:
        until = datetime.fromisoformat(request.query["until"]) if request.query.get("until") else None
        since = datetime.fromisoformat(request.query["since"]) if request.query.get("since") else None
        until = (until or datetime.now(UTC)).replace(tzinfo=(until.tzinfo if until and until.tzinfo else UTC))
        since = since.replace(tzinfo=since.tzinfo or UTC) if since else until - DEFAULT_SHIFT
        since.astimezone(UTC), until.astimezone(UTC)  # representable in UTC too
        ordered = since < until and until - since <= MAX_WINDOW
    except (ValueError, OverflowError):
        raise Refused("since/until: ISO date-times within the calendar, e.g. 2026-11-26T06:00") from None
    if not ordered:
        raise Refused(
            f"since/until: the window must start before it ends and span at most {MAX_WINDOW.days} days"
        )
    return since, until


Refuse = Callable[[web.Request, str], Awaitable[web.Response]]


class Pages:
    def __init__(self, cfg: WebConfig, db: Database, refuse: Refuse) -> None:
        self.cfg = cfg
        self.db = db  # the process's pool (floor/web/auth.py)
        self.refuse = refuse  # answers 400 and logs who and why

    def routes(self, app: web.Application) -> None:
        for path, handler in (
            ("/api/table", self._table),
            ("/round", self._round),
            ("/api/shift", self._shift),
            ("/shift/report.csv", self._shift_csv),
            ("/shift/report.html", self._shift_html),
        ):
            app.router.add_get(path, self._guarded(handler))

    def _guarded(self, handler: Callable[[web.Request], Awaitable[web.Response]]) -> Any:
        async def guarded(request: web.Request) -> web.Response:
            try:
                return await handler(request)
            except Refused as exc:
                return await self.refuse(request, str(exc))

        return guarded

    def _read(self, fn: Any, *args: Any) -> Any:
        """``fn`` over one snapshot of the archive (every query of a page or report agrees)."""
        with self.db.connection() as conn, consistent_read(conn):
            return fn(conn, *args)

    async def _table(self, request: web.Request) -> web.Response:
        site, table = _param(request, "site"), _param(request, "table")
        view = await asyncio.to_thread(self._read, table_view, site, table)
        if not view:
            raise web.HTTPNotFound(text="no such table in the archive")
        return web.json_response(view)

    async def _round(self, request: web.Request) -> web.Response:
        site, table, rnd = _param(request, "site"), _param(request, "table"), _param(request, "round")
        page = await asyncio.to_thread(self._read, round_report_html, site, table, rnd)
        if page is None:
            raise web.HTTPNotFound(text="no such round in the archive")
        return web.Response(
            text=page, content_type="text/html", headers={"Content-Security-Policy": REPORT_CSP}
        )

    def _shift_rows(self, conn: psycopg.Connection, since: datetime, until: datetime) -> dict[str, Any]:
        rows = shift_report(conn, since, until, self.cfg.layout)
        return {
            "since": since.isoformat(),
            "until": until.isoformat(),
            "head": list(HEAD),
            "glossary": [{"label": g.label, "doc": g.doc} for g in GLOSSARY],
            "rows": [{"level": r.level, "cells": cells_text(r)} for r in rows],
            "incomplete": rows[-1].incomplete[:200],
        }

    async def _shift(self, request: web.Request) -> web.Response:
        since, until = _window(request)
        return web.json_response(await asyncio.to_thread(self._read, self._shift_rows, since, until))

    async def _shift_csv(self, request: web.Request) -> web.Response:
        since, until = _window(request)
        text = await asyncio.to_thread(
            self._read, lambda c: to_csv(shift_report(c, since, until, self.cfg.layout))
        )
        name = f"shift-{since:%Y%m%dT%H%M}-{until:%Y%m%dT%H%M}.csv"
        return web.Response(text=text, content_type="text/csv",
                            headers={"Content-Disposition": f'attachment; filename="{name}"'})  # fmt: skip

    def _shift_page(self, conn: psycopg.Connection, since: datetime, until: datetime) -> str:
        rows = shift_report(conn, since, until, self.cfg.layout)
        meters: dict[str, list[tuple[datetime, int]]] = defaultdict(list)
        for _site, table_id, _eid, ts, _action, meter in meter_history(conn, since, until):
            meters[table_id].append((ts, int(meter)))
        return to_html(
            rows, since, until, win_series(conn, since, until), dict(meters), dealer_rows(conn, since, until)
        )

    async def _shift_html(self, request: web.Request) -> web.Response:
        since, until = _window(request)
        page = await asyncio.to_thread(self._read, self._shift_page, since, until)
        return web.Response(
            text=page, content_type="text/html", headers={"Content-Security-Policy": REPORT_CSP}
        )
