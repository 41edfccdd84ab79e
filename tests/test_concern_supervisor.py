"""The supervisor's table-wide actions (controller/table/supervisor.py) alone: who may do what, open and close."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from controller.table.state import Unlock
from controller.table.supervisor import SupervisorActions
from drivers.events import LidState
from tablebench.concern_kit import Stub, StubGate, lid, setup, sink


def build(
    gate: StubGate, the_lid: Stub | None = None, *, out: int = 0
) -> tuple[SupervisorActions, EffectSink, dict[str, Stub]]:
    fx = sink()
    parts = {
        "link": Stub(continuous=True),
        "shoe_cycle": Stub(out=out),
        "deck_checks": Stub(),
        "rounds": Stub(),
        "dealer": Stub({"take_all": {}}),
        "duty": Stub(),
        "players": Stub(),
        "lid": the_lid or lid(),
        "faults": Stub(),
        "setup": setup(),
    }
    setup_face = parts.pop("setup")
    sv = SupervisorActions(fx, gate, setup_face, JackpotSeam(), **parts)
    parts["setup"] = setup_face
    return sv, fx, parts


def test_who_may_do_what_pt2001_r49_r51() -> None:
    sv, _fx, _parts = build(StubGate())
    sv.authorise("chief", "supervisor", "open_table")
    sv.authorise("tech", "technician", "clear_link")
    with pytest.raises(Rejected, match=r"needs a chief inspector .*PT-2001 r\.51"):
        sv.authorise("tech", "technician", "open_table")
    with pytest.raises(Rejected, match=r"PT-2001 r\.49"):
        sv.authorise("tech", "technician", "jackpot_pay")
    with pytest.raises(Rejected, match="must name the user"):
        sv.authorise("", "supervisor", "open_table")


def test_opening_a_continuous_table_opens_the_lid_for_the_loading_pt2001_r53_r54() -> None:
    gate = StubGate(TableState.CLOSED, {Trigger.OPEN_TABLE}, moves={Trigger.OPEN_TABLE: TableState.LOADING})
    sv, fx, parts = build(gate)
    with pytest.raises(Rejected, match="never a path"):
        sv.sv_open_table("chief", {"profile": "../etc/passwd"})
    assert gate.fired == [] and parts["setup"].calls == []
    sv.sv_open_table("chief", {"profile": "pt-2001", "shuffler": "continuous"})
    assert parts["setup"].called("set_profile") == [(("pt-2001", "continuous"), {})]
    assert parts["setup"].called("open_session") and parts["rounds"].called("new_session")
    assert parts["dealer"].called("take_all") and parts["shoe_cycle"].called("new_session")
    assert gate.fired == [Trigger.OPEN_TABLE]
    assert parts["lid"].called("grant_opening") == [((Unlock.LOADING,), {"unlock": True, "open_lid": True})]
    assert fx.result == {"session_id": "20260101-120000"}


def test_closing_wants_the_lid_shut_and_ends_every_visit_pt2001_r55_r59_r60() -> None:
    gate = StubGate(
        TableState.BETTING, {Trigger.CLOSE_TABLE}, moves={Trigger.CLOSE_TABLE: TableState.CLOSING}
    )
    sv, _fx, _parts = build(gate, lid(LidState.OPEN))
    with pytest.raises(Rejected, match=r"PT-2001 r\.59-60"):
        sv.sv_close_table("chief", {})
    assert gate.fired == []
    sv, _fx, parts = build(gate, out=3)
    sv.sv_close_table("chief", {})
    assert gate.fired == [Trigger.CLOSE_TABLE]
    assert parts["duty"].called("off_duty") == [(("close_table",), {})]
    assert parts["players"].called("end_all") == [(("chief",), {})]
    # the discard goes in before the inventory (PT-2001 r.55)
    assert parts["lid"].called("grant_opening") == [((Unlock.CLOSING,), {"open_lid": True})]
