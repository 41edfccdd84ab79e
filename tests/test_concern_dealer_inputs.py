"""The dealer's inputs (controller/table/dealer.py) alone: bets, no more bets, dealing blocked."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.dealer import DealerInputs
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from tablebench.concern_kit import Stub, StubGate, lid, records, rules, setup, sink


def build(
    gate: StubGate, *, faults: list[str] | None = None
) -> tuple[DealerInputs, EffectSink, dict[str, Stub]]:
    fx = sink()
    parts = {
        "setup": setup(),
        "rounds": Stub({"number_next": 1}, pending=None),
        "cycle": Stub(first_round=True, last_round=None),
        "lid": lid(),
        "faults": Stub({"names": faults or []}),
    }
    dealer = DealerInputs(
        fx,
        gate,
        parts["setup"],
        JackpotSeam(),
        parts["rounds"],
        parts["cycle"],
        parts["lid"],
        parts["faults"],
    )
    return dealer, fx, parts


def betting() -> StubGate:
    return StubGate(
        TableState.BETTING,
        {Trigger.PLACE_BET, Trigger.CLEAR_BET, Trigger.CLOSE_BETS, Trigger.START_DEAL},
        moves={Trigger.CLOSE_BETS: TableState.NO_MORE_BETS, Trigger.START_DEAL: TableState.DEALING},
    )


def test_a_bet_is_an_integer_within_the_table_limits() -> None:
    dealer, fx, parts = build(betting())
    tp = parts["setup"].tp
    with pytest.raises(Rejected, match=r"outside the table limits .*PT-2001"):
        dealer.place_bet({"seat": 1, "amount": tp.max_bet + tp.min_bet})
    with pytest.raises(Rejected, match="integer in minor units"):
        dealer.place_bet({"seat": 1, "amount": 10.5})
    with pytest.raises(Rejected, match=r"PT-2001 r\.2"):
        dealer.place_bet({"seat": 0, "amount": tp.min_bet})
    dealer.place_bet({"seat": 2, "amount": tp.min_bet})
    assert dealer.bets["2"].amount == tp.min_bet and fx.result == {"seat": 2, "amount": tp.min_bet}
    assert records(fx, "bet_placed") == [{"seat": 2, "amount": tp.min_bet, "side_bets": {}}]


def test_no_more_bets_starts_the_round_with_the_shoe_burn_pt2001_r10_r13() -> None:
    gate = betting()
    dealer, fx, parts = build(gate)
    with pytest.raises(Rejected, match=r"PT-2001 r\.13"):
        dealer.handlers().dealer["no_more_bets"]({})
    dealer.place_bet({"seat": 3, "amount": parts["setup"].tp.min_bet})
    dealer.handlers().dealer["no_more_bets"]({})
    assert fx.result == {"round_id": "20260101-120000-0001"}
    burn = rules().burn_before_round(shoe_start=True)
    ((args, _kw),) = parts["rounds"].called("begin")
    assert args[0] == "20260101-120000-0001" and args[2] == burn and args[3] is True
    assert gate.fired == [Trigger.CLOSE_BETS, Trigger.START_DEAL] and dealer.bets == {}
    assert parts["setup"].called("count_round") and records(fx, "round_started")[0]["burn"] == burn


def test_dealing_is_blocked_during_a_fault_or_a_pending_replacement_pt2001_r51() -> None:
    dealer, _fx, _parts = build(StubGate(TableState.JAMMED), faults=["jam"])
    with pytest.raises(Rejected, match=r"dealing blocked: jam \(PT-2001 r\.51\)"):
        dealer.blocked()
    dealer, _fx, parts = build(betting())
    dealer.blocked()  # nothing blocks it
    parts["rounds"].pending = object()
    assert "awaits replacement by a chief inspector" in (dealer.dealing_blocked() or "")
