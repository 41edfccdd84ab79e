"""The pit terminal against the real service (broker, controller, emulated shoe): the dealer on duty signs in
with the sign-in key (issue 29), and a jackpot meter correction is asked by one supervisor (F1) and confirmed
by another (F13, Shift+F1) under dual control (docs/jackpot.md "Corrections")."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt.schemas import validate_message
from controller.terminal.pit import PitApp
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.stack import DEMO_PINS, Stack, StackOptions
from tests.test_terminal import SIZE, screen_text, settle, until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Stack]:
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001", jackpot=True)).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


def collect(app: PitApp, topic: str) -> list[dict[str, Any]]:
    """Every message of ``topic`` the terminal's connection receives, each checked against its schema."""
    seen: list[dict[str, Any]] = []

    def on_change(event: Any) -> None:
        if event is not None and event.topic == topic:
            validate_message(topic, json.dumps(event.doc).encode())
            seen.append(event.doc)

    app.client.on_change.append(on_change)
    return seen


async def signed(pilot: Any, user: str, arg: str | None = None) -> None:
    """The credential prompt: user, Enter, PIN, then (when given) the argument typed over the proposed one."""
    await pilot.pause()
    await pilot.press(*user, "enter", *DEMO_PINS[user])
    if arg is not None:
        await pilot.click("#cred-arg")
        await pilot.press("ctrl+a", "backspace", *arg)  # select all, delete, type
    await pilot.click("#cred-ok")


async def sign_in(app: PitApp, pilot: Any, name: str) -> None:
    await pilot.press("w")
    await pilot.pause()
    await pilot.press(*name, "enter")


async def test_the_dealer_signs_in_from_the_terminal_and_is_shown(table: Stack) -> None:
    """Issue 29: `w` asks the name; the controller publishes events/dealer and state/table.dealer; a name
    that is not one is refused with the controller's reason and nothing changes."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        assert "dealer" not in app.client.view.states["table"]
        assert "Dealer sign-in" in screen_text(app)  # the footer names the key
        events = collect(app, "events/dealer")
        await sign_in(app, pilot, "Ana Silva")
        await settle(app, pilot, lambda v: v.states["table"].get("dealer") == "Ana Silva")
        await until(pilot, lambda: bool(events))
        assert events[0]["type"] == "dealer"
        assert events[0]["data"]["action"] == "signed_in" and events[0]["data"]["dealer"] == "Ana Silva"
        assert "dealer Ana Silva" in screen_text(app)
        await sign_in(app, pilot, "<b>x</b>")
        await until(pilot, lambda: app.message.startswith("refused: Dealer sign-in"))
        assert "dealer name must be" in app.message
        assert app.client.view.states["table"]["dealer"] == "Ana Silva"


async def test_jackpot_correction_asked_by_one_supervisor_confirmed_by_another(table: Stack) -> None:
    """docs/jackpot.md "Corrections" (PT-2001 r.44 bounds): alice asks with F1 (the meter does not move), alice
    cannot confirm her own, bob confirms with F13 (pre-filled with the pending id): the meter is set."""
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(
            app,
            pilot,
            lambda v: v.status == "online" and v.states.get("jackpot", {}).get("meter") is not None,
        )
        jp = app.client.view.states["jackpot"]
        old = jp["meter"]
        new = old + 1234
        await pilot.press("f1")
        await signed(pilot, "alice", f"{new} meter repaired")
        await settle(app, pilot, lambda v: "pending_correction" in v.states["jackpot"])
        pending = app.client.view.states["jackpot"]["pending_correction"]
        assert pending["by"] == "alice" and pending["value"] == new
        assert app.client.view.states["jackpot"]["meter"] == old  # only asked

        await pilot.press("f13")  # the one who asked cannot confirm (dual control)
        await signed(pilot, "alice")
        await until(pilot, lambda: app.message.startswith("refused: Confirm jackpot correction"))
        assert app.client.view.states["jackpot"]["meter"] == old

        await pilot.press("f13")
        await pilot.pause()
        prompt = screen_text(app)
        assert f"confirm correction {pending['correction_id']} asked by alice" in prompt
        await signed(pilot, "bob")  # the correction id is pre-filled
        await settle(app, pilot, lambda v: v.states["jackpot"]["meter"] == new)
        assert "pending_correction" not in app.client.view.states["jackpot"]
        await until(pilot, lambda: app.message == "ok: Confirm jackpot correction (by bob)")


@pytest.mark.parametrize(
    ("action", "arg", "why"),
    [
        ("jackpot_correct", "150000", "then the reason"),  # no reason
        ("jackpot_correct", "1e5 meter", "then the reason"),
        ("jackpot_correct", "\u0661\u0662\u0663 meter", "then the reason"),  # digits, but not ASCII ones
        ("jackpot_correct", "-5 meter", "then the reason"),
        ("jackpot_correct", "9" * 16 + " meter", "then the reason"),  # beyond the sign's 15 digits
        ("jackpot_correct_confirm", "x1", "whole number"),
        ("jackpot_correct_confirm", "", "whole number"),
    ],
)
def test_a_correction_argument_that_is_not_one_is_refused_before_signing(
    action: str, arg: str, why: str
) -> None:
    from controller.terminal.credentials import Credential
    from controller.terminal.pit_supervisor import SupervisorArgumentError, supervisor_call

    with pytest.raises(SupervisorArgumentError, match=why):
        supervisor_call(action, Credential("alice", "123456", arg), None, "pt-2001", [])  # type: ignore[arg-type]
