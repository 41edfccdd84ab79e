"""The state documents (controller/table/documents.py) alone: read through the table view, published when
changed."""

from __future__ import annotations

import json

from controller.effects import StateDocument
from controller.jackpot.seam import JackpotSeam
from controller.table.documents import StateDocuments
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from controller.table.state import JamFault
from controller.table.view import TableView
from drivers.events import LidState
from tablebench.concern_kit import Stub, StubGate, sink, view


def build(gate: StubGate, players: Stub | None = None) -> tuple[StateDocuments, EffectSink, list[TableView]]:
    fx = sink()
    current = [view()]
    docs = StateDocuments(fx, gate, JackpotSeam(), players or Stub(), table_view=lambda: current[-1])
    return docs, fx, current


def published(fx: EffectSink) -> dict[str, dict[str, object]]:
    return {str(e.name): json.loads(e.text) for e in fx.items if isinstance(e, StateDocument)}


def test_a_document_is_published_only_when_its_text_changed() -> None:
    docs, fx, current = build(StubGate(TableState.BETTING, {Trigger.PLACE_BET}))
    docs.publish()
    first = published(fx)
    assert set(first) == {"table", "round", "lid", "jam", "shoe"}
    assert first["table"]["dealer_inputs"] == ["place_bet"] and first["shoe"]["cards_inside"] == 312
    assert docs.publish_states() == []  # nothing changed
    current.append(view(lid=LidState.OPEN, lid_unlocked_by="auto"))
    assert {str(e.name) for e in docs.publish_states()} == {"table", "lid"}
    snap: dict[str, object] = {}
    docs.snapshot_into(snap)
    again, fx2, current2 = build(StubGate(TableState.BETTING, {Trigger.PLACE_BET}))
    again.restore_from(snap)
    current2.append(current[-1])
    again.publish()
    assert published(fx2) == {}  # a restored core publishes exactly what the live one would


def test_no_dealer_input_is_offered_during_a_fault_nor_the_next_round_with_the_lid_open_pt2001_r51_r59() -> (
    None
):
    gate = StubGate(TableState.JAMMED, {Trigger.PLACE_BET, Trigger.NEXT_ROUND})
    docs, _fx, current = build(gate)
    current.append(view(state=TableState.JAMMED, faults={"jam": JamFault(location="input")}))
    assert docs.dealer_inputs() == []  # dealing blocked (PT-2001 r.51)
    assert docs.view()["faults"] == ["jam"]
    gate.state = TableState.SETTLED
    current.append(view(state=TableState.SETTLED, lid=LidState.OPEN))
    assert "next_round" not in docs.dealer_inputs()  # the lid is closed first (PT-2001 r.59-60)
    current.append(view(state=TableState.SETTLED))
    assert "next_round" in docs.dealer_inputs()


def test_the_players_document_appears_once_a_player_was_seated() -> None:
    players = Stub({"document": {"seats": {"2": {"player": "anon:x-1", "since": "t"}}}})
    docs, fx, current = build(StubGate(), players)
    docs.publish()
    assert "players" not in published(fx)  # a table that never seats one publishes what it did before
    current.append(view(players_seated=True))
    docs.publish_states()
    assert "players" in {str(e.name) for e in fx.items if isinstance(e, StateDocument)}
