"""The deck check that closes a session (controller/table/deck_check.py) alone (PT-2001 r.55)."""

from __future__ import annotations

from controller.table.deck_check import DeckChecks
from controller.table.machine_names import TableState, Trigger
from controller.table.sink import EffectSink
from controller.table.state import Unlock
from drivers import events as ev
from drivers.cards import CARD_CODES
from tablebench.concern_kit import Stub, StubGate, alerts, commands, events, lid, setup, sink


def build(gate: StubGate, *, out: int = 0) -> tuple[DeckChecks, EffectSink, Stub, Stub]:
    fx = sink()
    the_lid = lid()
    cycle = Stub(out=out, shuffling=False)
    return DeckChecks(fx, gate, setup(), the_lid, cycle), fx, the_lid, cycle


def full(decks: int) -> dict[str, int]:
    return dict.fromkeys(CARD_CODES, decks)


def test_a_complete_inventory_closes_the_session_pt2001_r55() -> None:
    gate = StubGate(TableState.CLOSING, {Trigger.DECK_OK}, moves={Trigger.DECK_OK: TableState.CLOSED})
    checks, fx, the_lid, _cycle = build(gate)
    checks.on_deck_check_result(ev.DeckCheckResult(counts=full(6), unreadable=0))
    assert checks.check is not None and checks.check.ok and gate.fired == [Trigger.DECK_OK]
    assert events(fx, "session")[0]["action"] == "closed"
    # continuous shuffler: the cards are taken out with the chief inspector present
    assert the_lid.called("grant_opening") == [((Unlock.CLOSING,), {"unlock": True})]


def test_a_missing_card_fails_the_check_and_blocks_reopening_pt2001_r55() -> None:
    gate = StubGate(TableState.CLOSING, {Trigger.DECK_BAD})
    checks, fx, _lid, _cycle = build(gate)
    counts = full(6)
    counts["AS"] = 5
    checks.on_deck_check_result(ev.DeckCheckResult(counts=counts, unreadable=0))
    assert checks.check is not None and checks.check.missing == {"AS": 1} and not checks.check.ok
    assert gate.fired == [Trigger.DECK_BAD]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("deck_check", "critical")]
    snap: dict[str, object] = {}
    checks.snapshot_into(snap)
    other, _, _, _ = build(StubGate())
    other.restore_from(snap)
    assert other.check == checks.check


def test_the_closing_count_short_of_the_decks_is_flagged_and_inventoried_pt2001_r55() -> None:
    gate = StubGate(TableState.CLOSING)
    checks, fx, _lid, cycle = build(gate, out=2)
    checks.closing_report(310, True)  # after the shuffle that followed the cards' return
    assert cycle.called("closing") == [((310, 312), {})]
    assert [(a.kind, a.severity) for a in alerts(fx)] == [("deck_count", "critical")]
    assert isinstance(commands(fx)[-1], ev.RunDeckCheck)
