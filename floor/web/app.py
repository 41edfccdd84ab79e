"""The floor dashboard (``tablectl floor web``): aiohttp, live updates by server-sent events, behind a login.

- ``GET /login``: the login page (``static/login.html``, ``login.js``); ``POST /api/login``, ``/api/logout``,
  ``GET /api/me``: ``floor/web/auth.py``. Everything else needs a session (the page without one redirects to
  ``/login``, the APIs answer 401).
- ``GET /``: the page (``static/index.html``, ``app.js``, ``keys.js``, ``app.css``; no inline script, so the
  Content-Security-Policy allows only this origin's files). The script builds the page with ``textContent``
  only: every string from a table is shown as text, never as markup.
- ``GET /`` is the pit map (``--layout floor.toml``: tiles grouped by area and pit, pitmap.py); ``/table`` a
  table's page, ``/round`` a round's dispute report, ``/shift`` the shift's figures (floor/web/pages.py).
- ``GET /events``: ``text/event-stream``; the whole floor (``floor``) at once, then only what changed
  (``tiles``, ``alerts``: floor/web/live.py) each time the archive commits (PostgreSQL ``LISTEN floor_archive``,
  coalesced to at most one build started per ``min_interval``; the tiles of the tables the notifications named,
  floor/common/notify.py) and every ``TICK_S``. A page that falls behind (its queue full) gets the whole floor again
  instead of a backlog. At most ``sse_per_user`` streams per user and ``sse_total`` in all (then 429 / 503, logged); a
  stream ends when its session does (logout, expiry, the user disabled: looked up again with every keep-alive).
- ``POST /api/ack``, ``/api/floor-ack``: acknowledgements, supervisors only (``floor/web/relay.py``): a table's alert
  with a command the supervisor's browser signed, relayed to the table; a floor alert in the database.
  ``POST /api/seat``: a player seated or unseated at a table (issue 41), signed and relayed the same way.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from aiohttp import web
from aiohttp.typedefs import Handler

from floor.accounts.logins import LogEvent
from floor.accounts.sessions import Session
from floor.archive import store
from floor.common.messages import TableRef
from floor.common.notify import NOTIFY_CHANNEL as CHANNEL
from floor.common.notify import named_tables
from floor.web.auth import APPLICATION_NAME, SESSION, Auth, Database, deny
from floor.web.config import WebConfig
from floor.web.live import MAX_NAMED, TICK_S, Build, Floor, Live, database_down
from floor.web.pages import PAGE_FILES, Pages
from floor.web.players import Players
from floor.web.progressive import ProgressivePage
from floor.web.relay import Relay
from floor.web.surveillance import Surveillance

log = logging.getLogger("floor.web")
STATIC = Path(__file__).resolve().parent / "static"
_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self';"
    " frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
KEEPALIVE_S = 15.0
# path -> (file, content type): the only files served
FILES = {
    "/": ("index.html", "text/html"),
    "/app.js": ("app.js", "text/javascript"),
    "/keys.js": ("keys.js", "text/javascript"),
    "/app.css": ("app.css", "text/css"),
    "/login": ("login.html", "text/html"),
    "/login.js": ("login.js", "text/javascript"),
    **PAGE_FILES,
}
RESYNC = ("floor", "")  # the page fell behind: send it the whole floor


@dataclass(eq=False)
class Stream:
    """One browser's ``/events`` connection."""

    session: Session
    queue: asyncio.Queue[tuple[str, str] | None] = field(default_factory=lambda: asyncio.Queue(maxsize=8))


class FloorWeb:
    def __init__(self, cfg: WebConfig) -> None:
        self.cfg = cfg
        self.db = Database(cfg.dsn, cfg.db_pool)
        self.auth = Auth(cfg, self.db)
        self.relay = Relay(cfg, self.db, self.auth)
        self._streams: set[Stream] = set()
        self.live = Live()
        self.pages = Pages(cfg, self.db, self._refuse_page)
        self._changed = asyncio.Event()
        self._named: set[TableRef] | None = set()  # the tables named since the last build (None: every table)
        self.floor = Floor(cfg.layout)
        # Beside the pool (self.db: every request's), two long-lived connections of their own: the builds' (in
        # their thread, one at a time, autocommit) and the listener's (LISTEN, async).
        self._conn: psycopg.Connection | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._db_down_since: datetime | None = None

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self._headers, self.auth.middleware], client_max_size=16 * 1024)
        for path, (name, content_type) in FILES.items():
            app.router.add_get(path, self._file(name, content_type))
        app.router.add_get("/events", self._events)
        app.router.add_get("/api/snapshot", self._snapshot)
        app.router.add_post("/api/logout", self._logout)
        self.auth.routes(app)
        self.relay.routes(app)
        self.pages.routes(app)
        Surveillance(self.cfg, self.db, self.auth).routes(
            app
        )  # its own page and API (floor/web/surveillance.py)
        ProgressivePage(self.db, self.auth).routes(
            app
        )  # a linked progressive's page (floor/web/progressive.py)
        # the players' ratings, names for supervisors only (floor/web/players.py)
        Players(self.db, self.auth).routes(app)
        app.on_startup.append(self._start)
        app.on_cleanup.append(self._stop)
        return app

    @web.middleware
    async def _headers(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            resp = await handler(request)
        except web.HTTPException as exc:
            resp = exc
        except psycopg.Error as exc:  # the archive's database refuses: say so (503), never an HTTP 500
            log.warning("dashboard: %s: database not answering (%s)", request.path, exc)
            resp = web.HTTPServiceUnavailable(
                text="the archive's database is not answering; the floor's data cannot be read now, try again",
                headers={"Retry-After": "5"},
            )
        resp.headers.setdefault("Content-Security-Policy", _CSP)  # a report page sets its own, stricter
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["Referrer-Policy"] = "no-referrer"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers.setdefault("Cache-Control", "no-store")
        if self.cfg.origin.startswith("https://"):
            resp.headers["Strict-Transport-Security"] = "max-age=31536000"
        if isinstance(resp, web.HTTPException):
            raise resp
        return resp

    def _file(self, name: str, content_type: str) -> Any:
        body = (STATIC / name).read_bytes()

        async def handler(request: web.Request) -> web.Response:
            return web.Response(body=body, content_type=content_type, charset="utf-8")

        return handler

    # ---- data ----
    async def _start(self, app: web.Application) -> None:
        await asyncio.to_thread(self.db.open)
        await asyncio.to_thread(self._migrate)  # as every archive worker does: users and sessions need theirs
        self.live.update(await asyncio.to_thread(self._build, None, False))
        self._tasks = [asyncio.create_task(self._listen()), asyncio.create_task(self._publish())]

    async def _stop(self, app: web.Application) -> None:
        for stream in list(self._streams):
            self._end(stream)
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        if self._conn is not None:
            self._conn.close()
        await asyncio.to_thread(self.db.close)

    def _migrate(self) -> None:
        with self.db.connection() as conn:
            store.migrate(conn)

    async def _listen(self) -> None:
        """Wake the publisher on every archive commit; reconnect if the database goes away."""
        while True:
            try:
                aconn = await psycopg.AsyncConnection.connect(
                    self.cfg.dsn, autocommit=True, application_name=APPLICATION_NAME
                )
                async with aconn:
                    await aconn.execute(f"LISTEN {CHANNEL}")
                    self._note(None)  # anything missed while not listening
                    async for n in aconn.notifies():
                        self._note(named_tables(n.payload))
            except asyncio.CancelledError:
                raise
            except psycopg.Error as exc:
                log.warning("dashboard: database listen failed (%s); retrying", exc)
                await asyncio.sleep(2)

    def _note(self, named: frozenset[TableRef] | None) -> None:
        """A notification's tables (None: every table), added to those the next build reads again."""
        if named is None or self._named is None or len(self._named) + len(named) > MAX_NAMED:
            self._named = None
        else:
            self._named |= named
        self._changed.set()

    def _build(self, named: frozenset[TableRef] | None, tick: bool) -> Build:
        """In a thread: the whole floor (``named`` None), the tables named, or the tick (floor/web/live.py)."""
        if self._conn is None or self._conn.closed:
            self._conn = psycopg.connect(self.cfg.dsn, autocommit=True, application_name=APPLICATION_NAME)
        try:
            return self.floor.tick(self._conn) if tick else self.floor.refresh(self._conn, named)
        except psycopg.Error:
            self._conn.close()
            raise

    async def _publish(self) -> None:
        started = 0.0
        while True:
            # builds start at most once per min_interval, counted from the previous build's start: a build that
            # took longer is followed by the next at once (a wait after it would add to every update's time)
            await asyncio.sleep(max(0.0, started + self.cfg.min_interval - time.monotonic()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), TICK_S)
            started = time.monotonic()
            tick = not self._changed.is_set()
            self._changed.clear()
            named, self._named = self._named, set()
            try:
                new = await asyncio.to_thread(self._build, None if named is None else frozenset(named), tick)
                self._db_down_since = None
            except psycopg.Error as exc:
                log.warning("dashboard: snapshot failed (%s)", exc)
                self._named = None  # what failed to be read is read again, whole
                if self._db_down_since is None:
                    self._db_down_since = datetime.now(UTC)
                new = database_down(self._db_down_since, self.live.current)  # said as that, not tables down
                for item in self.live.update(new):
                    for stream in list(self._streams):
                        self._put(stream, item)
                await asyncio.sleep(1)
                continue
            for item in self.live.update(new):
                for stream in list(self._streams):
                    self._put(stream, item)

    @staticmethod
    def _put(stream: Stream, item: tuple[str, str] | None) -> None:
        if stream.queue.full():  # a slow browser gets the whole floor once, not a backlog of changes
            while not stream.queue.empty():
                stream.queue.get_nowait()
            item = RESYNC if item is not None else None
        stream.queue.put_nowait(item)

    def _end(self, stream: Stream) -> None:
        self._put(stream, None)

    async def _snapshot(self, request: web.Request) -> web.Response:
        return web.Response(text=self.live.current.snapshot(), content_type="application/json")

    def _refusal(self, session: Session) -> tuple[int, str] | None:
        mine = sum(1 for s in self._streams if s.session.user == session.user)
        if mine >= self.cfg.sse_per_user:
            return 429, f"{mine} live connections of {session.user} already (at most {self.cfg.sse_per_user})"
        if len(self._streams) >= self.cfg.sse_total:
            return 503, f"{len(self._streams)} live connections already (at most {self.cfg.sse_total})"
        return None

    async def _events(self, request: web.Request) -> web.StreamResponse:
        session = request[SESSION]
        refusal = self._refusal(session)
        if refusal:
            await self.db.log(
                LogEvent.REFUSED, session.user, self.auth.client(request), f"events: {refusal[1]}"
            )
            return deny(*refusal)
        stream = Stream(session)
        self._streams.add(stream)  # counted from here: the cap holds while the response is being prepared
        try:
            resp = web.StreamResponse(
                headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"}
            )
            await resp.prepare(request)
            await resp.write(f"event: floor\ndata: {self.live.floor()}\n\n".encode())
            while True:
                try:
                    item = await asyncio.wait_for(stream.queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    if not await self.auth.session_alive(session):
                        break
                    await resp.write(b": keep-alive\n\n")
                    continue
                if item is None:
                    break
                kind, data = item if item != RESYNC else ("floor", self.live.floor())
                await resp.write(f"event: {kind}\ndata: {data}\n\n".encode())
        except (ConnectionResetError, asyncio.CancelledError):
            pass
        finally:
            self._streams.discard(stream)
        return resp

    async def _refuse_page(self, request: web.Request, reason: str) -> web.Response:
        await self.db.log(
            LogEvent.REFUSED, request[SESSION].user, self.auth.client(request), f"{request.path}: {reason}"
        )
        return deny(400, reason)

    async def _logout(self, request: web.Request) -> web.StreamResponse:
        session = request[SESSION]
        resp = await self.auth.logout(request)
        for stream in list(self._streams):
            if stream.session.token_sha256 == session.token_sha256:
                self._end(stream)
        return resp


async def serve(
    cfg: WebConfig, host: str, port: int, ssl_context: ssl.SSLContext | None = None
) -> web.AppRunner:
    """Serve on host:port; over TLS with ``ssl_context`` (the installed floor: systemd/floor/)."""
    runner = web.AppRunner(FloorWeb(cfg).app(), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port, ssl_context=ssl_context).start()
    return runner
