"""Round engine per profile, each test citing the rule it checks.

Rounds are written in the round-file format (docs/rounds.md) and run through `rounds.replay`, the same path as
`tablectl replay`; a few tests drive RoundEngine directly, as the live table does.
"""

from __future__ import annotations

from typing import Any

import pytest

from controller.rules import (
    Action,
    Card,
    Recipient,
    RoundEngine,
    RoundError,
    RoundPhase,
    RuleViolation,
    SeatBet,
    Turn,
)
from controller.rules.profiles import load_profile
from controller.rules.rounds import InvalidRound, ReplayResult, replay


def play(
    profile: str, bets: list[dict[str, Any]], cards: list[Any], decisions: list[dict] = (), **kw: Any
) -> ReplayResult:
    return replay({"profile": profile, "bets": bets, "cards": cards, "decisions": list(decisions), **kw})


def hand(res: ReplayResult, seat: int, idx: int = 0):
    return next(h for h in res.settlement.hands if h.seat == seat and h.hand == idx)


def D(seat: int, action: str, hand: int = 0, **kw: Any) -> dict:
    return {"seat": seat, "hand": hand, "action": action, **kw}


ONE = [{"seat": 1, "amount": 1000}]
TWO = [{"seat": 1, "amount": 1000}, {"seat": 2, "amount": 1000}]


# ---------------------------------------------------------------- PT-2001


def test_pt2001_r10_r17_burn_then_deal_order_hole_card() -> None:
    eng = RoundEngine(load_profile("pt-2001"), [SeatBet(2, 500), SeatBet(1, 500)], burn_before_deal=1)
    seen = []
    for code in ["2C", "TS", "5H", "7D", "9S", "6C", "6S"]:
        seen.append(str(eng.expected_recipient()))
        eng.on_card(code)
    assert seen == [
        "burn",
        "seat 1 hand 0",
        "seat 2 hand 0",
        "dealer",
        "seat 1 hand 0",
        "seat 2 hand 0",
        "dealer",
    ]
    assert eng.phase is RoundPhase.PLAYERS and eng.turn().seat == 1


def test_pt2001_r18_may_not_stand_on_11_or_less() -> None:
    with pytest.raises(InvalidRound, match=r"may not stand on 11.*PT-2001 r\.18"):
        play("pt-2001", ONE, ["5S", "7D", "6H", "9C"], [D(1, "stand")])


def test_pt2001_r18_21_stands_automatically_and_cannot_hit() -> None:
    eng = RoundEngine(load_profile("pt-2001"), [SeatBet(1, 1000)])
    for c in ["5S", "7D", "6H", "9C", "TC"]:
        eng.on_card(c)
    assert eng.phase is RoundPhase.DEALER and eng.expected_recipient() == Recipient.dealer()


def test_pt2001_r18_unseen_card_against_the_players_wish_goes_to_next_player_who_asks() -> None:
    # Seat 1 stands on 21; the dealer wrongly gives it 4H (unseen): seat 2 asks for a card and gets 4H.
    cards = ["5S", "9D", "7D", "6H", "8C", "9C", "TC", {"card": "4H", "to": {"seat": 1}}, "5C"]
    res = play("pt-2001", TWO, cards, [D(2, "hit")])  # 9+8+4 = 21 stands by itself
    assert hand(res, 1).cards == ["5S", "6H", "TC"]
    assert hand(res, 2).cards == ["9D", "8C", "4H"]
    assert [e["rule"] for e in res.to_json()["dealer_errors"]] == ["PT-2001 r.18"]


def test_pt2001_r18_seen_card_against_the_players_wish_is_void() -> None:
    cards = [
        "5S",
        "9D",
        "7D",
        "6H",
        "8C",
        "9C",
        "TC",
        {"card": "4H", "to": {"seat": 1}, "face_up": True},
        "3S",
        "2H",
    ]
    res = play("pt-2001", TWO, cards, [D(2, "hit"), D(2, "stand")])
    assert hand(res, 2).cards == ["9D", "8C", "3S"]
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.18"


def test_pt2001_r18_unseen_card_nobody_asks_goes_to_the_dealer() -> None:
    cards = ["5S", "9D", "7D", "6H", "8C", "9C", "TC", {"card": "4H", "to": {"seat": 1}}]
    res = play("pt-2001", TWO, cards, [D(2, "stand")])
    assert res.settlement.dealer_cards == ["7D", "9C", "4H"]  # dealer 16 draws the held card: 20
    assert hand(res, 2).outcome == "lose"


def test_pt2001_r19_dealer_draw_on_17_does_not_count() -> None:
    res = play("pt-2001", ONE, ["TS", "7D", "9H", "KC", {"card": "5H", "to": "dealer"}], [D(1, "stand")])
    assert res.settlement.dealer_total == 17 and hand(res, 1).outcome == "win"
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.19"


def test_pt2001_r6_dealer_stands_on_soft_17() -> None:
    res = play("pt-2001", ONE, ["TS", "AD", "8H", "6C"], [D(1, "stand")])
    assert res.settlement.dealer_cards == ["AD", "6C"] and hand(res, 1).outcome == "win"


def test_pt2001_r20_split_ace_and_ten_is_21_not_blackjack() -> None:
    cards = ["AS", "TD", "AH", "KC", "KS", "9H"]  # split aces: AS+KS, AH+9H; dealer TD+KC = 20
    res = play("pt-2001", ONE, cards, [D(1, "split")])
    assert [h.outcome for h in res.settlement.hands] == ["win", "push"]
    assert hand(res, 1, 0).net == 1000  # 1:1, not 3:2


def test_pt2001_r21_blackjack_pays_3_to_2_and_pushes_dealer_blackjack() -> None:
    assert hand(play("pt-2001", ONE, ["AS", "9D", "KH", "8C"]), 1).net == 1500
    assert hand(play("pt-2001", ONE, ["AS", "AD", "KH", "QC"]), 1).outcome == "push"


def test_pt2001_r22_dealer_does_not_draw_when_everyone_is_bust() -> None:
    res = play("pt-2001", ONE, ["TS", "6D", "5H", "4C", "9C"], [D(1, "hit")])
    assert res.engine.is_complete() and res.settlement.dealer_cards == ["6D", "4C"]
    assert hand(res, 1).outcome == "bust" and hand(res, 1).net == -1000
    res = play("pt-2001", ONE, ["TS", "6D", "5H", "4C", "9C", {"card": "8S", "to": "dealer"}], [D(1, "hit")])
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.22"


def test_pt2001_r26_split_aces_get_one_card_each() -> None:
    cards = [
        "AS",
        "9D",
        "AH",
        "8C",
        "5S",
        "6H",
        {"card": "4D", "to": {"seat": 1, "hand": 0}, "face_up": True},
    ]
    res = play("pt-2001", ONE, cards, [D(1, "split")])
    assert [h.cards for h in res.settlement.hands] == [["AS", "5S"], ["AH", "6H"]]
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.26"
    with pytest.raises(InvalidRound, match=r"split aces receive one card each.*PT-2001 r\.26"):
        play("pt-2001", ONE, ["AS", "9D", "AH", "8C", "5S"], [D(1, "split"), D(1, "hit")])


def test_pt2001_r27_resplit_allowed() -> None:
    cards = ["8S", "TD", "8H", "7C", "8D", "TS", "9S", "TH"]
    decisions = [D(1, "split"), D(1, "split"), D(1, "stand", 0), D(1, "stand", 1), D(1, "stand", 2)]
    res = play("pt-2001", ONE, cards, decisions)
    assert [h.cards for h in res.settlement.hands] == [["8S", "TS"], ["8D", "9S"], ["8H", "TH"]]
    assert res.settlement.dealer_total == 17


def test_pt2001_r29_double_only_on_9_10_11() -> None:
    with pytest.raises(InvalidRound, match=r"double only on 9, 10 or 11.*PT-2001 r\.29"):
        play("pt-2001", ONE, ["5S", "9D", "3H", "8C"], [D(1, "double")])
    res = play("pt-2001", ONE, ["5S", "9D", "6H", "8C", "TC"], [D(1, "double")])
    assert hand(res, 1).stake == 2000 and hand(res, 1).net == 2000  # 21 v 17


def test_pt2001_r29_a_card_after_the_double_is_a_dealer_error() -> None:
    cards = ["5S", "9D", "6H", "8C", "2C", {"card": "TH", "to": {"seat": 1}, "face_up": True}]
    res = play("pt-2001", ONE, cards, [D(1, "double")])
    assert hand(res, 1).cards == ["5S", "6H", "2C"]
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.29"


def test_pt2001_r32_soft_double_keeps_the_ace_at_1() -> None:
    res = play("pt-2001", ONE, ["AS", "TD", "8H", "7C", "2C"], [D(1, "double")])  # A+8 doubled as 9
    assert hand(res, 1).total == 11 and hand(res, 1).outcome == "lose"


def test_pt2001_r31_double_after_split() -> None:
    cards = ["5S", "TD", "5H", "7C", "4D", "KS", "QD"]
    res = play("pt-2001", ONE, cards, [D(1, "split"), D(1, "double", 0), D(1, "stand", 1)])
    assert hand(res, 1, 0).stake == 2000 and hand(res, 1, 0).total == 19
    assert hand(res, 1, 1).total == 15


def test_pt2001_r33_insurance_up_to_half_pays_2_to_1() -> None:
    res = play("pt-2001", ONE, ["TS", "AD", "9H", "KC"], [D(1, "insurance", amount=500), D(1, "stand")])
    assert res.settlement.insurance[0].net == 1000 and hand(res, 1).net == -1000
    assert res.settlement.total_net == 0
    with pytest.raises(InvalidRound, match=r"insurance 600 outside.*PT-2001 r\.33"):
        play("pt-2001", ONE, ["TS", "AD", "9H", "KC"], [D(1, "insurance", amount=600)])


def test_pt2001_r34_even_money_for_blackjack_against_ace() -> None:
    res = play("pt-2001", ONE, ["AS", "AD", "KH", "KC"], [D(1, "even_money")])
    assert hand(res, 1).outcome == "even_money" and hand(res, 1).net == 1000


def test_pt2001_r35_six_seven_eight_suited_prize_3x() -> None:
    res = play("pt-2001", ONE, ["6S", "TD", "7S", "9C", "8S"], [D(1, "hit")])
    assert hand(res, 1).outcome == "win"  # 21 v 19
    assert [(p.name, p.net) for p in res.settlement.prizes] == [("six_seven_eight_suited", 3000)]
    assert res.settlement.total_net == 4000
    res = play("pt-2001", ONE, ["7S", "AD", "7H", "KC", "7D"], [D(1, "hit")])  # three 7s v dealer blackjack
    assert hand(res, 1).net == -1000 and res.settlement.prizes[0].name == "three_sevens"
    assert res.settlement.total_net == 2000


def test_pt2001_r36_surrender_half_not_against_ace_not_after_additional_card() -> None:
    res = play("pt-2001", ONE, ["TS", "9D", "6H", "8C"], [D(1, "surrender")])
    assert hand(res, 1).net == -500
    with pytest.raises(InvalidRound, match=r"ace.*PT-2001 r\.36"):
        play("pt-2001", ONE, ["TS", "AD", "6H", "8C"], [D(1, "no_insurance"), D(1, "surrender")])
    with pytest.raises(InvalidRound, match=r"before the dealer deals any additional card.*PT-2001 r\.36"):
        play(
            "pt-2001",
            TWO,
            ["TS", "TD", "9D", "2H", "6C", "8C", "5H"],
            [D(1, "hit"), D(1, "stand"), D(2, "surrender")],
        )
    # Decided right after the first two cards it stands, even before seat 1 plays.
    res = play(
        "pt-2001",
        TWO,
        ["TS", "TD", "9D", "2H", "6C", "8C", "5H"],
        [D(2, "surrender"), D(1, "hit"), D(1, "stand")],
    )
    assert hand(res, 2).outcome == "surrender"


def test_pt2001_r14_r37_bet_limits() -> None:
    with pytest.raises(InvalidRound, match=r"outside the table limits.*PT-2001 r\.37"):
        play("pt-2001", [{"seat": 1, "amount": 15500}], [])
    with pytest.raises(InvalidRound, match=r"not a multiple.*PT-2001 r\.14"):
        play("pt-2001", [{"seat": 1, "amount": 750}], [])


def test_pt2001_r42_jackpot_chip_reports_first_cards_including_split_pairs() -> None:
    cards = ["AS", "TD", "AS", "7C", "AD", "AH"]
    res = play("pt-2001", [{"seat": 1, "amount": 500, "jackpot_chip": True}], cards, [D(1, "split")])
    assert res.settlement.jackpot == [{"seat": 1, "first_cards": ["AS", "AS", "AD", "AH"]}]


def test_unknown_seat_and_impossible_cards_are_invalid() -> None:
    with pytest.raises(InvalidRound, match="unknown seat 8"):
        play("pt-2001", [{"seat": 8, "amount": 500}], [])
    with pytest.raises(InvalidRound, match=r"card #7 \(AS\): more than 6 AS"):
        play("pt-2001", ONE, ["AS"] * 7)
    with pytest.raises(InvalidRound, match=r"card #5 \(5H\).*after the round ended"):
        play("pt-2001", ONE, ["TS", "7D", "9H", "KC", "5H"], [D(1, "stand")])
    with pytest.raises(InvalidRound, match="round incomplete"):  # the dealer's 12 must draw (PT-2001 r.19)
        play("pt-2001", ONE, ["TS", "7D", "9H", "5C"], [D(1, "stand")])
    with pytest.raises(InvalidRound, match=r"decision #2 .* after the round ended"):
        play("pt-2001", ONE, ["TS", "7D", "9H", "KC"], [D(1, "stand"), D(1, "hit")])


def test_engine_api_allowed_actions_and_violation() -> None:
    eng = RoundEngine(load_profile("pt-2001"), [SeatBet(1, 500)])
    for c in ["5S", "9D", "3H", "8C"]:
        out = eng.on_card(Card.parse(c))
        assert out.counts and not out.errors
    assert eng.allowed_actions() == {Action.HIT, Action.SURRENDER}  # 8: no stand (r.18), no double (r.29)
    with pytest.raises(RuleViolation) as exc:
        eng.act(Action.DOUBLE)
    assert exc.value.rule == "PT-2001 r.29"
    with pytest.raises(RoundError):
        eng.settle()


# ---------------------------------------------------------------- MO-2004


MO = [{"seat": 1, "amount": 10000}]


def test_mo2004_art4_burns_and_no_hole_card_art5_2() -> None:
    eng = RoundEngine(load_profile("mo-2004"), [SeatBet(1, 10000)], burn_before_deal=6)
    seq = []
    for c in ["2C", "3C", "4C", "5C", "6C", "7C", "TS", "9D", "8H"]:
        seq.append(str(eng.expected_recipient()))
        eng.on_card(c)
    assert seq == ["burn"] * 6 + ["seat 1 hand 0", "dealer", "seat 1 hand 0"]
    eng.act(Action.STAND)
    assert eng.expected_recipient() == Recipient.burn()  # art.4.2: before the dealer's second card
    eng.on_card("2D")
    assert eng.expected_recipient() == Recipient.dealer()
    eng.on_card("TC")
    assert eng.is_complete() and eng.settle().hands[0].outcome == "lose"  # 18 v 19


def test_mo2004_art5_1_1_face_up_card_is_invalid_except_first_of_game() -> None:
    res = play(
        "mo-2004", MO, ["TS", {"card": "5D", "face_up": True}, "9D", "8H", "2C", "KD"], [D(1, "stand")]
    )
    assert res.engine.dealer_errors[0].rule == "MO-2004 art.5.1.1"
    assert res.settlement.dealer_cards == ["9D", "KD"]
    res = play(
        "mo-2004",
        MO,
        [{"card": "TS", "face_up": True}, "9D", "8H", "2C", "KD"],
        [D(1, "stand")],
        first_of_game=True,
    )
    assert not res.engine.dealer_errors and hand(res, 1).cards == ["TS", "8H"]


def test_mo2004_art5_1_2_misdealt_card_is_corrected() -> None:
    cards = ["TS", "TH", "9D", "8S", "7C", {"card": "4S", "to": {"seat": 1}}]  # seat 2's hit given to seat 1
    bets = [{"seat": 1, "amount": 10000}, {"seat": 2, "amount": 10000}]
    res = play("mo-2004", bets, [*cards, "2C", "KD"], [D(1, "stand"), D(2, "hit")])
    assert (
        hand(res, 2).cards == ["TH", "7C", "4S"] and res.engine.dealer_errors[0].rule == "MO-2004 art.5.1.2"
    )


def test_mo2004_art10_7_dealer_blackjack_doubled_bet_loses_only_the_original() -> None:
    res = play("mo-2004", MO, ["5S", "AD", "6H", "8C", "2C", "KD"], [D(1, "double")])
    assert hand(res, 1).stake == 20000 and hand(res, 1).net == -10000


def test_mo2004_art19_five_cards_paid_half_not_against_ace() -> None:
    cards = ["2S", "9D", "3H", "2C", "4C", "5C"]
    res = play("mo-2004", MO, cards, [D(1, "hit"), D(1, "hit"), D(1, "hit"), D(1, "five_card")])
    assert hand(res, 1).outcome == "five_card" and hand(res, 1).net == 5000
    assert res.settlement.dealer_cards == ["9D"]  # nobody left in play
    with pytest.raises(InvalidRound, match=r"ace.*MO-2004 art\.19"):
        play(
            "mo-2004",
            MO,
            ["2S", "AD", "3H", "2C", "4C", "5C"],
            [D(1, "no_insurance"), D(1, "hit"), D(1, "hit"), D(1, "hit"), D(1, "five_card")],
        )


def test_mo2004_art10_3_even_money_against_ten() -> None:
    res = play("mo-2004", MO, ["AS", "KD", "TH"], [D(1, "even_money")])
    assert hand(res, 1).net == 10000 and res.settlement.dealer_cards == ["KD"]  # nobody left: no second card


def test_mo2004_art12_insurance_half_to_full() -> None:
    res = play(
        "mo-2004", MO, ["TS", "AD", "9H", "2C", "KC"], [D(1, "insurance", amount=10000), D(1, "stand")]
    )
    assert res.settlement.insurance[0].net == 20000
    with pytest.raises(InvalidRound, match=r"MO-2004 art\.12"):
        play("mo-2004", MO, ["TS", "AD", "9H", "KC"], [D(1, "insurance", amount=4000)])


def test_mo2004_art16_split_up_to_four_hands() -> None:
    cards = ["8S", "TD", "8H", "8C", "8D", "8C", "8H"]
    with pytest.raises(InvalidRound, match=r"at most 4 hands.*MO-2004 art\.16"):
        play("mo-2004", MO, cards, [D(1, "split"), D(1, "split"), D(1, "split"), D(1, "split")])


class _EachSideBet:
    """MO-2004 art.13 allows one side bet per main bet: play the same round once per side bet."""

    def __init__(self, results: list) -> None:
        self.settlement = type("S", (), {"side_bets": [s for r in results for s in r.settlement.side_bets]})


def _play_each_side_bet(cards: list[str], decisions: list) -> _EachSideBet:
    names = ("any_pair", "sevens", "over_13", "under_13")
    bets = [[{"seat": 1, "amount": 10000, "side_bets": {n: 1000}}] for n in names]
    return _EachSideBet([play("mo-2004", b, cards, decisions) for b in bets])


def test_mo2004_art13_art14_side_bets() -> None:
    res = _play_each_side_bet(["7S", "9D", "7S", "2C", "KD"], [D(1, "stand")])  # 14 v 19
    by = {s.name: s for s in res.settlement.side_bets}
    assert by["any_pair"].net == 11000  # 11:1
    assert by["sevens"].result == "two_suited" and by["sevens"].net == 150000
    assert by["over_13"].net == 1000 and by["under_13"].net == -1000
    # three 7s after splitting the pair (art.13.2.2), different suits: 500:1; the 13 bets lose on... 14
    res = _play_each_side_bet(
        ["7S", "9D", "7H", "7C", "TC", "TH", "KC", "2C", "TD"],
        [D(1, "split"), D(1, "split"), D(1, "stand", 0), D(1, "stand", 1), D(1, "stand", 2)],
    )
    by = {s.name: s for s in res.settlement.side_bets}
    assert by["sevens"].result == "three" and by["sevens"].net == 500000
    assert by["any_pair"].net == 22000  # the first pair and the second pair 7-7 after the split
    # exactly 13 loses both over and under
    res = _play_each_side_bet(["6S", "9D", "7D", "2C", "KD"], [D(1, "stand")])
    by = {s.name: s for s in res.settlement.side_bets}
    assert by["over_13"].net == -1000 and by["under_13"].net == -1000 and by["any_pair"].net == -1000
    # the ace counts 1: A + 5 is 6, under 13
    res = _play_each_side_bet(["AS", "9D", "5D", "2C", "KD"], [D(1, "stand")])
    by = {s.name: s for s in res.settlement.side_bets}
    assert by["under_13"].net == 1000 and by["over_13"].net == -1000


def test_mo2004_art15_special_prize_even_against_ace() -> None:
    res = play("mo-2004", MO, ["6D", "AD", "7D", "8D", "2C", "KD"], [D(1, "no_insurance"), D(1, "hit")])
    assert res.settlement.prizes[0].net == 30000


# ---------------------------------------------------------------- PT-ONLINE-2015, IT, RO


def test_pt_online_r25a_blackjack_3_to_2_rounds_down_on_odd_bet() -> None:
    res = play("pt-online-2015", [{"seat": 1, "amount": 101}], ["AS", "9D", "KH", "8C"])
    assert hand(res, 1).net == 151  # 151.5 rounded down


def test_pt_online_r9_no_bet_above_the_maximum() -> None:
    """PT-ONLINE-2015 r.9 "nem superior ao valor máximo" (r.11 bounds the maximum itself, 100 x the minimum)."""
    with pytest.raises(InvalidRound, match=r"PT-ONLINE-2015 r\.9"):
        play("pt-online-2015", [{"seat": 1, "amount": 10001}], [])


def test_it_deals_from_the_right_highest_position_first() -> None:
    eng = RoundEngine(load_profile("it-online"), [SeatBet(1, 1000), SeatBet(3, 1000)])
    seq = []
    for c in ["TS", "9D", "8H", "7C", "9S"]:
        seq.append(str(eng.expected_recipient()))
        eng.on_card(c)
    assert seq == ["seat 3 hand 0", "seat 1 hand 0", "dealer", "seat 3 hand 0", "seat 1 hand 0"]
    assert eng.turn().seat == 3


def test_it_perfect_pairs_stake_included_and_half_the_bet() -> None:
    bets = [{"seat": 1, "amount": 1000, "side_bets": {"perfect_pairs": 500}}]
    res = play("it-online", bets, ["9H", "TD", "9H", "8C"], [D(1, "stand")])
    assert (
        res.settlement.side_bets[0].result == "same_suit" and res.settlement.side_bets[0].net == 15000
    )  # 31x incl.
    res = play("it-online", bets, ["9H", "TD", "9D", "8C"], [D(1, "stand")])
    assert res.settlement.side_bets[0].net == 5000  # 11x incl.
    res = play("it-online", bets, ["9H", "TD", "9S", "8C"], [D(1, "stand")])
    assert res.settlement.side_bets[0].net == 2500  # 6x incl.
    with pytest.raises(InvalidRound, match="half the main bet"):
        play("it-online", [{"seat": 1, "amount": 1000, "side_bets": {"perfect_pairs": 400}}], [])


def test_it_no_surrender_one_split_insurance_exactly_half() -> None:
    with pytest.raises(InvalidRound, match="surrender is not offered"):
        play("it-online", ONE, ["TS", "9D", "6H"], [D(1, "surrender")])
    with pytest.raises(InvalidRound, match="at most 2 hands"):
        play("it-online", ONE, ["8S", "TD", "8H", "8C"], [D(1, "split"), D(1, "split")])
    with pytest.raises(InvalidRound, match="insurance 400 outside 500-500"):
        play("it-online", ONE, ["TS", "AD", "9H"], [D(1, "insurance", amount=400)])


def test_it_dealer_blackjack_after_double_loses_everything() -> None:
    res = play("it-online", ONE, ["5S", "AD", "6H", "8C", "KD"], [D(1, "no_insurance"), D(1, "double")])
    assert hand(res, 1).net == -2000


def test_ro_dealer_peek_ends_round_on_blackjack() -> None:
    res = play("ro-online", ONE, ["9S", "AD", "8H", "KC"], [D(1, "insurance")])
    assert res.engine.is_complete() and res.settlement.insurance[0].net == 1000 and hand(res, 1).net == -1000
    res = play(
        "ro-online", ONE, ["9S", "TD", "8H", "AC"]
    )  # ten up, blackjack underneath: no decisions at all
    assert hand(res, 1).net == -1000


def test_ro_even_money_and_one_split() -> None:
    res = play("ro-online", ONE, ["AS", "AD", "KH", "9C"], [D(1, "even_money")])
    assert hand(res, 1).net == 1000
    with pytest.raises(InvalidRound, match="at most 2 hands"):
        play("ro-online", ONE, ["8S", "TD", "8H", "9C", "8C"], [D(1, "split"), D(1, "split")])


# ---------------------------------------------------------------- live semantics


def test_live_card_while_hand_may_hit_is_an_implicit_hit() -> None:
    eng = RoundEngine(load_profile("pt-2001"), [SeatBet(1, 500), SeatBet(2, 500)])
    for c in ["TS", "9D", "7D", "3H", "8C", "9C"]:
        eng.on_card(c)
    assert eng.turn() == Turn("player", 1, 0) and eng.expected_recipient() == Recipient.player(1, 0)
    out = eng.on_card("5S")  # seat 1 on 13 takes a card without a recorded "hit"
    assert out.recipient == Recipient.player(1, 0) and out.counts
    eng.act(Action.STAND)
    eng.act(Action.STAND)
    assert eng.expected_recipient() == Recipient.dealer()  # the dealer's 16 must draw (PT-2001 r.19)
    eng.on_card("2S")
    assert eng.is_complete() and eng.description()["decisions"][0]["implicit"] is True


def test_pt2001_r17_burn_when_no_burn_was_due_does_not_count() -> None:
    res = play("pt-2001", ONE, ["TS", "7D", "9H", "KC", {"card": "5H", "to": "burn"}, "2S"], [D(1, "hit")])
    assert hand(res, 1).cards == ["TS", "9H", "2S"]
    assert res.engine.dealer_errors[0].rule == "PT-2001 r.17"


def test_pt2001_r18_held_card_unused_by_the_dealer_is_void() -> None:
    cards = ["5S", "9D", "TD", "6H", "8C", "8S", "TC", {"card": "4H", "to": {"seat": 1}}]
    # after_cards pins seat 2's stand after the 8th card, so 4H arrives while seat 2 is still to play
    res = play("pt-2001", TWO, cards, [D(2, "stand", after_cards=8)])  # dealer 18: the held 4H is void
    assert res.settlement.dealer_cards == ["TD", "8S"]
    assert res.engine.description()["held_cards"] == [{"card": "4H", "recipient": "void"}]


def test_mo2004_art16_3_split_aces_may_be_split_again() -> None:
    cards = ["AS", "9D", "AH", "AC", "KS", "5D", "7H", "2C", "TD"]
    res = play("mo-2004", MO, cards, [D(1, "split"), D(1, "split", 0)])
    assert [h.cards for h in res.settlement.hands] == [["AS", "KS"], ["AC", "5D"], ["AH", "7H"]]


def test_pt2001_r22_no_dealer_card_needed_when_every_hand_is_settled() -> None:
    eng = RoundEngine(load_profile("pt-2001"), [SeatBet(1, 500)])
    for c in ["TS", "6D", "6H", "7C"]:
        eng.on_card(c)
    eng.act(Action.SURRENDER)
    assert eng.is_complete() and eng.expected_recipient() is None
    out = eng.on_card("5S", to=Recipient.dealer())
    assert not out.counts and out.errors[0].rule == "PT-2001 r.22"
    with pytest.raises(RoundError, match="after the round ended"):
        eng.on_card("6S")


def test_live_round_description_replays_through_the_cli(tmp_path) -> None:
    """One code path: a round driven card by card replays via `tablectl replay` to the same result."""
    import json
    import subprocess
    import sys

    eng = RoundEngine(load_profile("mo-2004"), [SeatBet(2, 10000, {"any_pair": 500})], burn_before_deal=6)
    for c in ["2C", "3C", "4C", "5C", "6C", "7C", "8S", "9D", "8H"]:
        eng.on_card(c)
    eng.act(Action.SPLIT)
    eng.on_card("TC")  # first split hand: 18
    eng.act(Action.STAND)
    eng.on_card("TH")  # second split hand: 18
    eng.act(Action.STAND)
    for c in ["2D", "8D"]:  # burn before the dealer's second card (art.4.2), then the card
        eng.on_card(c)
    assert eng.is_complete()
    path = tmp_path / "live.json"
    path.write_text(json.dumps(eng.description()))
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "replay", "--json", str(path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["settlement"] == json.loads(json.dumps(eng.settle().to_json()))


def test_mo2004_art7_1_house_choice_dealer_second_card_even_with_nobody_in_play(tmp_path) -> None:
    """MO-2004 art.7.1 read literally: after the players' decisions the dealer deals himself a second card, even
    when nobody is left in play (the shipped mo-2004 follows RULES.md §5 / PT-2001 r.22 and stops at once)."""
    import re

    from controller.rules.profiles import PROFILE_DIR

    text = (PROFILE_DIR / "mo-2004.toml").read_text(encoding="utf-8")
    literal = tmp_path / "mo-2004-literal.toml"
    literal.write_text(
        re.sub(r"dealer_second_card_always = false", "dealer_second_card_always = true", text),
        encoding="utf-8",
    )
    shipped = play("mo-2004", MO, ["AS", "KD", "TH"], [D(1, "even_money")])
    assert shipped.settlement.dealer_cards == ["KD"]  # nobody in play: no second card
    # The literal reading: the burn before the dealer's second card (art.4.2) and the second card itself.
    res = play(str(literal), MO, ["AS", "KD", "TH", "5C", "9D"], [D(1, "even_money")])
    assert res.settlement.dealer_cards == ["KD", "9D"] and hand(res, 1).net == 10000
    with pytest.raises(InvalidRound):  # and nothing after the second card: nobody is in play
        play(str(literal), MO, ["AS", "KD", "TH", "5C", "9D", "2S"], [D(1, "even_money")])
