"""MO-2004 with nobody left in play: the burn (art.4.2) and the dealer's second card (art.7.1) after settlement.

The round is settled as soon as nobody is left in play, and the dealer still burns one card and deals himself his
second card (MO-2004 art.4.2, art.7.1). The table core used to mark every card after settlement as drawn by the
dealer for himself: the burn became his second card and the real second card an art.7.1 dealer error. Played
through the real table core, journaled, exported by ``tablectl journal export`` and settled again by
``tablectl replay``."""

from __future__ import annotations

import json
from pathlib import Path

from controller.cli import main as tablectl
from controller.effects import JournalRecord
from controller.journal.store import Journal
from tablebench.table_testing import Harness


def _busted_round() -> Harness:
    h = Harness()
    h.open_continuous("mo-2004")
    h.dealer("place_bet", seat=1, amount=10000)
    h.dealer("no_more_bets")
    for code in ["2C", "2D", "2H", "2S", "3C", "3D"]:  # MO-2004 art.4.1.1: as many burnt as decks
        assert h.card(code)["recipient"] == "burn"
    for code in ["TS", "6D", "5S"]:  # seat 1 TS, the bank 6D (no hole card, art.5.2), seat 1 5S: 15
        h.card(code)
    h.dealer("hit")
    h.card(
        "KH"
    )  # 25: bust, nobody left in play; the round is settled (PT-2001 r.22 reading, MO-2004 art.7.1)
    assert h.core.state == "settled"
    return h


def test_late_burn_and_second_card_mo2004_art4_2_art7_1(tmp_path: Path, capsys) -> None:
    """MO-2004 art.4.2 (one burnt before the bank's second card) and art.7.1 (the bank's second card)."""
    h = _busted_round()
    burn = h.card("9C")
    second = h.card("7H")
    assert burn["recipient"] == "burn" and burn["errors"] == [], burn
    assert second["recipient"] == "dealer" and second["errors"] == [], second
    assert not h.records("dealer_error") and not h.alerts("dealer_error")
    third = h.card("4D")  # 6 + 7 = 13: the bank must draw on 16 or less (art.6.1; no PT-2001 r.22 here)
    assert third["recipient"] == "dealer" and third["errors"] == [], third
    fourth = h.card("9S")  # on 17 the bank may not draw: a dealer error, the card does not count (art.6.1)
    assert fourth["recipient"] == "void" and fourth["errors"], fourth
    h.lid_cycle()

    journal = Journal(tmp_path / "journal.db", table_id="T1")
    try:
        with journal.transaction() as tx:
            for fx in h.effects:
                if isinstance(fx, JournalRecord):
                    tx.append(fx.kind, fx.data)
    finally:
        journal.close()
    out = tmp_path / "rounds.jsonl"
    db = tmp_path / "journal.db"
    assert tablectl(["journal", "export", "--db", str(db), "--out", str(out)]) == 0, capsys.readouterr()
    (line,) = out.read_text().splitlines()
    exported = json.loads(line)
    by_card = {c["card"]: c for c in exported["cards"]}
    assert by_card["9C"]["recipient"] == "burn" and by_card["7H"]["recipient"] == "dealer", exported["cards"]
    path = tmp_path / "round.json"
    path.write_text(line)
    capsys.readouterr()
    assert tablectl(["replay", "--json", str(path)]) == 0, capsys.readouterr()
    replayed = json.loads(capsys.readouterr().out)
    settled = replayed["settlement"]
    assert replayed["journal_agrees"] is True and settled["dealer_cards"] == ["6D", "7H", "4D"], replayed
    assert [(e["rule"], e["card"]) for e in replayed["dealer_errors"]] == [("MO-2004 art.6.1", "9S")]
