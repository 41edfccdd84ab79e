"""Players at the seats (issue 41) in the real service: real mosquitto with the shipped ACL, the emulated shoe on a
pty, the service (`tablectl run`) as a subprocess. Over MQTT, as the pit terminal and a supervisor send them: a
player card seated by the dealer on duty, an anonymous player by a supervisor, the card's player unseated, a
refusal answered with its reason; a restart keeps the seated player and publishes state/players again; close_table
ends the other visit. Every events/player and state/players is checked against its schema and docs/mqtt.md
"Players at the seats"; the journal holds the player_in / player_out records with who did it."""

from __future__ import annotations

import json
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from controller.client import CommandFailed, TableClient
from controller.journal.store import Journal
from controller.mqtt.schemas import validate_message
from tablebench.demo_session import prepare_session
from tablebench.stack import DEMO_PINS, Stack, StackOptions

pytestmark = [
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto"),
    pytest.mark.timeout(180),
]

SUP, PIN = "alice", DEMO_PINS["alice"]
WAIT = 30.0


@pytest.fixture
async def table(tmp_path: Path) -> AsyncIterator[Stack]:
    stack = Stack(tmp_path / "stack", StackOptions(profile="pt-2001", jackpot=False)).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


def watch(client: TableClient, topic: str) -> list[dict[str, Any]]:
    """Every message of ``topic`` the client receives (its envelope), each checked against the topic's schema."""
    seen: list[dict[str, Any]] = []

    def on_change(event: Any) -> None:
        if event is not None and event.topic == topic:
            validate_message(topic, json.dumps(event.doc).encode())
            seen.append(event.doc)

    client.on_change.append(on_change)
    return seen


def seats(client: TableClient) -> dict[str, Any]:
    doc = client.view.states.get("players")
    return doc.get("seats", {}) if isinstance(doc, dict) else {}


async def test_two_players_seated_one_unseated_restart_and_close_table(table: Stack) -> None:
    dealer, sup = table.client("dealer"), table.client("supervisor1")
    await dealer.connect()
    await sup.connect()
    try:
        await dealer.wait_for(lambda v: v.states.get("table", {}).get("state") == "betting", WAIT)
        # state/players at the service's start: nobody seated yet
        await dealer.wait_for(lambda v: v.states.get("players") == {"seats": {}}, WAIT)
        events = watch(dealer, "events/player")
        docs = watch(dealer, "state/players")
        session = dealer.view.states["table"]["session_id"]

        await dealer.dealer("dealer_sign_in", name="Ana Silva")
        answer = await dealer.dealer("player_in", seat=2, card="6012345678")
        assert {k: answer["result"][k] for k in ("seat", "player")} == {
            "seat": 2,
            "player": "card:6012345678",
        }
        await sup.supervisor(SUP, PIN, "player_in", seat=5, anonymous="red scarf, glasses")
        await dealer.wait_for(lambda _v: sorted(seats(dealer)) == ["2", "5"], WAIT)
        assert seats(dealer)["5"]["player"] == f"anon:{session}-1"

        # refusals: answered with the reason, nothing changes
        with pytest.raises(CommandFailed, match="that player card is already seated at seat 2"):
            await dealer.dealer("player_in", seat=3, card="6012345678")
        with pytest.raises(CommandFailed, match="seat 5 already holds a player"):
            await dealer.dealer("player_in", seat=5, card="6099999999")
        with pytest.raises(CommandFailed, match="seat 4 has no player"):
            await dealer.dealer("player_out", seat=4)
        # the schema: ASCII digits only
        with pytest.raises(CommandFailed, match=r"\$\.args\.card: .* does not match"):
            await sup.supervisor(SUP, PIN, "player_in", seat=3, card="60\u00b9234")
        hostile = "red\x1b[2J\nscarf"  # a control sequence: refused by the schema, and never repeated
        not_repeated = r"\$\.args\.anonymous: does not satisfy .*not repeated"
        with pytest.raises(CommandFailed, match=not_repeated) as bad:
            await dealer.dealer("player_in", seat=3, anonymous=hostile)
        assert "scarf" not in bad.value.reason

        await sup.supervisor(SUP, PIN, "player_out", seat=2)
        await dealer.wait_for(lambda _v: sorted(seats(dealer)) == ["5"], WAIT)

        # a restart: the seated player is kept, and state/players is published again at the start
        published, seated = len(docs), seats(dealer)["5"]
        table.stop_controller()
        dealer.view.status = "unknown"
        table.start_controller()
        await dealer.wait_for(lambda v: v.status == "online", WAIT)
        await dealer.wait_for(lambda _v: len(docs) > published, WAIT)
        assert docs[-1]["data"] == {"seats": {"5": seated}}
        assert seated == {"player": f"anon:{session}-1", "since": seated["since"]}
        await dealer.wait_for(lambda v: v.states["table"].get("state") == "betting", WAIT)

        await sup.supervisor(SUP, PIN, "close_table")
        await dealer.wait_for(lambda _v: seats(dealer) == {}, WAIT)
        await dealer.wait_for(lambda _v: len(events) == 4, WAIT)
        got = [e["data"] for e in events]
        assert got == [
            {
                "action": "in",
                "seat": 2,
                "player": "card:6012345678",
                "by": "Ana Silva",
                "session_id": session,
            },
            {
                "action": "in",
                "seat": 5,
                "player": f"anon:{session}-1",
                "description": "red scarf, glasses",
                "by": SUP,
                "session_id": session,
            },
            {
                "action": "out",
                "seat": 2,
                "player": "card:6012345678",
                "by": SUP,
                "session_id": session,
                "reason": "player_out",
            },
            {
                "action": "out",
                "seat": 5,
                "player": f"anon:{session}-1",
                "by": SUP,
                "session_id": session,
                "reason": "close_table",
            },
        ]
        assert all(e["type"] == "player" and isinstance(e["event_id"], int) for e in events)
        assert len({e["event_id"] for e in events}) == 4
    finally:
        await dealer.close()
        await sup.close()

    table.stop_controller()
    journal = Journal(table.workdir / "state" / "journal.db")
    try:
        kinds = [(r.kind, r.data) for r in journal.records() if r.kind in ("player_in", "player_out")]
        refused = [
            r.data["response"]["reason"]
            for r in journal.records()
            if r.kind == "command_result" and r.data["action"] == "player_in" and not r.data["response"]["ok"]
        ]
    finally:
        journal.close()
    assert [(k, d["seat"], d["by"]) for k, d in kinds] == [
        ("player_in", 2, "Ana Silva"),
        ("player_in", 5, SUP),
        ("player_out", 2, SUP),
        ("player_out", 5, SUP),
    ]
    # every refusal journaled with its reason, like any command's answer (the schema's in the refusal records)
    assert [r.split(":")[0] for r in refused] == ["that player card is already seated at seat 2 of this table",
                                                  "seat 5 already holds a player"]  # fmt: skip
    log = (table.workdir / "controller.log").read_text(errors="replace")
    assert "scarf" not in log  # a description, taken or refused, never reaches the service log
