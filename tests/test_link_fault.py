"""The shoe link fault is cleared by an authorised person, never by the link coming back.

Product guide: "Safety first. On any fault the lid stays locked and the warning light shows what is wrong until
an authorised person clears it." Like a jam (PT-2001 r.51: dealing blocked, light on, the chief inspector or a
technician clears it), a lost shoe link keeps the table in ``link_down`` after ``LinkUp`` until a supervisor
(or technician) ``clear_link``; then the resync counts the cards inside and the round resumes, or is void
when cards are unaccounted for (PT-ONLINE-2015 r.27-28).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.table import SAFETY_PINS, open_continuous

from controller.actions import DEALER_ACTIONS
from controller.effects import Rejected
from controller.gpio import FakeBoard
from controller.journal.store import Journal
from controller.mqtt.auth import ROLE_ACTIONS
from controller.shell import TableController
from controller.table import inputs
from controller.table.messages import messages
from controller.terminal.pit_keys import SUPERVISOR_KEYS
from controller.terminal.pit_panels import link_line
from drivers import events as ev
from tablebench.table_testing import Harness

SAFE = {"lid_lock": True, "warning_light": True}
IDENTIFIED = ev.Identified(1, "EMU-CSM", "1.0.0", "EMU0001", 6, True)
SCHEMAS = Path(__file__).resolve().parents[1] / "schemas" / "mqtt"


def mid_round(h: Harness) -> None:
    """A continuous session, a round in ``players`` (the initial deal as in test_safety_crosscheck.start)."""
    h.open_continuous()
    h.start_round({1: 1000})
    for code in ("2C", "TS", "6D", "7S", "8C"):
        h.card(code)
    assert h.core.state == "players"


def link_back_mid_round() -> Harness:
    """Mid-round, the shoe link lost and back again: the fault still raised, awaiting ``clear_link``."""
    h = Harness()
    mid_round(h)
    h.dev(ev.LinkDown("unplugged"))
    h.dev(IDENTIFIED)  # the driver reports the identity, then LinkUp, on every (re)connect (drivers/shoe.py)
    h.dev(ev.LinkUp())
    return h


def fault_events(h: Harness) -> list[dict[str, Any]]:
    return [
        fx.data
        for fx in messages(h.effects)
        if fx.event_type == "fault" and fx.data.get("fault") == "link_down"
    ]


def retained(h: Harness, name: str) -> dict[str, Any]:
    """The newest retained ``state/<name>`` document the core published."""
    docs = [fx for fx in messages(h.effects) if fx.retain and fx.topic == f"state/{name}"]
    return json.loads(docs[-1].text)


def sv(h: Harness, action: str, user: str = "chief-rui", role: str = "supervisor") -> None:
    h.apply(inputs.supervisor(user, action, {}, role=role))


def test_link_down_mid_round_blocks_dealing_light_on_lid_locked() -> None:
    h = Harness()
    mid_round(h)
    h.dev(ev.LinkDown("unplugged"))
    assert h.core.state == "link_down" and h.core.resume_to == "players"
    assert h.core.outputs == SAFE and h.core.lid.unlock is None
    assert h.core.faults["link_down"].to_dict() == {
        "reason": "unplugged",
        "restored": False,
        "cleared_by": None,
    }
    assert retained(h, "shoe")["linked"] is False
    (alert,) = h.alerts("link_down")
    assert alert.severity == "critical" and "clear_link" in alert.reason and "link is back" in alert.reason
    for action in ("hit", "stand"):
        with pytest.raises(Rejected, match="link_down"):
            h.dealer(action)
    assert fault_events(h)[-1] == {
        "fault": "link_down",
        "state": "raised",
        "info": h.core.faults["link_down"].to_dict(),
    }


def test_link_up_keeps_the_fault_raised_relocks_the_shoe_and_publishes_awaiting_supervisor() -> None:
    """Product guide: the light shows what is wrong until an authorised person clears it. Before the change
    ``LinkUp`` went straight to ``resync`` and on: nobody authorised the table to deal again."""
    h = Harness()
    mid_round(h)
    h.dev(ev.LinkDown("unplugged"))
    h.clear()
    h.dev(IDENTIFIED)  # the driver reports the identity, then LinkUp, on every (re)connect (drivers/shoe.py)
    h.dev(ev.LinkUp())
    assert h.core.state == "link_down" and h.core.outputs == SAFE
    assert h.core.faults["link_down"].restored is True
    assert ev.LockLid() in h.commands()  # a shoe that rebooted in the outage is locked again (PT-2001 r.60)
    assert ev.SetWarningLight(True) in h.commands()
    assert not h.commands(ev.ReportCounts)  # no resync yet
    assert h.records("link_up")
    (published,) = fault_events(h)
    assert published["state"] == "raised" and published["info"]["restored"] is True
    # Retained, so a terminal that (re)connects now sees it too: the link is back, the fault still raised.
    assert retained(h, "shoe")["linked"] is True and "link_down" in h.core.view()["faults"]
    with pytest.raises(Rejected, match="link_down"):
        h.dealer("stand")


def test_link_up_does_not_lock_a_lid_a_supervisor_unlocked_pt2001_r51() -> None:
    h = Harness()
    mid_round(h)
    h.dev(ev.LinkDown("unplugged"))
    sv(h, "unlock_lid")  # the inspector's authorised opening (PT-2001 r.51, r.60)
    h.clear()
    h.dev(ev.LinkUp())
    assert not h.commands(ev.LockLid)
    assert h.core.lid.unlocked_by == "supervisor:chief-rui" and h.core.state == "link_down"


def test_a_second_link_down_before_clearing_marks_it_not_restored_without_a_second_alert() -> None:
    h = link_back_mid_round()
    h.dev(ev.LinkDown("silence 3 s"))
    h.dev(ev.LinkDown("silence 3 s"))  # repeated while down: nothing new
    assert len(h.alerts("link_down")) == 1
    assert h.core.faults["link_down"].to_dict() == {
        "reason": "silence 3 s",
        "restored": False,
        "cleared_by": None,
    }
    assert [e["info"]["restored"] for e in fault_events(h)] == [False, True, False]
    with pytest.raises(Rejected, match="the shoe link is still down: silence 3 s"):
        sv(h, "clear_link")
    h.dev(ev.LinkUp())
    sv(h, "clear_link")
    assert h.core.state == "resync"


def test_clear_link_is_refused_while_the_link_is_down_and_without_a_link_fault() -> None:
    h = Harness()
    mid_round(h)
    with pytest.raises(Rejected, match="no shoe link fault to clear"):
        sv(h, "clear_link")
    h.dev(ev.LinkDown("unplugged"))
    before = h.core.snapshot()
    with pytest.raises(Rejected, match="the shoe link is still down: unplugged"):
        sv(h, "clear_link")
    assert h.core.snapshot() == before  # a refusal changes nothing


@pytest.mark.parametrize("role", ["dealer", "pit", ""])
def test_only_a_supervisor_or_technician_clears_the_link_fault_pt2001_r51(role: str) -> None:
    h = link_back_mid_round()
    with pytest.raises(Rejected):
        h.dealer("clear_link")  # not a dealer command
    with pytest.raises(Rejected, match=r"needs a chief inspector .*PT-2001 r\.51"):
        sv(h, "clear_link", user="d1", role=role)
    assert h.core.state == "link_down" and h.core.outputs == SAFE


def test_supervisor_clear_link_after_link_up_resyncs_and_the_round_resumes() -> None:
    h = link_back_mid_round()
    h.clear()
    sv(h, "clear_link", user="chief-rui")
    (rec,) = h.records("link_cleared")
    assert rec["user"] == "chief-rui" and rec["at"] and rec["reason"] == "unplugged"
    assert h.records("supervisor_action")[0]["action"] == "clear_link"
    assert h.core.state == "resync" and h.commands(ev.ReportCounts)
    assert h.core.outputs["warning_light"] is True  # counts first
    assert fault_events(h)[-1] == {"fault": "link_down", "state": "cleared", "info": {}}
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "players" and "link_down" not in h.core.faults
    assert h.core.outputs == {"lid_lock": True, "warning_light": False}
    h.dealer("stand")  # dealing goes on
    assert h.core.state == "dealer"


def test_a_technician_may_clear_the_link_fault_pt2001_r51() -> None:
    h = link_back_mid_round()
    sv(h, "clear_link", user="tech-joao", role="technician")
    assert h.records("link_cleared")[0]["user"] == "tech-joao"
    assert h.core.state == "resync"


def test_cards_missing_after_the_cleared_link_fault_void_the_round_pt_online_r27_r28() -> None:
    h = link_back_mid_round()
    sv(h, "clear_link")
    h.dev(ev.CardsInside(h.core.inside - 1))  # a card left the shoe unseen during the outage
    assert h.core.state == "settled"
    assert h.records("round_void")[0]["bets_returned"] == {"1": 1000}


def test_a_jam_during_the_link_fault_still_needs_both_clearings_pt2001_r51() -> None:
    h = link_back_mid_round()
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    h.dev(ev.JamCleared())
    sv(h, "clear_jam")
    assert h.core.state == "link_down" and h.core.outputs == SAFE  # the link fault remains
    sv(h, "clear_link")
    assert h.core.state == "resync"


# ---------------------------------------------------------------- restart: journal replay and snapshot


async def _session_to_link_fault(tc: TableController, *, link_up: bool) -> None:
    await open_continuous(tc)
    seq = iter(range(1, 100))
    await tc.dealer_input("place_bet", {"seat": 1, "amount": 1000})
    await tc.dealer_input("no_more_bets")
    for code in ("2C", "TS", "6D", "7S", "8C"):
        await tc.submit(inputs.DeviceInput(ev.CardOut(code[0], code[1], next(seq))))
    await tc.submit(inputs.DeviceInput(ev.LinkDown("unplugged")))
    if link_up:
        await tc.submit(inputs.DeviceInput(ev.LinkUp()))
    assert tc.core.state == "link_down"


@pytest.mark.parametrize("snapshot_every", [1, 1000])  # from a snapshot / by re-applying every input
@pytest.mark.parametrize("link_up", [False, True])
async def test_a_restart_keeps_the_link_fault_raised(
    tmp_path: Path, snapshot_every: int, link_up: bool
) -> None:
    """The service restarts (kill -9, power) with the link fault raised: it comes back raised, light on, lid
    locked; only ``clear_link`` (after the new process saw the link up) lets the round go on."""
    path = tmp_path / "journal.db"
    live = TableController(Journal(path, table_id="T1"), None, snapshot_every=snapshot_every)
    await live.start()
    await _session_to_link_fault(live, link_up=link_up)
    expected = live.core.snapshot()
    live.journal.close()  # the process dies here: no stop()

    check = TableController(Journal(path, table_id="T1"), None, snapshot_every=snapshot_every)
    check.recover()  # snapshot + journal replay rebuild exactly the live state
    assert check.core.snapshot() == expected
    check.journal.close()

    board = FakeBoard()
    board.setup(SAFETY_PINS)
    revived = TableController(Journal(path, table_id="T1"), None, board=board, snapshot_every=snapshot_every)
    try:
        await revived.start()  # recover, safe outputs, then the ``restart`` input
        core = revived.core
        assert core.state == "link_down" and core.faults["link_down"].reason == "unplugged"
        assert core.outputs == SAFE and core.resume_to == "players"
        with pytest.raises(Rejected, match="link_down"):
            await revived.dealer_input("stand")
        # Even when the old process had seen the link back, this one has not heard the shoe yet.
        assert core.faults["link_down"].restored is False
        with pytest.raises(Rejected, match="the shoe link is still down"):
            await revived.supervisor_action("chief-rui", "clear_link")
        await revived.submit(inputs.DeviceInput(ev.LinkUp()))  # the new process connects to the shoe
        assert core.state == "link_down" and core.outputs == SAFE
        await revived.supervisor_action("chief-rui", "clear_link")
        await revived.submit(inputs.DeviceInput(ev.CardsInside(core.inside)))
        assert core.state == "players" and not core.faults
        assert board.values["warning_light"] is False and board.values["lid_lock"] is True
    finally:
        await revived.stop()
        revived.journal.close()


def test_clear_link_is_a_signed_supervisor_and_technician_command_never_a_dealer_one() -> None:
    """docs/mqtt.md: ``clear_link`` on cmd/supervisor and cmd/technician (as clear_jam, PT-2001 r.51); the pit
    terminal has a key for it."""
    signed = json.loads((SCHEMAS / "cmd_signed.schema.json").read_text())
    dealer = json.loads((SCHEMAS / "cmd_dealer.schema.json").read_text())
    assert "clear_link" in signed["properties"]["action"]["enum"]
    assert "clear_link" not in dealer["properties"]["action"]["enum"] and "clear_link" not in DEALER_ACTIONS
    assert "clear_link" in ROLE_ACTIONS["supervisor"] and "clear_link" in ROLE_ACTIONS["technician"]
    assert "clear_link" in SUPERVISOR_KEYS


def test_the_pit_terminal_tells_a_link_back_awaiting_a_supervisor_from_a_link_down() -> None:
    """The shoe panel reads the retained documents: ``state/shoe.linked`` (the link itself) and
    ``state/table.faults`` (raised until ``clear_link``), so after a restart it still shows what is wrong."""
    h = link_back_mid_round()
    shoe, faults = retained(h, "shoe"), h.core.view()["faults"]
    text, style = link_line(shoe["linked"], "link_down" in faults)
    assert "F12" in text and "fault raised" in text and style == "bold yellow"
    assert link_line(False, True) == ("link: DOWN", "bold red")
    assert link_line(True, False) == ("link: ok", "")
