"""Signed supervisor commands and acknowledgements from the dashboard: a supervisor's only; viewers (and
surveillance) are refused and the refusal logged.

- ``POST /api/ack`` ``{"site", "table", "command"}``: a table's alert. ``command`` is an ``ack_alert``
  supervisor command the supervisor's BROWSER signed with its own non-extractable Ed25519 key (``static/keys.js``;
  docs/mqtt.md "Signed commands"), in the logged-in user's name. The server holds no supervisor key and never
  sees a PIN: it checks the shape (``cmd_signed.schema.json``), relays the command unchanged over the floor broker
  (and the bridge) to the table, and returns the table's answer. The table checks the signature; every wrong one
  counts toward the table's lockout of that user and of the dashboard's account (docs/security.md).
- ``POST /api/seat`` ``{"site", "table", "command"}``: a player seated (``player_in`` ``{seat, card}`` or
  ``{seat, anonymous}``) or unseated (``player_out`` ``{seat}``) at a table from its page (issue 41), signed in
  the browser and relayed exactly as an acknowledgement; the table's answer (its refusal reason, shown as text).
  The log names the table, the seat and the action, never the card or the description.
  The actions relayed at all are ``RELAYED`` (one definition): each route takes its own part of it.
- ``POST /api/floor-ack`` ``{"alert_id"}``: a floor alert (``floor_alerts``), recorded with the logged-in user
  and the time.
All are logged in ``dashboard_log`` with who, from where and the outcome. Relays share one bound
(``relay_parallel`` at once; beyond it 503 "busy", logged).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Any

import psycopg
from aiohttp import web

from controller.client import TableClient
from controller.mqtt import schemas
from floor.accounts.logins import LogEvent
from floor.accounts.sessions import Session
from floor.accounts.users import Role
from floor.common.alerts import acknowledge_alert
from floor.web.auth import SESSION, Auth, Database, deny
from floor.web.config import WebConfig

log = logging.getLogger("floor.web")
_LEVEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")  # a site or table id: one safe topic level
Handler = Callable[[Session, str, Any], Awaitable[web.Response]]


class RelayedAction(StrEnum):
    """The only signed supervisor commands the dashboard relays to a table."""

    ACK_ALERT = "ack_alert"
    PLAYER_IN = "player_in"  # issue 41
    PLAYER_OUT = "player_out"


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**53


def _seat(args: dict[str, Any]) -> bool:  # its range is cmd_signed.schema.json's; the table's profile decides
    return _positive_int(args.get("seat"))


# action -> (why its args are refused, or None); the patterns of card and description are the schema's
RELAYED: dict[RelayedAction, Callable[[dict[str, Any]], str | None]] = {
    RelayedAction.ACK_ALERT: lambda a: (
        None
        if set(a) == {"alert_id"} and _positive_int(a["alert_id"])
        else "args: {alert_id: a positive integer}"
    ),
    RelayedAction.PLAYER_IN: lambda a: (
        None
        if set(a) in ({"seat", "card"}, {"seat", "anonymous"}) and _seat(a)
        else "args: {seat, and card or anonymous}"
    ),
    RelayedAction.PLAYER_OUT: lambda a: None if set(a) == {"seat"} and _seat(a) else "args: {seat}",
}
ACK_ACTIONS = frozenset({RelayedAction.ACK_ALERT})  # POST /api/ack
SEAT_ACTIONS = frozenset({RelayedAction.PLAYER_IN, RelayedAction.PLAYER_OUT})  # POST /api/seat


def command_refusal(body: Any, user: str, actions: frozenset[RelayedAction] = ACK_ACTIONS) -> str | None:
    """Why ``body`` is not one of ``actions`` that ``user`` signed, or None."""
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
    if cmd["role"] != Role.SUPERVISOR.value or cmd["action"] not in actions:
        return f"only a supervisor's {' or '.join(sorted(actions))} is relayed here"
    if cmd["user"] != user:
        return "a command is relayed only in the logged-in user's own name"
    if (cmd["site"], cmd["table"]) != (body["site"], body["table"]):
        return f"the command is signed for table {cmd['site']}/{cmd['table']}, not {body['site']}/{body['table']}"
    return RELAYED[RelayedAction(cmd["action"])](cmd["args"])


def _what(prefix: str, cmd: dict[str, Any]) -> str:
    """The relayed command in the log: the table and the alert or seat, never a card or a description."""
    args = cmd["args"]
    if cmd["action"] == RelayedAction.ACK_ALERT:
        return f"{prefix} alert {args['alert_id']}"
    return f"{prefix} seat {args['seat']} {cmd['action']}"


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
        app.router.add_post(
            "/api/ack",
            self._supervisors_only(
                "table alert acknowledgement", "acknowledge alerts", self._relayed(ACK_ACTIONS)
            ),
        )
        app.router.add_post(
            "/api/seat",
            self._supervisors_only("seating a player", "seat or unseat players", self._relayed(SEAT_ACTIONS)),
        )
        app.router.add_post(
            "/api/floor-ack",
            self._supervisors_only("floor alert acknowledgement", "acknowledge alerts", self._floor_ack),
        )

    def _supervisors_only(
        self, what: str, may_not: str, handler: Handler
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
                return deny(403, f"a {session.role.value} cannot {may_not}")
            try:
                body = json.loads(await request.text())
            except (ValueError, UnicodeDecodeError):
                return deny(400, "not JSON")
            return await handler(session, client, body)

        return checked

    def _relayed(self, actions: frozenset[RelayedAction]) -> Handler:
        """A handler relaying one of ``actions``, signed in the browser, to its table; the table's answer."""

        async def relayed(session: Session, client: str, body: Any) -> web.Response:
            return await self._relay_checked(session, client, body, actions)

        return relayed

    async def _relay_checked(
        self, session: Session, client: str, body: Any, actions: frozenset[RelayedAction]
    ) -> web.Response:
        reason = command_refusal(body, session.user, actions)
        if reason:
            await self.db.log(LogEvent.REFUSED, session.user, client, f"relay refused: {reason}")
            return deny(400, reason)
        if self._relaying.locked():
            await self.db.log(LogEvent.REFUSED, session.user, client, "relay refused: relay busy")
            return deny(503, "busy: try again in a moment")
        if not await self.db.call(_known_table, body["site"], body["table"]):
            await self.db.log(LogEvent.REFUSED, session.user, client, "relay refused: unknown table")
            return deny(404, "no such table on this floor")
        cmd = body["command"]
        prefix = f"casino/{body['site']}/table/{body['table']}"
        what = _what(prefix, cmd)
        async with self._relaying:
            answer = await self._relay(prefix, cmd)
        ok = answer.get("ok") is True
        reason = "" if ok else str(answer.get("reason", "refused"))[:300]
        event = LogEvent.ACK if cmd["action"] == RelayedAction.ACK_ALERT else LogEvent.RELAYED
        await self.db.log(event, session.user, client, f"{what}: " + ("ok" if ok else f"refused: {reason}"))
        log.info("%s by %s from %s: %r", what, session.user, client, "ok" if ok else reason)
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
