"""The floor dashboard (``tablectl floor web``): aiohttp, live updates by server-sent events.

- ``GET /``: the page (``static/index.html``, ``static/app.js``, ``static/app.css``; no inline script, so the
  Content-Security-Policy allows only this origin's files). The script builds the page with ``textContent``
  only: every string from a table is shown as text, never as markup.
- ``GET /events``: ``text/event-stream``; one ``snapshot`` (``dashboard.snapshot``) at once and another each
  time the archive commits (PostgreSQL ``LISTEN floor_archive``, coalesced to at most one per ``min_interval``).
- ``POST /api/ack``: ``{"site", "table", "alert_id", "user", "pin"}`` acknowledges a table's alert with a signed
  ``ack_alert`` supervisor command (``controller.client.TableClient.signed``), sent over the floor broker (and the
  bridge) to the table, which checks the signature; the answer (ok or the table's reason) is returned. The PIN is
  used to sign and forgotten; it is never logged or stored. Only JSON with the header ``X-Floor-Ack: 1`` from
  the page's own origin is accepted (no cross-site form can post it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from aiohttp import web

from controller.client import CommandFailed, TableClient
from controller.floor.dashboard import snapshot
from controller.floor.notify import NOTIFY_CHANNEL as CHANNEL
from controller.mqtt.paho_client import TlsConfig

log = logging.getLogger("floor.web")
STATIC = Path(__file__).resolve().parent / "static"
_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_PIN = re.compile(r"^[0-9]{4,12}$")
_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'"


@dataclass
class WebConfig:
    dsn: str
    broker_host: str
    broker_port: int
    username: str  # the dashboard's broker account (a supervisor* account: it may publish cmd/supervisor)
    password: str = field(repr=False)
    min_interval: float = 0.3
    ack_timeout: float = 15.0
    # The supervisors' PIN-encrypted key files (docs/mqtt.md "Signed commands"): the PIN typed on the page opens
    # the user's key here, signs the acknowledgement and is forgotten. None: TABLECTL_KEY_DIR or the default.
    key_dir: str | None = None
    broker_tls: TlsConfig | None = None  # the floor broker's CA (and a client certificate): verified


class FloorWeb:
    def __init__(self, cfg: WebConfig) -> None:
        self.cfg = cfg
        self._clients: set[asyncio.Queue[str]] = set()
        self._latest = ""
        self._changed = asyncio.Event()
        self._tasks: list[asyncio.Task[Any]] = []

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._headers], client_max_size=16 * 1024)
        app.router.add_get("/", self._file("index.html", "text/html"))
        app.router.add_get("/app.js", self._file("app.js", "text/javascript"))
        app.router.add_get("/app.css", self._file("app.css", "text/css"))
        app.router.add_get("/events", self._events)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_post("/api/ack", self._ack)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    @web.middleware
    async def _headers(self, request: web.Request, handler: Any) -> web.StreamResponse:
        resp = await handler(request)
        resp.headers["Content-Security-Policy"] = _CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        return resp

    def _file(self, name: str, content_type: str) -> Any:
        body = (STATIC / name).read_bytes()

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type=content_type, charset="utf-8")

        return handler

    # ---- data ----
    async def _start(self, app: web.Application) -> None:
        self._latest = await asyncio.to_thread(self._build)
        self._tasks = [asyncio.create_task(self._listen()), asyncio.create_task(self._publish())]

    async def _stop(self, app: web.Application) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t

    def _build(self) -> str:
        with psycopg.connect(self.cfg.dsn) as conn:
            return json.dumps(snapshot(conn), sort_keys=True)

    async def _listen(self) -> None:
        """Wake the publisher on every archive commit; reconnect if the database goes away."""
        while True:
            try:
                aconn = await psycopg.AsyncConnection.connect(self.cfg.dsn, autocommit=True)
                async with aconn:
                    await aconn.execute(f"LISTEN {CHANNEL}")
                    self._changed.set()  # anything missed while not listening
                    async for _ in aconn.notifies():
                        self._changed.set()
            except asyncio.CancelledError:
                raise
            except psycopg.Error as exc:
                log.warning("dashboard: database listen failed (%s); retrying", exc)
                await asyncio.sleep(2)

    async def _publish(self) -> None:
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                text = await asyncio.to_thread(self._build)
            except psycopg.Error as exc:
                log.warning("dashboard: snapshot failed (%s)", exc)
                await asyncio.sleep(1)
                continue
            if text != self._latest:
                self._latest = text
                for q in list(self._clients):
                    if q.full():
                        q.get_nowait()  # a slow browser gets the newest, not a backlog
                    q.put_nowait(text)
            await asyncio.sleep(self.cfg.min_interval)

    async def _snapshot(self, request: web.Request) -> web.Response:
        return web.Response(text=self._latest, content_type="application/json")

    async def _events(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        await resp.prepare(request)
        q: asyncio.Queue[str] = asyncio.Queue(maxsize=2)
        self._clients.add(q)
        try:
            await resp.write(f"event: snapshot\ndata: {self._latest}\n\n".encode())
            while True:
                try:
                    text = await asyncio.wait_for(q.get(), 15)
                    await resp.write(f"event: snapshot\ndata: {text}\n\n".encode())
                except TimeoutError:
                    await resp.write(b": keep-alive\n\n")
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._clients.discard(q)
        return resp

    # ---- acknowledgement (signed, end to end) ----
    async def _ack(self, request: web.Request) -> web.Response:
        if request.headers.get("X-Floor-Ack") != "1" or request.content_type != "application/json":
            return web.json_response({"ok": False, "reason": "not from the dashboard"}, status=403)
        origin = request.headers.get("Origin")
        if origin is not None and origin != f"{request.scheme}://{request.host}":
            return web.json_response({"ok": False, "reason": "cross-origin request refused"}, status=403)
        try:
            body = await request.json()
        except (ValueError, UnicodeDecodeError):
            return web.json_response({"ok": False, "reason": "not JSON"}, status=400)
        reason = _check_ack(body)
        if reason:
            return web.json_response({"ok": False, "reason": reason}, status=400)
        prefix = f"casino/{body['site']}/table/{body['table']}"
        client = TableClient(
            self.cfg.broker_host,
            self.cfg.broker_port,
            username=self.cfg.username,
            password=self.cfg.password,
            prefix=prefix,
            client_id=f"floor-web-{secrets.token_hex(4)}",
            key_dir=self.cfg.key_dir,
            tls=self.cfg.broker_tls,
        )
        try:
            await client.connect()
            await client.signed(
                "supervisor", body["user"], body["pin"], "ack_alert", alert_id=body["alert_id"]
            )
        except CommandFailed as exc:
            log.info(
                "ack of %s alert %s by %s refused: %s", prefix, body["alert_id"], body["user"], exc.reason
            )
            return web.json_response({"ok": False, "reason": exc.reason[:300]})
        except (TimeoutError, OSError) as exc:
            return web.json_response({"ok": False, "reason": f"table did not answer ({type(exc).__name__})"})
        finally:
            await client.close()
        log.info("alert %s of %s acknowledged by %s", body["alert_id"], prefix, body["user"])
        return web.json_response({"ok": True})


def _check_ack(body: Any) -> str | None:
    if not isinstance(body, dict) or set(body) != {"site", "table", "alert_id", "user", "pin"}:
        return "expected site, table, alert_id, user, pin"
    for key in ("site", "table", "user"):
        if not isinstance(body[key], str) or not _NAME.match(body[key]):
            return f"{key}: letters, digits, '_', '.', '-' only"
    if not isinstance(body["alert_id"], int) or isinstance(body["alert_id"], bool) or body["alert_id"] < 1:
        return "alert_id: a positive integer"
    if not isinstance(body["pin"], str) or not _PIN.match(body["pin"]):
        return "pin: 4-12 digits"
    return None


async def serve(cfg: WebConfig, host: str, port: int) -> web.AppRunner:
    runner = web.AppRunner(FloorWeb(cfg).app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
