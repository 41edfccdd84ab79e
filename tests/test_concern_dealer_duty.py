"""The dealer on duty (controller/table/dealer_duty.py) alone (issue 29)."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.table.dealer_duty import DealerDuty
from controller.table.machine_names import TableState, Trigger
from tablebench.concern_kit import StubGate, events, records, setup, sink


def test_a_dealer_signs_in_between_rounds_only() -> None:
    fx = sink()
    gate = StubGate(TableState.BETTING, {Trigger.DEALER_SIGN_IN})
    duty = DealerDuty(fx, gate, setup())
    assert duty.by() == "dealer"  # nobody signed in: the role
    duty.sign_in({"name": "Ana María"})
    assert duty.on_duty == "Ana María" and duty.by() == "Ana María"
    assert records(fx, "dealer_signed_in")[0]["previous"] is None
    assert events(fx, "dealer")[0]["session_id"] == "20260101-120000"
    with pytest.raises(Rejected, match="already the dealer on duty"):
        duty.sign_in({"name": "Ana María"})
    gate.allowed.clear()  # a round is dealt (the machine's guard)
    with pytest.raises(Rejected):
        duty.sign_in({"name": "Bo"})
    assert duty.on_duty == "Ana María"


def test_a_name_that_is_not_a_name_is_refused_and_closing_ends_the_duty() -> None:
    fx = sink()
    duty = DealerDuty(fx, StubGate(TableState.BETTING, {Trigger.DEALER_SIGN_IN}), setup())
    for bad in ("", " Bo", "Bo\u202e", "x" * 33, 7):
        with pytest.raises(Rejected, match="dealer name"):
            duty.sign_in({"name": bad})
    snap: dict[str, object] = {}
    duty.snapshot_into(snap)
    assert snap == {}  # only while someone is signed in: older snapshots hold no such key
    duty.sign_in({"name": "Bo"})
    duty.off_duty("close_table")
    assert duty.on_duty is None and records(fx, "dealer_signed_out")[0]["reason"] == "close_table"
    duty.off_duty("close_table")  # nobody on duty: nothing recorded
    assert len(records(fx, "dealer_signed_out")) == 1
