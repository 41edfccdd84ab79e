"""The dealer on duty (issue 29) in the table core: signs in between rounds only, a name that is a name,
journaled and published (events/dealer), shown in state/table as ``dealer`` only while someone is signed in,
kept across a restart (snapshot/restore), cleared when the table closes."""

from __future__ import annotations

import json

import pytest

from controller.effects import Event, EventKind, Rejected, StateDocument
from controller.table.core import TableCore
from tablebench.table_testing import Harness


def table_doc(h: Harness) -> dict:
    docs = [fx for fx in h.effects if isinstance(fx, StateDocument) and fx.name.value == "table"]
    return json.loads(docs[-1].text)


def dealer_events(h: Harness) -> list[dict]:
    return [fx.data for fx in h.effects if isinstance(fx, Event) and fx.kind is EventKind.DEALER]


def test_sign_in_between_rounds_journaled_published_and_shown() -> None:
    h = Harness()
    h.open_continuous()
    assert "dealer" not in table_doc(h) and "dealer_on_duty" not in h.core.snapshot()
    h.dealer("dealer_sign_in", name="Ana Silva")
    assert table_doc(h)["dealer"] == "Ana Silva"
    (rec,) = h.records("dealer_signed_in")
    assert rec["dealer"] == "Ana Silva" and rec["previous"] is None
    assert dealer_events(h) == [
        {"action": "signed_in", "dealer": "Ana Silva", "previous": None, "session_id": h.core.session.id}
    ]
    h.start_round({1: 1000})
    h.card("2C")  # PT-2001 r.10: the burn
    h.card("TS")
    with pytest.raises(Rejected, match="dealer_sign_in"):  # a round is being dealt
        h.dealer("dealer_sign_in", name="João")
    assert h.core.dealer_on_duty == "Ana Silva"
    for code in ["9D", "7S", "8H"]:  # the dealer's 9 and hole card 8: 17, stands (PT-2001 r.19)
        h.card(code)
    h.dealer("stand")
    assert h.core.state == "settled"
    h.dealer("dealer_sign_in", name="João")  # the shift changes between rounds
    assert h.records("dealer_signed_in")[-1] == {
        "dealer": "João",
        "previous": "Ana Silva",
        "at": h.records("dealer_signed_in")[-1]["at"],
    }
    assert table_doc(h)["dealer"] == "João"


@pytest.mark.parametrize(
    "name",
    ["", " Ana", "Ana ", "A" * 33, "Ana\nSilva", "Ana\u202eavliS", "<b>Ana</b>", "_ana", 7, None, "a\x00"],
)
def test_a_name_that_is_not_a_name_is_refused_and_nothing_changes(name: object) -> None:
    h = Harness()
    h.open_continuous()
    before = h.core.snapshot()
    with pytest.raises(Rejected, match="dealer name must be"):
        h.dealer("dealer_sign_in", name=name)
    assert h.core.snapshot() == before


def test_kept_across_a_restart_and_cleared_at_close_table() -> None:
    h = Harness()
    h.open_continuous()
    h.dealer("dealer_sign_in", name="Ana")
    restored = TableCore(h.core._load_profile)
    restored.restore(h.core.snapshot())
    assert restored.dealer_on_duty == "Ana" and restored.view()["dealer"] == "Ana"
    h.clear()
    h.sup("close_table")
    assert h.core.dealer_on_duty is None and "dealer" not in table_doc(h)
    assert h.records("dealer_signed_out")[0]["dealer"] == "Ana"
    assert dealer_events(h)[0]["action"] == "signed_out"
    with pytest.raises(Rejected):  # a closed table has no dealer on duty
        h.dealer("dealer_sign_in", name="Ana")
