"""The core's typed inputs (controller/table/inputs.py, issue 31): each one is journaled in the shape the journals
in the field already hold, read back as the same value, and a journal row that names an input or event nobody
knows is refused with that name, never guessed."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from controller.canonical import canonical
from controller.effects import Rejected
from controller.journal import Journal
from controller.shell.controller import TableController
from controller.table import inputs
from drivers import events as ev

EVERY_INPUT: list[tuple[inputs.Input, dict[str, Any]]] = [
    (
        inputs.DeviceInput(ev.CardOut("A", "S", 7, device_time_ms=12, event_no=3)),
        {
            "type": "device",
            "event": "CardOut",
            "fields": {
                "rank": "A",
                "suit": "S",
                "shoe_seq": 7,
                "face_up": False,
                "confidence": 100,
                "device_time_ms": 12,
                "event_no": 3,
            },
        },
    ),
    (
        inputs.DeviceInput(ev.LidChanged(ev.LidState.FORCED_OPEN)),
        {
            "type": "device",
            "event": "LidChanged",
            "fields": {"state": "forced_open", "device_time_ms": 0, "event_no": 0},
        },
    ),
    (
        inputs.DeviceInput(ev.Jammed(ev.JamLocation.OUTPUT)),
        {
            "type": "device",
            "event": "Jammed",
            "fields": {"location": "output", "device_time_ms": 0, "event_no": 0},
        },
    ),
    (
        inputs.dealer("place_bet", {"seat": 1, "amount": 500}),
        {"type": "dealer", "action": "place_bet", "args": {"seat": 1, "amount": 500}},
    ),
    (
        inputs.DealerInput("stand", {}, inputs.Request("dealer", "d1", "r-1")),
        {
            "type": "dealer",
            "action": "stand",
            "args": {},
            "request": {"role": "dealer", "user": "d1", "request_id": "r-1"},
        },
    ),
    (
        inputs.supervisor("ana", "clear_jam", role="technician"),
        {"type": "supervisor", "user": "ana", "role": "technician", "action": "clear_jam", "args": {}},
    ),
    (inputs.Tick(), {"type": "tick"}),
    (inputs.GpioInput("lid_switch", True), {"type": "gpio", "name": "lid_switch", "value": True}),
    (
        inputs.CommandFailed("OpenLid", "shuffling"),
        {"type": "command_failed", "command": "OpenLid", "text": "shuffling"},
    ),
    (
        inputs.CommandFailed("LockLid", "link down", link=True),
        {"type": "command_failed", "command": "LockLid", "text": "link down", "link": True},
    ),
    (inputs.JackpotDisplay(False), {"type": "jackpot_display", "connected": False}),
    (
        inputs.JackpotLink(False, "no valid meter document for 15 s", 12),
        {"type": "jackpot_link", "up": False, "reason": "no valid meter document for 15 s", "seq": 12},
    ),
    (
        inputs.LinkHitAwarded("bank-a", 9, "r-1", 1, "TWO_ACES_MIXED", 2500, 1),
        {
            "type": "link_hit_awarded",
            "link": "bank-a",
            "hit_id": 9,
            "round_id": "r-1",
            "seat": 1,
            "combination": "TWO_ACES_MIXED",
            "amount_minor": 2500,
            "order": 1,
        },
    ),
    (inputs.Restart(), {"type": "restart"}),
    (inputs.JournalFault("disk_full", "x"), {"type": "journal_fault", "kind": "disk_full", "text": "x"}),
    (
        inputs.IntegrityFault("chain broken", {"record": 7}),
        {"type": "integrity_fault", "reason": "chain broken", "details": {"record": 7}},
    ),
]


@pytest.mark.parametrize("inp, journaled", EVERY_INPUT, ids=lambda x: type(x).__name__)
def test_an_input_is_journaled_as_before_and_read_back_as_itself(
    inp: inputs.Input, journaled: dict[str, Any]
) -> None:
    assert canonical(inputs.encode(inp)) == canonical(journaled)  # the journal's rows stay byte for byte
    assert inputs.decode(journaled) == inp


def test_every_input_type_is_in_the_list_above() -> None:
    assert {type(inp) for inp, _ in EVERY_INPUT} == set(inputs.Input.__args__)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    "row, error, name",
    [
        ({"type": "teleport"}, Rejected, "teleport"),
        ({}, Rejected, "None"),
        ({"type": "device", "event": "CardTeleported", "fields": {}}, ValueError, "CardTeleported"),
        ({"type": "device", "event": "DeviceEvent", "fields": {}}, ValueError, "DeviceEvent"),
    ],
)
def test_a_journal_row_naming_an_unknown_input_is_refused_with_the_name(
    row: dict[str, Any], error: type[Exception], name: str
) -> None:
    with pytest.raises(error, match=name):
        inputs.decode(row)


def test_a_lying_journal_row_is_skipped_on_recovery_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Recovery decodes each row: the forged one is counted and logged with its reason; the others still count."""
    journal = Journal(tmp_path / "j.db")
    with journal.transaction() as tx:
        tx.append("input", {"input": inputs.encode(inputs.supervisor("ana", "open_table", {"profile": "pt-2001",
                                                                                           "shuffler": "continuous"})),
                            "now": 1_790_000_000.0})  # fmt: skip
        tx.append("input", {"input": {"type": "teleport", "to": "the cage"}, "now": 1_790_000_001.0})
        tx.append("input", {"input": inputs.encode(inputs.DeviceInput(ev.LidChanged(ev.LidState.OPEN))),
                            "now": 1_790_000_002.0})  # fmt: skip
    tc = TableController(journal, None)
    with caplog.at_level(logging.WARNING):
        assert tc.recover() == 3
    assert tc.errors == 1
    assert "unknown input type 'teleport'" in caplog.text
    assert tc.core.lid.state == "open"  # the row after the forged one was applied
