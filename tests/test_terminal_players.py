"""The pit terminal seats players (issue 41) against the real service (broker with the shipped ACL, controller,
emulated shoe): a keyboard-wedge card reader's swipe fed through the terminal's real input path (the bytes the
reader types, parsed by Textual's own terminal parser into key events and sent to the app in one burst, as its
driver does) seats the card's player at the selected seat, and its digits select no seat; the player prompt takes
a swipe or a typed number, and an anonymous player's description; the player-out key unseats. Also the reader's
formats (controller/terminal/card_reader.py) as properties: track 2 with or without track 1 before it, and the
capture that tells a reader's burst from a person's typing."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from textual._xterm_parser import XTermParser

from controller.mqtt.schemas import validate_message
from controller.terminal.card_reader import NotACard, Swipe, SwipeCapture, card_from_entry
from controller.terminal.pit import PitApp
from controller.terminal.pit_player import player_args
from tablebench.demo_session import prepare_session
from tablebench.demo_terminal import terminal_connection
from tablebench.stack import Stack, StackOptions
from tests.test_terminal import SIZE, screen_text, settle, until

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Stack]:
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001", jackpot=False)).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


def reader_types(app: PitApp, text: str) -> None:
    """What a keyboard-wedge reader does: its characters and Enter at once, through the terminal's parser
    (Textual's XTermParser, as the Linux driver feeds stdin to it) into the app's queue, no pause between."""
    driver = app._driver
    assert driver is not None
    for event in XTermParser().feed(text + "\r"):
        driver.send_message(event)


def seats(app: PitApp) -> dict[str, Any]:
    doc = app.client.view.states.get("players")
    return doc.get("seats", {}) if isinstance(doc, dict) else {}


async def test_a_swipe_a_typed_card_and_an_anonymous_player_from_the_terminal(table: Stack) -> None:
    app = PitApp(terminal_connection(table, "pt-2001"))
    async with app.run_test(size=SIZE) as pilot:
        await settle(app, pilot, lambda v: v.status == "online" and v.states["table"]["state"] == "betting")
        events: list[dict[str, Any]] = []
        app.client.on_change.append(
            lambda e: events.append(e.doc) if e is not None and e.topic == "events/player" else None
        )
        assert "Player in" in screen_text(app) and "Player out" in screen_text(
            app
        )  # the footer names the keys
        await pilot.press("3")
        # the reader sends track 1 (the holder's name) then track 2: the name is skipped, seat 3 stays selected
        reader_types(app, "%B6012345678^DOE/JANE^2812?;6012345678=2812?")
        await settle(app, pilot, lambda _v: seats(app).get("3", {}).get("player") == "card:6012345678")
        assert app.seat == 3  # the swipe's digits selected no seat
        await until(pilot, lambda: app.message == "ok: Player in at seat 3")
        assert "DOE" not in screen_text(app) and "JANE" not in app.message
        assert "player card:6012345678" in screen_text(app)  # the entry line shows the seat's player

        # the prompt: the reader types into its card field (the same path as typing), Enter seats
        await pilot.press("5", "a")
        await pilot.pause()
        assert "Player in at seat 5" in screen_text(app)
        reader_types(app, ";6099887766?")
        await settle(app, pilot, lambda _v: seats(app).get("5", {}).get("player") == "card:6099887766")

        # typed by hand, an anonymous player
        await pilot.press("6", "a")
        await pilot.pause()
        await pilot.click("#player-anon")
        await pilot.press(*"grey coat", "enter")
        await settle(app, pilot, lambda _v: seats(app).get("6", {}).get("player", "").startswith("anon:"))

        # the same card at another seat: the controller's reason, shown
        await pilot.press("7")
        reader_types(app, ";6012345678?")
        await until(pilot, lambda: app.message.startswith("refused: Player in at seat 7"))
        assert "already seated at seat 3" in app.message
        # a swipe the reader did not finish: said, nothing sent
        reader_types(app, ";60123")
        await until(pilot, lambda: "not read completely" in app.message)

        await pilot.press("3", "z")  # player out
        await settle(app, pilot, lambda _v: "3" not in seats(app))
        await until(pilot, lambda: app.message == "ok: Player out at seat 3")

        await until(pilot, lambda: len(events) == 4)
        for doc in events:
            validate_message("events/player", json.dumps(doc).encode())
        assert [(e["data"]["action"], e["data"]["seat"]) for e in events] == [
            ("in", 3),
            ("in", 5),
            ("in", 6),
            ("out", 3),
        ]
        assert events[2]["data"]["description"] == "grey coat" and events[2]["data"]["by"] == "dealer"


# ---- the reader's formats ----
PAN = st.text("0123456789", min_size=4, max_size=32)
NAME = st.text("ABCDEFGHIJKLMNOPQRSTUVWXYZ /", min_size=2, max_size=26)


@given(PAN, st.text("0123456789", max_size=20), st.one_of(st.none(), NAME))
def test_a_swipe_gives_its_track_2_account_number(pan: str, more: str, name: str | None) -> None:
    track1 = f"%B{pan}^{name}^2812101?" if name is not None else ""
    track2 = f";{pan}={more}?" if more else f";{pan}?"
    assert card_from_entry(track1 + track2) == pan
    assert player_args(track1 + track2, "") == {"card": pan}


@given(st.text(max_size=80))
def test_any_entry_is_a_card_number_or_refused_without_repeating_it(text: str) -> None:
    try:
        card = card_from_entry(text)
    except NotACard as exc:
        assert not text.strip() or text.strip() not in str(exc) or len(text.strip()) < 4
    else:
        assert card.isascii() and card.isalnum() and 4 <= len(card) <= 32


def test_track_1_alone_and_an_unfinished_swipe_are_refused() -> None:
    with pytest.raises(NotACard, match="no track 2"):
        card_from_entry("%B6012345678^DOE/JANE^2812?")
    with pytest.raises(NotACard, match="not read completely"):
        card_from_entry(";6012345")
    with pytest.raises(NotACard, match="describe an anonymous player"):
        player_args("  ", "   ")


@given(PAN, st.floats(min_value=0.0, max_value=0.05))
def test_the_capture_takes_a_readers_burst_and_lets_a_person_pause(pan: str, step: float) -> None:
    cap, now = SwipeCapture(), 100.0
    for ch in f";{pan}?":
        assert cap.feed(ch, ch, now) is Swipe.TAKEN
        now += step
    assert cap.feed("enter", "\r", now) is Swipe.DONE
    assert cap.take() == f";{pan}?" and cap.take() == ""
    # a person: ';' then, a second later, '3' (select seat 3): the key is the app's again
    assert cap.feed("semicolon", ";", 200.0) is Swipe.TAKEN
    assert cap.feed("3", "3", 201.0) is Swipe.PASS and not cap.capturing
    assert cap.feed("b", "b", 201.1) is Swipe.PASS
