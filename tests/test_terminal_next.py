"""Issue 42, played with Textual's pilot at 80x24 on the whole table as `tablectl demo` starts it (real mosquitto,
the real service process, the emulated shoe on a pty, the fake GPIO board):

- a damaged card (PT-2001 r.51): `v` makes the next card come out damaged; the dealer is told to wait and `c`
  deals nothing past it; the supervisor's key (F14, user + PIN, signed) puts the replacement in its place, and
  the round goes on to its settlement without a dealer error;
- "next:" never names an action the table refuses: rounds are walked by pressing only the keys the line
  suggests, each one accepted; `c` pressed at a decision or after the dealer stood is refused on screen and
  draws nothing (r.19)."""

from __future__ import annotations

import random
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from test_terminal import credential, screen_text, settle, until
from test_terminal_script import burn_of

from controller.terminal.pit import PitApp
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions

pytestmark = pytest.mark.timeout(300)
SIZE = (80, 24)


@pytest.fixture
async def table() -> AsyncIterator[Stack]:
    workdir = Path(tempfile.mkdtemp(prefix="tablectl-demo-"))
    stack = Stack(workdir, StackOptions(profile="pt-2001")).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def st(app: PitApp, name: str) -> dict[str, Any]:
    return app.client.view.states.get(name, {})


def hint(app: PitApp) -> str:
    """The "next:" line as the screen shows it (wrapped lines joined)."""
    lines = screen_text(app).splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("next:"))
    out = lines[i].strip()
    for line in lines[i + 1 :]:
        if not line.startswith(" ") or not line.strip() or line.lstrip().startswith("Seat "):
            break
        out += " " + line.strip()
    return out


def dealt(app: PitApp) -> int:
    return int(st(app, "shoe").get("dealt_this_shoe") or 0)


async def draw(app: PitApp, pilot: Any) -> None:
    n = dealt(app)
    await pilot.press("c")
    await settle(app, pilot, lambda v: (v.states["shoe"].get("dealt_this_shoe") or 0) > n)


async def refused_draw(app: PitApp, pilot: Any, why: str) -> None:
    """`c` now is refused on screen with a one-line reason, and no card comes out."""
    n, inside = dealt(app), st(app, "table").get("cards_inside")
    app.message = ""
    await pilot.press("c")
    await until(pilot, lambda: app.message.startswith(("refused", "ok")))
    assert app.message.startswith("refused: Draw card: ") and why in app.message, app.message
    assert "\n" not in app.message
    await pilot.pause(0.5)
    assert dealt(app) == n and st(app, "table").get("cards_inside") == inside


def dealer_errors(app: PitApp) -> list[Any]:
    return [a for a in app.client.view.alerts_open if a.get("kind") == "dealer_error"] + list(
        st(app, "round").get("dealer_errors") or []
    )


async def test_a_damaged_card_is_replaced_by_a_supervisors_key_and_dealing_goes_on_pt2001_r51(
    table: Stack,
) -> None:
    app = PitApp(terminal_connection(table, "pt-2001"))
    ctl = await ControlClient.connect(table.shoe_control)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(
                app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting"
            )
            await settle(app, pilot, lambda v: not v.states["shoe"]["shuffling"] and "jackpot" in v.states)
            await pilot.press("1", "b")
            await settle(app, pilot, lambda v: "1" in v.states["table"]["bets"])
            await pilot.press("n")
            await settle(app, pilot, lambda v: v.states["table"]["state"] in ("dealing", "players", "dealer"))
            rid = str(st(app, "round")["round_id"])
            burn = await burn_of(app, rid)
            # Seat 1 gets 9♠; the dealer's open card comes out damaged (it is the 6♥), then 10♦ and the hole
            # card A♣: the dealer stands on soft 17 (PT-2001 r.19)
            await ctl.queue(["2C"] * burn + ["9S", "6H", "TD", "AC"])
            for _ in range(burn + 1):
                assert hint(app) == "next: c: next card"
                await draw(app, pilot)

            await pilot.press("v")  # the next card is damaged (the emulated shoe sends it unreadable)
            await until(pilot, lambda: app.message.startswith("ok: The next card is damaged"))
            await draw(app, pilot)
            await settle(app, pilot, lambda v: v.states["table"].get("awaiting_card_replacement"))
            await until(
                pilot, lambda: any(a.get("kind") == "card_unreadable" for a in app.client.view.alerts_open)
            )
            app._dirty = True
            await pilot.pause(0.3)
            assert "Unreadable card (critical)" in screen_text(app)
            # the dealer waits: the line says for whom and which key; `c` deals nothing past the damaged card
            wait = hint(app)
            assert wait.startswith("next: damaged card: wait for F14 (supervisor)") and "c:" not in wait, wait
            await refused_draw(app, pilot, "F14 (supervisor)")

            # the supervisor's key: the prompt asks user and PIN and proposes the damaged card's face
            await pilot.press("f14")
            await pilot.pause()
            prompt = screen_text(app)
            assert "Supervisor action: Replace a card" in prompt and "the replacement card" in prompt
            assert app.screen.query_one("#cred-arg").value == "6♥"  # type: ignore[attr-defined]
            await credential(pilot, "alice", DEMO_PINS["alice"])
            await settle(app, pilot, lambda v: not v.states["table"].get("awaiting_card_replacement"))
            await until(pilot, lambda: app.message == "ok: Replace a card (by alice)")
            await settle(app, pilot, lambda v: (v.states["round"]["dealer"].get("cards") or [""])[0] == "6H")
            assert any(r.startswith("Dealer") and "6♥" in r for r in screen_text(app).splitlines())

            # back to dealing: the next card is the seat's second, then the hole card, then the decision
            assert hint(app) == "next: c: next card"
            while not (st(app, "round").get("allowed_actions") or []):
                await draw(app, pilot)
            assert st(app, "round")["seats"][0]["hands"][0]["cards"] == ["9S", "TD"]
            await refused_draw(app, pilot, "a decision is due")
            await pilot.press("s")
            await settle(app, pilot, lambda v: v.states["round"].get("complete"))
            await until(pilot, lambda: app.last_settlement.get("round_id") == rid)
            await refused_draw(app, pilot, "no card is due")
            assert app.last_settlement["dealer_cards"] == ["6H", "AC"]
            dealer = next(r for r in screen_text(app).splitlines() if r.lstrip("│ ").startswith("Dealer"))
            assert "6♥ A♣ = soft 17" in dealer, dealer
            assert not dealer_errors(app), dealer_errors(app)
            assert "Traceback" not in table.controller_log(200)
    finally:
        await ctl.close()


KEY = re.compile(r"(?:^next: |  ·  )([a-z]|F\d+): ")


async def test_rounds_walked_by_the_next_line_only_every_suggested_key_accepted(table: Stack) -> None:
    """Three rounds, each key one the "next:" line names (a seeded choice: another chip up to the maximum or no
    more bets, any decision offered): every one accepted by the table; a pair of kings offers the split, and
    `c` at that decision, or once the dealer stood, is refused and draws nothing."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    ctl = await ControlClient.connect(table.shoe_control)
    pick = random.Random(42)
    settled: set[str] = set()
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(
                app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting"
            )
            await settle(app, pilot, lambda v: not v.states["shoe"]["shuffling"] and "jackpot" in v.states)
            queued = False
            checked_decision = checked_stand = False
            for _ in range(400):
                if app.last_settlement.get("round_id"):
                    settled.add(str(app.last_settlement["round_id"]))
                if len(settled) >= 3:
                    break
                state = st(app, "table").get("state")
                rnd = st(app, "round")
                if state in ("dealing", "players", "dealer") and not queued:
                    queued = (
                        True  # the first round: Seat 1 gets a pair of kings (r.26: split), the dealer a 5
                    )
                    burn = await burn_of(app, str(rnd["round_id"]))
                    await ctl.queue(["2C"] * burn + ["KS", "5C", "KD", "9D"])
                if state in ("players", "dealer") and rnd.get("allowed_actions") and not checked_decision:
                    checked_decision = True
                    assert "split" in rnd["allowed_actions"]
                    await refused_draw(app, pilot, "a decision is due")
                if state == "settled" and rnd.get("complete") and not checked_stand:
                    checked_stand = True
                    await refused_draw(app, pilot, "no card is due")
                line = hint(app)
                keys = KEY.findall(line)
                if not keys:  # "the shoe is shuffling: wait", "wait for the table"
                    assert "wait" in line, line
                    await pilot.pause(0.2)
                    app._dirty = True
                    continue
                key = pick.choice(keys)  # any key the line names: each must be accepted
                before = {name: st(app, name) for name in ("table", "round", "shoe", "lid")}
                app.message = ""
                await pilot.press(key)
                await until(pilot, lambda: app.message.startswith(("ok", "refused")))
                assert app.message.startswith("ok"), (line, key, app.message)
                await until(pilot, lambda b=before: any(st(app, n) != b[n] for n in b))
                await settle(app, pilot, lambda v: True)
            assert len(settled) >= 3 and checked_decision and checked_stand
            assert not dealer_errors(app), dealer_errors(app)
            assert "Traceback" not in table.controller_log(200)
    finally:
        await ctl.close()
