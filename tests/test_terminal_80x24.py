"""Issue 30: at 80x24 with seven seats the dealer sees, without scrolling, every seat's hand and status, the
dealer's hand, whose turn it is and what is allowed, the last settlement (net per seat) and that an alert is open
(count and the most severe, in words); everything else is one documented key away (PageDown, named in the
footer). Played with Textual's pilot on the whole table (real mosquitto, the real service, the emulated shoe).

Set TABLECTL_SCREENSHOTS=1 to (re)write docs/screenshots/pit-terminal-80x24.svg and -120x40.svg from this run."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from test_terminal import screen_text, settle, until
from test_terminal_script import burn_of

from controller.terminal.pit import PitApp
from controller.terminal.view import alert_sort_key
from controller.words import ALERT_WORDS
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import Stack, StackOptions

pytestmark = pytest.mark.timeout(240)
SEATS = 7
SHOTS = Path(__file__).resolve().parent.parent / "docs" / "screenshots"
# each seat's first card and the dealer's open card, then the second cards and the hole card (PT-2001 r.17):
# seat 1 and the dealer hold naturals, the dealer's open ace offers insurance (r.33), seat 2 splits its eights
# (r.26): eight hands and the dealer on the first screen
FIRST = ["AS", "8H", "6D", "7C", "8S", "9H", "2D", "AH"]
SECOND = ["KS", "8C", "3S", "9C", "QD", "2S", "5C", "KD"]


@pytest.fixture
async def table() -> AsyncIterator[Stack]:
    """The table as `tablectl demo` starts it, in a work directory named as the demo names it."""
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
    stack = Stack(workdir, StackOptions(profile="pt-2001")).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def rows(app: PitApp) -> list[str]:
    """The screen's rows, as a person reads them (the panels' borders stripped)."""
    return [line.strip("│ ╭╮╰╯─") for line in screen_text(app).splitlines()]


def row_of(app: PitApp, start: str) -> str:
    return next((r for r in rows(app) if r.startswith(start)), "")


def shot(app: PitApp, name: str, tmp_path: Path) -> None:
    target = SHOTS if os.environ.get("TABLECTL_SCREENSHOTS") == "1" else tmp_path
    app.save_screenshot(f"{name}.svg", str(target))


async def test_a_seven_seat_round_fits_80x24_without_scrolling(table: Stack, tmp_path: Path) -> None:
    app = PitApp(terminal_connection(table, "pt-2001"))
    ctl = await ControlClient.connect(table.shoe_control)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(
                app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting"
            )
            await settle(app, pilot, lambda v: not v.states["shoe"]["shuffling"] and "jackpot" in v.states)
            text = screen_text(app)
            assert "1-7" in text and "1-9" not in text  # the seat hint is the table's (PT-2001 r.2: 7 seats)
            attach = row_of(app, "floor console: sh ")
            assert attach.endswith("floor-console"), screen_text(app)  # one line, not wrapped
            assert Path(attach.removeprefix("floor console: sh ")).stat().st_mode & 0o077 == 0
            assert "PgDn" in rows(app)[-1]  # the footer names the key to the rest

            for seat in range(1, SEATS + 1):
                await pilot.press(str(seat), "b")
                await settle(app, pilot, lambda v, s=seat: str(s) in v.states["table"]["bets"])
            await pilot.press("n")
            await settle(app, pilot, lambda v: v.states["table"]["state"] in ("dealing", "players", "dealer"))
            rid = str(app.client.view.states["round"]["round_id"])
            await ctl.queue(["2C"] * await burn_of(app, rid) + FIRST + SECOND)
            # the cards until the first decision (insurance: the dealer shows an ace)
            while not (app.client.view.states["round"].get("allowed_actions") or []):
                seq = app.client.view.states["shoe"]["dealt_this_shoe"]
                await pilot.press("c")
                await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
            rnd = app.client.view.states["round"]
            screen = rows(app)
            for seat in range(1, SEATS + 1):  # every seat's hand and its status on the first screen
                assert any(re.match(rf"Seat {seat}\b.*=\s*(soft )?\d+", r) for r in screen), (seat, screen)
            assert any(r.startswith("Seat 1 ") and "blackjack" in r for r in screen)
            assert any(r.startswith("Dealer") and "(face down)" in r for r in screen)
            turn = next(r for r in screen if r.startswith("turn: "))
            assert re.search(r"allowed: [a-z] [A-Z]", turn) and "_" not in turn, turn  # keys and words
            assert rnd["turn"]["kind"] in ("player", "insurance")
            assert "Last round: none settled yet" in screen and "No open alert" in screen
            shot(app, "pit-terminal-80x24-7-seats-insurance", tmp_path)

            split = False
            # seat 2 splits, the others stand (or hit), the dealer
            while not app.client.view.states["round"].get("complete"):
                rnd = app.client.view.states["round"]
                allowed = rnd.get("allowed_actions") or []
                # a hand that may not stand (9 with PT-2001's doubling on 9-11 offered: hit or double) hits: `c`
                # draws only when no decision is due (issue 42)
                key = next(
                    (
                        k
                        for a, k in (("decline_insurance", "o"), ("stand", "s"), ("hit", "h"))
                        if a in allowed
                    ),
                    "c",
                )
                if "split" in allowed and not split:
                    key, split = "p", True
                if key == "c":
                    assert app.client.view.states["table"]["dealer_inputs"] == []
                    seq = app.client.view.states["shoe"]["dealt_this_shoe"]
                    await pilot.press("c")
                    await settle(app, pilot, lambda v, s=seq: v.states["shoe"]["dealt_this_shoe"] > s)
                else:
                    await pilot.press(key)
                    await settle(app, pilot, lambda v, r=rnd: v.states["round"] != r)
            await until(pilot, lambda: app.last_settlement.get("round_id") == rid)
            app._dirty = True
            await pilot.pause(0.3)
            screen = rows(app)
            currency = app.client.view.states["jackpot"]["currency"]
            # the dealer's natural is marked as a seat's is (A♥ K♦)
            dealer = next(r for r in screen if r.startswith("Dealer"))
            assert "A♥ K♦ = 21 (blackjack)" in dealer and dealer.rstrip().endswith("blackjack"), dealer
            start = next(i for i, r in enumerate(screen) if r.startswith("Last round, "))
            last = " ".join(screen[start : start + 2])
            assert last.startswith(f"Last round, dealer blackjack, net in {currency}: "), last
            nets: dict[str, int] = {}
            for h in app.last_settlement["hands"]:
                nets[str(h["seat"])] = nets.get(str(h["seat"]), 0) + h["net"]
            from controller.words import money

            for seat in range(1, SEATS + 1):
                assert f"Seat {seat} {money(nets[str(seat)], sign=True)}" in last, (seat, last)
            assert "Seat 1 0.00 · Seat 2 " in last  # blackjack against blackjack: a push
            # the split seat's two hands, every other seat and the dealer on the same first screen
            assert split and any(r.startswith("Seat 2, hand 1 ") for r in screen)
            assert any(r.startswith("Seat 2, hand 2 ") for r in screen)
            for seat in (1, *range(3, SEATS + 1)):
                assert any(re.match(rf"Seat {seat} .*= (soft )?\d+", r) for r in screen), (seat, screen)
            shot(app, "pit-terminal-80x24-7-seats", tmp_path)

            # at 120x40 the panels sit side by side and the buttons are back
            await pilot.resize_terminal(120, 40)
            app._dirty = True
            await pilot.pause(0.5)
            wide = screen_text(app)
            for part in (
                "Shoe",
                "Open alerts",
                "Dealer's last results",
                "Hit (h)",
                "Last round, dealer blackjack",
            ):
                assert part in wide, part
            shot(app, "pit-terminal-120x40-7-seats", tmp_path)
            await pilot.resize_terminal(80, 24)

            # an alert: the shoe jams; the first screen says so, in words, with the count
            await pilot.press("m")
            await settle(app, pilot, lambda v: v.states["table"]["state"] == "jammed")
            await until(pilot, lambda: any(a.get("kind") == "jam" for a in app.client.view.alerts_open))
            app._dirty = True
            await pilot.pause(0.3)
            alerts = sorted(app.client.view.alerts_open, key=alert_sort_key)
            alert = next(r for r in rows(app) if re.match(r"\d+ ALERTS? OPEN", r))
            assert alert.startswith(f"{len(alerts)} ALERT"), alert
            worst = f"most severe: {ALERT_WORDS[alerts[0]['kind']]} ({alerts[0]['severity']})"
            assert worst in alert and "F9 acknowledges" in alert, alert
            assert "_" not in alert

            # the rest is one key away: PageDown shows the shoe, the alerts in full and every key
            await pilot.press("pagedown")
            await pilot.pause(0.3)
            below = "\n".join(rows(app))
            assert "Open alerts" in below or "Shoe" in below
            for _ in range(4):
                await pilot.press("pagedown")
            await pilot.pause(0.3)
            assert "Supervisor (user + PIN)" in "\n".join(rows(app))
    finally:
        await ctl.close()
