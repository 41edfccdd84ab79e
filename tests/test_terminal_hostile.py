"""Screens never interpret data (issue 13 §4): every string from a device, MQTT or the journal is shown as plain
text. Hostile documents are published, retained, on a real mosquitto by the table's own account (what a
compromised controller, a shoe's error text or a technician's command argument can put there), then each screen
is started with Textual's pilot: it must start, show the strings literally and stay up.

Before the fix the alert console parsed an alert reason as markup: `[/]` raised MarkupError at every start
(the alert is retained)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion
from support.broker import USERS
from test_terminal import screen_text, until

from controller.plain import clean
from controller.terminal.alerts import AlertsApp
from controller.terminal.fleet import FleetAlerts
from controller.terminal.pit import PitApp
from controller.terminal.pit_connection import PitConnection
from tablebench.broker import Broker

pytestmark = pytest.mark.timeout(60)

HOSTILE = [
    "[/]",
    "[b]bold?[/b]",
    "[@click=app.quit]quit[/]",
    "\x1b[2J\x1b[31mred",
    "lone \ud800 surrogate",
    "rtl \u202eevil\u202c mark \u200f",
    "x" * 5000,
    "[link=http://evil]x[/link] :smile:",
]


class Publisher:
    """A paho client of the table's account publishing retained documents, each acknowledged by the broker."""

    def __init__(self, broker: Broker, prefix: str, user: str = "table-T1") -> None:
        self.prefix = prefix
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"hostile-{uuid.uuid4().hex[:6]}",
                                  protocol=mqtt.MQTTv5)  # fmt: skip
        self.client.username_pw_set(user, USERS[user])
        self.client.connect(broker.host, broker.port, 15)
        self.client.loop_start()

    def retain(self, rel: str, payload: Any, *, envelope: bool = True) -> None:
        body = payload if not envelope else {"data": payload, "event_id": 1, "table": "T1", "ts": "x",
                                             "type": "state"}  # fmt: skip
        raw = body if isinstance(body, str) else json.dumps(body)  # JSON escapes the surrogates (\ud800)
        info = self.client.publish(f"{self.prefix}/{rel}", raw, qos=1, retain=True)
        info.wait_for_publish(10)
        assert info.is_published()

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    b = Broker.start(tmp_path / "broker", users=USERS)
    try:
        yield b
    finally:
        b.stop()


def hostile_alert(i: int, text: str, level: Any = 0) -> dict[str, Any]:
    return {"alert_id": 100 + i, "kind": text[:40], "severity": "critical", "level": level,
            "raised_at": 1_700_000_000.0, "reason": text, "acked_by": text[:20]}  # fmt: skip


def test_clean_keeps_text_and_defuses_everything_else() -> None:
    assert clean("[/] [b]x[/b]") == "[/] [b]x[/b]"  # brackets stay, as text
    assert clean("\x1b[2J") == "\\x1b[2J" and "\x1b" not in clean("\x1b[2J\x07\x9b")
    assert clean("a\ud800b") == "a\ufffdb"
    assert clean("\u202eevil") == "<U+202E>evil" and clean("\u200f") == "<U+200F>"
    assert len(clean("x" * 10_000)) <= 161 and clean("x" * 10_000).endswith("…")
    assert clean("Seat 2: 10♠ A♥ 漢字") == "Seat 2: 10♠ A♥ 漢字"
    assert clean({"a": 1}) == "{'a': 1}" and clean(None) == "None"
    clean("\ud800" * 100).encode("utf-8")  # always encodable: a terminal write never raises


async def test_alert_console_starts_on_retained_hostile_alerts_and_shows_them_literally(
    broker: Broker,
) -> None:
    """Retained alerts/open whose every field is hostile (markup, escape sequences, surrogates, RTL marks,
    5000 characters), plus malformed alerts (no id, a string level): the console starts, lists the alerts with
    the text as text, rings and flashes; an escalation rings again."""
    site = f"s{uuid.uuid4().hex[:6]}"
    pub = Publisher(broker, f"casino/{site}/table/T1")
    alerts = [hostile_alert(i, s) for i, s in enumerate(HOSTILE)]
    alerts += [{"kind": "no id"}, {"alert_id": "7", "reason": "[/]"}, {"alert_id": 9, "level": "[/]",
               "raised_at": "[/]", "severity": ["x"], "reason": {"nested": "[/]"}}]  # fmt: skip
    pub.retain("alerts/open", {"alerts": alerts})
    pub.retain("alerts/events", {"action": "acknowledged", "alert": hostile_alert(50, "[/]\x1b[2J")})
    try:
        fleet = FleetAlerts(broker.host, broker.port, username="supervisor1", password=USERS["supervisor1"])
        console = AlertsApp(fleet)
        async with console.run_test(size=(200, 50)) as pilot:
            await until(pilot, lambda: len(fleet.open_alerts()) == len(HOSTILE) + 1)
            console._dirty = True
            await pilot.pause(0.3)
            text = screen_text(console)
            assert "[/]" in text and "[b]bold?[/b]" in text and "[@click=app.quit]quit[/]" in text
            assert "\\x1b[2J\\x1b[31mred" in text and "<U+202E>evil" in text
            assert "\x1b" not in text and "\ud800" not in text
            assert "all sites" in text  # the header says the site in words
            assert console.bells == 1 and console.query_one("#banner").has_class("flash")
            # the same alert escalates: the console rings again
            alerts[0] = {**alerts[0], "level": 1}
            pub.retain("alerts/open", {"alerts": alerts})
            await until(pilot, lambda: console.bells == 2)
            assert "level 1" in screen_text(console)
            assert console.is_running
    finally:
        pub.close()


def _hostile_states(text: str) -> dict[str, Any]:
    hand = {"hand": 0, "cards": [text[:2], "AS"], "total": 21, "soft": False, "blackjack": False,
            "stake": 500, "doubled": False, "status": text}  # fmt: skip
    return {
        "table": {"state": text, "profile": text, "session_id": text, "faults": [text, "jam"],
                  "bets": {text[:5]: {"amount": text}}, "lid": text, "lid_unlocked_by": text},
        "round": {"round_id": text, "phase": text, "seats": [{"seat": text, "bet": text, "hands": [hand],
                  "insurance": text}], "dealer": {"cards": [text], "total": text},
                  "turn": {"kind": text, "seat": text, "hand": text}, "allowed_actions": [text, "hit"]},
        "shoe": {"dealt_this_shoe": text, "cards_out": text, "cards_inside": text, "decks": text,
                 "linked": True},
        "lid": {"state": text, "unlocked_by": text},
        "jam": {"jammed": True, "location": text},
        "jackpot": {"meter": text, "pending_hits": [{"hit_id": text, "seat": text, "combination": text,
                    "amount": text}], "mode": text},
        "software": {"version": text, "profile": text, "rule_book": text},
    }  # fmt: skip


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
async def test_pit_terminal_shows_hostile_documents_as_text(broker: Broker, text: str) -> None:
    """Every retained document the pit terminal shows, with a hostile string in every field (and wrong types):
    it starts, stays up and shows the string as text."""
    site = f"s{uuid.uuid4().hex[:6]}"
    prefix = f"casino/{site}/table/T1"
    pub = Publisher(broker, prefix)
    for name, doc in _hostile_states(text).items():
        pub.retain(f"state/{name}", doc)
    pub.retain("alerts/open", {"alerts": [hostile_alert(0, text), text, [text]]})
    pub.retain("state/bogus", text)  # a document that is not an object
    pub.retain("status", "online", envelope=False)
    try:
        app = PitApp(PitConnection(broker.host, broker.port, "dealer", USERS["dealer"], prefix))
        async with app.run_test(size=(200, 60)) as pilot:
            await until(pilot, lambda: {"table", "round", "shoe", "jam", "software"} <= app.client.view.states.keys()
                        and app.client.view.alerts_open)  # fmt: skip
            app._dirty = True
            await pilot.pause(0.3)
            shown = screen_text(app)
            assert clean(text)[:20] in shown
            assert "\x1b" not in shown and "\ud800" not in shown
            assert app.is_running
    finally:
        pub.close()


async def test_credential_prompt_shows_its_action_as_text() -> None:
    """The prompt's title carries outside strings (a table id from a topic, a hit id): text, never markup."""
    from textual.app import App

    from controller.terminal.credentials import CredentialScreen

    app: App[None] = App()
    async with app.run_test(size=(80, 24)) as pilot:
        for text in HOSTILE:
            await app.push_screen(CredentialScreen(f"Acknowledge alerts #1 on {text}", "hit id", text))
            await pilot.pause()
            shown = screen_text(app)
            assert clean(text)[:20] in shown and "\x1b" not in shown
            await pilot.press("escape")
            await pilot.pause()


def test_demo_output_never_writes_outside_strings_raw() -> None:
    """`tablectl demo --auto` prints card and settlement events from MQTT: escape sequences never reach the
    user's terminal raw, surrogates never make print() raise."""
    from tablebench.demo_lines import card_line, settlement_line

    for text in HOSTILE:
        lines = [
            card_line({"shoe_seq": text, "recipient": text, "code": text}),
            settlement_line({"round_id": text, "dealer_cards": [text], "dealer_total": text,
                             "hands": [{"seat": text, "hand": 0, "cards": [text], "total": text,
                                        "outcome": text, "net": text}]}),
        ]  # fmt: skip
        for line in lines:
            assert "\x1b" not in line and "\u202e" not in line
            line.encode("utf-8")


async def test_pit_terminal_shows_unknown_until_reported_then_the_software(broker: Broker) -> None:
    """Before the first retained document nothing pretends to be fine ('link: ok' was shown): every value is
    'unknown'; the retained state/software (docs/mqtt.md) puts the version, profile and rule book on screen."""
    site = f"s{uuid.uuid4().hex[:6]}"
    prefix = f"casino/{site}/table/T1"
    pub = Publisher(broker, prefix)
    pub.retain("status", "online", envelope=False)
    try:
        app = PitApp(PitConnection(broker.host, broker.port, "dealer", USERS["dealer"], prefix))
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.client.view.status == "online")
            app._dirty = True
            await pilot.pause(0.3)
            text = screen_text(app)
            for line in (
                "link: unknown",
                "lid: unknown",
                "jam: unknown",
                "Round: unknown",
                "software unknown",
                "rule book unknown",
                "Jackpot meter: unknown",
                "waiting for the table's first report",
            ):
                assert line in text, line  # fmt: skip
            assert "link: ok" not in text
            pub.retain("state/software", {"version": "0.9.1", "profile": "pt-2001", "rule_book": "PT-2001",
                                          "digests": {}, "combined": "0" * 64, "audit_public_key": None})  # fmt: skip
            await until(pilot, lambda: "software" in app.client.view.states)
            app._dirty = True
            await pilot.pause(0.3)
            assert "software 0.9.1 · profile pt-2001 · rule book PT-2001" in screen_text(app)
    finally:
        pub.close()


async def test_chip_selector_stays_within_the_tables_own_limits(broker: Broker) -> None:
    """The table's configuration may narrow the profile's limits (state/table "limits"): the chip selector never
    offers more than the table maximum (issue 19), nor a chip below its minimum, nor one that is not a multiple of
    the minimum (25.00 at a 10.00 table: a bet PT-2001 r.14 refuses)."""
    site = f"s{uuid.uuid4().hex[:6]}"
    prefix = f"casino/{site}/table/T1"
    pub = Publisher(broker, prefix)
    pub.retain("status", "online", envelope=False)
    pub.retain("state/table", {"state": "betting", "profile": "pt-2001", "bets": {},
                               "limits": {"min_bet": 1000, "max_bet": 6000}})  # fmt: skip
    try:
        app = PitApp(PitConnection(broker.host, broker.port, "dealer", USERS["dealer"], prefix))
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: "table" in app.client.view.states)
            assert app.chips() == (1000, 5000)
            for _ in range(10):
                await pilot.press("right_square_bracket")
            assert app.chip == 5000
            assert "chip 50.00 ([ ] 10.00-50.00)" in screen_text(app)
    finally:
        pub.close()
