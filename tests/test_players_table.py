"""Players at the seats (issue 41, table side) in the table core: ``player_in`` / ``player_out`` by the dealer (the
dealer on duty is ``by``) or a supervisor, journaled and published (events/player, state/players) exactly as
docs/mqtt.md "Players at the seats" says, every refusal with its reason and nothing changed, the seated players
and the pseudonyms' count kept across a restart, every visit ended by close_table; the card and description
grammar (controller/table/player_ids.py) as a property."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.effects import Event, EventKind, Rejected, StateDocument
from controller.mqtt.schemas import validate_message
from controller.table.core import TableCore
from controller.table.player_ids import CARD_NUMBER, card_number, description
from drivers import events as ev
from tablebench.table_testing import Harness


def player_events(h: Harness) -> list[dict[str, Any]]:
    return [fx.data for fx in h.effects if isinstance(fx, Event) and fx.kind is EventKind.PLAYER]


def players_docs(h: Harness) -> list[dict[str, Any]]:
    return [
        json.loads(fx.text)
        for fx in h.effects
        if isinstance(fx, StateDocument) and fx.name.value == "players"
    ]


def envelope(type_: str, data: dict[str, Any]) -> bytes:
    return json.dumps(
        {"event_id": 1, "ts": "2026-01-01T00:00:00.000Z", "type": type_, "table": "T1", "data": data}
    ).encode()


def assert_valid(h: Harness) -> None:
    """Every events/player and state/players the core produced fits its schema (docs/mqtt.md)."""
    for data in player_events(h):
        validate_message("events/player", envelope("player", data))
    for doc in players_docs(h):
        validate_message("state/players", envelope("state", doc))


def test_a_table_that_seats_nobody_publishes_and_snapshots_nothing_new() -> None:
    """What the table published before issue 41 is unchanged until a player is seated (the equivalence
    recordings replay byte for byte: tests/test_core_equivalence.py)."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    assert not players_docs(h) and not player_events(h)
    assert "players" not in h.core.snapshot() and "players" not in h.core.snapshot()["published"]


def test_card_and_anonymous_players_in_and_out_journaled_and_published() -> None:
    h = Harness()
    h.open_continuous()
    session = h.core.session.id
    h.dealer("player_in", seat=2, card="6012345678")  # nobody signed in: by the role
    h.dealer("dealer_sign_in", name="Ana Silva")
    h.dealer("player_in", seat=5, anonymous="red scarf, glasses")
    h.sup("player_out", user="alice", seat=2)
    assert player_events(h) == [
        {"action": "in", "seat": 2, "player": "card:6012345678", "by": "dealer", "session_id": session},
        {
            "action": "in",
            "seat": 5,
            "player": f"anon:{session}-1",
            "description": "red scarf, glasses",
            "by": "Ana Silva",
            "session_id": session,
        },
        {
            "action": "out",
            "seat": 2,
            "player": "card:6012345678",
            "by": "alice",
            "session_id": session,
            "reason": "player_out",
        },
    ]
    seated = h.records("player_in")
    assert [(r["seat"], r["player"], r["by"]) for r in seated] == [
        (2, "card:6012345678", "dealer"),
        (5, f"anon:{session}-1", "Ana Silva"),
    ]
    assert seated[1]["description"] == "red scarf, glasses" and "description" not in seated[0]
    (left,) = h.records("player_out")
    assert left == {**left, "seat": 2, "player": "card:6012345678", "reason": "player_out", "by": "alice"}
    docs = players_docs(h)
    assert [sorted(d["seats"]) for d in docs] == [["2"], ["2", "5"], ["5"]]
    assert docs[-1]["seats"]["5"] == {"player": f"anon:{session}-1", "since": seated[1]["at"]}
    assert_valid(h)


def test_anonymous_pseudonyms_count_per_session_and_are_never_reused() -> None:
    h = Harness()
    h.open_continuous()
    session = h.core.session.id
    h.dealer("player_in", seat=1, anonymous="tall man, grey coat")
    h.dealer("player_out", seat=1)
    h.dealer("player_in", seat=1, anonymous="tall man, grey coat")  # back again: a new visit, a new number
    assert [e["player"] for e in player_events(h) if e["action"] == "in"] == [
        f"anon:{session}-1",
        f"anon:{session}-2",
    ]


REFUSALS = [
    ({"seat": 8, "card": "60123456"}, r"seat must be an integer 1\.\.7"),  # PT-2001 r.2: the profile's seats
    ({"seat": 0, "card": "60123456"}, r"seat must be an integer 1\.\.7"),
    ({"seat": "3", "card": "60123456"}, r"seat must be an integer 1\.\.7"),
    ({"seat": 3}, "exactly one of card"),
    ({"seat": 3, "card": "60123456", "anonymous": "red scarf"}, "exactly one of card"),
    ({"seat": 3, "card": "601"}, "a player card number is 4-32 letters or digits"),
    ({"seat": 3, "card": "6012-3456"}, "a player card number is 4-32 letters or digits"),
    ({"seat": 3, "card": "6" * 33}, "a player card number is 4-32 letters or digits"),
    ({"seat": 3, "card": "60123456\n"}, "a player card number is 4-32 letters or digits"),
    ({"seat": 3, "card": 60123456}, "a player card number is 4-32 letters or digits"),
    ({"seat": 3, "anonymous": ""}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": "   "}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": "x" * 61}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": "red\nscarf"}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": "red\x1b[2Jscarf"}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": "red\u202escarf"}, "description is 1-60 printable characters"),
    ({"seat": 3, "anonymous": ["red scarf"]}, "description is 1-60 printable characters"),
]


@pytest.mark.parametrize(("args", "reason"), REFUSALS)
def test_a_malformed_player_in_is_refused_with_its_reason_and_nothing_changes(
    args: dict[str, Any], reason: str
) -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("player_in", seat=1, card="60000001")
    before = h.core.snapshot()
    for who in ("dealer", "supervisor"):
        with pytest.raises(Rejected, match=reason) as refused:
            h.dealer("player_in", **args) if who == "dealer" else h.sup("player_in", **args)
        assert h.core.snapshot() == before
        # the refusal reason is logged (activity.py): it never repeats the card or the description
        given = [str(v) for k, v in args.items() if k != "seat" and len(str(v)) >= 4]
        assert not [g for g in given if g in refused.value.reason]


def test_one_player_per_seat_one_seat_per_card_and_no_player_out_on_an_empty_seat() -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("player_in", seat=1, card="60000001")
    before = h.core.snapshot()
    with pytest.raises(Rejected, match="seat 1 already holds a player: player_out first"):
        h.dealer("player_in", seat=1, card="60000002")
    with pytest.raises(Rejected, match="seat 1 already holds a player"):
        h.sup("player_in", seat=1, anonymous="red scarf")
    with pytest.raises(Rejected, match="that player card is already seated at seat 1 of this table") as twice:
        h.dealer("player_in", seat=4, card="60000001")
    assert "60000001" not in twice.value.reason  # the seat is named, never the card (the log keeps reasons)
    with pytest.raises(Rejected, match="seat 6 has no player"):
        h.dealer("player_out", seat=6)
    with pytest.raises(Rejected, match=r"seat must be an integer 1\.\.7"):
        h.sup("player_out", seat=9)
    assert h.core.snapshot() == before


def test_refused_while_the_table_is_closed_and_for_the_dealer_during_a_fault() -> None:
    h = Harness()
    for action, args in (("player_in", {"seat": 1, "card": "60000001"}), ("player_out", {"seat": 1})):
        with pytest.raises(Rejected, match="the table is closed"):
            h.dealer(action, **args)
        with pytest.raises(Rejected, match="the table is closed"):
            h.sup(action, **args)
    h.open_continuous()
    h.sup("player_in", seat=1, card="60000001")
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    assert h.core.state == "jammed"
    with pytest.raises(Rejected, match=r"dealing blocked: jam \(PT-2001 r\.51\)"):
        h.dealer("player_in", seat=2, card="60000002")
    h.sup("player_in", seat=2, card="60000002")  # a supervisor may (a player sits down during a jam)
    assert sorted(h.core.players.seats) == [1, 2]


def test_seated_players_survive_a_restart_and_close_table_ends_every_visit() -> None:
    h = Harness()
    h.open_continuous()
    session = h.core.session.id
    h.dealer("player_in", seat=3, card="60000003")
    h.dealer("player_in", seat=1, anonymous="red scarf")
    restored = TableCore(h.core._load_profile)
    restored.restore(h.core.snapshot())
    assert restored.players.document() == h.core.players.document()
    assert restored.snapshot() == h.core.snapshot()
    h.core = restored  # the service after a restart
    h.dealer("player_in", seat=2, anonymous="green hat")  # the count goes on: no pseudonym reused
    assert player_events(h)[-1]["player"] == f"anon:{session}-2"
    h.clear()
    h.sup("close_table", user="bob")
    assert player_events(h) == [
        {"action": "out", "seat": s, "player": p, "by": "bob", "session_id": session, "reason": "close_table"}
        for s, p in ((1, f"anon:{session}-1"), (2, f"anon:{session}-2"), (3, "card:60000003"))
    ]
    assert [r["reason"] for r in h.records("player_out")] == ["close_table"] * 3
    assert players_docs(h)[-1] == {"seats": {}}
    assert_valid(h)


# ---- the grammar (controller/table/player_ids.py) ----
ALNUM = st.sampled_from("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
CARD_SCHEMA = re.compile(r"^[0-9A-Za-z]{4,32}$")


@given(st.text(ALNUM, min_size=4, max_size=32))
def test_every_card_number_of_the_contract_is_taken_as_given(number: str) -> None:
    assert card_number(number) == number


@given(st.one_of(st.text(max_size=40), st.integers(), st.none(), st.binary(max_size=8)))
def test_a_card_is_taken_exactly_when_it_is_4_to_32_ascii_letters_or_digits(value: Any) -> None:
    expected = isinstance(value, str) and len(value) in range(4, 33) and value.isascii() and value.isalnum()
    try:
        taken = card_number(value) == value
    except Rejected:
        taken = False
    assert taken == expected
    if taken:  # the schemas say the same (the broker's side checks it before the core)
        assert CARD_SCHEMA.match(value) and CARD_NUMBER.fullmatch(value)


@given(st.text(max_size=70))
def test_a_description_is_taken_exactly_when_printable_1_to_60_and_not_only_spaces(value: str) -> None:
    expected = 1 <= len(value) <= 60 and value.isprintable() and bool(value.strip())
    try:
        taken = description(value) == value
    except Rejected as exc:
        taken = False
        assert value not in exc.reason or not value.strip()  # never repeated
    assert taken == expected
    if taken:  # nothing that moves the cursor, clears a screen or forges a log line
        assert not any(ord(c) < 32 or 127 <= ord(c) < 160 or c in "\u2028\u2029\u202e" for c in value)


@given(st.text(min_size=1, max_size=60))
def test_every_description_the_table_takes_fits_the_published_schema(value: str) -> None:
    """The event's schema (and the command's, which lets the core decide the finer cases) never refuses what the
    table takes: a consumer validating events/player never drops a real visit."""
    try:
        description(value)
    except Rejected:
        return
    data = {
        "action": "in",
        "seat": 1,
        "player": "anon:20261129-080000-1",
        "description": value,
        "by": "dealer",
    }
    validate_message("events/player", envelope("player", {**data, "session_id": "20261129-080000"}))


def test_the_floor_bridge_carries_the_players_topics() -> None:
    """controller/mqtt/floor_bridge.py sends state/# and events/# to the floor: the players' topics among them."""
    from controller.mqtt.floor_bridge import OUT_TOPICS
    from controller.topics import TopicSpec

    for rel in ("events/player", "state/players"):
        assert any(TopicSpec(p, "", False, 1, "", "").matches(rel) for p in OUT_TOPICS), rel
