"""The dashboard's surveillance view (issue 32): its own page and API, for the ``surveillance`` role only.

- ``GET /surveillance``: the page (``static/surveillance.html``, ``surveillance.js``; text shown with
  ``textContent`` only, under the dashboard's Content-Security-Policy);
- ``GET /api/surveillance?hours=N``: the play sessions of the last N hours (1-48, default 12) with their
  figures, flags and counts (floor/web/surveillance_view.py: a shoe's count only after the shoe ended unless
  ``--surveillance-live``), and the open advantage-play alerts;
- ``POST /api/surveillance/ack`` ``{"alert_id"}``: acknowledge an advantage-play alert.

Any other role (a supervisor included) is refused with 403, and the refusal is journaled (``dashboard_log``) with
who and why. One computation at a time (the sessions replay every round of the window); nothing of this is sent
to a table's broker.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from aiohttp import web

from floor.accounts.logins import LogEvent
from floor.accounts.users import Role
from floor.common.alerts import acknowledge_alert
from floor.web.auth import SESSION, Auth, Database, deny
from floor.web.config import WebConfig
from floor.web.surveillance_view import surveillance_view

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_HOURS, MAX_HOURS = 12, 48
_FILES = {"/surveillance": ("surveillance.html", "text/html"),
          "/surveillance.js": ("surveillance.js", "text/javascript")}  # fmt: skip


class Surveillance:
    def __init__(self, cfg: WebConfig, db: Database, auth: Auth) -> None:
        self.cfg, self.db, self.auth = cfg, db, auth
        self._busy = asyncio.Semaphore(1)

    def routes(self, app: web.Application) -> None:
        for path, (name, content_type) in _FILES.items():
            app.router.add_get(path, self._file(name, content_type))
        app.router.add_get("/api/surveillance", self._view)
        app.router.add_post("/api/surveillance/ack", self._ack)

    async def _refused(self, request: web.Request) -> web.Response | None:
        session = request[SESSION]
        if session.role is Role.SURVEILLANCE:
            return None
        why = f"{request.path}: the surveillance role only (this account is {session.role.value})"
        await self.db.log(LogEvent.REFUSED, session.user, self.auth.client(request), why)
        return deny(403, why)

    def _file(self, name: str, content_type: str) -> Any:
        body = (STATIC / name).read_bytes()

        async def handler(request: web.Request) -> web.Response:
            refused = await self._refused(request)
            if refused is not None:
                return refused
            return web.Response(body=body, content_type=content_type, charset="utf-8")

        return handler

    async def _view(self, request: web.Request) -> web.Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        try:
            hours = int(request.query.get("hours", DEFAULT_HOURS))
        except ValueError:
            hours = 0
        if not 1 <= hours <= MAX_HOURS:
            return deny(400, f"hours: 1 to {MAX_HOURS}")
        until = datetime.now(UTC)
        async with self._busy:
            data = await self.db.call(surveillance_view, until - timedelta(hours=hours), until,
                                      self.cfg.surveillance_live)  # fmt: skip
        return web.json_response(data)

    async def _ack(self, request: web.Request) -> web.Response:
        refused = await self._refused(request)
        if refused is not None:
            return refused
        session = request[SESSION]
        try:
            body = json.loads(await request.text())
        except (ValueError, UnicodeDecodeError):
            return deny(400, "not JSON")
        alert_id = body.get("alert_id") if isinstance(body, dict) else None
        if not isinstance(alert_id, int) or isinstance(alert_id, bool) or not 0 < alert_id < 2**63:
            return deny(400, "expected {alert_id: a positive integer}")

        def ack(conn: psycopg.Connection) -> bool:
            return acknowledge_alert(conn, alert_id, session.user, surveillance=True)

        done = await self.db.call(ack)
        detail = f"advantage-play alert {alert_id}: " + ("ok" if done else "no such open alert")
        await self.db.log(LogEvent.ACK, session.user, self.auth.client(request), detail)
        return web.json_response({"ok": done, "reason": None if done else "no such open alert"})
