"""The books' own readings where the engine once applied another book's rule (issue 39), each through a round
file as an auditor writes it (docs/rounds.md) and settled by the engine that runs the table. The book's words are
quoted beside each case (../shared/seeds)."""

from __future__ import annotations

from typing import Any

import pytest

from controller.rules.rounds import InvalidRound, ReplayResult, replay

PTO, PT, MO = "pt-online-2015", "pt-2001", "mo-2004"


def play(
    profile: str, bets: list[tuple[int, int]], cards: list[Any], decisions: list[dict], **kw: Any
) -> ReplayResult:
    doc = {
        "profile": profile,
        "bets": [{"seat": s, "amount": a} for s, a in bets],
        "cards": cards,
        "decisions": decisions,
        **kw,
    }
    return replay(doc)


def D(seat: int, action: str, **kw: Any) -> dict:
    return {"seat": seat, "action": action, **kw}


# ------------------------------------------------------------------ PT-ONLINE-2015 r.15: insurance, not on a blackjack


def test_pt_online_r15_a_blackjack_is_not_insured() -> None:
    """r.15 "os jogadores que não façam a combinação de blackjack, podem ... f) Fazer seguro": seat 1's A+K
    against the dealer's ace may not insure (r.20b offers even money instead)."""
    with pytest.raises(InvalidRound) as err:
        play(PTO, [(1, 1000)], ["AS", "AH", "KD", "9C"], [D(1, "insurance", amount=500)])
    assert err.value.rule == "PT-ONLINE-2015 r.15" and "blackjack" in err.value.message


def test_pt_online_r20b_a_blackjack_takes_even_money_and_others_insure() -> None:
    """r.20b even money for the blackjack; r.15f a player without blackjack insures up to half the bet."""
    cards = ["AS", "TC", "AH", "KD", "9D", "KC"]  # seat 1: A+K, seat 2: T+9, dealer A + K (blackjack)
    res = play(PTO, [(1, 1000), (2, 1000)], cards, [D(1, "even_money"), D(2, "insurance", amount=500)])
    nets = res.settlement.to_json()["seat_nets"]
    assert nets == {"1": 1000, "2": 0}  # even money 1:1; insurance 500 x 2 pays the lost 1000


def test_pt2001_r33_a_blackjack_may_still_insure() -> None:
    """PT-2001 r.33 "os jogadores poderão ... fazer o «seguro»": every player, a blackjack too (the setting's
    other value, shipped for PT-2001)."""
    res = play(PT, [(1, 1000)], ["AS", "AH", "KD", "9C"], [D(1, "insurance", amount=500)])
    assert res.settlement.to_json()["seat_nets"] == {"1": 1000}  # 3:2 = 1500, insurance lost 500


# ------------------------------------------------------------------ PT-ONLINE-2015 r.15e: the surrender's moment


SURRENDER_LATE = ["TS", "9S", "5H", "6H", "7C", "4D", "3C"]  # seat 1: T+5, seat 2: 9+6; dealer 7, hole 4


def test_pt_online_r15e_surrender_at_own_turn_after_another_seat_drew() -> None:
    """r.15e "Desistir da jogada, se a carta virada da banca não for um ás" is one of the decisions taken at the
    player's turn; the book has no moment like PT-2001 r.36: seat 1 draws 3C, then seat 2 surrenders."""
    res = play(
        PTO, [(1, 1000), (2, 1000)], [*SURRENDER_LATE, "9H"], [D(1, "hit"), D(1, "stand"), D(2, "surrender")]
    )
    hands = {h.seat: h for h in res.settlement.hands}
    assert hands[2].outcome == "surrender" and hands[2].net == -500
    assert not res.engine.dealer_errors


def test_pt_online_r15e_surrender_out_of_turn_after_a_draw_is_refused() -> None:
    """Seat 2 may not decide while seat 1 still plays, once a card has been drawn."""
    with pytest.raises(InvalidRound) as err:
        play(PTO, [(1, 1000), (2, 1000)], SURRENDER_LATE, [D(1, "hit"), D(2, "surrender"), D(1, "stand")])
    assert err.value.rule == "PT-ONLINE-2015 r.15"


def test_pt2001_r36_surrender_after_another_seat_drew_is_refused() -> None:
    """PT-2001 r.36 as clarified: "a desistência só é permitida antes de o pagador de banca distribuir qualquer
    carta adicional"."""
    with pytest.raises(InvalidRound) as err:
        play(PT, [(1, 1000), (2, 1000)], SURRENDER_LATE, [D(1, "hit"), D(1, "stand"), D(2, "surrender")])
    assert err.value.rule == "PT-2001 r.36" and "additional card" in err.value.message


# ------------------------------------------------------------------ MO-2004 art.6.1: the bank draws on 16 or less


ALL_BUST = ["TH", "9S", "6D", "8C"]  # seat 1: T+6, dealer 9 up (no hole card); seat 1 hits 8C: 24, bust


def test_mo2004_art6_1_dealer_draws_on_16_or_less_with_nobody_in_play_is_no_error() -> None:
    """art.6.1 "A banca é obrigada a tomar cartas quando o total dos seus pontos for 16 ou inferior"; MO-2004 has
    no PT-2001 r.22: the bank's second card (9+2 = 11) and its draw on 11 are not dealer errors."""
    # 3S burnt before the second card (art.4.2)
    cards = [*ALL_BUST, "3S", "2D", {"card": "5C", "to": "dealer"}]
    res = play(MO, [(1, 10000)], cards, [D(1, "hit")])
    assert res.settlement.dealer_cards == ["9S", "2D", "5C"]
    assert not res.engine.dealer_errors and res.settlement.total_net == -10000


def test_mo2004_art6_1_a_dealer_draw_on_17_is_still_an_error() -> None:
    """art.6.1 "... mas não pode tomar mais cartas quando tiver 17 ou mais pontos": 9+8 = 17, a further card
    does not count."""
    cards = [*ALL_BUST, "3S", "8D", {"card": "5C", "to": "dealer"}]
    res = play(MO, [(1, 10000)], cards, [D(1, "hit")])
    assert res.settlement.dealer_cards == ["9S", "8D"]
    assert [(str(e.card), e.rule) for e in res.engine.dealer_errors] == [("5C", "MO-2004 art.6.1")]


def test_pt2001_r22_the_same_draw_is_an_error() -> None:
    """PT-2001 r.22: "o pagador de banca não deve tirar cartas ... quando todos os jogadores já tenham perdido"."""
    res = play(PT, [(1, 1000)], ["TH", "9S", "6D", "2C", "8C", {"card": "5C", "to": "dealer"}], [D(1, "hit")])
    assert [e.rule for e in res.engine.dealer_errors] == ["PT-2001 r.22"]


# ------------------------------------------------------------------ burns written twice


def test_pt2001_r10_burns_written_twice_are_refused_with_the_burn_rule() -> None:
    """PT-2001 r.10 burns one card: `burn_before_deal: 1` and two leading cards marked as burnt say two."""
    burns = [{"card": "2C", "to": "burn"}, {"card": "3C", "to": "burn"}]
    with pytest.raises(InvalidRound) as err:
        play(PT, [(1, 1000)], [*burns, "TS", "9S", "8H", "8C"], [D(1, "stand")], burn_before_deal=1)
    assert err.value.rule == "PT-2001 r.10" and "burn_before_deal says 1" in err.value.message


def test_pt2001_r10_one_burn_written_both_ways_agrees() -> None:
    res = play(
        PT,
        [(1, 1000)],
        [{"card": "2C", "to": "burn"}, "TS", "9S", "8H", "8C"],
        [D(1, "stand")],
        burn_before_deal=1,
    )
    assert res.settlement.to_json()["seat_nets"] == {"1": 1000} and not res.engine.dealer_errors


# ------------------------------------------------------------------ MO-2004: the house's maximum bet


def test_mo2004_a_bet_above_the_maximum_cites_the_house_limit_not_art3() -> None:
    """MO-2004 sets no bet limits (art.3 is about seats): the refusal names the house's limit."""
    with pytest.raises(InvalidRound) as err:
        play(MO, [(1, 2000000)], [], [])
    assert err.value.rule == "MO-2004 house limit" and "art.3" not in str(err.value)
