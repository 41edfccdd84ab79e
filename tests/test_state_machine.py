"""The transitions machine is the authority (issue 17 step 2): where the table is, which input it accepts now,
and where a fault resumes. docs/state-machine.md is drawn from the machine as built."""

from __future__ import annotations

from pathlib import Path

import pytest

from controller.effects import Rejected
from controller.table import inputs
from controller.table import machine as m
from controller.table.diagram import built, render_mermaid_doc, render_table, transitions
from drivers import events as ev
from tablebench.table_testing import Harness

DOC = Path(__file__).resolve().parent.parent / "docs" / "state-machine.md"


def test_the_committed_diagram_is_the_generated_one() -> None:
    assert DOC.read_text() == render_mermaid_doc(), "run: python -m controller.docs_gen"


def test_the_diagram_lists_every_transition_the_built_machine_holds() -> None:
    machine = built()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in render_table().splitlines()[2:]]
    held = transitions(machine)
    assert len(held) > len(m.TRANSITIONS)  # group sources and resume targets expand
    for trigger, source, dest, _label, guard in held:
        assert any(
            r[0] == f"`{trigger}`"
            and source in r[1].split(", ")
            and r[2] == (dest or "(stays)")
            and r[4] == guard
            for r in rows
        ), (trigger, source, dest)


def test_a_transition_added_to_the_machine_shows_on_the_diagram(monkeypatch: pytest.MonkeyPatch) -> None:
    extra = m.T("inspect", "cut", "betting", "a transition only this test adds")
    monkeypatch.setattr(m, "TRANSITIONS", [*m.TRANSITIONS, extra])
    assert "cut --> betting: inspect / a transition only this test adds" in render_mermaid_doc()


def test_snapshots_keep_the_flat_state_name_and_restore_into_the_nested_machine() -> None:
    h = Harness()
    h.open_continuous()
    assert h.core.state == "betting" and h.core.machine_state == "active.open.betting"
    snap = h.core.snapshot()
    assert snap["state"] == "betting"
    other = Harness()
    other.core.restore(snap)
    assert other.core.machine_state == "active.open.betting" and other.core.may_place_bet()


def test_an_input_is_refused_when_the_machine_may_not_fire_it() -> None:
    h = Harness()
    assert not h.core.may_place_bet()
    with pytest.raises(Rejected, match=r"place_bet is not allowed in state closed \(needs betting\)"):
        h.dealer("place_bet", seat=1, amount=1000)
    h.open_continuous()
    assert h.core.may_place_bet() and not h.core.may_play()
    with pytest.raises(Rejected, match=r"hit is not allowed in state betting \(needs players or dealing\)"):
        h.dealer("hit")


def test_a_guard_is_a_condition_with_its_reason() -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    assert not h.core.may_close_table()  # in a closable state, but bets are on the table
    with pytest.raises(Rejected, match="bets are on the table"):
        h.sup("close_table")
    h.dealer("clear_bet", seat=1)
    assert h.core.may_close_table()


def test_open_table_is_guarded_by_the_service_faults() -> None:
    h = Harness()
    h.apply(inputs.JournalFault("read_only", "journal disk read-only (x)"))
    assert h.core.state == "closed" and not h.core.may_open_table()
    with pytest.raises(Rejected, match="open_table refused: the table is in the journal_io fault"):
        h.sup("open_table", profile="pt-2001")


def test_resume_to_is_kept_by_the_machine_through_a_fault() -> None:
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    assert h.core.state == "dealing"
    h.dev(ev.Jammed(location=ev.JamLocation.OUTPUT))
    assert h.core.machine_state == "faults.jammed" and h.core.resume_to == "dealing"
    h.core.trigger("initial_dealt")  # a late card completed the deal during the fault: resume in players
    assert h.core.state == "jammed" and h.core.resume_to == "players"
    h.dev(ev.LinkDown(reason="cable"))  # another fault inside the fault sub-machine keeps where to resume
    assert h.core.state == "link_down" and h.core.resume_to == "players"
    h.core.resume_to = "settled"
    assert not h.core.may_settle()  # settled is not a phase a round completes from
    h.core.machine.set_state("resync")
    assert h.core.may_resume()
    h.core.trigger("resume")
    assert h.core.state == "settled" and h.core.resume_to is None  # forgotten leaving the faults


def test_faults_are_typed_and_keep_their_snapshot_form() -> None:
    """Issue 17: typed faults, snapshot bytes unchanged: an older snapshot's fault without ``restored`` stays
    without it, details a kind does not type are kept."""
    from controller.table.state import IntegrityFault, JamFault, LinkFault, fault_from_dict

    h = Harness()
    h.open_continuous()
    h.dev(ev.Jammed(location=ev.JamLocation.OUTPUT))
    jam = h.core.faults["jam"]
    assert isinstance(jam, JamFault) and jam.location == "output" and not jam.device_cleared
    assert h.core.snapshot()["faults"]["jam"] == {
        "location": "output",
        "device_cleared": False,
        "cleared_by": None,
    }
    old = {"reason": "unplugged", "cleared_by": None}  # written before "restored" existed
    link = fault_from_dict("link_down", old)
    assert isinstance(link, LinkFault) and link.to_dict() == old and not link.restored
    link.restored = True
    assert link.to_dict() == {**old, "restored": True}
    details = {"reason": "journal chain broken", "at": "t", "record": 2}
    integrity = fault_from_dict("integrity", details)
    assert isinstance(integrity, IntegrityFault) and integrity.untyped == {"record": 2}
    assert integrity.to_dict() == details and integrity.untyped["record"] == 2


@pytest.mark.parametrize("bets", [{}, {"1": "a bet"}])
@pytest.mark.parametrize("resume_to", [None, "dealing", "settled", "betting"])
def test_may_gives_the_librarys_answer_in_every_state(bets: dict[str, str], resume_to: str | None) -> None:
    """TableMachine looks the transitions to try up once per state; the answer is the library's own."""
    from transitions.extensions.nesting import HierarchicalMachine

    h = Harness()
    core, machine = h.core, h.core.machine
    core.bets, core.resume_to = bets, resume_to
    core.faults = {"journal_io": object()} if bets else {}
    for state in m.STATES:
        machine.set_state(state)
        for trigger in machine.events:
            ours = core.may_trigger(trigger)
            library = HierarchicalMachine._can_trigger(machine, core, trigger)
            assert ours == library, (state, trigger, ours, library)


# ---- the lid sub-machine (lid_machine.py): the shoe's lid reports, PT-2001 r.59-62 ----
def test_every_lid_report_has_its_trigger_and_the_machine_holds_it() -> None:
    from controller.table.diagram import built_lid
    from controller.table.lid_machine import REPORT_TRIGGER

    machine = built_lid()
    assert set(REPORT_TRIGGER) == set(ev.LidState)
    for report, trigger in REPORT_TRIGGER.items():
        assert trigger in machine.events, report


def test_an_opening_the_machine_granted_is_open_and_ends_the_deadline_pt2001_r61() -> None:
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    for code in ("2C", "TS", "6D", "7S", "8C"):  # as tests/test_table_core.py deals a round to settlement
        h.card(code)
    h.dealer("stand")
    h.card("5H")
    assert h.core.state == "settled" and h.core.lid.unlock == "auto" and h.core.lid.deadline is not None
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    assert h.core.lid.state == "open" and h.core.lid_machine.model.position == "opened.open"
    assert h.core.lid.deadline is None and h.core.state == "settled" and not h.alerts("tamper")


def test_an_opening_not_granted_is_forced_open_and_tamper_pt2001_r60() -> None:
    h = Harness()
    h.open_continuous()
    assert h.core.lid.unlock is None
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    assert h.core.lid.state == "forced_open" and h.core.state == "tamper"
    assert "PT-2001 r.60" in h.alerts("tamper")[0].reason


def test_a_lock_report_from_an_open_lid_changes_nothing_until_it_is_closed_pt2001_r60() -> None:
    h = Harness()
    h.open_continuous()
    h.dev(ev.LidChanged(ev.LidState.FORCED_OPEN))
    h.dev(ev.LidChanged(ev.LidState.LOCKED))
    assert h.core.lid.state == "forced_open"  # a latch report does not shut an open lid
    with pytest.raises(Rejected, match="close it"):
        h.sup("lock_lid")
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    assert h.core.lid_machine.model.position == "shut.closed"
    h.dev(ev.LidChanged(ev.LidState.LOCKED))
    assert h.core.lid.state == "locked"


def test_closing_a_granted_lid_locks_it_again_pt2001_r60() -> None:
    h = Harness()
    h.open_continuous()
    h.sup("unlock_lid")
    assert h.core.lid.unlocked_by == "supervisor:inspector-ana" and not h.core.outputs["lid_lock"]
    h.clear()
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    assert h.core.lid.unlock is None and h.core.outputs["lid_lock"]
    assert h.commands(ev.LockLid) and not h.alerts("tamper")


def test_the_lid_machine_follows_a_restored_snapshot() -> None:
    h = Harness()
    h.open_continuous()
    h.dev(ev.LidChanged(ev.LidState.FORCED_OPEN))
    other = Harness()
    other.core.restore(h.core.snapshot())
    assert other.core.lid_machine.model.position == "opened.forced_open"
    other.dev(ev.LidChanged(ev.LidState.LOCKED))
    assert other.core.lid.state == "forced_open"


def test_the_diagram_draws_the_lid_machine_as_built(monkeypatch: pytest.MonkeyPatch) -> None:
    from controller.table import lid_machine as lm

    doc = render_mermaid_doc()
    assert "## The lid sub-machine" in doc and "state opened {" in doc
    assert "shut --> forced_open: reported_open / opened while it may not - tamper (r.60)" in doc
    original = lm.build_lid_machine

    def with_extra(owner):  # a transition added to the machine shows on the diagram
        machine = original(owner)
        machine.add_transition("inspected", "opened", lm.LID_PATH["closed"], label="a test-only transition")
        return machine

    monkeypatch.setattr(lm, "build_lid_machine", with_extra)
    assert "opened --> closed: inspected / a test-only transition" in render_mermaid_doc()
