"""The dashboard's logins and sessions (aiohttp side): every page and API needs a session, except the login
page and ``POST /api/login``.

- **Login** ``POST /api/login`` ``{"user", "password"}``: refused without a password check while the account or
  the client address is locked out (``logins.py``); else the password is checked against the scrypt hash
  (``users.py``) with at most ``kdf_parallel`` derivations at once and ``kdf_waiting`` logins waiting (beyond
  that the answer is "busy", nothing is derived), and a name without an account costs the same derivation. A
  success sets the session cookie ``__Host-floor_session``: ``Secure; HttpOnly; SameSite=Strict; Path=/`` with
  ``Max-Age`` the session's lifetime. ``Secure`` always: browsers keep such a cookie on https and on
  http://localhost / 127.0.0.1 (potentially trustworthy origins), which is where tests and development run.
- **Logout** ``POST /api/logout``: the session row is deleted (its event streams end), the cookie cleared.
- **Every POST** must be JSON with ``X-Floor: 1`` and an ``Origin`` equal to the configured public URL's
  (``--public-url``): behind a TLS reverse proxy the server itself sees plain http, so it never compares with
  the scheme or host it sees.
- **Client address**: the peer's, or the last ``X-Forwarded-For`` entry when the peer is a configured
  trusted proxy (``--trusted-proxy``).

Anonymous refusals are logged to the process log only (unauthenticated traffic must not grow the database);
failed logins, lockouts and every refusal of a logged-in user go to ``dashboard_log`` too.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg
from aiohttp import web
from aiohttp.typedefs import Handler
from psycopg_pool import ConnectionPool

from controller.mqtt.userkeys import USER_NAME
from floor.accounts import logins, sessions, users
from floor.accounts.logins import LogEvent
from floor.accounts.sessions import SESSION_COOKIE, Session
from floor.web.config import WebConfig

log = logging.getLogger("floor.web")
T = TypeVar("T")
PUBLIC_PATHS = frozenset({"/login", "/login.js", "/app.css", "/api/login"})
PAGES = frozenset({"/", "/table", "/round", "/shift"})  # without a session: sent to the login page
WRONG_LOGIN = "wrong user name or password"
SESSION = web.RequestKey("session", Session)  # the request's session, set by the middleware


def deny(status: int, reason: str) -> web.Response:
    return web.json_response({"ok": False, "reason": reason}, status=status)


# The dashboard's connections to PostgreSQL, by this name in pg_stat_activity (the pool's, the builds', the
# listener's: floor/web/app.py).
APPLICATION_NAME = "tablectl-floor-web"
# How long a request waits for one of the pool's connections (every one busy, or the database not answering);
# then it is answered 503 like any refusal of the database (floor/web/app.py, _headers).
POOL_WAIT_S = 5.0


class Database:
    """The process's one pool of connections to the archive (psycopg_pool): at most ``size`` open (the config key
    ``db_pool``, ``--db-pool``), opened with the dashboard and closed with it; each call takes one for its
    transaction, in a worker thread (the event loop never waits on PostgreSQL), and gives it back. A connection is
    checked before it is handed out, so one the server dropped (a restart, a promoted standby) is replaced instead
    of failing a request."""

    def __init__(self, dsn: str, size: int) -> None:
        self.dsn = dsn
        self.pool = ConnectionPool(
            dsn,
            min_size=1,
            max_size=size,
            kwargs={"application_name": APPLICATION_NAME},
            open=False,
            name="floor-web",
            timeout=POOL_WAIT_S,
            check=ConnectionPool.check_connection,
        )

    def open(self) -> None:
        """Blocking (a worker thread): the pool's first connection made, or psycopg_pool.PoolTimeout."""
        try:
            self.pool.open(wait=True, timeout=POOL_WAIT_S)
        except BaseException:
            self.pool.close()  # its threads stopped: the dashboard does not start
            raise

    def close(self) -> None:
        self.pool.close()

    @contextlib.contextmanager
    def connection(self) -> Iterator[psycopg.Connection]:
        """One of the pool's connections for one transaction (committed at the end, rolled back on an error)."""
        with self.pool.connection() as conn:
            yield conn

    def _run(self, fn: Callable[..., T], *args: Any) -> T:
        with self.connection() as conn:
            return fn(conn, *args)

    async def call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.to_thread(self._run, fn, *args)

    async def log(self, event: LogEvent, user: str, client: str, detail: str = "") -> None:
        def write(conn: psycopg.Connection) -> None:
            with conn.transaction():
                logins.log_event(conn.cursor(), event, user, client, detail)

        await self.call(write)


class Auth:
    def __init__(self, cfg: WebConfig, db: Database) -> None:
        self.cfg = cfg
        self.db = db
        self.origin = cfg.origin
        self._kdf = asyncio.Semaphore(cfg.kdf_parallel)
        self._kdf_queue = 0

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/api/login", self._login)
        app.router.add_get("/api/me", self._me)

    # ---- every request ----
    def client(self, request: web.Request) -> str:
        peer = request.remote or "unknown"
        forwarded = request.headers.get("X-Forwarded-For")
        if forwarded and peer in self.cfg.trusted_proxies:
            peer = forwarded.rsplit(",", 1)[-1].strip()  # the entry the trusted proxy itself added
        try:
            return str(ipaddress.ip_address(peer))
        except ValueError:
            return "unknown"

    def post_refusal(self, request: web.Request) -> str | None:
        """Why a POST is not from the dashboard's own page, or None."""
        if request.headers.get("X-Floor") != "1" or request.content_type != "application/json":
            return "not from the dashboard"
        if request.headers.get("Origin") != self.origin:
            return f"cross-origin request refused (this dashboard is {self.origin})"
        return None

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method == "POST":
            refusal = self.post_refusal(request)
            if refusal:
                log.warning(
                    "refused %s %r from %s: %s", request.method, request.path, self.client(request), refusal
                )
                return deny(403, refusal)
        if request.path in PUBLIC_PATHS:
            return await handler(request)
        session = await self.db.call(sessions.find_session, request.cookies.get(SESSION_COOKIE))
        if session is None:
            log.info("refused %s %r from %s: no session", request.method, request.path, self.client(request))
            if request.path in PAGES:
                raise web.HTTPSeeOther("/login")
            return deny(401, "log in first")
        request[SESSION] = session
        return await handler(request)

    async def session_alive(self, session: Session) -> bool:
        found = await self.db.call(sessions.find_session_by_digest, session.token_sha256)
        return found is not None

    # ---- login / logout ----
    async def _login(self, request: web.Request) -> web.Response:
        client = self.client(request)
        try:
            body = json.loads(await request.text())
        except (ValueError, UnicodeDecodeError):
            return deny(400, "not JSON")
        if not isinstance(body, dict) or set(body) != {"user", "password"}:
            return deny(400, "expected user, password")
        user, password = body["user"], body["password"]
        if not isinstance(user, str) or not isinstance(password, str):
            return deny(400, "expected user, password")
        name = user if USER_NAME.match(user) else "-"  # an impossible name counts against the client
        if self._kdf_queue >= self.cfg.kdf_parallel + self.cfg.kdf_waiting:
            log.warning("login of %s from %s refused: %d logins waiting", name, client, self._kdf_queue)
            return deny(503, "busy: try again in a moment")
        self._kdf_queue += 1  # the place is taken here, before anything is awaited
        found, ok = None, False
        try:
            # one of the account's and the address's attempts, taken before the check: logins in flight count
            attempt = await self.db.call(logins.reserve, name, client)
            if attempt is not None:
                found = await self.db.call(users.password_hash_of, name) if name != "-" else None
                async with self._kdf:
                    ok = await asyncio.to_thread(users.check_login, password, found[1] if found else None)
        finally:
            self._kdf_queue -= 1
        if attempt is None:
            until = await self.db.call(logins.locked_until, name, client)
            when = f"after {until:%H:%M:%S %Z}" if until is not None else "in a moment"
            log.warning("login of %s from %s refused: no attempt left (%s)", name, client, when)
            await self.db.call(logins.record_locked, name, client, f"refused, try again {when}")
            return deny(429, f"too many failed logins: try again {when}")
        if not ok or found is None:
            started = await self.db.call(logins.record_failure, name, client, WRONG_LOGIN, attempt)
            for subject in started:
                log.warning("login lockout of %s (user %s, client %s)", subject.value, name, client)
            return deny(401, WRONG_LOGIN)
        await self.db.call(logins.release, attempt)
        token = await self.db.call(sessions.create_session, name, client, self.cfg.session_s)
        await self.db.log(LogEvent.LOGIN, name, client, found[0].value)
        resp = web.json_response({"ok": True, "user": name, "role": found[0].value})
        resp.set_cookie(
            SESSION_COOKIE, token, max_age=self.cfg.session_s, path="/", secure=True, httponly=True,
            samesite="Strict",
        )  # fmt: skip
        return resp

    async def logout(self, request: web.Request) -> web.Response:
        session = request[SESSION]
        await self.db.call(sessions.end_session, session)
        await self.db.log(LogEvent.LOGOUT, session.user, self.client(request))
        resp = web.json_response({"ok": True})
        resp.del_cookie(SESSION_COOKIE, path="/", secure=True, httponly=True, samesite="Strict")
        return resp

    async def _me(self, request: web.Request) -> web.Response:
        session = request[SESSION]
        return web.json_response(
            {"user": session.user, "role": session.role.value, "expires_at": session.expires_at.isoformat(),
             "enrol_command": self.cfg.enrol_command}
        )  # fmt: skip
