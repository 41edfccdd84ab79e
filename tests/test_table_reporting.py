"""What the table publishes: documented topics, valid payloads, and the hole card withheld (PT-2001 r.17)."""

from __future__ import annotations

import json

import pytest

from controller.mqtt.schemas import MessageInvalid, validate_message
from controller.table.messages import Publish, messages
from tablebench.table_testing import Harness


def _published(h: Harness) -> list[Publish]:
    return messages(h.effects)


def _envelope(p: Publish, event_id: int) -> bytes:
    doc = {"event_id": event_id, "ts": "2026-11-22T10:00:00.000Z", "type": p.event_type, "table": "T1"}
    return json.dumps({**doc, "data": p.data}).encode()


def _round_with_hole_card(h: Harness) -> None:
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("no_more_bets")
    h.card("2C")  # burn (PT-2001 r.10)
    h.card("TS")
    h.card("6D")
    h.card("7S")
    h.card("KH")  # the dealer's hole card, face down (PT-2001 r.17)


def test_every_message_the_table_publishes_matches_its_schema() -> None:
    h = Harness()
    _round_with_hole_card(h)
    h.dealer("stand")
    h.lid_cycle()
    for i, p in enumerate(_published(h), start=1):
        validate_message(p.topic, _envelope(p, i))


def test_hole_card_is_withheld_until_the_dealer_turns_it_over_pt2001_r17() -> None:
    h = Harness()
    _round_with_hole_card(h)
    cards = [p.data for p in _published(h) if p.topic == "events/card"]
    hole = cards[-1]
    assert hole["recipient"] == "dealer" and hole.get("hidden") is True
    assert "code" not in hole and "KH" not in json.dumps(hole)
    round_docs = [p.data for p in _published(h) if p.topic == "state/round"]
    assert round_docs[-1]["dealer"]["cards"] == ["6D", "??"] and round_docs[-1]["dealer"]["total"] == 6
    assert not any("KH" in json.dumps(p.data) for p in _published(h))
    assert round_docs[-1]["turn"] == {"kind": "player", "seat": 1, "hand": 0}
    assert "stand" in round_docs[-1]["allowed_actions"]

    h.effects.clear()
    h.dealer("stand")  # the dealer's turn: 6D KH = 16 ... the hole card is shown now
    reveals = [p.data for p in _published(h) if p.topic == "events/round"]
    assert {"phase": "hole_card_revealed", "card": "KH"}.items() <= reveals[-1].items()
    state = [p.data for p in _published(h) if p.topic == "state/round"][-1]
    assert state["dealer"]["cards"] == ["6D", "KH"] and state["dealer"]["hole_card_hidden"] is False


def test_state_documents_are_published_only_when_they_change() -> None:
    h = Harness()
    h.open_continuous()
    h.effects.clear()
    h.dealer("place_bet", seat=2, amount=1000)
    topics = [p.topic for p in _published(h) if p.topic.startswith("state/")]
    assert "state/lid" not in topics and "state/jam" not in topics  # unchanged by a bet
    assert "state/table" in topics


def test_hidden_card_schema_rejects_a_leaked_code() -> None:
    leaked = {"shoe_seq": 4, "face_up": False, "recipient": "dealer", "counts": True, "hidden": True}
    validate_message("events/card", _envelope(Publish("events/card", "card", leaked), 1))
    with pytest.raises(MessageInvalid):
        validate_message(
            "events/card", _envelope(Publish("events/card", "card", {**leaked, "code": "KH"}), 1)
        )
    shown = {k: v for k, v in leaked.items() if k != "hidden"}
    with pytest.raises(MessageInvalid):  # a card that is not hidden must say which card it is
        validate_message("events/card", _envelope(Publish("events/card", "card", shown), 1))


def test_only_the_hole_card_is_withheld_a_players_hit_is_shown_pt2001_r17() -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("no_more_bets")
    for code in ("2C", "5S", "6D", "4H", "KH"):  # burn, seat 1: 5S 4H = 9, dealer 6D + hole card
        h.card(code)
    h.effects.clear()
    h.card("8C")  # seat 1 hits on 9 while the hole card is still face down
    (hit,) = [p.data for p in _published(h) if p.topic == "events/card"]
    assert hit["code"] == "8C" and hit["recipient"] == "seat:1:0" and "hidden" not in hit
