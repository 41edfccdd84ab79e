"""The round (controller/table/round_flow.py) alone: begun, dealt, settled or void, and what follows it."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.base import LID_OPEN_TIMEOUT_S
from controller.table.machine_names import TableState, Trigger
from controller.table.round_flow import RoundFlow
from controller.table.rounds import default_card, default_engine_factory
from controller.table.sink import EffectSink
from controller.table.state import PendingReplacement
from tablebench.concern_kit import NOW, Stub, StubGate, alerts, events, lid, records, setup, sink

BETS = [{"seat": 1, "amount": 1000}]


def build(gate: StubGate) -> tuple[RoundFlow, EffectSink, Stub, Stub]:
    fx, the_lid, cycle = sink(), lid(), Stub()
    rounds = RoundFlow(
        fx, gate, setup(), JackpotSeam(), the_lid, cycle,
        engine_factory=default_engine_factory, make_card=default_card,
    )  # fmt: skip
    return rounds, fx, the_lid, cycle


def dealing() -> StubGate:
    return StubGate(
        TableState.DEALING,
        {Trigger.VOID, Trigger.SETTLE},
        moves={Trigger.VOID: TableState.SETTLED, Trigger.SETTLE: TableState.SETTLED},
    )


def test_a_voided_first_round_returns_the_bets_and_burns_again_pt2001_r10_ptonline2015_r27() -> None:
    gate = dealing()
    rounds, fx, the_lid, cycle = build(gate)
    with pytest.raises(Rejected, match="no round in progress"):
        rounds.sv_void_round("chief", {})
    rounds.begin("s-0001", BETS, 1, True)  # PT-2001 r.10: the shoe's burn before the first deal
    assert rounds.round_active()
    rounds.sv_void_round("chief", {"reason": "dealer error"})
    assert gate.fired == [Trigger.VOID] and rounds.round_void
    assert records(fx, "round_void")[0]["bets_returned"] == {"1": 1000}  # JSON keys
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("round_void", "critical")]
    assert cycle.called("burn_again")  # nothing was burnt yet: the next round burns it (r.10)
    assert rounds.uninserted == ["s-0001"] and rounds.last_seats == [1]  # contestable until inserted (r.62)
    # settled: the lid opens automatically for the round's cards (PT-2001 r.59-61)
    assert the_lid.called("open_by") == [((NOW + LID_OPEN_TIMEOUT_S,), {})]


def test_a_damaged_card_awaiting_replacement_defers_the_lid_cycle_pt2001_r51() -> None:
    rounds, fx, the_lid, _cycle = build(dealing())
    rounds.await_replacement(PendingReplacement(shoe_seq=7, damaged=True))
    rounds.after_round()
    assert the_lid.calls == [] and records(fx, "lid_cycle_deferred")
    rounds.await_replacement(None)
    rounds.after_round()
    assert the_lid.called("open_by")


def test_the_slice_round_trips_with_the_round_and_the_hole_card_is_revealed_once_pt2001_r17() -> None:
    rounds, fx, _lid, _cycle = build(dealing())
    rounds.begin("s-0002", BETS, 0, False)
    for code, up in (("TS", True), ("6D", True), ("7S", True), ("8C", False)):
        rounds.card(code, up, late=False)
    snap: dict[str, object] = {}
    rounds.snapshot_into(snap)
    assert list(snap) == [
        "round", "round_void", "round_no", "last_seats", "uninserted", "pending_replacement", "hole_revealed",
    ]  # fmt: skip
    other, _, _, _ = build(dealing())
    other.restore_from(snap)
    assert other.round.round_id == "s-0002" and other.round.engine.dealer == rounds.round.engine.dealer
    rounds.round.act("stand", {})
    rounds.hole_card_event()
    rounds.hole_card_event()
    assert [e["phase"] for e in events(fx, "round")] == ["hole_card_revealed"]
