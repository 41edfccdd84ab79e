"""Players seated and unseated from the dashboard's table page (issue 41), in Debian's headless chromium: the
supervisor's browser signs ``player_in`` / ``player_out`` with its own non-extractable key, the dashboard only
relays them (``POST /api/seat``, floor/web/relay.py) over a real mosquitto standing for the floor broker to the
real table service (``tablectl run`` with the emulated shoe), whose retained ``state/players`` then holds the
player; the archive worker stores that document and the page shows it. A viewer gets no form and a forged request
is refused (403) and logged; a hostile description and the table's refusal reasons are shown as text."""

from __future__ import annotations

import asyncio
import re
import subprocess
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from playwright.sync_api import expect

from controller.broker import BrokerKind
from controller.mqtt.signed_command import build_command
from floor.archive.store import ensure_tables
from floor.archive.worker import ArchiveConfig, ArchiveWorker
from floor.common.messages import TableRef
from floor.web.relay import ACK_ACTIONS, RELAYED, SEAT_ACTIONS, RelayedAction
from tablebench.broker import Broker
from tablebench.stack import DEMO_PINS, TABLECTL, Stack, StackOptions
from tests.support.floor import FLOOR_USERS, temp_database
from tests.support.floor_web import (
    CHROMIUM,
    api_login,
    chromium,
    dashboard,
    log_in,
    page_headers,
    request,
    session_token,
)

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")
ROOT = Path(__file__).resolve().parents[1]
WAIT = 60.0
CARD = "6012345678"
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"><b>red scarf</b>"  # 60 characters at most


def _in_thread(make: Callable[[], Awaitable[Any]]) -> Any:
    """An asyncio client beside playwright's sync API (which owns this thread's event loop)."""
    result: list[Any] = []
    t = threading.Thread(target=lambda: result.append(asyncio.run(make())))  # type: ignore[arg-type]
    t.start()
    t.join(WAIT * 2)
    assert result, "the table client did not finish"
    return result[0]


def _seats_at_the_table(stack: Stack, predicate: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """The table's own retained ``state/players`` seats, once ``predicate`` holds for them."""

    async def read() -> dict[str, Any]:
        client = stack.client("supervisor1")  # the floor broker has no dealer account
        await client.connect()
        try:
            await client.wait_for(lambda v: predicate(v.states.get("players", {}).get("seats", {})), WAIT)
            seats: dict[str, Any] = client.view.states["players"]["seats"]
            return seats
        finally:
            await client.close()

    return dict(_in_thread(read))


def _open_table(stack: Stack) -> None:
    """alice opens the table (a session: players are seated only while one is open)."""

    async def open_it() -> None:
        client = stack.client("supervisor1")
        await client.connect()
        try:
            await client.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
            await client.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="pt-2001",
                                    shuffler="continuous")  # fmt: skip
        finally:
            await client.close()

    _in_thread(open_it)


def test_a_supervisor_seats_and_unseats_players_from_the_table_page_at_a_real_table(tmp_path):
    users = {**FLOOR_USERS, "table-demo1": "demo-table-demo1", "supervisor-floor": "demo-supervisor-floor"}
    with temp_database() as dsn:
        broker = Broker.start(tmp_path / "floor-broker", users=users, acl=BrokerKind.FLOOR)
        stack = Stack(tmp_path / "stack", StackOptions(jackpot=False, broker=(broker.host, broker.port)))
        stack.users = users
        archive = None
        try:
            archive = ArchiveWorker(ArchiveConfig(dsn, broker.host, broker.port, "archive", users["archive"],
                                                  worker="seats", grace=0.5)).start()  # fmt: skip
            stack.start_broker()
            stack.start_parts()
            with dashboard(dsn, (broker.host, broker.port)) as web, chromium() as browser:
                page = browser.new_page(viewport={"width": 1100, "height": 900})
                log_in(page, web.url, "carol")
                page.click("#make-key")
                expect(page.locator("#pubkey")).to_have_text(re.compile(r"^[0-9a-f]{64}$"))
                subprocess.run([*TABLECTL, "sign", "--add-to", str(stack.workdir / "credentials.toml"), "--user",
                                "carol", "--role", "supervisor", "--public-key", page.inner_text("#pubkey")],
                               check=True, cwd=ROOT)  # fmt: skip
                stack.start_controller()
                _open_table(stack)
                page.wait_for_selector(".table[data-table='demo1'] .status.online", timeout=WAIT * 1000)

                page.goto(web.url + "/table?site=demo&table=demo1")
                expect(page.locator("#seat-form")).to_be_visible()
                page.fill("#seat-number", "3")
                page.select_option("#seat-kind", "card")
                page.fill("#seat-id", CARD)
                page.click("#seat-in")
                expect(page.locator("#seat-result")).to_have_text("seated at seat 3", timeout=WAIT * 1000)
                seats = _seats_at_the_table(stack, lambda s: "3" in s)
                assert seats["3"]["player"] == f"card:{CARD}"  # the real table's own document holds him
                row = page.locator("#players tbody tr", has_text=f"card:{CARD}")
                expect(row).to_have_count(1, timeout=WAIT * 1000)  # archived, and shown by the page
                assert row.locator("td").first.inner_text() == "3"

                # the table refuses a second player at seat 3: its reason shown as text
                page.fill("#seat-id", "7000111122")
                page.click("#seat-in")
                expect(page.locator("#seat-result")).to_have_text(
                    re.compile(r"^refused: .*seat 3"), timeout=WAIT * 1000
                )

                # an anonymous player with a hostile description: seated, and shown as text, never as markup
                page.fill("#seat-number", "5")
                page.select_option("#seat-kind", "anonymous")
                page.fill("#seat-id", HOSTILE)
                page.click("#seat-in")
                expect(page.locator("#seat-result")).to_have_text("seated at seat 5", timeout=WAIT * 1000)
                anon = page.locator("#players tbody tr", has_text="anon:")
                expect(anon).to_have_count(1, timeout=WAIT * 1000)
                assert HOSTILE in anon.inner_text()
                assert page.locator("#players img, #players b").count() == 0 and "pwned" not in page.title()

                # the player at seat 3 leaves, from his row's button
                page.locator("#players tbody tr", has_text=f"card:{CARD}").locator("button.unseat").click()
                expect(page.locator("#seat-result")).to_have_text("left seat 3", timeout=WAIT * 1000)
                seats = _seats_at_the_table(stack, lambda s: "3" not in s and "5" in s)
                assert seats["5"]["player"].startswith("anon:")
                expect(page.locator("#players tbody tr", has_text=f"card:{CARD}")).to_have_count(
                    0, timeout=WAIT * 1000
                )

                with psycopg.connect(dsn) as conn:
                    logged = [r[0] for r in conn.execute(
                        "SELECT detail FROM dashboard_log WHERE event = 'relayed' ORDER BY id")]  # fmt: skip
                assert logged[0] == "casino/demo/table/demo1 seat 3 player_in: ok"
                assert logged[1].startswith("casino/demo/table/demo1 seat 3 player_in: refused: ")
                assert logged[2:] == ["casino/demo/table/demo1 seat 5 player_in: ok",
                                      "casino/demo/table/demo1 seat 3 player_out: ok"]  # fmt: skip
                # nothing personal in the log: neither the card nor the description
                assert not [d for d in logged if CARD in d or "scarf" in d]
        finally:
            stack.stop()
            if archive is not None:
                archive.stop()
            broker.stop()


def test_a_viewer_gets_no_form_and_a_forged_seat_request_is_refused_and_logged():
    """Also: each route relays only its own actions of the one set (an ``ack_alert`` is no seat command, a
    ``player_in`` no acknowledgement), and a seat outside 1-9 is refused before any relay."""
    assert set(RELAYED) == set(RelayedAction) == ACK_ACTIONS | SEAT_ACTIONS and not ACK_ACTIONS & SEAT_ACTIONS
    key = Ed25519PrivateKey.generate()
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        with psycopg.connect(dsn) as conn, conn.transaction():
            ensure_tables(conn.cursor(), [TableRef("demo", "T1")])
        page = browser.new_page()
        log_in(page, web.url, "victor")
        page.goto(web.url + "/table?site=demo&table=T1")
        expect(page.locator("#title")).to_have_text("Table demo/T1", timeout=30_000)
        assert page.locator("#seat-form").is_hidden() and page.locator("button.unseat").count() == 0
        forged = build_command("victor", "", "supervisor", "player_in", {"seat": 2, "card": CARD}, site="demo",
                               table="T1", private_key=key)  # fmt: skip
        answer = page.evaluate(
            "(b) => post('/api/seat', b)", {"site": "demo", "table": "T1", "command": forged}
        )
        assert answer == {"ok": False, "reason": "a viewer cannot seat or unseat players"}
        with psycopg.connect(dsn) as conn:
            refusals = conn.execute(
                "SELECT user_name, detail FROM dashboard_log WHERE event = 'refused' ORDER BY id"
            ).fetchall()
        assert refusals == [("victor", "seating a player: a viewer may not")]

        token = session_token(api_login(web.port, "carol"))

        def relay(path: str, action: str, args: dict[str, Any]) -> tuple[int, str]:
            cmd = build_command(
                "carol", "", "supervisor", action, args, site="demo", table="T1", private_key=key
            )
            got = request(web.port, "POST", path, body={"site": "demo", "table": "T1", "command": cmd},
                          headers=page_headers(web.port), token=token)  # fmt: skip
            return got.status, got.json()["reason"]

        assert relay("/api/seat", "ack_alert", {"alert_id": 3}) == (
            400, "only a supervisor's player_in or player_out is relayed here")  # fmt: skip
        assert relay("/api/ack", "player_in", {"seat": 2, "card": CARD}) == (
            400, "only a supervisor's ack_alert is relayed here")  # fmt: skip
        assert relay("/api/seat", "open_table", {"profile": "pt-2001"})[0] == 400
        assert relay("/api/seat", "player_out", {"seat": 10})[0] == 400
        with psycopg.connect(dsn) as conn:
            count = conn.execute("SELECT count(*) FROM dashboard_log WHERE event = 'refused'").fetchone()
        assert count == (5,)
