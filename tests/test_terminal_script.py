"""Issue 19 "done when": the demo's script played with Textual's pilot at 80x24, on the whole table (real
mosquitto, the real service process, the emulated shoe and the fake GPIO board of `tablectl demo`), using only
the keys the screen hints and docs/terminal.md lists: three rounds, insurance, a split, a jackpot chip sensed
(the meter goes up), a jam caused and cleared with a supervisor PIN (PT-2001 r.51), the table closed (deck
check, r.55) and reopened (loaded in two packets, r.53-54), then the floor alert console at 80x24 shows the jam
alert and acknowledges it.

The one thing a person cannot do from the screen is choose the cards: the second round's cards are queued on the
emulated shoe (its control channel, docs/emulator.md) so that the dealer shows an ace (insurance) and the seat
holds a pair of eights (split)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_terminal import credential, screen_text, settle, until

from controller.terminal.alerts import AlertsApp
from controller.terminal.fleet import FleetAlerts
from controller.terminal.pit import PitApp
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions

pytestmark = pytest.mark.timeout(300)
SIZE = (80, 24)


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Stack]:
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001")).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


def st(app: PitApp, name: str) -> dict[str, Any]:
    return app.client.view.states.get(name, {})


def hint(app: PitApp) -> str:
    return next(line for line in screen_text(app).splitlines() if line.startswith("next:"))


async def burn_of(app: PitApp, rid: str) -> int:
    """How many burn cards this round starts with (events/round "dealing", PT-2001 r.10)."""
    while True:
        event = await app.client.next_event("events/round", timeout=30)
        if event.data.get("round_id") == rid and event.data.get("phase") == "dealing":
            return int(event.data.get("burn") or 0)


async def play_round(app: PitApp, pilot: Any, *, queue: list[str] | None = None, ctl: Any = None) -> str:
    """From betting (a bet is down) to the next round: n, the cards (c), the decisions the screen offers
    (insurance taken, a pair split, otherwise stand), the cards in and the lid (l), next round (g)."""
    assert hint(app).startswith("next: n: no more bets")
    await pilot.press("n")
    await settle(app, pilot, lambda v: v.states["table"]["state"] in ("dealing", "players", "dealer"))
    rid = str(st(app, "round")["round_id"])
    if queue is not None:
        await ctl.queue(["2C"] * await burn_of(app, rid) + queue)
    seen: set[str] = set()
    while not st(app, "round").get("complete"):
        rnd = st(app, "round")
        allowed = rnd.get("allowed_actions") or []
        key = next((k for a, k in (("insurance", "i"), ("split", "p"), ("stand", "s")) if a in allowed), "c")
        if key != "c":
            assert hint(app).startswith("next: ") and f"{key}: " in hint(app)
            seen.add(key)
        else:
            assert hint(app) == "next: c: next card"
            seq = st(app, "shoe")["dealt_this_shoe"]
        await pilot.press(key)
        if key == "c":
            await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
        else:
            await settle(app, pilot, lambda v, r=rnd: v.states["round"] != r)
    await until(pilot, lambda: app.last_settlement.get("round_id") == rid)
    await settle(app, pilot, lambda v: v.states["lid"]["state"] == "open")
    assert hint(app).startswith("next: l: cards in")
    await pilot.press("l")
    await settle(app, pilot, lambda v: v.states["table"]["state"] == "cards_returned")
    assert hint(app) == "next: g: next round"
    await pilot.press("g")
    await settle(
        app, pilot, lambda v: v.states["table"]["state"] == "betting" and not v.states["shoe"]["shuffling"]
    )
    app.played = getattr(app, "played", set()) | seen  # type: ignore[attr-defined]
    return rid


async def test_a_new_person_plays_the_demo_script_at_80x24(table: Stack, tmp_path: Path) -> None:
    alice, bob = DEMO_PINS["alice"], DEMO_PINS["bob"]
    app = PitApp(terminal_connection(table, "pt-2001"))
    ctl = await ControlClient.connect(table.shoe_control)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(
                app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting"
            )
            await settle(app, pilot, lambda v: not v.states["shoe"]["shuffling"] and "jackpot" in v.states)
            text = screen_text(app)
            assert any(r.startswith("floor console: sh ") for r in text.splitlines())  # one line (issue 30)
            script = Path(str(app.conn.floor_console).removeprefix("sh ")).read_text()
            assert " alerts --client-config " in script  # the line that works pasted as it is (issue 26)
            assert f"port = {table.port}" in (table.workdir / "floor-console.toml").read_text()

            # round 1: a bet on seat 1 and a jackpot chip sensed in its slot: the meter goes up (PT-2001 r.40)
            meter = st(app, "jackpot")["meter"]
            assert hint(app).startswith("next: b: bet 10.00 on Seat 1")
            await pilot.press("1", "b")
            await settle(app, pilot, lambda v: "1" in v.states["table"]["bets"])
            await pilot.press("k")
            await settle(app, pilot, lambda v: 1 in (v.states["jackpot"].get("chips_sensed") or []))
            await play_round(app, pilot)
            await settle(app, pilot, lambda v: v.states["jackpot"]["meter"] > meter)
            from controller.terminal.view import money

            assert f"jackpot {money(st(app, 'jackpot')['meter'])}" in screen_text(app)

            # round 2: the dealer shows an ace (insurance taken), the seat splits its eights (hands 1 and 2)
            await pilot.press("b", "b")  # two chips: 20.00
            await settle(app, pilot, lambda v: v.states["table"]["bets"].get("1", {}).get("amount") == 2000)
            rid2 = await play_round(app, pilot, queue=["8S", "AH", "8D", "9C", "TS", "TH"], ctl=ctl)
            assert {"i", "p", "s"} <= app.played  # type: ignore[attr-defined]
            # the last round in full is below the table at 80x24: the person scrolls down to it (PageDown)
            app.query_one("#main").scroll_to_widget(app.query_one("#lastround"), animate=False, top=True)
            await pilot.pause(0.3)
            last = "\n".join(line.strip("│ ") for line in screen_text(app).splitlines())
            app.query_one("#main").scroll_home(animate=False)
            assert rid2 in str(app.last_settlement.get("round_id"))
            assert "Seat 1, hand 1:" in last and "Seat 1, hand 2:" in last and "insurance" in last

            # a jam: caused on the shoe (m), the lid unlocked (F5), freed on the device (u), released (F4)
            await pilot.press("m")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "jammed")
            assert "JAMMED" in screen_text(app) and "F5 (supervisor) unlocks the lid" in hint(app)
            await pilot.press("f5")
            await credential(pilot, "alice", alice)
            await settle(app, pilot, lambda v: v.states["lid"].get("unlocked_by"))
            await pilot.press("u")
            await until(pilot, lambda: app.message.startswith(("ok: Jam freed", "refused")))
            assert app.message.startswith("ok: Jam freed"), (app.message, st(app, "lid"))
            await settle(app, pilot, lambda v: v.states["jam"].get("device_cleared"))
            assert hint(app) == "next: jam cleared on the device: F4 (supervisor) releases the table"
            await pilot.press("f4")
            await credential(pilot, "alice", alice)
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")
            await until(pilot, lambda: app.message == "ok: Clear jam (by alice)")
            if st(app, "lid").get("state") != "locked":
                await pilot.press("f6")
                await credential(pilot, "alice", alice)
                await settle(app, pilot, lambda v: v.states["lid"]["state"] == "locked")
            await settle(app, pilot, lambda v: not v.states["shoe"]["shuffling"])

            # round 3
            await pilot.press("2", "b")
            await settle(app, pilot, lambda v: "2" in v.states["table"]["bets"])
            await play_round(app, pilot)

            # close the table (deck check, PT-2001 r.55), every card out, reopen, load in two packets
            await pilot.press("f3")
            await credential(pilot, "bob", bob)
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "closed")
            assert "l takes every card out" in hint(app)
            # the deck check's result (r.55) is said on the first screen and in the shoe's panel (PageDown)
            await until(pilot, lambda: app.deck_check.get("ok") is True)
            app._dirty = True
            await pilot.pause(0.3)
            assert "At closing, deck check: every deck complete (6 decks, 312 cards)" in screen_text(app)
            app.query_one("#main").scroll_to_widget(app.query_one("#shoe"), animate=False, top=True)
            await pilot.pause(0.3)
            assert "deck check: every deck complete" in screen_text(app)
            app.query_one("#main").scroll_home(animate=False)
            await pilot.press("l")
            await settle(app, pilot, lambda v: v.states["table"].get("cards_inside") == 0)
            await pilot.press("f2")
            await pilot.pause()
            assert "Portugal land casino, Portaria 1364/2001" in screen_text(app)  # the game, by its name
            await credential(pilot, "bob", bob)
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "loading")
            assert hint(app) == "next: l: load the cards in two packets and close the lid"
            await pilot.press("l")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "betting")
            assert "Betting" in screen_text(app)
            assert "Traceback" not in table.controller_log(200)
    finally:
        await ctl.close()

    # the floor: the console at 80x24 shows the jam alert, rings, and a supervisor acknowledges it
    fleet = FleetAlerts(
        table.host,
        table.port,
        username="supervisor2",
        password=table.users["supervisor2"],
        key_dir=table.key_dir,
    )
    console = AlertsApp(fleet)
    async with console.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: any(r.alert.get("kind") == "jam" for r in fleet.open_alerts()))
        assert console.bells >= 1 and "all sites" in screen_text(console)
        rows = fleet.open_alerts()
        jam = next(i for i, r in enumerate(rows) if r.alert.get("kind") == "jam")
        for _ in range(jam):
            await pilot.press("down")
        await pilot.press("a")
        await credential(pilot, "bob", bob)
        await until(pilot, lambda: any(h.alert_id == rows[jam].alert_id for h in fleet.history))
        assert console.message.startswith("ok: alert")
