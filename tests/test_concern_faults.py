"""The faults (controller/table/faults.py) alone: a jam raised and cleared, service faults, the lid locked."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.table.faults import Faults
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from controller.table.state import Unlock
from drivers import events as ev
from tablebench.concern_kit import Stub, StubGate, alerts, commands, events, lid, records, sink


def build(gate: StubGate, the_lid: Stub | None = None) -> tuple[Faults, EffectSink, Stub, Stub]:
    fx = sink()
    the_lid = the_lid or lid()
    rounds = Stub({"current_round_id": "20260101-120000-0001"}, uninserted=["r0"])
    return Faults(fx, gate, the_lid, rounds), fx, the_lid, rounds


def test_a_jam_enters_its_fault_and_only_the_supervisor_clears_it_pt2001_r51() -> None:
    gate = StubGate(
        TableState.DEALING, {Trigger.JAM, Trigger.FAULT_CLEARED}, moves={Trigger.JAM: TableState.JAMMED}
    )
    faults, fx, the_lid, _rounds = build(gate)
    faults.on_jammed(ev.Jammed(ev.JamLocation.SHUFFLER))
    assert gate.fired == [Trigger.JAM] and faults.names() == ["jam"]
    assert [a.severity for a in alerts(fx)] == ["critical"] and "PT-2001 r.51" in alerts(fx)[0].reason
    assert events(fx, "jam") == [
        {"state": "jammed", "location": "shuffler", "round_id": "20260101-120000-0001"}
    ]
    assert the_lid.called("no_deadline")
    # the supervisor first: the shoe still reports the jam
    with pytest.raises(Rejected, match="clear it first"):
        faults.sv_clear_jam("chief", {})
    faults.on_jam_cleared(ev.JamCleared())
    faults.sv_clear_jam("chief", {})
    assert faults.names() == [] and gate.fired[-1] == Trigger.FAULT_CLEARED
    assert isinstance(commands(fx)[-1], ev.ReportCounts)  # resync: the round's cards counted
    assert records(fx, "jam_cleared")[0]["user"] == "chief"


def test_a_jam_on_a_closed_table_is_a_warning_only_pt2001_r51() -> None:
    gate = StubGate(TableState.CLOSED)  # no session: the machine has no fault state to enter
    faults, fx, _lid, _rounds = build(gate)
    faults.on_jammed(ev.Jammed(ev.JamLocation.INPUT))
    assert gate.fired == [] and faults.names() == []
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("jam", "warning")]


def test_a_journal_fault_during_the_lid_cycle_ends_the_automatic_opening_pt2001_r61() -> None:
    gate = StubGate(TableState.SETTLED, {Trigger.JOURNAL_FAILED})
    faults, fx, the_lid, _rounds = build(gate, lid(unlock=Unlock.AUTO))
    faults.journal_fault("disk_full", "no space left")
    assert faults.names() == ["journal_io"] and gate.fired == [Trigger.JOURNAL_FAILED]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("journal_io", "critical")]
    assert not the_lid.called("relock")  # auto: not relocked by the service fault, the lid cycle ends instead
    assert the_lid.called("not_opened") == [(("journal_io during the lid cycle", ["r0"]), {})]
    snap: dict[str, object] = {}
    faults.snapshot_into(snap)
    other, _, _, _ = build(StubGate())
    other.restore_from(snap)
    assert other.raised == faults.raised
