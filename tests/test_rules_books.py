"""Issue 15: the rounds where the engine disagreed with the books, settled through `tablectl replay` round files
(docs/rounds.md) as an outside auditor writes them. Every amount is worked out by hand from the book's words
(../shared/seeds); the book is quoted beside each case."""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
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

MO, PT, IT = "mo-2004", "pt-2001", "it-online"


def R(profile: str, bets: list[Any], cards: list[Any], decisions: list[Any] = (), **kw: Any) -> dict:
    out_bets = [b if isinstance(b, dict) else {"seat": b[0], "amount": b[1]} for b in bets]
    out_dec = [d if isinstance(d, dict) else {"seat": d[0], "action": d[1]} for d in decisions]
    return {"profile": profile, "bets": out_bets, "cards": list(cards), "decisions": out_dec, **kw}


def H(seat: int, action: str, hand: int = 0, **kw: Any) -> dict:
    return {"seat": seat, "hand": hand, "action": action, **kw}


def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> tuple[int, dict]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    rc = replay_main(argparse.Namespace(round=str(path), json=True, pretty=False, report=False, html=None))
    return rc, json.loads(capsys.readouterr().out)


def ok(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> dict:
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0, out
    return out


def refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> dict:
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 1 and out["valid"] is False, out
    return out


def hands(out: dict) -> list[tuple[list[str], str, int]]:
    return [(h["cards"], h["outcome"], h["net"]) for h in out["settlement"]["hands"]]


BURNS6 = [{"card": c, "to": "burn"} for c in ("2C", "3C", "4C", "5C", "6C", "7C")]

# ------------------------------------------------------------------ MO-2004 art.19: five cards "sem exceder 21"


def test_mo2004_art19_five_card_21_may_ask_for_half(tmp_path, capsys) -> None:
    """art.19.1 "O jogador que tenha cinco cartas sem exceder 21 pontos pode pedir o pagamento de metade":
    2+3+2+4+10 = 21 on five cards, dealer ten up: paid half of 10000."""
    doc = R(MO, [(1, 10000)], ["2H", "TS", "3D", "2C", "4S", "TC"], [(1, "hit")] * 3 + [(1, "five_card")])
    out = ok(tmp_path, capsys, doc)
    assert hands(out) == [(["2H", "3D", "2C", "4S", "TC"], "five_card", 5000)]
    assert out["settlement"]["total_net"] == 5000


def test_mo2004_art19_2_five_card_21_not_taken_plays_on(tmp_path, capsys) -> None:
    """art.19.2 "Quando o jogador não opta por esta alternativa ... a jogada segue o seu curso normal": the 21
    stands (art.6.4, no more cards), burn (art.4.2), dealer T+7 = 17: the 21 wins 1:1."""
    cards = ["2H", "TS", "3D", "2C", "4S", "TC", "9D", "7S"]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "hit")] * 3))
    assert hands(out) == [(["2H", "3D", "2C", "4S", "TC"], "win", 10000)]
    assert out["cards"][6] == {"card": "9D", "to": "burn"}


def test_mo2004_art19_five_card_21_against_an_ace_is_refused_citing_art19(tmp_path, capsys) -> None:
    """art.19.1 "quando a primeira carta aberta da banca não seja um ás"."""
    doc = R(MO, [(1, 10000)], ["2H", "AS", "3D", "2C", "4S", "TC"], [(1, "hit")] * 3 + [(1, "five_card")])
    out = refused(tmp_path, capsys, doc)
    assert out["rule"] == "MO-2004 art.19" and "ace" in out["error"]


def test_mo2004_art6_4_no_card_on_a_five_card_21(tmp_path, capsys) -> None:
    """art.6.4(1): no additional card on 21, even while the five-card option is open."""
    doc = R(MO, [(1, 10000)], ["2H", "TS", "3D", "2C", "4S", "TC", "5D"], [(1, "hit")] * 4)
    out = refused(tmp_path, capsys, doc)
    assert out["rule"] == "MO-2004 art.6.4" and "decision #4" in out["error"]


# ------------------------------------------------------------------ MO-2004 art.16.5: no split once declined


def test_mo2004_art16_5_no_further_split_after_declining_that_pair(tmp_path, capsys) -> None:
    """art.16.5 "pode ser permitido separar mais uma vez, a não ser que, anteriormente, tenha já decidido não
    separar": 8-8 split; the first hand draws 8 again (8-8) and stands; the second hand's 8-8 may not split."""
    cards = ["8H", "TS", "8D", "8C", "8S", "2D", "9C", "7C"]
    doc = R(MO, [(1, 10000)], cards, [(1, "split"), H(1, "stand", 0), H(1, "split", 1)])
    out = refused(tmp_path, capsys, doc)
    assert out["rule"] == "MO-2004 art.16.5" and "decision #3" in out["error"]


def test_mo2004_art16_5_declining_by_drawing_counts_too(tmp_path, capsys) -> None:
    """A hand-written file with a hit instead of a split on the 8-8 declines the split just the same."""
    cards = ["8H", "TS", "8D", "8C", "2H", "8S", "9C", "7C"]
    doc = R(MO, [(1, 10000)], cards, [(1, "split"), H(1, "hit", 0), H(1, "stand", 0), H(1, "split", 1)])
    assert refused(tmp_path, capsys, doc)["rule"] == "MO-2004 art.16.5"


def test_mo2004_art16_5_split_again_when_never_declined(tmp_path, capsys) -> None:
    """Control: resplitting the 8-8 on the first hand (art.16.5 first clause) and then on another hand is fine.
    8-8 -> [8,8][8] -> [8][8][8]: three hands of 18, 15, 17 against burn + dealer T+7 = 17."""
    cards = ["8H", "TS", "8D", "8C", "TH", "7D", "9S", "4D", "7S"]
    decisions = [(1, "split"), H(1, "split", 0), H(1, "stand", 0), H(1, "stand", 1), H(1, "stand", 2)]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, decisions))
    assert [h["total"] for h in out["settlement"]["hands"]] == [18, 15, 17]
    assert [h[1:] for h in hands(out)] == [("win", 10000), ("lose", -10000), ("push", 0)]


def test_pt2001_r27_resplit_is_not_limited_by_an_earlier_decline(tmp_path, capsys) -> None:
    """PT-2001 r.27 has no such clause: "poderá voltar a fazê-lo, se vier a obter ... cartas do mesmo valor"."""
    cards = ["8H", "TS", "8D", "7C", "8C", "8S", "TD", "9D"]
    decisions = [(1, "split"), H(1, "stand", 0), H(1, "split", 1), H(1, "stand", 1), H(1, "stand", 2)]
    out = ok(tmp_path, capsys, R(PT, [(1, 1000)], cards, decisions))
    assert len(out["settlement"]["hands"]) == 3


# ------------------------------------------------------------------ MO-2004 art.5.1.1 with art.4.1


def test_mo2004_art5_1_1_first_card_is_the_first_dealt_after_the_shoe_start_burns(tmp_path, capsys) -> None:
    """art.5.1.1 "considerar válida a carta, de face para cima, quando seja a primeira do início do jogo";
    art.4.1.1 burns as many cards as decks before it. The T that comes out face up after the six burns is the
    game's first card: valid, seat 1's. T+8 = 18 beats 9+8 = 17."""
    cards = [*BURNS6, {"card": "TH", "face_up": True}, "9S", "8D", "3S", "8H"]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "stand")], first_of_game=True))
    assert out["dealer_errors"] == []
    assert hands(out) == [(["TH", "8D"], "win", 10000)]


def test_mo2004_art4_1_shoe_start_burns_mark_the_first_round_of_the_game(tmp_path, capsys) -> None:
    """Without `first_of_game`, six burns (as many as decks, art.4.1.1) are the shoe's start: same result."""
    cards = [*BURNS6, {"card": "TH", "face_up": True}, "9S", "8D", "3S", "8H"]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "stand")]))
    assert out["dealer_errors"] == [] and out["settlement"]["total_net"] == 10000


def test_mo2004_art5_1_1_face_up_card_after_the_round_burn_is_invalid(tmp_path, capsys) -> None:
    """A later round (one burn, art.4.2): a face-up card is invalid and the seat gets the next one."""
    cards = [{"card": "2C", "to": "burn"}, {"card": "TH", "face_up": True}, "9D", "9S", "8D", "3S", "8H"]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "stand")]))
    assert [e["rule"] for e in out["dealer_errors"]] == ["MO-2004 art.5.1.1"]
    assert hands(out) == [(["9D", "8D"], "push", 0)]


# ------------------------------------------------------------------ MO-2004 art.7.1 / art.4.2: all bust


def test_mo2004_art7_1_all_bust_dealer_still_burns_and_takes_his_second_card(tmp_path, capsys) -> None:
    """art.7.1 "distribui uma segunda carta para si própria"; art.4.2 one burn "antes de a banca receber a sua
    segunda carta". The only hand is bust (T+6+8): the round is valid, the hand loses (art.7.2)."""
    cards = ["TH", "9S", "6D", "8C", "3S", "7D"]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "hit")]))
    assert hands(out) == [(["TH", "6D", "8C"], "bust", -10000)]
    assert out["settlement"]["dealer_cards"] == ["9S", "7D"]
    assert out["cards"][4] == {"card": "3S", "to": "burn"} and len(out["dealer_errors"]) <= 1


def test_mo2004_art7_1_all_bust_round_also_valid_without_the_second_card(tmp_path, capsys) -> None:
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], ["TH", "9S", "6D", "8C"], [(1, "hit")]))
    assert out["settlement"]["total_net"] == -10000


def test_mo2004_art6_1_a_dealer_card_on_17_with_nobody_in_play_does_not_count(tmp_path, capsys) -> None:
    """art.6.1 "não pode tomar mais cartas quando tiver 17 ou mais pontos" (his draws on 16 or less are no error
    here: tests/test_rules_book_readings.py)."""
    cards = ["TH", "9S", "6D", "8C", "3S", "8D", {"card": "5C", "to": "dealer"}]
    out = ok(tmp_path, capsys, R(MO, [(1, 10000)], cards, [(1, "hit")]))
    assert out["settlement"]["dealer_cards"] == ["9S", "8D"]
    assert [e["card"] for e in out["dealer_errors"]] == ["5C"] and out["settlement"]["total_net"] == -10000


# ------------------------------------------------------------------ IT: the legal limit per round


def test_it_sum_of_a_players_bets_across_positions_and_side_bets_is_limited(tmp_path, capsys) -> None:
    """IT: "La somma delle puntate nel corso di una singola mano non potrà in ogni caso superare il limite
    stabilito dalla normativa in vigore (attualmente € 1.000,00)": 600 + 400 + 200 perfect pairs = 1,200."""
    bets = [{"seat": 1, "amount": 60000}, {"seat": 2, "amount": 40000, "side_bets": {"perfect_pairs": 20000}}]
    out = refused(tmp_path, capsys, R(IT, bets, []))
    assert out["rule"] == "IT" and "120000" in out["error"] and "100000" in out["error"]


def test_it_exactly_the_limit_is_accepted(tmp_path, capsys) -> None:
    """IT deals from the right: seat 2 T+8 = 18 wins 400, seat 1 9+7 = 16 loses 600 against 9+8."""
    bets = [{"seat": 1, "amount": 60000}, {"seat": 2, "amount": 40000}]
    cards = ["TH", "9S", "9D", "8C", "7D", "8S"]
    out = ok(tmp_path, capsys, R(IT, bets, cards, [(2, "stand"), (1, "stand")]))
    assert out["settlement"]["seat_nets"] == {"1": -60000, "2": 40000}


def test_it_a_double_that_passes_the_limit_is_refused(tmp_path, capsys) -> None:
    """The limit holds "nel corso di una singola mano": a double adds its stake to the round's sum."""
    bets = [{"seat": 1, "amount": 50000}, {"seat": 2, "amount": 50000}]
    doc = R(IT, bets, ["5H", "6S", "9S", "6D", "3S", "7D", "KD"], [(2, "double")])
    out = refused(tmp_path, capsys, doc)
    assert out["rule"] == "IT" and "decision #1" in out["error"]


def test_it_the_limit_is_per_player(tmp_path, capsys) -> None:
    """Bets marked with different players are summed apart (each under the limit)."""
    bets = [
        {"seat": 1, "amount": 60000, "player": "anna"},
        {"seat": 2, "amount": 60000, "player": "bruno"},
    ]
    cards = ["TH", "9S", "9D", "8C", "7D", "8S"]
    out = ok(tmp_path, capsys, R(IT, bets, cards, [(2, "stand"), (1, "stand")]))
    assert out["settlement"]["seat_nets"] == {"1": -60000, "2": 60000}


# ------------------------------------------------------------------ MO-2004 art.13: one side bet


def test_mo2004_art13_only_one_side_bet_besides_main_bet_and_insurance(tmp_path, capsys) -> None:
    """art.13 "Para além da aposta inicial e aposta de seguro, o jogador pode ainda fazer uma das seguintes"."""
    bet = {"seat": 1, "amount": 10000, "side_bets": {"any_pair": 1000, "over_13": 1000}}
    out = refused(tmp_path, capsys, R(MO, [bet], []))
    assert out["rule"] == "MO-2004 art.13" and "2 side bets" in out["error"]


def test_mo2004_art13_one_side_bet_and_insurance_settle(tmp_path, capsys) -> None:
    """One side bet (any pair 11:1) plus insurance (art.12, wins 2:1 against the dealer's blackjack)."""
    bet = {"seat": 1, "amount": 10000, "side_bets": {"any_pair": 1000}}
    cards = ["8H", "AS", "8D", "3S", "KD"]
    out = ok(tmp_path, capsys, R(MO, [bet], cards, [H(1, "insurance", amount=5000), (1, "stand")]))
    assert out["settlement"]["total_net"] == 11000 + 10000 - 10000


# ------------------------------------------------------------------ order of refusal, card codes


@pytest.mark.parametrize(
    ("doc", "needle", "rule"),
    [
        # PT-2001 r.18: no card on 21 ("sendo-lhes vedado pedir mais cartas logo que atinjam esta"); the cards
        # after it would otherwise be blamed for breaking the dealer's rule r.19.
        (
            R(PT, [(1, 1000)], ["5S", "TH", "6D", "7C", "TD", "4H", "9C"], [(1, "hit"), (1, "hit")]),
            "decision #2",
            "PT-2001 r.18",
        ),
        # A blackjack draws nothing (r.18 "os jogadores que nelas não hajam obtido black-jack").
        (R(PT, [(1, 1000)], ["AS", "TH", "KD", "7C", "4H"], [(1, "hit")]), "decision #1", "PT-2001 r.18"),
        # MO-2004 art.18.2: surrender "antes de a banca distribuir qualquer carta adicional", listed late.
        (
            R(
                MO,
                [(1, 10000), (2, 10000)],
                ["TS", "9H", "5S", "6D", "7C", "4H", "2C", "8D", "9S"],
                [(1, "hit"), (2, "surrender")],
            ),
            "decision #2",
            "MO-2004 art.18",
        ),
    ],
)
def test_a_forbidden_decision_is_refused_with_its_rule_before_later_cards(
    tmp_path, capsys, doc: dict, needle: str, rule: str
) -> None:
    out = refused(tmp_path, capsys, doc)
    assert needle in out["error"] and out["rule"] == rule, out


@pytest.mark.parametrize(
    ("card", "needle"),
    [
        ("3X", "card #3 '3X': unknown suit X"),
        ("ZH", "card #3 'ZH': unknown rank Z"),
        ("10", "card #3 '10': no suit"),
        ("AHS", "card #3 'AHS': 'HS' after the rank"),
        ({"card": "QQ"}, "card #3 'QQ': unknown suit Q"),
        (7, "card #3 7: a card is a string"),
    ],
)
def test_a_bad_card_code_says_which_card_and_what_is_wrong(tmp_path, capsys, card, needle: str) -> None:
    out = refused(tmp_path, capsys, R(PT, [(1, 1000)], ["TS", "9H", card]))
    assert out["error"].startswith(needle), out


def test_the_real_cli_refuses_with_the_rule(tmp_path: Path) -> None:
    """The same through the installed `tablectl replay` process."""
    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(R(MO, [{"seat": 1, "amount": 10000, "side_bets": {"sevens": 1, "over_13": 1}}], []))
    )
    proc = subprocess.run(
        [sys.executable, "-m", "controller.cli", "replay", "--json", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 1 and json.loads(proc.stdout)["rule"] == "MO-2004 art.13", proc


# ------------------------------------------------------------------ properties


def _drive(rng: random.Random, eng: RoundEngine, shoe: list, check) -> RoundEngine:
    for _ in range(400):
        if eng.is_complete():
            return eng
        if eng.phase is RoundPhase.INSURANCE:
            eng.act(rng.choice(sorted(eng.allowed_actions())))
            continue
        if eng.turn() is not None and eng.turn().kind == "player":
            eng.act(rng.choice(sorted(eng.allowed_actions())))
            continue
        out = eng.on_card(shoe.pop())
        check(eng, out.recipient)
    raise AssertionError("round did not finish")


def _five_card_offered(eng: RoundEngine, to=None) -> None:
    """MO-2004 art.19: a hand that just got its fifth card without passing 21 (no ace up) may ask for half."""
    if to is None or to.kind != "seat" or eng.phase is not RoundPhase.PLAYERS:
        return
    h = eng.seats[to.seat].hands[to.hand]
    if len(h.cards) == 5 and h.value.total <= 21 and not eng.up_card.is_ace:
        assert eng.turn() is not None and (eng.turn().seat, eng.turn().hand) == (to.seat, to.hand), h.cards
        assert Action.FIVE_CARD in eng.allowed_actions(), h.cards


@settings(max_examples=150, deadline=None)
@given(st.randoms(use_true_random=False))
def test_mo2004_property_five_cards_up_to_21_always_offer_art19(rng: random.Random) -> None:
    p = load_profile(MO)
    # Small cards make five-card hands common.
    shoe = [c for c in full_deck() * p.decks if c.value <= 5 or c.rank in "TK"]
    rng.shuffle(shoe)
    eng = RoundEngine(p, [SeatBet(s, 10000) for s in rng.sample(range(1, 8), 3)])
    s = _drive(rng, eng, shoe, _five_card_offered).settle()
    assert all(h.outcome != "five_card" or (len(h.cards) == 5 and h.total <= 21) for h in s.hands)


@settings(max_examples=150, deadline=None)
@given(st.randoms(use_true_random=False))
def test_it_property_a_players_round_never_exceeds_the_legal_limit(rng: random.Random) -> None:
    """IT: whatever the player does (bets, doubles, splits, insurance, perfect pairs), one round's stakes stay
    within EUR 1,000 (bets that would pass it are refused)."""
    p = load_profile(IT)
    bets = []
    for s in rng.sample(range(1, 6), rng.randint(1, 5)):
        amount = 2 * rng.randint(p.min_bet // 2, 30000)
        bets.append(SeatBet(s, amount, {"perfect_pairs": amount // 2} if rng.random() < 0.5 else {}))
    try:
        eng = RoundEngine(p, bets)
    except Exception as exc:  # refused at the bets: over the limit
        assert sum(b.amount + sum(b.side_bets.values()) for b in bets) > p.round_limit, exc
        return
    shoe = full_deck() * p.decks
    rng.shuffle(shoe)
    s = _drive(rng, eng, shoe, lambda e, to=None: None).settle()
    staked = sum(h.stake for h in s.hands) + sum(i.amount for i in s.insurance)
    staked += sum(b.stake for b in s.side_bets)
    assert staked <= p.round_limit


@settings(max_examples=100, deadline=None)
@given(st.randoms(use_true_random=False))
def test_mo2004_property_a_late_second_card_never_changes_the_money_art7_1(rng: random.Random) -> None:
    """When nobody is left in play, the dealer's burn and second card (art.4.2, art.7.1) change no result."""
    p = load_profile(MO)
    shoe = full_deck() * p.decks
    rng.shuffle(shoe)
    eng = _drive(
        rng,
        RoundEngine(p, [SeatBet(s, 10000) for s in rng.sample(range(1, 8), 2)]),
        shoe,
        lambda e, to=None: None,
    )
    before = eng.settle()
    desc = eng.description()
    if len(eng.dealer) != 1:
        return
    desc["cards"] += [{"card": str(shoe.pop())}, {"card": str(shoe.pop())}]
    after = replay(desc).settlement
    assert len(after.dealer_cards) == 2
    assert (after.hands, after.seat_nets, after.total_net) == (
        before.hands,
        before.seat_nets,
        before.total_net,
    )


def test_a_written_stand_on_a_hand_that_stood_by_itself_is_accepted(tmp_path, capsys) -> None:
    """PT-2001 r.18: a hand on 21 stands by itself; a `stand` written for it says what happened, no refusal."""
    cards = ["5S", "9H", "TH", "6D", "8C", "7C", "TD"]
    doc = R(PT, [(1, 1000), (2, 1000)], cards, [(1, "hit"), (1, "stand"), (2, "stand")])
    assert ok(tmp_path, capsys, doc)["settlement"]["seat_nets"] == {"1": 1000, "2": 0}


@settings(max_examples=150, deadline=None)
@given(st.randoms(use_true_random=False))
def test_mo2004_property_a_declined_pair_value_is_never_split_later_art16_5(rng: random.Random) -> None:
    """Tracked apart from the engine: once a seat played a splittable non-ace pair any other way, SPLIT is
    never offered again for that value in the round (art.16.5); other values still split up to four hands."""
    p = load_profile(MO)
    shoe = [c for c in full_deck() * p.decks if c.rank in "89TK"]  # pairs everywhere
    rng.shuffle(shoe)
    eng = RoundEngine(p, [SeatBet(s, 10000) for s in rng.sample(range(1, 8), 2)])
    declined: dict[int, set[int]] = {}
    for _ in range(400):
        if eng.is_complete():
            return
        t = eng.turn()
        if t is not None and t.kind == "player":
            h = eng.seats[t.seat].hands[t.hand]
            allowed = eng.allowed_actions()
            pair = len(h.cards) == 2 and h.cards[0].value == h.cards[1].value and not h.cards[0].is_ace
            if pair and h.cards[0].value in declined.get(t.seat, set()):
                assert Action.SPLIT not in allowed, (h.cards, declined)
            elif pair and len(eng.seats[t.seat].hands) < p.play.max_hands:
                assert Action.SPLIT in allowed, h.cards
            action = rng.choice(sorted(allowed))
            if pair and action is not Action.SPLIT and Action.SPLIT in allowed:
                declined.setdefault(t.seat, set()).add(h.cards[0].value)
            eng.act(action)
            continue
        if eng.phase is RoundPhase.INSURANCE:
            eng.act(rng.choice(sorted(eng.allowed_actions())))
            continue
        eng.on_card(shoe.pop())
    raise AssertionError("round did not finish")


def test_a_decision_for_a_hand_that_never_existed_is_named(tmp_path, capsys) -> None:
    """No split, so no hand 1 (PT-2001 r.26 makes the second hand): refused before the dealer's cards."""
    doc = R(PT, [(1, 1000)], ["TS", "TH", "8D", "7C", "5C"], [H(1, "hit", 1)])
    out = refused(tmp_path, capsys, doc)
    assert "seat 1 has no hand 1" in out["error"] and out["rule"] == "PT-2001 r.26"
