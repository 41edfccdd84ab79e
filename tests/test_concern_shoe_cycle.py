"""The shoe cycle (controller/table/shoe_cycle.py) alone: discards, loading, counts, the warning card."""

from __future__ import annotations

from typing import Any

import pytest

from controller.effects import Rejected
from controller.table.machine_names import TableState, Trigger
from controller.table.shoe_cycle import ShoeCycle
from controller.table.sink import EffectSink
from drivers import events as ev
from drivers.events import LidState
from tablebench.concern_kit import Stub, StubGate, alerts, lid, records, setup, sink


def build(
    gate: StubGate, *, continuous: bool = True, counts: dict[TableState, Any] | None = None
) -> tuple[ShoeCycle, EffectSink, Stub, Stub]:
    fx = sink()
    the_setup = setup(continuous=continuous)
    rounds = Stub({"round_active": False, "current_round_id": None}, uninserted=["r1"], last_seats=[2, 5])
    router = Stub({"count_handler": lambda state: (counts or {}).get(state)})
    cycle = ShoeCycle(
        fx, gate, the_setup, lid(LidState.OPEN), rounds=lambda: rounds, players=lambda: 2, counts=router
    )
    return cycle, fx, the_setup, rounds


def test_more_cards_in_than_came_out_is_a_critical_alert_and_inserting_ends_contestability_pt2001_r54_r62() -> (
    None
):
    gate = StubGate(
        TableState.SETTLED, {Trigger.CARDS_IN}, moves={Trigger.CARDS_IN: TableState.CARDS_RETURNED}
    )
    cycle, fx, _setup, rounds = build(gate)
    cycle.restore_from({"shoe": {}, "inside": 300, "out": 4})
    cycle.on_discard_inserted(ev.DiscardInserted(6))
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("cards_added", "critical")]
    assert "PT-2001 r.54-55" in alerts(fx)[0].reason
    assert (cycle.inside, cycle.out) == (306, 0)
    assert records(fx, "rounds_final") == [{"rounds": ["r1"], "cards": 6}]  # r.62: final once inserted
    assert rounds.called("inserted") and gate.fired == [Trigger.CARDS_IN]


def test_loading_needs_two_packets_and_every_deck_pt2001_r53_r54() -> None:
    gate = StubGate(
        TableState.LOADING, {Trigger.LOADED_CONTINUOUS}, moves={Trigger.LOADED_CONTINUOUS: TableState.BETTING}
    )
    cycle, fx, the_setup, _rounds = build(gate)
    total = the_setup.tp.total_cards
    the_setup.session.packets = 1
    cycle.check_loaded(total)
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("loading", "critical")]
    assert "at least two required (PT-2001 r.54)" in alerts(fx)[0].reason and gate.fired == []
    the_setup.session.packets = 2
    cycle.check_loaded(total)
    assert gate.fired == [Trigger.LOADED_CONTINUOUS] and (cycle.inside, cycle.out) == (total, 0)
    assert records(fx, "session_loaded")[0]["packets"] == 2


def test_the_shoe_count_goes_to_the_procedure_of_the_state_or_is_a_warning_pt2001_r53_r55() -> None:
    taken: list[tuple[int, bool]] = []
    gate = StubGate(TableState.LOADING, {Trigger.JAM})
    cycle, fx, _setup, _rounds = build(gate, counts={TableState.LOADING: lambda n, s: taken.append((n, s))})
    cycle.on_shuffle_finished(ev.ShuffleFinished(cards_inside=312))
    assert taken == [(312, True)] and alerts(fx) == []
    gate.state = TableState.BETTING  # no procedure takes a count here: a differing one is a warning
    cycle.restore_from({"shoe": {}, "inside": 310, "out": 2})
    cycle.on_cards_inside(ev.CardsInside(count=309))
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("shoe_count", "warning")] and cycle.inside == 309


def test_the_cut_passes_to_the_next_occupied_seat_pt2001_r8() -> None:
    gate = StubGate(TableState.CUT, {Trigger.CUT_DONE}, moves={Trigger.CUT_DONE: TableState.BETTING})
    cycle, fx, _setup, _rounds = build(gate, continuous=False)
    cycle.restore_from({"shoe": {"cutter": 2}, "inside": 312, "out": 0})
    with pytest.raises(Rejected, match="seat 5 has the right to cut this shoe"):
        cycle.cut({"seat": 2})
    cycle.cut({"seat": 5})
    assert gate.fired == [Trigger.CUT_DONE] and records(fx, "cut")[0]["by"] == 5
