"""The dashboard's players page (issue 41): each visit and each player's rating over a window, for every logged-in
role; the registered players' names only to a supervisor.

- ``GET /players``: the page (``static/players.html``, ``players.js``: every value set with ``textContent``);
- ``GET /api/players?hours=N[&player=P]``: the ratings of the last N hours (1-168, default 12; floor/players/),
  rows as ``tablectl floor players --csv`` has them. The ``name`` of a row is the registry's, filled for the
  supervisor role only: a viewer and surveillance see the card number or pseudonym, never a name (docs/floor.md
  "Players"). A refused query answers 400 with the reason, journaled with who.

One computation at a time (the ratings replay every round the players played); read only (floor_web reads
``players`` and ``player_settings``: systemd/floor/grants.sql)."""

from __future__ import annotations

import asyncio
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
from aiohttp import web

from floor.accounts.logins import LogEvent
from floor.accounts.users import Role
from floor.players.load import load_players
from floor.players.report import COLUMNS, FIGURES, rows
from floor.reports.figures import GLOSSARY
from floor.reports.queries import consistent_read
from floor.web.auth import SESSION, Auth, Database, deny

STATIC = Path(__file__).resolve().parent / "static"
DEFAULT_HOURS, MAX_HOURS = 12, 168
NAMES_FOR = frozenset({Role.SUPERVISOR})  # the roles shown the registry's names
_PLAYER = re.compile(r"[A-Za-z0-9_.:-]{1,80}\Z")
_FILES = {"/players": ("players.html", "text/html"), "/players.js": ("players.js", "text/javascript")}


def players_view(conn: psycopg.Connection, since: datetime, until: datetime, player: str | None,
                 names: bool) -> dict[str, Any]:  # fmt: skip
    with consistent_read(conn):
        rep = load_players(conn, since, until, player)
    return {
        "since": since.isoformat(), "until": until.isoformat(), "names": names,
        "comp_share_pct": str(rep.settings.comp_share_pct), "columns": list(COLUMNS),
        "money": [f.column for f in FIGURES if f.money],
        "labels": {f.column: f.label for f in FIGURES},
        "rows": rows(rep, names), "not_used": len(rep.problems),
        "glossary": [{"label": g.label, "doc": g.doc} for g in GLOSSARY if g in FIGURES],
    }  # fmt: skip


class Players:
    def __init__(self, db: Database, auth: Auth) -> None:
        self.db, self.auth = db, auth
        self._busy = asyncio.Semaphore(1)

    def routes(self, app: web.Application) -> None:
        for path, (name, content_type) in _FILES.items():
            body = (STATIC / name).read_bytes()
            app.router.add_get(path, self._file(body, content_type))
        app.router.add_get("/api/players", self._view)

    @staticmethod
    def _file(body: bytes, content_type: str) -> Any:
        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type=content_type, charset="utf-8")

        return handler

    async def _refuse(self, request: web.Request, why: str) -> web.Response:
        await self.db.log(
            LogEvent.REFUSED, request[SESSION].user, self.auth.client(request), f"{request.path}: {why}"
        )
        return deny(400, why)

    async def _view(self, request: web.Request) -> web.Response:
        session = request[SESSION]
        try:
            hours = int(request.query.get("hours", DEFAULT_HOURS))
        except ValueError:
            hours = 0
        if not 1 <= hours <= MAX_HOURS:
            return await self._refuse(request, f"hours: 1 to {MAX_HOURS}")
        player = request.query.get("player") or None
        if player is not None and not _PLAYER.match(player):
            return await self._refuse(request, "player: a card number, card:N, anon:S-N or a pseudonym")
        until = datetime.now(UTC)
        async with self._busy:
            try:
                view = await self.db.call(players_view, until - timedelta(hours=hours), until, player,
                                          session.role in NAMES_FOR)  # fmt: skip
            except LookupError as exc:
                return await self._refuse(request, str(exc.args[0]))
        return web.json_response(view)
