"""Acknowledgements from the dashboard: a supervisor's only; viewers are refused and the refusal logged.

- ``POST /api/ack`` ``{"site", "table", "command"}``: a table's alert. ``command`` is an ``ack_alert``
  supervisor command the supervisor's BROWSER signed with its own non-extractable Ed25519 key (``static/keys.js``;
  docs/mqtt.md "Signed commands"), in the logged-in user's name. The server holds no supervisor key and never
  sees a PIN: it checks the shape (``cmd_signed.schema.json``), relays the command unchanged over the floor broker
  (and the bridge) to the table, and returns the table's answer. The table checks the signature; every wrong one
  counts toward the table's lockout of that user and of the dashboard's account (docs/security.md).
- ``POST /api/floor-ack`` ``{"alert_id"}``: a floor alert (``floor_alerts``), recorded with the logged-in user
  and the time.
Both are logged in ``dashboard_log`` with who, from where and the outcome.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
from aiohttp import web

from controller.client import TableClient
from controller.mqtt import schemas
from floor.alerts import acknowledge_alert
from floor.logins import LogEvent
from floor.sessions import Session
from floor.users import Role
from floor.web_auth import SESSION, Auth, Database, deny
from floor.web_config import WebConfig

log = logging.getLogger("floor.web")
_LEVEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")  # a site or table id: one safe topic level
RELAYED_ACTION = "ack_alert"
Handler = Callable[[Session, str, Any], Awaitable[web.Response]]


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**53


def command_refusal(body: Any, user: str) -> str | None:
    """Why ``body`` is not an acknowledgement ``user`` signed, or None."""
    if not isinstance(body, dict) or set(body) != {"site", "table", "command"}:
        return "expected site, table, command"
    for key in ("site", "table"):
        if not isinstance(body[key], str) or not _LEVEL.match(body[key]):
            return f"{key}: letters, digits, '_', '.', '-' only"
    cmd = body["command"]
    try:
        schemas.check("cmd_signed.schema.json", cmd, "command")
    except schemas.MessageInvalid as exc:
        return str(exc)[:200]
    if cmd["role"] != Role.SUPERVISOR.value or cmd["action"] != RELAYED_ACTION:
        return f"only a supervisor's {RELAYED_ACTION} is relayed"
    if cmd["user"] != user:
        return "a command is relayed only in the logged-in user's own name"
    if (cmd["site"], cmd["table"]) != (body["site"], body["table"]):
        return f"the command is signed for table {cmd['site']}/{cmd['table']}, not {body['site']}/{body['table']}"
    if set(cmd["args"]) != {"alert_id"} or not _positive_int(cmd["args"]["alert_id"]):
        return "args: {alert_id: a positive integer}"
    return None


def _known_table(conn: psycopg.Connection, site: str, table: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM floor_tables WHERE site = %s AND table_id = %s", (site, table)
    ).fetchone()
    return row is not None


class Relay:
    def __init__(self, cfg: WebConfig, db: Database, auth: Auth) -> None:
        self.cfg = cfg
        self.db = db
        self.auth = auth
        self._relaying = asyncio.Semaphore(cfg.relay_parallel)

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/ack", self._supervisors_only("table alert acknowledgement", self._ack))
        app.router.add_post(
            "/api/floor-ack", self._supervisors_only("floor alert acknowledgement", self._floor_ack)
        )

    def _supervisors_only(
        self, what: str, handler: Handler
    ) -> Callable[[web.Request], Awaitable[web.Response]]:
        """``handler(session, client, body)`` for a supervisor's request with a JSON body; anyone else is
        refused and the refusal logged."""

        async def checked(request: web.Request) -> web.Response:
            session = request[SESSION]
            client = self.auth.client(request)
            if session.role is not Role.SUPERVISOR:
                detail = f"{what}: a {session.role.value} may not"
                await self.db.log(LogEvent.REFUSED, session.user, client, detail)
                log.warning("%s by %s from %s refused", detail, session.user, client)
                return deny(403, f"a {session.role.value} cannot acknowledge alerts")
            try:
                body = json.loads(await request.text())
            except (ValueError, UnicodeDecodeError):
                return deny(400, "not JSON")
            return await handler(session, client, body)

        return checked

    async def _ack(self, session: Session, client: str, body: Any) -> web.Response:
        reason = command_refusal(body, session.user)
        if reason:
            await self.db.log(LogEvent.REFUSED, session.user, client, f"ack refused: {reason}")
            return deny(400, reason)
        if self._relaying.locked():
            await self.db.log(LogEvent.REFUSED, session.user, client, "ack refused: relay busy")
            return deny(503, "busy: try again in a moment")
        if not await self.db.call(_known_table, body["site"], body["table"]):
            await self.db.log(LogEvent.REFUSED, session.user, client, "ack refused: unknown table")
            return deny(404, "no such table on this floor")
        cmd = body["command"]
        prefix = f"casino/{body['site']}/table/{body['table']}"
        what = f"{prefix} alert {cmd['args']['alert_id']}"
        async with self._relaying:
            answer = await self._relay(prefix, cmd)
        ok = answer.get("ok") is True
        reason = "" if ok else str(answer.get("reason", "refused"))[:300]
        await self.db.log(
            LogEvent.ACK, session.user, client, f"{what}: " + ("ok" if ok else f"refused: {reason}")
        )
        log.info("ack of %s by %s from %s: %r", what, session.user, client, "ok" if ok else reason)
        return web.json_response({"ok": True} if ok else {"ok": False, "reason": reason})

    async def _relay(self, prefix: str, cmd: dict[str, Any]) -> dict[str, Any]:
        client = TableClient(
            self.cfg.broker_host,
            self.cfg.broker_port,
            username=self.cfg.username,
            password=self.cfg.password,
            prefix=prefix,
            client_id=f"floor-web-{secrets.token_hex(4)}",
            tls=self.cfg.broker_tls,
        )
        try:
            await client.connect()
            return await client.request(Role.SUPERVISOR.value, cmd, timeout=self.cfg.ack_timeout)
        except (TimeoutError, OSError) as exc:
            return {"ok": False, "reason": f"table did not answer ({type(exc).__name__})"}
        finally:
            await client.close()

    async def _floor_ack(self, session: Session, client: str, body: Any) -> web.Response:
        if not isinstance(body, dict) or set(body) != {"alert_id"} or not _positive_int(body["alert_id"]):
            return deny(400, "expected {alert_id: a positive integer}")
        alert_id = body["alert_id"]
        done = await self.db.call(acknowledge_alert, alert_id, session.user)
        detail = f"floor alert {alert_id}: " + ("ok" if done else "no such open alert")
        await self.db.log(LogEvent.ACK, session.user, client, detail)
        log.info("%s acknowledged by %s from %s", detail, session.user, client)
        return web.json_response(
            {"ok": True} if done else {"ok": False, "reason": "no such open floor alert"}
        )
