"""The shoe's link (controller/table/link.py) alone: identification, link lost and back, the resync."""

from __future__ import annotations

from typing import Any

import pytest

from controller.effects import Rejected
from controller.jackpot.seam import JackpotSeam
from controller.table.link import ShoeLink
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from controller.table.state import LinkFault
from drivers import events as ev
from tablebench.concern_kit import Stub, StubGate, alerts, lid, records, setup, sink


def build(
    gate: StubGate, *, link_fault: Any = None, round_active: bool = False
) -> tuple[ShoeLink, EffectSink, dict[str, Stub]]:
    fx = sink()
    parts = {
        "shoe_cycle": Stub({"resynced": 300}, shuffling=False, out=0),
        "deck_checks": Stub(),
        "rounds": Stub({"round_active": round_active, "current_round_id": None}, uninserted=[]),
        "lid": lid(),
        "faults": Stub({"get": lambda name: link_fault if name == "link_down" else None}),
        "safety": Stub(),
    }
    link = ShoeLink(fx, gate, setup(), jackpot=JackpotSeam(), **parts)
    return link, fx, parts


def test_a_lost_link_in_a_session_is_a_fault_that_a_supervisor_clears_once_back_pt2001_r51() -> None:
    link, fx, parts = build(StubGate(TableState.DEALING, {Trigger.LINK_LOST}))
    link.on_link_down(ev.LinkDown(reason="silence"))
    assert parts["faults"].called("enter") == [
        (("link_down", Trigger.LINK_LOST, LinkFault(reason="silence")), {})
    ]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("link_down", "critical")]
    closed, fx2, parts2 = build(StubGate(TableState.CLOSED))
    closed.on_link_down(ev.LinkDown(reason="silence"))
    assert parts2["faults"].calls == [("get", ("link_down",), {})] and alerts(fx2) == []
    down, _fx, _parts = build(StubGate(TableState.LINK_DOWN), link_fault=LinkFault(reason="silence"))
    with pytest.raises(Rejected, match="still down"):
        down.sv_clear_link("chief", {})
    back, fx3, parts3 = build(
        StubGate(TableState.LINK_DOWN), link_fault=LinkFault(reason="silence", restored=True)
    )
    back.sv_clear_link("chief", {})
    assert parts3["faults"].called("clear") == [(("link_down",), {})]
    assert records(fx3, "link_cleared")[0]["user"] == "chief"


def test_cards_unaccounted_for_after_a_fault_void_the_round_ptonline2015_r27() -> None:
    gate = StubGate(
        TableState.RESYNC,
        {Trigger.RESUME},
        resume_to=TableState.DEALING,
        moves={Trigger.RESUME: TableState.DEALING},
    )
    link, fx, parts = build(gate, round_active=True)
    link.resync_report(298, False)  # the table expected 300
    assert records(fx, "resync") == [{"expected": 300, "count": 298, "resume_to": "dealing"}]
    assert parts["rounds"].called("void")[0][0][0] == "2 card(s) unaccounted for after the fault"
    assert parts["shoe_cycle"].called("lost") == [((300, 298), {})] and gate.fired == [Trigger.RESUME]


def test_another_boot_of_the_shoe_restarts_its_numbering_and_the_slice_round_trips() -> None:
    link, fx, parts = build(StubGate(TableState.BETTING))
    link.on_identified(ev.Identified(2, "CS-9", "1.2", "SN1", 6, True, boot_id=11))
    assert parts["shoe_cycle"].called("shoe_rebooted") and link.continuous
    link.committed(5)
    link.on_identified(ev.Identified(2, "CS-9", "1.2", "SN1", 6, True, boot_id=11))  # same boot: kept
    assert len(parts["shoe_cycle"].called("shoe_rebooted")) == 1 and link.device.event_no == 5
    link.on_identified(ev.Identified(2, "CS-9", "1.2", "SN1", 6, False, boot_id=12))
    assert [a.kind for a in alerts(fx)] == ["profile_mismatch"]  # a continuous session, a batch shoe
    snap: dict[str, Any] = {}
    link.snapshot_into(snap)
    other, _, _ = build(StubGate())
    other.restore_from(snap)
    assert other.device == link.device and snap["device"]["boot_id"] == 12
