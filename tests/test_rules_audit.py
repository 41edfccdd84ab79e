"""Acceptance audit of the rules engine: hand-written round files (docs/rounds.md) through `tablectl replay`.

Every expected amount below was computed by hand from the rule books (../shared/seeds), not from the engine.
The CLI entry point (`controller.cli.replay.main`) runs in-process so the file stays fast.
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.cli.replay import main as replay_main
from controller.rules import Action, RoundEngine, RoundPhase, SeatBet
from controller.rules.cards import full_deck
from controller.rules.profiles import load_profile
from controller.rules.rounds import replay

ROOT = Path(__file__).resolve().parents[1]


def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict[str, Any]) -> tuple[int, dict]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    rc = replay_main(argparse.Namespace(round=str(path), json=True, pretty=False))
    return rc, json.loads(capsys.readouterr().out)


def R(profile: str, bets: list[Any], cards: list[Any], decisions: list[Any] = (), **kw: Any) -> dict:
    """A round file as a tester writes it: bets, cards as they left the shoe, decisions per seat/hand."""
    out_bets = [b if isinstance(b, dict) else {"seat": b[0], "amount": b[1]} for b in bets]
    out_dec = [d if isinstance(d, dict) else {"seat": d[0], "action": d[1]} for d in decisions]
    return {"profile": profile, "bets": out_bets, "cards": list(cards), "decisions": out_dec, **kw}


def H(seat: int, action: str, hand: int = 0, **kw: Any) -> dict:
    return {"seat": seat, "hand": hand, "action": action, **kw}


def ok(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> dict:
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0, out
    return out


def bad(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> dict:
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 1 and out["valid"] is False, out
    return out


def hands(out: dict) -> list[tuple[int, int, list[str], int, str, int]]:
    return [
        (h["seat"], h["hand"], h["cards"], h["total"], h["outcome"], h["net"])
        for h in out["settlement"]["hands"]
    ]


# ------------------------------------------------------------------------------------------- settlements

PT = "pt-2001"
# (name, round, expected total_net, expected dealer total) — all bets 1000 unless stated.
SETTLED = [
    # PT-2001 r.6: the dealer's ace counts 11 whenever that gives 17-21, so A+6 stands on soft 17.
    (
        "pt2001_r6_dealer_stands_on_soft_17",
        R(PT, [(1, 1000)], ["TS", "AH", "8D", "6C"], [(1, "stand")]),
        1000,
        17,
    ),
    # r.6/r.19: A+5 is 16, draws K (hard 16), draws 5: 21.
    (
        "pt2001_r19_dealer_soft_16_draws_ace_drops_to_1",
        R(PT, [(1, 1000)], ["TS", "AH", "9D", "5C", "KD", "5S"], [(1, "stand")]),
        -1000,
        21,
    ),
    (
        "pt2001_r23_dealer_bust_pays_1_to_1",
        R(PT, [(1, 1000)], ["TS", "TH", "7D", "6C", "8S"], [(1, "stand")]),
        1000,
        24,
    ),
    ("pt2001_r24_push", R(PT, [(1, 1000)], ["TS", "TH", "8D", "8C"], [(1, "stand")]), 0, 18),
    # r.20: blackjack beats the dealer's three-card 21 (3:2); seat 2's 19 loses.
    (
        "pt2001_r20_blackjack_beats_dealer_three_card_21",
        R(PT, [(1, 1000), (2, 1000)], ["AS", "TD", "TH", "KS", "9D", "5C", "6H"], [(2, "stand")]),
        1500 - 1000,
        21,
    ),
    # r.21 paid at once + r.22: nobody left in play, the dealer draws nothing (stays on 15).
    (
        "pt2001_r21_r22_lone_blackjack_dealer_draws_nothing",
        R(PT, [(1, 1000)], ["AS", "TH", "KS", "5C"]),
        1500,
        15,
    ),
    ("pt2001_r21_blackjack_vs_dealer_blackjack_pushes", R(PT, [(1, 1000)], ["AS", "AH", "KS", "KC"]), 0, 21),
    (
        "pt2001_r34_even_money_pays_1_to_1",
        R(PT, [(1, 1000)], ["AS", "AH", "KS", "KC"], [(1, "even_money")]),
        1000,
        21,
    ),
    # r.26 one card per split ace; r.20 A+K after a split is 21, paid 1:1 (not 3:2).
    (
        "pt2001_r20_r26_split_aces_21_is_not_blackjack",
        R(PT, [(1, 1000)], ["AS", "6H", "AD", "TC", "KH", "9S", "7D"], [(1, "split")]),
        2000,
        23,
    ),
    (
        "pt2001_r20_split_ace_21_pushes_dealer_21",
        R(PT, [(1, 1000)], ["AS", "6H", "AD", "TC", "KH", "8S", "5D"], [(1, "split")]),
        -1000,
        21,
    ),
    # r.27 resplit: 8,8 -> 8,8 again: three hands (18, 17, 13) vs dealer 17.
    (
        "pt2001_r27_resplit_three_hands",
        R(
            PT,
            [(1, 1000)],
            ["8S", "TH", "8D", "7C", "8H", "TS", "9D", "5C"],
            [(1, "split"), H(1, "split"), H(1, "stand", 0), H(1, "stand", 1), H(1, "stand", 2)],
        ),
        1000 + 0 - 1000,
        17,
    ),
    # r.31 double after split on 9: 5+4 doubled gets T (19, +2000); hand 1: 5+9 = 14 stands, loses to 17.
    (
        "pt2001_r31_double_after_split",
        R(
            PT,
            [(1, 1000)],
            ["5S", "TH", "5D", "7C", "4H", "TS", "9D"],
            [(1, "split"), H(1, "double", 0), H(1, "stand", 1)],
        ),
        2000 - 1000,
        17,
    ),
    # r.32: A+8 doubled "as 9" keeps the ace at 1: A+8+2 = 11, loses 2000 to 17.
    (
        "pt2001_r32_soft_double_fixes_ace_at_1",
        R(PT, [(1, 1000)], ["AS", "TH", "8D", "7C", "2H"], [(1, "double")]),
        -2000,
        17,
    ),
    (
        "pt2001_r36_surrender_loses_half",
        R(PT, [(1, 1000)], ["TS", "9H", "6D", "7C"], [(1, "surrender")]),
        -500,
        16,
    ),
    # r.36: seat 2 surrenders right after the deal, before seat 1's hit (listed first or not).
    (
        "pt2001_r36_surrender_before_any_additional_card",
        R(
            PT,
            [(1, 1000), (2, 1000)],
            ["TS", "5S", "9H", "2D", "6D", "7C", "5H", "9C"],
            [(2, "surrender"), (1, "hit"), (1, "stand")],
        ),
        1000 - 500,
        25,
    ),
    # r.33: insurance 500 wins 2:1 (+1000), the 19 loses 1000 to the blackjack.
    (
        "pt2001_r33_insurance_wins_against_dealer_blackjack",
        R(PT, [(1, 1000)], ["TS", "AH", "9D", "KC"], [H(1, "insurance", amount=500), (1, "stand")]),
        0,
        21,
    ),
    (
        "pt2001_r33_insurance_lost_without_dealer_blackjack",
        R(PT, [(1, 1000)], ["TS", "AH", "9D", "7C"], [H(1, "insurance", amount=500), (1, "stand")]),
        1000 - 500,
        18,
    ),
    # r.22: the only player busts: no third card for the dealer (stays on 14).
    (
        "pt2001_r22_all_bust_dealer_draws_nothing",
        R(PT, [(1, 1000)], ["TS", "5H", "6D", "9C", "8S"], [(1, "hit")]),
        -1000,
        14,
    ),
    # r.35: 6-7-8 of hearts: +1000 win and 3 x 1000 prize.
    (
        "pt2001_r35_six_seven_eight_suited",
        R(PT, [(1, 1000)], ["6H", "TS", "7H", "7C", "8H"], [(1, "hit")]),
        4000,
        17,
    ),
    # r.35: three 7s pays 3x even against a dealer ace; 21 beats 20.
    (
        "pt2001_r35_three_sevens_against_ace",
        R(PT, [(1, 1000)], ["7H", "AS", "7C", "9C", "7D"], [(1, "hit")]),
        4000,
        20,
    ),
    (
        "pt2001_r10_burn_card_counts_nowhere",
        R(PT, [(1, 1000)], ["2D", "TS", "TH", "8D", "8C"], [(1, "stand")], burn_before_deal=1),
        0,
        18,
    ),
    # ---- MO-2004 (no hole card, art.5.2; burn before the dealer's second card, art.4.2), bets 10000
    (
        "mo2004_art4_2_burn_before_dealer_second_card",
        R(
            "mo-2004",
            [(1, 10000)],
            ["2C", "TS", "9H", "8D", "3S", "7C", "5D"],
            [(1, "stand")],
            burn_before_deal=1,
        ),
        -10000,
        21,
    ),
    # art.10.7: doubled 20 against a dealer blackjack loses only the original bet.
    (
        "mo2004_art10_7_double_vs_blackjack_loses_original",
        R("mo-2004", [(1, 10000)], ["5S", "AH", "6D", "9C", "3S", "KC"], [(1, "double")]),
        -10000,
        21,
    ),
    # art.10.3: even money against a ten-value card; the dealer takes no second card.
    (
        "mo2004_art10_3_even_money_vs_ten",
        R("mo-2004", [(1, 10000)], ["AS", "KH", "QD"], [(1, "even_money")]),
        10000,
        10,
    ),
    (
        "mo2004_art11_blackjack_vs_ten_dealer_blackjack_push",
        R("mo-2004", [(1, 10000)], ["AS", "KH", "QD", "3S", "AC"]),
        0,
        21,
    ),
    (
        "mo2004_art19_five_cards_paid_half",
        R(
            "mo-2004",
            [(1, 10000)],
            ["2H", "TS", "3D", "2C", "3C", "4C"],
            [(1, "hit"), (1, "hit"), (1, "hit"), (1, "five_card")],
        ),
        5000,
        10,
    ),
    (
        "mo2004_art12_full_insurance",
        R(
            "mo-2004",
            [(1, 10000)],
            ["TH", "AS", "8D", "3S", "KD"],
            [H(1, "insurance", amount=10000), (1, "stand")],
        ),
        10000,
        21,
    ),
    # ---- IT: deals from the right (seat 2 first), no hole card, 6x/11x/31x perfect pairs stake included
    (
        "it_deals_from_the_right",
        R(
            "it-online",
            [(1, 1000), (2, 1000)],
            ["TS", "9H", "6D", "8S", "9C", "TC", "5D"],
            [(2, "stand"), (1, "stand")],
        ),
        -2000,
        21,
    ),
    (
        "it_double_then_dealer_blackjack_loses_all",
        R("it-online", [(1, 1000)], ["5S", "AH", "6D", "9C", "KC"], [(1, "double")]),
        -2000,
        21,
    ),
    (
        "it_insurance_exactly_half",
        R("it-online", [(1, 1000)], ["TS", "AH", "9D", "KC"], [H(1, "insurance"), (1, "stand")]),
        0,
        21,
    ),
    # ---- RO: the dealer peeks; a blackjack ends the round before the players act
    ("ro_peek_ten_up_dealer_blackjack", R("ro-online", [(1, 1000)], ["TS", "KH", "9D", "AC"]), -1000, 21),
    (
        "ro_insurance_lost_play_continues",
        R("ro-online", [(1, 1000)], ["TS", "AH", "9D", "7C"], [H(1, "insurance"), (1, "stand")]),
        500,
        18,
    ),
    # ---- PT-ONLINE-2015: any amount within the limits (r.9); 3:2 on 333 rounds down to 499
    (
        "ptonline_r25a_blackjack_odd_bet_rounds_down",
        R("pt-online-2015", [(1, 333)], ["AS", "9H", "KD", "7C"]),
        499,
        16,
    ),
]


@pytest.mark.parametrize(("doc", "total", "dealer"), [s[1:] for s in SETTLED], ids=[s[0] for s in SETTLED])
def test_hand_written_round_settles_as_the_book_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict, total: int, dealer: int
) -> None:
    out = ok(tmp_path, capsys, doc)
    s = out["settlement"]
    assert (s["total_net"], s["dealer_total"]) == (total, dealer), hands(out)
    assert s["total_net"] == sum(s["seat_nets"].values())


def test_pt2001_r35_prize_is_reported_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = ok(tmp_path, capsys, R(PT, [(1, 1000)], ["6H", "TS", "7H", "7C", "8H"], [(1, "hit")]))
    assert out["settlement"]["prizes"] == [
        {"seat": 1, "hand": 0, "name": "six_seven_eight_suited", "net": 3000}
    ]
    assert hands(out) == [(1, 0, ["6H", "7H", "8H"], 21, "win", 1000)]


# ------------------------------------------------------------------------------------------- side bets

MO_SIDE = [
    # MO-2004 art.13.1 / 14.1: any pair 11 to 1 (same rank; J and Q are not a pair).
    ("any_pair", ["8H", "TS", "8D", "3S", "9C"], [], "pair", 11000),
    ("any_pair", ["JH", "TS", "QD", "3S", "9C"], [], None, -1000),
    # art.13.2 / 14.2: sevens, highest combination only.
    ("sevens", ["7H", "TS", "7D", "3S", "9C"], [], "two", 50000),
    ("sevens", ["7H", "TS", "7H", "3S", "9C"], [], "two_suited", 150000),
    (
        "sevens",
        ["7H", "TS", "7D", "7C", "TD", "TH", "3S", "9C"],
        ["split", H(1, "hit"), H(1, "stand", 1)],
        "three",
        500000,
    ),
    (
        "sevens",
        ["7H", "TS", "7H", "7H", "TD", "3S", "9C"],
        ["split", H(1, "stand"), H(1, "stand", 1)],
        "three_suited",
        5000000,
    ),
    # art.13.3: over / under 13 on the first two cards, ace = 1; exactly 13 loses both.
    ("over_13", ["TH", "TS", "4D", "3S", "9C"], [], "win", 1000),
    ("under_13", ["AH", "TS", "9D", "3S", "9C"], [], "win", 1000),
    ("over_13", ["6H", "TS", "7D", "3S", "9C"], [], None, -1000),
    ("under_13", ["6H", "TS", "7D", "3S", "9C"], [], None, -1000),
]


@pytest.mark.parametrize(("name", "cards", "decisions", "result", "net"), MO_SIDE)
def test_mo2004_art13_14_side_bet_pay_table(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    cards: list,
    decisions: list,
    result,
    net: int,
) -> None:
    decisions = [H(1, d) if isinstance(d, str) else d for d in decisions] or [H(1, "stand")]
    bet = {"seat": 1, "amount": 10000, "side_bets": {name: 1000}}
    out = ok(tmp_path, capsys, R("mo-2004", [bet], cards, decisions))
    [sb] = out["settlement"]["side_bets"]
    assert (sb["name"], sb["result"], sb["net"]) == (name, result, net)


@pytest.mark.parametrize(
    ("second", "result", "net"),
    [
        ("9H", "same_suit", 15000),
        ("9D", "same_colour", 5000),
        ("9C", "mixed_colour", 2500),
        ("8H", None, -500),
    ],
)
def test_it_perfect_pairs_6_11_31_stake_included(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second: str, result, net: int
) -> None:
    """IT: 6x / 11x / 31x the stake *stake included*: net 5x / 10x / 30x the 500 stake."""
    bet = {"seat": 1, "amount": 1000, "side_bets": {"perfect_pairs": 500}}
    out = ok(tmp_path, capsys, R("it-online", [bet], ["9H", "TS", second, "8C"], [(1, "stand")]))
    [sb] = out["settlement"]["side_bets"]
    assert (sb["result"], sb["net"]) == (result, net)


# ------------------------------------------------------------------------------------------- dealer errors


@pytest.mark.parametrize(
    ("doc", "rule", "total"),
    [
        # PT-2001 r.19: a card drawn on 17 does not count.
        (
            R(PT, [(1, 1000)], ["TS", "TH", "9D", "7C", {"card": "4C", "to": "dealer"}], [(1, "stand")]),
            "PT-2001 r.19",
            1000,
        ),
        # PT-2001 r.22: nobody left in play, a dealer card does not count.
        (
            R(PT, [(1, 1000)], ["TS", "5H", "6D", "9C", "8S", {"card": "2C", "to": "dealer"}], [(1, "hit")]),
            "PT-2001 r.22",
            -1000,
        ),
        # PT-2001 r.18: a card pushed onto a 21, unseen, goes to the dealer who needs one (15 + 9 = bust).
        (
            R(
                PT,
                [(1, 1000)],
                ["5S", "TH", "6D", "5C", "TD", {"card": "9C", "to": {"seat": 1}}],
                [(1, "hit")],
            ),
            "PT-2001 r.18",
            1000,
        ),
        # PT-2001 r.18: the same card already seen is void; the dealer's next card 2C makes 17.
        (
            R(
                PT,
                [(1, 1000)],
                ["5S", "TH", "6D", "5C", "TD", {"card": "9C", "to": {"seat": 1}, "face_up": True}, "2C"],
                [(1, "hit")],
            ),
            "PT-2001 r.18",
            1000,
        ),
        # MO-2004 art.5.1.1: a card out of the shoe face up is invalid; the dealer gets the next one.
        (
            R(
                "mo-2004",
                [(1, 10000)],
                ["TH", {"card": "9S", "face_up": True}, "8S", "7D", "3S", "9C"],
                [(1, "stand")],
            ),
            "MO-2004 art.5.1.1",
            0,
        ),
    ],
)
def test_dealer_errors_cite_the_rule_and_the_card_does_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict, rule: str, total: int
) -> None:
    out = ok(tmp_path, capsys, doc)
    assert [e["rule"] for e in out["dealer_errors"]] == [rule]
    assert out["settlement"]["total_net"] == total


# ------------------------------------------------------------------------------------------- invalid rounds

INVALID = [
    (
        "more_than_the_decks_hold_pt2001_r3",
        R(PT, [(1, 1000), (2, 1000)], ["AS"] * 7),
        "card #7 (AS)",
        "PT-2001 r.3",
    ),
    ("unknown_seat", R("ro-online", [(4, 1000)], []), "unknown seat 4", "RO"),
    ("bet_above_max_pt2001_r37", R(PT, [(1, 15500)], []), "15500", "PT-2001 r.37"),
    ("bet_below_min_pt2001_r14", R(PT, [(1, 400)], []), "400", "PT-2001 r.14"),
    ("bet_not_multiple_pt2001_r14", R(PT, [(1, 750)], []), "750", "PT-2001 r.14"),
    ("bet_below_min_ptonline_r9", R("pt-online-2015", [(1, 99)], []), "99", "PT-ONLINE-2015 r.9"),
    # PT-ONLINE-2015 r.9 "nem superior ao valor máximo" is the rule a bet above the maximum breaks (r.11 bounds the
    # maximum itself: issue 28)
    ("bet_above_max_ptonline_r9", R("pt-online-2015", [(1, 10001)], []), "10001", "PT-ONLINE-2015 r.9"),
    (
        "double_on_12_pt2001_r29",
        R(PT, [(1, 1000)], ["5S", "TH", "7D", "7C"], [(1, "double")]),
        "decision #1",
        "PT-2001 r.29",
    ),
    (
        "stand_on_11_pt2001_r18",
        R(PT, [(1, 1000)], ["5S", "TH", "6D", "7C"], [(1, "stand")]),
        "stand",
        "PT-2001 r.18",
    ),
    (
        "surrender_vs_ace_pt2001_r36",
        R(PT, [(1, 1000)], ["TS", "AH", "6D", "7C"], [(1, "surrender")]),
        "ace",
        "PT-2001 r.36",
    ),
    (
        "surrender_after_additional_card_pt2001_r36",
        R(
            PT,
            [(1, 1000), (2, 1000)],
            ["TS", "5S", "9H", "2D", "6D", "7C", "5H"],
            [(1, "hit"), (1, "stand"), (2, "surrender")],
        ),
        "additional card",
        "PT-2001 r.36",
    ),
    (
        "insurance_above_half_pt2001_r33",
        R(PT, [(1, 1000)], ["TS", "AH", "9D", "7C"], [H(1, "insurance", amount=600)]),
        "600",
        "PT-2001 r.33",
    ),
    (
        "it_no_resplit",
        R("it-online", [(1, 1000)], ["8S", "9H", "8D", "8C"], [(1, "split"), H(1, "split")]),
        "at most 2 hands",
        "IT",
    ),
    (
        "mo_five_splits_over_art16",
        R(
            "mo-2004",
            [(1, 10000)],
            ["8H", "9S", "8D", "8C", "8S", "8H"],
            [(1, "split")] + [H(1, "split")] * 3,
        ),
        "at most 4 hands",
        "MO-2004 art.16.1",  # "até quatro ou mais apostas distintas": the limit's own rule (issue 28)
    ),
    (
        "it_even_money_not_offered",
        R("it-online", [(1, 1000)], ["AS", "AH", "KD"], [(1, "even_money")]),
        "not offered",
        "IT",
    ),
    (
        "ro_split_aces_no_double",
        R("ro-online", [(1, 1000)], ["AS", "9H", "AD", "8C", "2C"], [(1, "split"), H(1, "double")]),
        "split aces",
        "RO",
    ),
    (
        "mo_five_card_vs_ace_art19",
        R(
            "mo-2004",
            [(1, 10000)],
            ["2H", "AS", "3D", "2C", "3C", "4C"],
            [(1, "hit")] * 3 + [(1, "five_card")],
        ),
        "ace",
        "MO-2004 art.19",
    ),
    (
        "card_after_end_pt2001_r19",
        R(PT, [(1, 1000)], ["TS", "7D", "9H", "KC", "5H"], [(1, "stand")]),
        "card #5 (5H)",
        "PT-2001 r.19",
    ),
    (
        "card_after_all_bust_pt2001_r22",
        R(PT, [(1, 1000)], ["TS", "5H", "6D", "9C", "8S", "2C"], [(1, "hit")]),
        "card #6 (2C)",
        "PT-2001 r.22",
    ),
    (
        "decision_after_end",
        R(PT, [(1, 1000)], ["TS", "7D", "9H", "KC"], [(1, "stand"), (1, "hit")]),
        "decision #2",
        "PT-2001 r.17",
    ),
    (
        "card_to_split_ace_without_asking_it",
        R("it-online", [(1, 1000)], ["AS", "9H", "AD", "KC", "5C"], [(1, "split"), H(1, "hit")]),
        "decision #2",
        "IT",
    ),
]


@pytest.mark.parametrize(("doc", "needle", "rule"), [i[1:] for i in INVALID], ids=[i[0] for i in INVALID])
def test_impossible_round_names_the_culprit_and_the_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict, needle: str, rule: str
) -> None:
    out = bad(tmp_path, capsys, doc)
    assert needle in out["error"] and out["rule"] == rule, out


# ------------------------------------------------------------------------------------------- the format


def test_hand_written_file_needs_no_final_stand_before_the_dealer_draws(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """docs/rounds.md: a hand with no decision left stands; the dealer's draw is not taken as a hit (r.19)."""
    doc = R(PT, [(1, 1000)], ["TS", "TH", "6D", "5C", "3H", "9S"], [(1, "hit")])
    out = ok(tmp_path, capsys, doc)
    assert hands(out) == [(1, 0, ["TS", "6D", "3H"], 19, "win", 1000)]
    assert out["settlement"]["dealer_cards"] == ["TH", "5C", "9S"]
    assert [c["to"] for c in out["cards"]][-1] == "dealer"


def test_hand_written_insurance_round_without_stand_for_no_hole_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MO-2004 art.12: insurance, then the hand stands implicitly; burn (art.4.2) and second card follow."""
    doc = R("mo-2004", [(1, 10000)], ["TH", "AS", "9D", "3S", "KD"], [H(1, "insurance", amount=5000)])
    out = ok(tmp_path, capsys, doc)
    assert out["settlement"]["total_net"] == -10000 + 10000  # hand loses, insurance 2:1 on 5000
    assert out["cards"][3] == {"card": "3S", "to": "burn"}


def test_a_hand_on_11_takes_the_card_even_without_a_listed_hit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """PT-2001 r.18: standing is allowed only above 11, so the next card is that hand's (an implicit hit)."""
    out = ok(tmp_path, capsys, R(PT, [(1, 1000)], ["5S", "TH", "6D", "5C", "9H", "4D"]))
    assert hands(out) == [(1, 0, ["5S", "6D", "9H"], 20, "win", 1000)]
    assert out["settlement"]["dealer_cards"] == ["TH", "5C", "4D"]  # then 20 stands: 4D is the dealer's


def test_leading_cards_marked_burn_are_the_round_burns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """MO-2004 art.4.1-4.2: burns may be written in place, marked "to": "burn", without burn_before_deal."""
    cards = [{"card": "2C", "to": "burn"}, "TS", "9H", "8D", {"card": "3S", "to": "burn"}, "7C", "5D"]
    out = ok(tmp_path, capsys, R("mo-2004", [(1, 10000)], cards, [(1, "stand")]))
    assert out["dealer_errors"] == [] and out["settlement"]["dealer_cards"] == ["9H", "7C", "5D"]


def test_hands_left_at_end_of_file_stand_pt2001_r18(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No card came out for seat 1 after its 19: it stood; the dealer's 17 stands (r.19); 19 wins 1:1."""
    out = ok(tmp_path, capsys, R(PT, [(1, 1000)], ["TS", "7D", "9H", "KC"]))
    assert out["settlement"]["hands"][0]["outcome"] == "win" and out["settlement"]["total_net"] == 1000


def test_hand_that_may_not_stand_at_end_of_file_is_reported_pt2001_r18(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = bad(tmp_path, capsys, R(PT, [(1, 1000)], ["5S", "7D", "4H", "KC"]))  # 9: may not stand yet
    assert "seat 1 hand 0 must decide" in out["error"]


EXAMPLES = sorted((ROOT / "docs" / "examples" / "rounds").glob("*.json"))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.stem)
def test_examples_replay_to_their_expect_block(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = json.loads(path.read_text())
    rc = replay_main(argparse.Namespace(round=str(path), json=True, pretty=False))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["settlement"]["total_net"] == doc["expect"]["total_net"]


# ------------------------------------------------------------------------------------------- property


def _live_round(rng: random.Random, name: str) -> RoundEngine:
    """Drive the engine like the live table, every decision explicit (no implicit hit)."""
    p = load_profile(name)
    seats = rng.sample(range(1, p.seats + 1), rng.randint(1, min(3, p.seats)))
    eng = RoundEngine(p, [SeatBet(s, p.min_bet * 2) for s in seats])
    shoe = full_deck() * p.decks
    rng.shuffle(shoe)
    for _ in range(200):
        if eng.is_complete():
            return eng
        if eng.phase is RoundPhase.INSURANCE:
            eng.act(Action.NO_INSURANCE)
            continue
        t = eng.turn()
        if t is not None and t.kind == "player":
            allowed = eng.allowed_actions()
            h = eng.seats[t.seat].hands[t.hand]
            if Action.SPLIT in allowed and rng.random() < 0.5:
                eng.act(Action.SPLIT)
            elif Action.HIT in allowed and (h.value.total < 17 or Action.STAND not in allowed):
                eng.act(Action.HIT)
            else:
                eng.act(Action.STAND if Action.STAND in allowed else sorted(allowed)[0])
            continue
        eng.on_card(shoe.pop())
    raise AssertionError("round did not finish")


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False), st.sampled_from(["pt-2001", "mo-2004", "it-online", "ro-online"]))
def test_hand_written_form_of_a_live_round_settles_the_same(rng: random.Random, name: str) -> None:
    """Strip after_cards / implicit / recipients: plain cards and listed decisions give the same money."""
    eng = _live_round(rng, name)
    desc = eng.description()
    plain = {
        "profile": desc["profile"],
        "bets": desc["bets"],
        "cards": [c["card"] for c in desc["cards"]],
        "decisions": [
            {k: v for k, v in d.items() if k not in ("after_cards", "implicit")}
            for d in desc["decisions"]
            if d["action"] != "no_insurance"
        ],
    }
    assert replay(plain).settlement == eng.settle()
