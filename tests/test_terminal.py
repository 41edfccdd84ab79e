"""The pit terminal and the alert console driven by Textual's pilot against the whole table: a real
mosquitto, the real service process and the emulated shoe on a pty (tablebench.stack.Stack). Everything goes
over MQTT as in production; the emulator's control socket plays the dealer's hands (drawing a card, the jam).

Set TABLECTL_SCREENSHOTS=1 to (re)write docs/screenshots/*.svg from these runs."""

from __future__ import annotations

import html
import os
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.terminal.alerts import AlertsApp
from controller.terminal.fleet import FleetAlerts
from controller.terminal.pit import PitApp
from controller.terminal.pit_connection import PitConnection
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions

pytestmark = pytest.mark.timeout(90)
SIZE = (140, 46)
WAIT = 30.0  # a generous bound for the table to process a step (never a timing assertion)
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Stack]:
    """A fresh table, opened and loaded in two packets by the demo supervisor (PT-2001 r.53-54)."""
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001")).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


def screen_text(app: Any) -> str:
    """What the screen shows, as text (from Textual's own SVG export)."""
    svg = app.export_screenshot()
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', svg):
        rows.setdefault(float(m.group(2)), []).append((float(m.group(1)), html.unescape(m.group(3))))
    return "\n".join("".join(t for _, t in sorted(r)).replace("\xa0", " ") for _, r in sorted(rows.items()))


def shot(app: Any, name: str, tmp_path: Path) -> None:
    target = SHOTS if os.environ.get("TABLECTL_SCREENSHOTS") == "1" else tmp_path
    app.save_screenshot(f"{name}.svg", str(target))
    assert (target / f"{name}.svg").stat().st_size > 1000


READY = {"table", "round", "shoe", "lid", "jam"}


async def settle(app: Any, pilot: Any, predicate: Any) -> None:
    """Wait until the terminal's client has seen what ``predicate`` expects, then let the screen refresh."""
    await app.client.wait_for(lambda v: v.states.keys() >= READY and predicate(v), WAIT)
    app._dirty = True
    deadline = time.monotonic() + WAIT
    while app._dirty and time.monotonic() < deadline:  # the refresh runs on an interval: wait until it ran
        await pilot.pause(0.05)
    await pilot.pause()  # and let the widgets it updated render


async def credential(pilot: Any, user: str, pin: str) -> None:
    """Fill in the credential prompt (user, Enter moves to the PIN) and press its button."""
    await pilot.pause()
    await pilot.press(*user, "enter", *pin)
    await pilot.click("#cred-ok")


async def test_round_played_from_the_terminal_keys_pt2001(table: Stack, tmp_path: Path) -> None:
    """Bets, no more bets, the cards (demo key: the emulated shoe deals), stand, settlement shown with the
    dealer's result indicator (PT-ONLINE-2015 r.4c, r.31), the lid cycle (PT-2001 r.59-60), next round."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        assert app.query_one("#in-hit").disabled and not app.query_one("#in-place_bet").disabled
        await pilot.press("2", "right_square_bracket", "b")  # seat 2, chip 10.00 -> 25.00, bet
        await settle(app, pilot, lambda v: "2" in v.states["table"]["bets"])
        assert v_bet(app, "2") == 2500
        await pilot.click("#in-no_more_bets")  # by click
        await settle(app, pilot, lambda v: v.states["round"].get("round_id") is not None)
        rid = app.client.view.states["round"]["round_id"]
        while True:  # draw until the player must decide, then stand, then draw for the dealer
            rnd = app.client.view.states["round"]
            if rnd.get("complete"):
                break
            if "stand" in (rnd.get("allowed_actions") or []):
                assert not app.query_one("#in-stand").disabled
                assert rnd["dealer"]["cards"][1] == "??"  # hole card hidden until revealed (PT-2001 r.17)
                assert "(face down)" in screen_text(app)
                shot(app, "pit-terminal", tmp_path)
                await pilot.press("s")
                await settle(app, pilot, lambda v, r=rnd: v.states["round"] != r)
            else:
                seq = app.client.view.states["shoe"]["dealt_this_shoe"]
                await pilot.press("c")
                await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
        await until(pilot, lambda: app.last_settlement.get("round_id") == rid)
        text = screen_text(app)
        assert f"Round {rid}" in text and "Seat 2:" in text and "net" in text
        assert app.results.text() != "—" and app.results.text() in text
        shot(app, "pit-terminal-settled", tmp_path)
        await settle(app, pilot, lambda v: v.states["lid"]["state"] == "open")
        await pilot.press("l")  # demo: the cards go in, the lid is closed
        await settle(app, pilot, lambda v: v.states["lid"]["state"] == "locked")
        await settle(app, pilot, lambda v: v.states["table"]["state"] == "cards_returned")
        assert not app.query_one("#in-next_round").disabled
        await pilot.press("g")
        await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")


async def test_controller_offline_is_shown_and_recovers(table: Stack) -> None:
    """The controller stops (status offline): a clear banner, every dealer input disabled; it comes back
    (journal recovery): online again and the inputs of the current state enabled."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        assert not app.query_one("#in-place_bet").disabled
        table.stop_controller()
        await settle(app, pilot, lambda v: v.status == "offline")
        # the screen follows the view on its next refresh: wait for it, never for a fixed time
        await until(pilot, lambda: "CONTROLLER OFFLINE" in screen_text(app))
        await until(pilot, lambda: all(b.disabled for b in app.query("#dealer-buttons Button")))
        table.start_controller()
        await settle(app, pilot, lambda v: v.status == "online")
        await until(pilot, lambda: not app.query_one("#in-place_bet").disabled)
        assert "controller online" in screen_text(app)


async def test_broker_unreachable_is_shown_with_inputs_disabled(tmp_path: Path) -> None:
    """No broker at all: the terminal says so (and keeps retrying) instead of failing."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    conn = PitConnection("127.0.0.1", port, "dealer", "x", "casino/demo/table/demo1")
    app = PitApp(conn)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "BROKER UNREACHABLE" in screen_text(app))
        assert all(b.disabled for b in app.query("#dealer-buttons Button"))


def v_bet(app: Any, seat: str) -> int:
    return int(app.client.view.states["table"]["bets"][seat]["amount"])


async def test_refused_input_shows_the_controllers_reason(table: Stack) -> None:
    """A key the rules forbid now is still sent (the controller decides) and the controller's reason is shown
    on the screen: hit while betting, next round before any round."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        await pilot.press("h")
        await until(pilot, lambda: app.message.startswith("refused"))
        assert app.message.startswith("refused: Hit: hit is not allowed in state betting")
        await until(pilot, lambda: "hit is not allowed in state betting" in screen_text(app))
        await pilot.press("g")
        await until(pilot, lambda: "Next round" in app.message)
        assert app.message.startswith("refused: Next round: next round is not allowed")  # in words (issue 30)


async def test_jam_cleared_by_supervisor_and_acknowledged_on_the_console_pt2001_r51(
    table: Stack, tmp_path: Path
) -> None:
    """The emulator jams: the terminal shows it and refuses dealing (PT-2001 r.51); a wrong PIN is refused
    with the reason; the inspector unlocks the lid and clears the jam through the credential prompt; the
    alert console lists the jam alert and acknowledges it (signed ack_alert): it moves to the history."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    ctl = await ControlClient.connect(table.shoe_control)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot, lambda v: v.status == "online" and not v.states["shoe"]["shuffling"])
            await ctl.jam("shuffler")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "jammed" and v.alerts_open)
            assert "JAMMED at shuffler" in screen_text(app)
            await pilot.press("1", "b")
            await until(pilot, lambda: app.message.startswith("refused"))
            assert "dealing blocked" in app.message and "r.51" in app.message
            await pilot.press("f5")  # unlock lid, wrong PIN first
            await credential(pilot, "alice", "999999")
            await until(pilot, lambda: "unlock" in app.message.lower())
            assert app.message.startswith("refused: Unlock lid:")
            await pilot.press("f5")
            await credential(pilot, "alice", DEMO_PINS["alice"])
            await settle(
                app, pilot, lambda v: v.states["lid"]["state"] != "locked" or v.states["lid"]["unlocked_by"]
            )
            await ctl.clear_jam()  # the technician frees the cards (emulator)
            await pilot.press("f4")
            shot(app, "credential-prompt", tmp_path)
            await credential(pilot, "alice", DEMO_PINS["alice"])
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")
            await until(pilot, lambda: app.message == "ok: Clear jam (by alice)")
            assert "jam: no" in screen_text(app)
    finally:
        await ctl.close()

    fleet = FleetAlerts(
        table.host,
        table.port,
        username="supervisor1",
        password=table.users["supervisor1"],
        key_dir=str(table.key_dir),
    )
    console = AlertsApp(fleet)
    async with console.run_test(size=(140, 30)) as pilot:
        await until(pilot, lambda: any(r.alert["kind"] == "jam" for r in fleet.open_alerts()))
        rows = fleet.open_alerts()
        jam = next(i for i, r in enumerate(rows) if r.alert["kind"] == "jam")
        assert rows[0].alert["severity"] == "critical"  # most severe first
        text = screen_text(console)
        assert "jam" in text and "demo1" in text
        shot(console, "alert-console", tmp_path)
        for _ in range(jam):
            await pilot.press("down")
        await pilot.press("a")
        await credential(pilot, "bob", DEMO_PINS["bob"])
        jam_id = rows[jam].alert_id
        await until(pilot, lambda: any(h.alert_id == jam_id for h in fleet.history))
        assert jam_id not in [r.alert_id for r in fleet.open_alerts()]
        assert next(h for h in fleet.history if h.alert_id == jam_id).alert.get("acked_by") == "bob"
        assert console.message.startswith("ok: alert")


async def until(pilot: Any, cond: Any, timeout: float = WAIT) -> None:
    for _ in range(int(timeout / 0.1)):
        if cond():
            await pilot.pause(0.3)
            return
        await pilot.pause(0.1)
    raise AssertionError("the screen did not reach the expected state")


SIZES = ((80, 24), (120, 40), (200, 60))


async def test_bets_chips_refusal_money_and_layout_at_three_sizes(table: Stack, tmp_path: Path) -> None:
    """A bet key adds the selected chip (second press adds, x clears); the chip selector stops at the table
    maximum (PT-2001 r.37: 150.00); a bet above it is refused in money with two decimals; only the buttons the
    profile allows exist (no 'Five cards' on PT-2001, no jackpot chip key where chips are sensed, r.41a); and
    at 80x24, 120x40 and 200x60 every part of the screen is there, nothing cut off (snapshots)."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZES[0]) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        assert not app.query_one("#in-five_card").display and app.query_one("#in-surrender").display
        assert not app.query_one("#in-jackpot_chip").display  # the demo table senses its chips
        assert max(app.chips()) <= 15000 and min(app.chips()) >= 500
        for _ in range(12):
            await pilot.press("right_square_bracket")
        assert app.chip == max(app.chips()) == 10000
        await pilot.press("3", "b")
        await settle(app, pilot, lambda v: "3" in v.states["table"]["bets"])
        assert v_bet(app, "3") == 10000
        await pilot.press("b")  # 100.00 + 100.00 is above the maximum 150.00: refused, in money
        await until(pilot, lambda: app.message.startswith("refused"))
        assert "bet 200.00 EUR outside the table limits 5.00 to 150.00 EUR" in app.message
        # the screen shows it once the next refresh has rendered (a loaded machine renders late): waited for
        await until(pilot, lambda: "bet 200.00 EUR outside the table limits" in screen_text(app))
        for _ in range(3):
            await pilot.press("left_square_bracket")
        assert app.chip == 1000
        await pilot.press("b")  # adds: 100.00 + 10.00
        await settle(app, pilot, lambda v: v.states["table"]["bets"].get("3", {}).get("amount") == 11000)
        await pilot.press("x")
        await settle(app, pilot, lambda v: "3" not in v.states["table"]["bets"])
        await pilot.press("b", "b")
        await settle(app, pilot, lambda v: v.states["table"]["bets"].get("3", {}).get("amount") == 2000)
        await pilot.press("n")
        await settle(app, pilot, lambda v: v.states["table"]["state"] in ("dealing", "players"))
        while "stand" not in (app.client.view.states["round"].get("allowed_actions") or []):
            seq = app.client.view.states["shoe"]["dealt_this_shoe"]
            await pilot.press("c")
            await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
        for width, height in SIZES:
            await pilot.resize_terminal(width, height)
            app._dirty = True
            await pilot.pause(0.5)
            text = screen_text(app)
            # below 32 rows the round is compact and the buttons give way to the keys in words (issue 30)
            parts = (
                "controller online",
                "software",
                "Hit (h)",
                "Stand (s)",
                "No more bets (n)",
                "F4",
                "Clear jam",
            )
            if height < 32:
                parts = ("online", "h Hit", "s Stand", "PgDn", "Last round", "No open alert")
            for words in ("Players", "next: h: hit", "Seat 3", "(face down)", *parts):
                assert words in text, (width, height, words)
            assert "place_bet" not in text and "initial_deal" not in text
            # everything fits or scrolls: no widget wider than the screen, the panels reachable in #main
            for widget in app.query("Button, Static"):
                if widget.display and widget.region.width:
                    assert widget.region.right <= width, (width, widget)
            shot(app, f"pit-terminal-{width}x{height}", tmp_path)


async def test_batch_shoe_cut_from_the_terminal_pt2001_r8(tmp_path: Path) -> None:
    """`tablectl demo --shoe batch`: the table opens on a batch shoe (cut card and warning card); the terminal
    hints and offers the cut (t) by the selected seat (PT-2001 r.8), a round is dealt, no lid cycle: next
    round (g)."""
    decks = 6
    scenario = {
        "kind": "batch",
        "decks": decks,
        "seed": 3,
        "batch": {"warning_from_end": 50, "cut_from_end": 10},
    }
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001", scenario=scenario)).start()
    try:
        sup = stack.client("supervisor1")
        await sup.connect()
        await sup.wait_for(lambda v: v.status == "online" and "table" in v.states, WAIT)
        await sup.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="pt-2001", shuffler="batch")
        await sup.close()
        app = PitApp(terminal_connection(stack, "pt-2001"))
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "cut")
            assert "next: t: Seat 1 cuts the cards" in screen_text(app) and app.query_one("#in-cut").display
            await pilot.press("1", "t")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")
            await pilot.press("b", "n")
            await settle(app, pilot, lambda v: v.states["table"]["state"] in ("dealing", "players", "dealer"))
            while not app.client.view.states["round"].get("complete"):
                rnd = app.client.view.states["round"]
                if "stand" in (rnd.get("allowed_actions") or []):
                    await pilot.press("s")
                    await settle(app, pilot, lambda v, r=rnd: v.states["round"] != r)
                elif "decline_insurance" in (rnd.get("allowed_actions") or []):
                    await pilot.press("o")
                    await settle(app, pilot, lambda v, r=rnd: v.states["round"] != r)
                else:
                    seq = app.client.view.states["shoe"]["dealt_this_shoe"]
                    await pilot.press("c")
                    await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "settled")
            assert "next: g: next round" in screen_text(app)
            await pilot.press("g")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")
    finally:
        stack.stop()


async def test_a_change_arriving_while_the_terminal_exits_does_not_crash_it(tmp_path: Path) -> None:
    """A document arriving as the app exits (its widgets already gone) waits for a screen instead of raising
    NoMatches from the refresh timer (seen under load in the full suite)."""
    import socket

    from controller.terminal.alerts import AlertsApp
    from controller.terminal.fleet import FleetAlerts

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    app = PitApp(PitConnection("127.0.0.1", port, "dealer", "x", "casino/demo/table/demo1"))
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: "BROKER UNREACHABLE" in screen_text(app))
        await app.screen.remove_children()  # the widgets go, as when the app exits
        app._on_change(None)  # and a change arrives
        app._tick()
        assert app._dirty  # kept for a screen that shows it
    console = AlertsApp(FleetAlerts("127.0.0.1", port, username="floor", password="x", site="demo"))
    async with console.run_test(size=SIZE):
        await console.screen.remove_children()
        console._dirty = True
        console._tick()
        assert console._dirty
