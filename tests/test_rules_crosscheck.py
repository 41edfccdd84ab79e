"""Cross-check of the rules engine against the rule books (RULES.md sections 4-6), through `tablectl replay`.

A few rounds go end to end through the real CLI (subprocess); the rest through `controller.rules.rounds.replay`,
the function the CLI calls. Every expected amount is worked out by hand from the book cited in the test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.rules.rounds import InvalidRound, replay

TABLECTL = Path(sys.executable).with_name("tablectl")


def _cli(tmp_path: Path, doc: dict[str, Any]) -> tuple[int, dict[str, Any], str]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    proc = subprocess.run(
        [str(TABLECTL), "replay", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout), proc.stderr


def _round(profile: str, bets: list[tuple[int, int]], cards: list[Any], decisions=(), **extra: Any) -> dict:
    doc: dict[str, Any] = {
        "profile": profile,
        "bets": [{"seat": s, "amount": a} for s, a in bets],
        "cards": cards,
        "decisions": [dict(d) for d in decisions],
    }
    doc.update(extra)
    return doc


def _hands(result) -> list[tuple[int, int, str, int]]:
    return [(h.seat, h.hand, h.outcome, h.net) for h in result.settlement.hands]


# ---------------------------------------------------------------- end to end through the CLI


def test_cli_blackjack_pays_3_to_2_pt2001_r21(tmp_path: Path) -> None:
    """PT-2001 r.21: a blackjack wins three for two (bet 1000 wins 1500) against a dealer 17."""
    rc, out, _ = _cli(tmp_path, _round("pt-2001", [(1, 1000)], ["AS", "TH", "KD", "7C"]))
    assert rc == 0 and out["valid"]
    hand = out["settlement"]["hands"][0]
    assert (hand["outcome"], hand["net"]) == ("blackjack", 1500)
    assert out["settlement"]["total_net"] == 1500


def test_cli_dealer_draw_on_soft_17_flagged_pt2001_r19(tmp_path: Path) -> None:
    """PT-2001 r.6, r.19: the dealer stands on soft 17 (A+6); a card drawn on it is void and a dealer error."""
    doc = _round("pt-2001", [(1, 1000)], ["TS", "AH", "9D", "6C", {"card": "4H", "to": "dealer"}])
    rc, out, _ = _cli(tmp_path, doc)
    assert rc == 0
    s = out["settlement"]
    assert (s["dealer_cards"], s["dealer_total"]) == (["AH", "6C"], 17)
    assert s["hands"][0]["net"] == 1000  # 19 beats 17
    assert [e["rule"] for e in out["dealer_errors"]] == ["PT-2001 r.19"]


def test_cli_even_money_against_ten_names_r34(tmp_path: Path) -> None:
    """PT-2001 r.34: even money only against an ace; against a king the round is invalid and cites r.34."""
    doc = _round("pt-2001", [(1, 1000)], ["AH", "KS", "KH", "5C"], [{"seat": 1, "action": "even_money"}])
    rc, out, err = _cli(tmp_path, doc)
    assert rc == 1 and out["valid"] is False
    assert out["rule"] == "PT-2001 r.34" and "against an ace" in out["error"]
    assert "invalid round" in err


def test_cli_burns_in_online_profile_rejected(tmp_path: Path) -> None:
    """IT burns no card (reshuffled every round): a burn_before_deal of 1 is refused with a clear error."""
    doc = _round("it-online", [(1, 1000)], ["AS", "TS", "AD", "9C"], burn_before_deal=1)
    rc, out, _ = _cli(tmp_path, doc)
    assert rc == 1 and "burn_before_deal" in out["error"] and out["rule"] == "IT"


# ---------------------------------------------------------------- payouts and totals


@pytest.mark.parametrize("profile", ["pt-2001", "pt-online-2015", "ro-online"])
def test_insurance_pays_2_to_1_hole_card_profiles(profile: str) -> None:
    """PT-2001 r.33, PT-ONLINE-2015 r.25f, RO: insurance of half the bet wins 2:1 on a dealer blackjack."""
    doc = _round(profile, [(1, 1000)], ["TS", "AH", "9D", "KC"], [{"seat": 1, "action": "insurance"}])
    r = replay(doc)
    assert _hands(r) == [(1, 0, "lose", -1000)]
    ins = r.settlement.insurance[0]
    assert (ins.amount, ins.won, ins.net) == (500, True, 1000)
    assert r.settlement.total_net == 0


def test_mo_insurance_half_to_full_art12() -> None:
    """MO-2004 art.12.1: insurance from half to the full bet; 4000 on 10000 is refused, 10000 wins 20000."""
    cards = ["TS", "AH", "9D", "2S", "KC"]  # 2S: the burn before the dealer's second card (art.4.2)
    with pytest.raises(InvalidRound) as exc:
        replay(_round("mo-2004", [(1, 10000)], cards, [{"seat": 1, "action": "insurance", "amount": 4000}]))
    assert exc.value.rule == "MO-2004 art.12"
    r = replay(_round("mo-2004", [(1, 10000)], cards, [{"seat": 1, "action": "insurance", "amount": 10000}]))
    assert r.settlement.insurance[0].net == 20000 and r.settlement.total_net == 10000


def test_mo_double_vs_dealer_blackjack_loses_original_bet_art10_7() -> None:
    """MO-2004 art.10.7: a doubled hand against a dealer blackjack loses only the original bet."""
    doc = _round(
        "mo-2004", [(1, 10000)], ["5S", "AH", "6D", "9C", "2S", "KC"], [{"seat": 1, "action": "double"}]
    )
    r = replay(doc)
    assert r.settlement.dealer_blackjack
    assert _hands(r) == [(1, 0, "lose", -10000)]


def test_pt_soft_double_keeps_ace_at_one_r32() -> None:
    """PT-2001 r.29, r.32: A+8 doubled as 9 keeps the ace at 1: with a 2 the hand is 11, not 21."""
    doc = _round("pt-2001", [(1, 1000)], ["AS", "TS", "8D", "9C", "2H"], [{"seat": 1, "action": "double"}])
    r = replay(doc)
    h = r.settlement.hands[0]
    assert (h.total, h.stake, h.outcome, h.net) == (11, 2000, "lose", -2000)


def test_split_ace_ten_is_21_not_blackjack_r20() -> None:
    """PT-2001 r.20: A+K after splitting aces is 21, paid 1:1, and loses to a dealer blackjack."""
    win = replay(
        _round("pt-2001", [(1, 1000)], ["AS", "TS", "AD", "KC", "KD", "AH"], [{"seat": 1, "action": "split"}])
    )
    assert _hands(win)[0] == (1, 0, "win", 1000)
    lose = replay(
        _round("pt-2001", [(1, 1000)], ["AS", "TS", "AD", "AC", "KD", "9H"], [{"seat": 1, "action": "split"}])
    )
    assert _hands(lose) == [(1, 0, "lose", -1000), (1, 1, "lose", -1000)]


@pytest.mark.parametrize(
    ("profile", "prize"), [("pt-2001", 3000), ("pt-online-2015", 3000), ("ro-online", 0)]
)
def test_six_seven_eight_suited_prize_by_profile(profile: str, prize: int) -> None:
    """PT-2001 r.35, PT-ONLINE-2015 r.25i: 6-7-8 of one suit pays 3x the bet on top of the win; RO has none."""
    r = replay(_round(profile, [(1, 1000)], ["6H", "TS", "7H", "9C", "8H"], [{"seat": 1, "action": "hit"}]))
    assert _hands(r) == [(1, 0, "win", 1000)]
    assert sum(p.net for p in r.settlement.prizes) == prize
    assert r.settlement.total_net == 1000 + prize


def test_three_sevens_prize_against_ace_mo_art15() -> None:
    """MO-2004 art.15: three 7s pay 3x the bet at once, even with a dealer ace up."""
    doc = _round(
        "mo-2004", [(1, 10000)], ["7H", "AS", "7C", "7D", "2S", "9C"], [{"seat": 1, "action": "hit"}]
    )
    r = replay(doc)
    assert [(p.name, p.net) for p in r.settlement.prizes] == [("three_sevens", 30000)]
    assert r.settlement.total_net == 40000


def test_mo_five_cards_paid_half_not_against_ace_art19() -> None:
    """MO-2004 art.19: five cards not above 21 are paid half the bet; not offered against a dealer ace."""
    hits = [{"seat": 1, "action": "hit"}] * 3 + [{"seat": 1, "action": "five_card"}]
    r = replay(_round("mo-2004", [(1, 10000)], ["2S", "TH", "3D", "2C", "4H", "5H"], hits))
    assert _hands(r) == [(1, 0, "five_card", 5000)]
    with pytest.raises(InvalidRound) as exc:
        replay(_round("mo-2004", [(1, 10000)], ["2S", "AH", "3D", "2C", "4H", "5H"], hits))
    assert exc.value.rule == "MO-2004 art.19"
    with pytest.raises(InvalidRound) as exc:
        replay(_round("pt-2001", [(1, 1000)], ["2S", "TH", "3D", "7C", "2C", "4H", "5H"], hits))
    assert "five-card" in exc.value.message


def test_mo_side_bets_art13_14() -> None:
    """MO-2004 art.13-14: 7H 7H pays any pair 11:1 and suited sevens 150:1; 14 wins over 13, loses under."""
    got = {}
    for name in ("any_pair", "sevens", "over_13", "under_13"):  # art.13: one side bet per main bet
        doc = _round("mo-2004", [(1, 10000)], ["7H", "9S", "7H", "2C", "8C"])
        doc["bets"][0]["side_bets"] = {name: 1000}
        got.update({s.name: s.net for s in replay(doc).settlement.side_bets})
    assert got == {"any_pair": 11000, "sevens": 150000, "over_13": 1000, "under_13": -1000}


@pytest.mark.parametrize(
    ("second", "result", "net"),
    [("9H", "same_suit", 15000), ("9D", "same_colour", 5000), ("9C", "mixed_colour", 2500)],
)
def test_it_perfect_pairs_stake_included(second: str, result: str, net: int) -> None:
    """IT perfect pairs: 31x / 11x / 6x the stake, stake included (net 30x / 10x / 5x of 500)."""
    doc = _round("it-online", [(1, 1000)], ["9H", "TS", second, "8C"])
    doc["bets"][0]["side_bets"] = {"perfect_pairs": 500}
    sb = replay(doc).settlement.side_bets[0]
    assert (sb.result, sb.net) == (result, net)


# ---------------------------------------------------------------- dealer errors and dealing order


@pytest.mark.parametrize(
    ("profile", "rule"), [("pt-2001", "PT-2001 r.22"), ("pt-online-2015", "PT-ONLINE-2015 r.20")]
)
def test_dealer_stops_when_everyone_bust(profile: str, rule: str) -> None:
    """PT-2001 r.22, PT-ONLINE-2015 r.20c: all players bust: a further dealer card is void and flagged."""
    cards = ["TS", "5S", "6D", "9C", "8H", {"card": "7D", "to": "dealer"}]
    r = replay(_round(profile, [(1, 1000)], cards, [{"seat": 1, "action": "hit"}]))
    assert r.settlement.dealer_cards == ["5S", "9C"]
    assert [e.rule for e in r.engine.dealer_errors] == [rule]
    assert _hands(r) == [(1, 0, "bust", -1000)]


def test_initial_deal_wrong_recipient_corrected_r17() -> None:
    """PT-2001 r.17: seat 1's first card put on the dealer is a dealing error, corrected to seat 1."""
    cards = [{"card": "TS", "to": "dealer"}, "9S", "8H", "6D", "7D", "9C"]
    r = replay(_round("pt-2001", [(1, 1000), (2, 1000)], cards))
    assert r.settlement.hands[0].cards == ["TS", "6D"]
    assert [e.rule for e in r.engine.dealer_errors] == ["PT-2001 r.17"]


# ---------------------------------------------------------------- decisions the book forbids name its rule


@pytest.mark.parametrize(
    ("profile", "cards", "rule"),
    [
        ("pt-2001", ["AS", "TS", "AD", "9C", "AH", "5H"], "PT-2001 r.26"),
        ("ro-online", ["AS", "TS", "AD", "7C", "5C", "9C"], "RO"),
    ],
)
def test_late_decision_on_split_aces_names_split_aces_rule(profile: str, cards: list[str], rule: str) -> None:
    """PT-2001 r.26 (no resplit of aces) and RO (no double on split aces): the error cites that rule."""
    second = "split" if profile == "pt-2001" else "double"
    decisions = [{"seat": 1, "action": "split"}, {"seat": 1, "action": second}]
    with pytest.raises(InvalidRound) as exc:
        replay(_round(profile, [(1, 1000)], cards, decisions))
    assert exc.value.rule == rule and "split aces" in exc.value.message


def test_unknown_seat_cites_seats_rule_r2() -> None:
    """PT-2001 r.2: seats 1-7; seat 8 is refused citing the seats rule, not the decks rule (r.3)."""
    with pytest.raises(InvalidRound) as exc:
        replay(_round("pt-2001", [(8, 1000)], []))
    assert exc.value.rule == "PT-2001 r.2"


@pytest.mark.parametrize(("profile", "burns"), [("pt-2001", 3), ("ro-online", 1), ("mo-2004", 2)])
def test_burn_count_must_match_profile(profile: str, burns: int) -> None:
    """PT-2001 r.10 (one burn), MO-2004 art.4 (one or as many as decks), RO none: other counts are refused."""
    amount = 10000 if profile == "mo-2004" else 1000
    with pytest.raises(InvalidRound) as exc:
        replay(_round(profile, [(1, amount)], ["AS", "TS", "AD", "9C"], burn_before_deal=burns))
    assert "burn_before_deal" in exc.value.message
