"""The floor dashboard in Debian's headless chromium (issue 18), against real parts: the real table service
(``tablectl run`` with the emulated shoe, bench/tablebench/stack.py) on a real mosquitto standing for the floor broker,
a real archive worker into PostgreSQL and the aiohttp dashboard. A forged supervisor command raises a
``command_rejected`` alert on the table; the page shows it (live, by server-sent events), a supervisor
acknowledges it from the page (a signed ``ack_alert``, checked by the table), and it leaves the page.
The screenshot goes to docs/screenshots/floor-dashboard.png."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright import sync_api as playwright_sync

from controller.broker import BrokerKind
from controller.floor.alerts import raise_alert
from controller.floor.archive import ArchiveConfig, ArchiveWorker
from controller.floor.messages import TableRef
from controller.floor.web import WebConfig, serve
from controller.mqtt.sign_cli import build_command
from tablebench.broker import Broker, free_port
from tablebench.stack import DEMO_PINS, Stack, StackOptions
from tests.support.floor import FLOOR_USERS, temp_database

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
# The page as a supervisor sees it; docs/screenshots/floor-dashboard.png is refreshed from it only when asked
# (UPDATE_SCREENSHOTS=1), so a test run never changes a tracked file.
DOCS_SCREENSHOT = Path(__file__).resolve().parents[1] / "docs" / "screenshots" / "floor-dashboard.png"


class WebThread:
    """The dashboard on its own event loop in a thread (the test drives the browser synchronously)."""

    def __init__(self, cfg: WebConfig) -> None:
        self.port = free_port()
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(cfg,), daemon=True)
        self._thread.start()
        assert self._ready.wait(20), "dashboard did not start"

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


@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (scripts/test's set-up does)"
)
def test_dashboard_shows_a_table_alert_live_and_acknowledges_it_signed(tmp_path):
    users = {**FLOOR_USERS, "table-demo1": "demo-table-demo1", "supervisor-floor": "demo-supervisor-floor"}
    with temp_database() as dsn:
        broker = Broker.start(tmp_path / "floor-broker", users=users, acl=BrokerKind.FLOOR)
        stack = Stack(tmp_path / "stack", StackOptions(jackpot=False, broker=(broker.host, broker.port)))
        stack.users = users
        archive = web = None
        try:
            archive = ArchiveWorker(ArchiveConfig(dsn, broker.host, broker.port, "archive", users["archive"],
                                                  worker="web", grace=0.5)).start()  # fmt: skip
            stack.start()
            web = WebThread(
                WebConfig(
                    dsn,
                    broker.host,
                    broker.port,
                    "supervisor-floor",
                    users["supervisor-floor"],
                    key_dir=str(stack.key_dir),
                )
            )
            with playwright_sync.sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
                page = browser.new_page(viewport={"width": 1100, "height": 700})
                page.goto(f"http://127.0.0.1:{web.port}/")
                page.wait_for_selector(".table[data-table='demo1'] .status.online", timeout=30_000)
                assert page.locator(".alert[data-kind='command_rejected']").count() == 0
                # hostile text (as a table could send in a reason) is shown as text, never run as markup
                hostile = "<img src=x onerror=\"document.title='pwned'\"><b>bold</b>"
                with psycopg.connect(dsn) as conn, conn.transaction():
                    raise_alert(conn.cursor(), TableRef("demo", "demo1"), "event_missing", "critical", hostile,
                                {}, "web-test")  # fmt: skip
                floor_alert = page.locator(".alert[data-kind='event_missing']")
                floor_alert.wait_for(timeout=30_000)
                assert hostile in floor_alert.inner_text()
                assert page.locator(".alert img, .alert b").count() == 0 and page.title() == "Floor"

                refused: list[bool] = []

                async def forge() -> None:  # a command in alice's name signed with a key that is not hers
                    client = stack.client("supervisor1")
                    await client.connect()
                    try:
                        body = build_command(
                            "alice", "", "supervisor", "open_table", {"profile": "pt-2001"},
                            private_key=Ed25519PrivateKey.generate(),
                        )  # fmt: skip
                        response = await client.request("supervisor", body)
                        refused.append(not response.get("ok"))
                    finally:
                        await client.close()

                # (playwright's sync API owns this thread's event loop: the client runs in its own thread)
                t = threading.Thread(target=lambda: asyncio.run(forge()))
                t.start()
                t.join(60)
                assert refused == [True]
                alert = page.locator(".alert[data-kind='command_rejected']")
                alert.wait_for(timeout=30_000)  # arrives live: the page was not reloaded
                assert "demo/demo1" in alert.inner_text()
                page.fill("#user", "alice")
                page.fill("#pin", DEMO_PINS["alice"])
                shot = (
                    DOCS_SCREENSHOT if os.environ.get("UPDATE_SCREENSHOTS") == "1" else tmp_path / "floor.png"
                )
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 0
                alert.locator("button.ack").click()
                page.wait_for_selector(
                    ".alert[data-kind='command_rejected']", state="detached", timeout=30_000
                )
                browser.close()
        finally:
            if web is not None:
                web.stop()
            stack.stop()
            if archive is not None:
                archive.stop()
            broker.stop()
