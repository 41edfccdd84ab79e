"""Test helpers for the floor dashboard: the server on its own event loop in a thread, Debian's headless
chromium (playwright, ``/usr/bin/chromium``, never a downloaded browser), dashboard users, and a plain HTTP
client for what a browser would never send (forged Origin headers, a proxy's headers, many streams)."""

from __future__ import annotations

import asyncio
import http.client
import json
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from playwright import sync_api as playwright_sync

from floor.accounts.sessions import SESSION_COOKIE
from floor.accounts.users import Role, add_user
from floor.archive import store
from floor.web.app import WebConfig, serve
from tablebench.broker import free_port

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
PASSWORDS = {
    "carol": "carol-floor-password-1",
    "victor": "victor-floor-password-1",
    "sam": "sam-floor-pass-2",
}
ROLES = {"carol": Role.SUPERVISOR, "victor": Role.VIEWER, "sam": Role.SUPERVISOR}


class WebThread:
    """The dashboard on its own event loop in a thread (the test drives the browser synchronously)."""

    def __init__(self, cfg: WebConfig, port: int | None = None) -> None:
        self.port = port or free_port()
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cfg,), daemon=True)
        self._thread.start()
        assert self._ready.wait(20), "dashboard did not start"

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _run(self, cfg: WebConfig) -> None:
        asyncio.set_event_loop(self.loop)
        self.runner = self.loop.run_until_complete(serve(cfg, "127.0.0.1", self.port))
        self._ready.set()
        self.loop.run_forever()

    def stop(self) -> None:
        fut = asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop)
        fut.result(20)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


def web_config(
    dsn: str, broker: tuple[str, int] = ("127.0.0.1", 1), port: int = 0, **options: Any
) -> WebConfig:
    """A dashboard whose public URL is its own loopback address (unless ``public_url`` is given)."""
    options.setdefault("public_url", f"http://127.0.0.1:{port}")
    return WebConfig(dsn, broker[0], broker[1], "supervisor-floor", "demo-supervisor-floor", **options)


@contextmanager
def dashboard(dsn: str, broker: tuple[str, int] = ("127.0.0.1", 1), **options: Any) -> Iterator[WebThread]:
    """The migrated database with the users of ``PASSWORDS``, and the dashboard serving it."""
    with psycopg.connect(dsn) as conn:
        store.migrate(conn)
        for name, password in PASSWORDS.items():
            add_user(conn, name, ROLES[name], password)
    port = free_port()
    web = WebThread(web_config(dsn, broker, port, **options), port)
    try:
        yield web
    finally:
        web.stop()


@contextmanager
def chromium(*extra: str) -> Iterator[playwright_sync.Browser]:
    with playwright_sync.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=[*FLAGS, *extra], headless=True)
        try:
            yield browser
        finally:
            browser.close()


def log_in(page: playwright_sync.Page, base: str, user: str, password: str | None = None) -> None:
    """Through the login page, as a person would; waits for the dashboard."""
    page.goto(base + "/")
    page.wait_for_url("**/login")
    page.fill("#login-user", user)
    page.fill("#login-password", password if password is not None else PASSWORDS[user])
    page.click("#login-submit")
    page.wait_for_selector("#who:has-text('" + user + "')", timeout=30_000)


class TlsProxy:
    """A TLS-terminating reverse proxy in front of the dashboard, as a site's nginx would be: https outside,
    plain http to the dashboard on loopback. It passes the bytes through unchanged (so the Host and Origin the
    dashboard sees are the browser's: ``floor.casino.lan:PORT``, ``https://floor.casino.lan:PORT``)."""

    def __init__(self, port: int, cert: Path, key: Path, backend_port: int) -> None:
        self.port, self.backend_port = port, backend_port
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(cert, key)
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        assert self._ready.wait(20), "proxy did not start"

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(
            asyncio.start_server(self._client, "127.0.0.1", self.port, ssl=self.context)
        )
        self._ready.set()
        self.loop.run_forever()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend_port)
        except OSError:
            writer.close()
            return

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            try:
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            except (ConnectionError, ssl.SSLError):
                pass
            finally:
                dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: list[str] = field(default_factory=list)

    def json(self) -> Any:
        return json.loads(self.body)


def request(
    port: int, method: str, path: str, *, body: Any = None, headers: dict[str, str] | None = None,
    token: str | None = None,
) -> Answer:  # fmt: skip
    """One plain HTTP request (no browser rules: any header may be forged)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    hdrs = dict(headers or {})
    if token:
        hdrs["Cookie"] = f"{SESSION_COOKIE}={token}"
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        hdrs.setdefault("Content-Type", "application/json")
    try:
        conn.request(method, path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return Answer(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read(),
                      resp.headers.get_all("Set-Cookie") or [])  # fmt: skip
    finally:
        conn.close()


def page_headers(port: int) -> dict[str, str]:
    """What the dashboard's own page sends with a POST (origin = the test dashboard's public URL)."""
    return {"X-Floor": "1", "Origin": f"http://127.0.0.1:{port}"}


def api_login(port: int, user: str, password: str | None = None, **headers: str) -> Answer:
    hdrs = {**page_headers(port), **headers}
    body = {"user": user, "password": password if password is not None else PASSWORDS[user]}
    return request(port, "POST", "/api/login", body=body, headers=hdrs)


def session_token(answer: Answer) -> str:
    for cookie in answer.cookies:
        name, _, rest = cookie.partition("=")
        if name == SESSION_COOKIE:
            return rest.split(";", 1)[0]
    raise AssertionError(f"no session cookie in {answer.cookies}")
