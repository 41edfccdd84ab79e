"""Cards leaving the shoe (controller/table/cards.py) alone: sequence checks, stray and unreadable cards."""

from __future__ import annotations

from typing import Any

import pytest

from controller.effects import Rejected
from controller.table.cards import CardFlow
from controller.table.machine_names import TableState
from controller.table.sink import EffectSink
from controller.table.state import PendingReplacement
from drivers import events as ev
from tablebench.concern_kit import Stub, StubGate, alerts, lid, records, setup, sink


def build(
    state: TableState, *, in_play: bool = False, **rounds_attrs: Any
) -> tuple[CardFlow, EffectSink, dict[str, Stub]]:
    fx = sink()
    parts = {
        "cycle": Stub({"take_seq_restart": False}, last_seq=5),
        "rounds": Stub(
            {"round_in_play": in_play, "round_active": in_play},
            **({"round": None, "round_void": False, "pending": None, "uninserted": []} | rounds_attrs),
        ),
        "faults": Stub(),
        "lid": lid(),
    }
    flow = CardFlow(
        fx, StubGate(state), setup(), parts["cycle"], parts["rounds"], parts["faults"], parts["lid"]
    )
    return flow, fx, parts


def test_a_repeated_shoe_number_is_never_dealt_and_stops_the_table_pt2001_r51() -> None:
    """Issue 13 §5: a valid CRC is not proof of a card; a number the shoe already used raises a shoe-line fault."""
    flow, fx, parts = build(TableState.DEALING, in_play=True)
    flow.on_card_out(ev.CardOut(rank="A", suit="S", shoe_seq=5, face_up=True))
    assert [args[0] for args, _ in parts["faults"].called("shoe_line_fault")] == ["shoe_sequence"]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("shoe_sequence", "critical")]
    assert parts["cycle"].called("card_out") == [] and parts["rounds"].called("card") == []


def test_a_card_outside_a_round_goes_to_the_discard_pt2001_r58() -> None:
    flow, fx, parts = build(TableState.BETTING)
    flow.on_card_out(ev.CardOut(rank="K", suit="D", shoe_seq=6, face_up=True))
    assert parts["cycle"].called("card_out") == [((6,), {})]  # counted out all the same
    assert records(fx, "card_discarded")[0]["card"] == "KD"
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("dealer_error", "warning")]
    assert "PT-2001 r.58" in alerts(fx)[0].reason
    closed, fx2, _ = build(TableState.CLOSED)
    closed.on_card_out(ev.CardOut(rank="K", suit="D", shoe_seq=6, face_up=True))
    assert records(fx2, "card_out_while_closed") == [{"card": "KD", "shoe_seq": 6}] and alerts(fx2) == []


def test_a_damaged_card_in_a_round_awaits_the_chief_inspector_pt2001_r51() -> None:
    flow, fx, parts = build(TableState.DEALING, in_play=True)
    with pytest.raises(Rejected, match="no damaged or unreadable card awaits replacement"):
        flow.sv_replace_card("chief", {"card": "AS"})
    flow.on_card_unreadable(ev.CardUnreadable(shoe_seq=6, damaged=True))
    assert parts["rounds"].called("await_replacement") == [
        ((PendingReplacement(shoe_seq=6, damaged=True),), {})
    ]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("card_unreadable", "critical")]
    pending, _fx, _parts = build(TableState.DEALING, pending=PendingReplacement(shoe_seq=6, damaged=True))
    with pytest.raises(Rejected, match="card must be a code"):
        pending.sv_replace_card("chief", {"card": "ZZ"})
