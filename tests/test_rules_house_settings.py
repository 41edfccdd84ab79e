"""House choices the rule engine once applied silently, each now a profile setting (docs/profiles.md "House
choices"): every test plays one round both ways through `controller.rules.rounds.replay`, the shipped default and
the other reading (a copy of the shipped profile with the one setting changed, written to tmp_path)."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from controller.effects import Effect
from controller.jackpot.award import award, decided_cards
from controller.jackpot.config import JackpotConfig
from controller.jackpot.hits import Combination, evaluate
from controller.jackpot.math import combination_odds, enumerated_odds
from controller.jackpot.meter import MeterState
from controller.rules.cards import Card
from controller.rules.engine import RoundEngine
from controller.rules.profiles import PROFILE_DIR, load_profile
from controller.rules.rounds import InvalidRound, replay
from controller.rules.types import SeatBet
from controller.terminal import dispute_report

Bets = list[dict[str, Any]]
Decisions = list[dict[str, Any]]


def profile_with(tmp_path: Path, name: str, section: str, key: str, value: str) -> str:
    """A copy of a shipped profile with `section.key` set to the TOML `value` (the line replaced, or added)."""
    text = (PROFILE_DIR / f"{name}.toml").read_text(encoding="utf-8")
    lines = text.splitlines()
    start = next(i for i, text in enumerate(lines) if text.split("#")[0].strip() == f"[{section}]")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    line = f"{key} = {value}"
    for i in range(start + 1, end):
        if re.match(rf"{re.escape(key)}\s*=", lines[i]):
            lines[i] = line
            break
    else:
        lines.insert(start + 1, line)
    path = tmp_path / f"{name}-{key}-{len(list(tmp_path.glob('*.toml')))}.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    load_profile(str(path))  # the changed copy is a valid profile
    return str(path)


def D(action: str, hand: int = 0, seat: int = 1, **kw: Any) -> dict[str, Any]:
    return {"seat": seat, "hand": hand, "action": action, **kw}


def play(profile: str, bets: Bets, cards: list[Any], decisions: Decisions) -> dict[str, Any]:
    """One round replayed; its settlement as `tablectl replay` prints it."""
    return replay({"profile": profile, "bets": bets, "cards": cards, "decisions": decisions}).to_json()[
        "settlement"
    ]


def refused(profile: str, bets: Bets, cards: list[Any], decisions: Decisions) -> InvalidRound:
    with pytest.raises(InvalidRound) as exc:
        replay({"profile": profile, "bets": bets, "cards": cards, "decisions": decisions})
    return exc.value


def co(settlement: dict) -> list[tuple[str, int, str, int]]:
    return [(c["player"], c["hand"], c["outcome"], c["net"]) for c in settlement.get("co_bets", [])]


# ------------------------------------------------ MO-2004 art.20 with PT-2001 r.28: a co-bet and a split

MO_SHARED = [{"seat": 1, "amount": 10000}, {"seat": 1, "amount": 10000, "player": "bob"}]
# 8-8 against a 7 up: split, 8+T = 18 stands, 8+2+5 = 15 stands; the burn before the dealer's second card
# (art.4.2), then T: the dealer's 17.
MO_SPLIT = ["8S", "7C", "8D", "TD", "2C", "5C", "3H", "TH"]
MO_SPLIT_PLAY = [D("split"), D("stand", 0), D("hit", 1), D("stand", 1)]


def test_mo2004_art20_default_a_co_bettor_follows_the_split_as_pt2001_r28() -> None:
    """play.co_bet_follows_split = true (art.20 is silent; PT-2001 r.28 "aposta igual à primeira e anexá-la à
    segunda aposta do titular" borrowed): bob's equal bet on the 15 loses what his first wins."""
    s = play("mo-2004", MO_SHARED, MO_SPLIT, [D("split"), D("split", player="bob"), *MO_SPLIT_PLAY[1:]])
    assert co(s) == [("bob", 0, "win", 10000), ("bob", 1, "lose", -10000)]
    assert s["total_net"] == 0


def test_mo2004_art20_house_keeps_a_co_bet_on_the_titulars_first_hand(tmp_path: Path) -> None:
    """play.co_bet_follows_split = false: bob's split is refused (art.20); his bet is decided by the first hand
    (r.28 "decididas pelo resultado alcançado para a primeira das duas apostas do titular"), as it is by default
    when he does not follow."""
    prof = profile_with(tmp_path, "mo-2004", "play", "co_bet_follows_split", "false")
    err = refused(prof, MO_SHARED, MO_SPLIT, [D("split"), D("split", player="bob"), *MO_SPLIT_PLAY[1:]])
    assert err.rule == "MO-2004 art.20" and "does not follow a split" in err.message
    for p in (prof, "mo-2004"):
        s = play(p, MO_SHARED, MO_SPLIT, MO_SPLIT_PLAY)
        assert co(s) == [("bob", 0, "win", 10000)] and s["total_net"] == 10000


# ------------------------------------------------ MO-2004 art.20.1.2: the players on a seat, or their bets too

MO_BIG = [{"seat": 1, "amount": 600000}, {"seat": 1, "amount": 600000, "player": "bob"}]
MO_19_V_17 = ["TS", "7C", "9D", "3H", "TH"]  # 19 against 7, burn (art.4.2), T: 17


def test_mo2004_art20_default_a_seats_bets_together_stay_within_the_house_maximum() -> None:
    """bets.seat_total_within_max = true: 600000 + 600000 on one seat passes the house maximum 1000000 (PT-2001
    r.15 "o somatório ... não atinja ainda o máximo", applied to the seat as a whole)."""
    err = refused("mo-2004", MO_BIG, MO_19_V_17, [D("stand")])
    assert err.rule == "MO-2004 art.20" and "total 1200000, above the maximum 1000000" in err.message


def test_mo2004_art20_house_caps_only_the_players_and_each_bet(tmp_path: Path) -> None:
    """bets.seat_total_within_max = false: art.20.1.2 "no máximo três jogadores" caps the players only; each
    600000 is within the maximum and both win with the 19."""
    prof = profile_with(tmp_path, "mo-2004", "bets", "seat_total_within_max", "false")
    s = play(prof, MO_BIG, MO_19_V_17, [D("stand")])
    assert co(s) == [("bob", 0, "win", 600000)] and s["total_net"] == 1200000


# ------------------------------------------------ MO-2004 art.19: "cinco cartas" exactly, or at least five

SIX_CARDS = ["2S", "TC", "3D", "2H", "3C", "2D", "4S"]  # 2-3-2-3-2 then 4: six cards, 16, against a ten
SIX_CARDS_PLAY = [D("hit"), D("hit"), D("hit"), D("hit"), D("five_card")]


def test_mo2004_art19_default_the_five_card_payment_needs_exactly_five_cards() -> None:
    """play.five_card_count = "exactly": art.19.1 "O jogador que tenha cinco cartas sem exceder 21 pontos" read as
    a hand of five cards; asked on the sixth card it is refused citing art.19."""
    err = refused("mo-2004", [{"seat": 1, "amount": 10000}], SIX_CARDS, SIX_CARDS_PLAY)
    assert err.rule == "MO-2004 art.19" and "exactly five cards" in err.message


def test_mo2004_art19_house_pays_half_on_six_cards_too(tmp_path: Path) -> None:
    """play.five_card_count = "at_least": a hand of six cards not above 21 also "tenha cinco cartas": half of
    10000 is paid (art.19.1 "pagamento de metade da importância apostada")."""
    prof = profile_with(tmp_path, "mo-2004", "play", "five_card_count", '"at_least"')
    s = play(prof, [{"seat": 1, "amount": 10000}], SIX_CARDS, SIX_CARDS_PLAY)
    assert [(h["outcome"], h["net"]) for h in s["hands"]] == [("five_card", 5000)] and s["total_net"] == 5000


# ------------------------------------------------ PT-2001 r.47: one jackpot chip a player, or a seat

TWO_CHIPS = [
    {"seat": 1, "amount": 1000, "jackpot_chip": True},
    {"seat": 1, "amount": 500, "player": "p2", "jackpot_chip": True},
]
TWO_ACES = ["AS", "9D", "AS", "8C"]  # seat 1 A-A of one suit (r.43d) stands; the dealer 9 and hole 8


def test_pt2001_r47_default_one_chip_a_player_so_two_on_a_shared_seat() -> None:
    """jackpot.chips = "per_player": r.47 "uma ficha por cada jogador": the titular's and the co-bettor's chips
    are both judged on the seat's first cards (r.42, r.46)."""
    s = play("pt-2001", TWO_CHIPS, TWO_ACES, [D("stand")])
    assert [j.get("player") for j in s["jackpot"]] == [None, "p2"]


def test_pt2001_r47_house_takes_one_chip_a_seat(tmp_path: Path) -> None:
    """jackpot.chips = "per_seat" (r.39's one slot a seat): the co-bettor's second chip is refused citing r.47;
    one chip on the seat is still judged."""
    prof = profile_with(tmp_path, "pt-2001", "jackpot", "chips", '"per_seat"')
    err = refused(prof, TWO_CHIPS, TWO_ACES, [D("stand")])
    assert err.rule == "PT-2001 r.47" and "one jackpot chip a seat" in err.message
    s = play(prof, [TWO_CHIPS[0], {**TWO_CHIPS[1], "jackpot_chip": False}], TWO_ACES, [D("stand")])
    assert s["jackpot"] == [{"seat": 1, "first_cards": ["AS", "AS"]}]


# ------------------------------------------------ PT-2001 r.15-16, MO-2004 art.20.1: who decides on a shared seat

LOW_FIRST = [{"seat": 1, "amount": 500}, {"seat": 1, "amount": 1000, "player": "bob"}]
T9_V_T7 = ["TS", "TH", "9D", "7C"]  # 19 against the dealer's 17


def test_pt2001_r15_default_the_first_listed_titular_decides_whatever_the_amounts() -> None:
    """table.shared_seat_decides = "first_listed": r.15 "ficam sujeitos à decisão que for tomada pelo titular do
    lugar": the seated titular's 500 decides for bob's 1000 too; both win."""
    s = play("pt-2001", LOW_FIRST, T9_V_T7, [D("stand")])
    assert co(s) == [("bob", 0, "win", 1000)] and s["total_net"] == 1500


@pytest.mark.parametrize(("name", "rule"), [("pt-2001", "PT-2001 r.16"), ("mo-2004", "MO-2004 art.20.1")])
def test_house_lets_the_highest_bet_decide(tmp_path: Path, name: str, rule: str) -> None:
    """table.shared_seat_decides = "highest_bet": PT-2001 r.16 "cabe ao dono da de valor mais elevado" (MO-2004
    art.20.1.3 "aquele que tiver efectuado a aposta mais elevada toma todas as decisões"): a round whose decider
    bet less than another on the seat is refused; with the highest bet listed first (ties: the first) it plays."""
    prof = profile_with(tmp_path, name, "table", "shared_seat_decides", '"highest_bet"')
    scale = 20 if name == "mo-2004" else 1
    low_first = [{**b, "amount": b["amount"] * scale} for b in LOW_FIRST]
    cards = (
        T9_V_T7 if name == "pt-2001" else ["TS", "7C", "9D", "3H", "TH"]
    )  # MO: burn before the second card
    err = refused(prof, low_first, cards, [D("stand")])
    assert err.rule == rule and "the highest bet decides" in err.message
    high_first = [{"seat": 1, "amount": 1000 * scale}, {"seat": 1, "amount": 500 * scale, "player": "al"}]
    assert play(prof, high_first, cards, [D("stand")])["total_net"] == 1500 * scale


# ------------------------------------------------ MO-2004 art.13.1: a pair bet on another player's hand

ON_SEAT_1 = [
    {"seat": 1, "amount": 10000},
    {"seat": 2, "amount": 10000, "side_bets": {"any_pair": 1000}, "pair_bet_on": 1},
]
# seat 1 8-8 (a pair) stands on 16, seat 2 9-T stands on 19; the burn (art.4.2), then T: the dealer's 17
PAIR_ON_1 = ["8S", "9C", "7C", "8D", "TC", "3H", "TH"]


def test_mo2004_art13_1_shipped_a_pair_bet_on_another_players_hand() -> None:
    """side_bets.any_pair.hands = "any_player" (shipped: art.13.1 "Em «qualquer par» de uma ou mais mãos de
    qualquer jogador"): seat 2's any-pair bet on seat 1's 8-8 wins 11 to 1 (art.14.1) on seat 2's net."""
    s = play("mo-2004", ON_SEAT_1, PAIR_ON_1, [D("stand"), D("stand", seat=2)])
    assert [(b["seat"], b["result"], b["net"]) for b in s["side_bets"]] == [(2, "pair", 11000)]
    assert s["seat_nets"] == {"1": -10000, "2": 10000 + 11000}
    again = replay(replay({"profile": "mo-2004", "bets": ON_SEAT_1, "cards": PAIR_ON_1, "decisions": [
        D("stand"), D("stand", seat=2)]}).engine.description())  # fmt: skip
    assert again.to_json()["settlement"] == s  # the round file the engine writes keeps the bet's seat
    own = {**ON_SEAT_1[1], "pair_bet_on": 2}  # the same bet on its own 9-T loses
    s = play("mo-2004", [ON_SEAT_1[0], own], PAIR_ON_1, [D("stand"), D("stand", seat=2)])
    assert s["seat_nets"] == {"1": -10000, "2": 10000 - 1000}


def test_mo2004_art13_1_loader_default_the_pair_bet_on_the_bettors_own_hand(tmp_path: Path) -> None:
    """side_bets.any_pair.hands = "own" (the loader's default, and the engine's only reading before the setting):
    a pair bet on seat 1's hand is refused citing art.13; without `pair_bet_on` it is on seat 2's 9-T and loses."""
    prof = profile_with(tmp_path, "mo-2004", "side_bets.any_pair", "hands", '"own"')
    err = refused(prof, ON_SEAT_1, PAIR_ON_1, [D("stand"), D("stand", seat=2)])
    assert err.rule == "MO-2004 art.13" and "own hand" in err.message
    plain = {k: v for k, v in ON_SEAT_1[1].items() if k != "pair_bet_on"}
    s = play(prof, [ON_SEAT_1[0], plain], PAIR_ON_1, [D("stand"), D("stand", seat=2)])
    assert s["seat_nets"] == {"1": -10000, "2": 10000 - 1000}


# ------------------------------------------------ PT-2001 r.15 with r.34 and r.35: a co-bet and the titular's payouts

SHARED = [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500, "player": "bob"}]
BJ_V_ACE = ["AS", "AH", "KD", "9C"]  # seat 1 blackjack against an ace; the hole 9: no dealer blackjack


def test_pt2001_r34_default_co_bets_take_the_titulars_even_money() -> None:
    """insurance.co_bet_even_money = "follows": r.15 "ficam sujeitos à decisão que for tomada pelo titular do
    lugar": the titular takes even money (r.34) and bob's 500 is paid 1:1 with him."""
    s = play("pt-2001", SHARED, BJ_V_ACE, [D("even_money")])
    assert co(s) == [("bob", 0, "even_money", 500)] and s["total_net"] == 1000 + 500


def test_pt2001_r34_house_leaves_the_co_bet_its_blackjack(tmp_path: Path) -> None:
    """insurance.co_bet_even_money = "blackjack": r.34 "Os jogadores que tenham feito black-jack poderão ...
    optar" is the titular's own option; bob's bet stays a blackjack, paid 3:2 (r.21) once the hole card shows."""
    prof = profile_with(tmp_path, "pt-2001", "insurance", "co_bet_even_money", '"blackjack"')
    s = play(prof, SHARED, BJ_V_ACE, [D("even_money")])
    assert co(s) == [("bob", 0, "blackjack", 750)] and s["total_net"] == 1000 + 750


SUITED_678 = ["6H", "TC", "7H", "7D", "8H"]  # seat 1 6-7 hits an 8 of hearts: 21, r.35; dealer T-7


def test_pt2001_r35_default_a_co_bet_shares_the_special_prize() -> None:
    """special_prizes.co_bets = true: bob's 500 rides the titular's 6-7-8 of hearts, wins 1:1 and 3 x 500."""
    s = play("pt-2001", SHARED, SUITED_678, [D("hit")])
    prizes = [(x["player"], x["net"]) for x in s["co_side_bets"] if x["kind"] == "prize"]
    assert prizes == [("bob", 1500)] and s["total_net"] == 1000 + 3000 + 500 + 1500


def test_pt2001_r35_house_pays_the_prize_to_the_player_dealt_the_cards(tmp_path: Path) -> None:
    """special_prizes.co_bets = false: r.35 "O jogador a quem forem distribuídas cartas": the prize is the
    titular's; bob's bet wins 1:1 only."""
    prof = profile_with(tmp_path, "pt-2001", "special_prizes", "co_bets", "false")
    s = play(prof, SHARED, SUITED_678, [D("hit")])
    assert "co_side_bets" not in s and co(s) == [("bob", 0, "win", 500)]
    assert [(x["seat"], x["net"]) for x in s["prizes"]] == [(1, 3000)] and s["total_net"] == 1000 + 3000 + 500


# ------------------------------------------------ PT-2001 r.15: a full seat's total and a double

FULL_SEAT = [{"seat": 1, "amount": 10000}, {"seat": 1, "amount": 5000, "player": "bob"}]  # 15000: the maximum
DOUBLE_11 = ["6D", "TS", "5D", "7C", "9H"]  # 6-5 doubles to 20 (9H); the dealer's T-7


def test_pt2001_r15_default_the_seat_total_is_checked_on_the_bets_as_placed() -> None:
    """bets.seat_total_counts_doubles = false: r.15 "o somatório ... não atinja ainda o máximo" bounds the bets
    as placed (10000 + 5000 = 15000, r.37's maximum); the titular's double (r.29) then stakes 20000: it wins."""
    s = play("pt-2001", FULL_SEAT, DOUBLE_11, [D("double")])
    assert [(h["stake"], h["net"]) for h in s["hands"]] == [(20000, 20000)] and s["total_net"] == 25000


def test_pt2001_r15_house_counts_a_double_in_the_seat_total(tmp_path: Path) -> None:
    """bets.seat_total_counts_doubles = true: the double would make the seat's stakes 25000, above the maximum
    15000: refused citing r.15; hitting instead, 6-5 draws the 9H and both bets win 1:1."""
    prof = profile_with(tmp_path, "pt-2001", "bets", "seat_total_counts_doubles", "true")
    err = refused(prof, FULL_SEAT, DOUBLE_11, [D("double")])
    assert err.rule == "PT-2001 r.15" and "the seat's stakes 25000" in err.message
    s = play(prof, FULL_SEAT, DOUBLE_11, [D("hit")])
    assert s["total_net"] == 15000


# ------------------------------------------------ IT perfect pairs on an odd main bet

# IT deals no hole card: seat 1 8H, the dealer's 9C, seat 1 8D (a pair of one colour, two suits: 11 x the stake,
# stake included); 16 stands; the dealer's second card 8C: 17 beats it.
EIGHTS = ["8H", "9C", "8D", "8C"]


def it_pp(stake: int) -> list[dict[str, Any]]:
    return [{"seat": 1, "amount": 101, "side_bets": {"perfect_pairs": stake}}]


def test_it_default_an_odd_main_bet_has_no_perfect_pairs_half() -> None:
    """side_bets.perfect_pairs.odd_bet = "refuse": "una puntata pari a metà della puntata iniziale"; half of 101
    cents is no whole cent, so neither 50 nor 51 is taken (cites IT)."""
    for stake in (50, 51):
        err = refused("it-online", it_pp(stake), EIGHTS, [D("stand")])
        assert err.rule == "IT" and "no half in minor units" in err.message


@pytest.mark.parametrize(("odd_bet", "stake"), [("round_down", 50), ("round_up", 51)])
def test_it_house_rounds_the_half_of_an_odd_main_bet(tmp_path: Path, odd_bet: str, stake: int) -> None:
    """side_bets.perfect_pairs.odd_bet = round_down / round_up: the half of 101 is 50 / 51; the pair 8H 8D pays
    11 x the stake, stake included (10 x net); the other rounding is still refused."""
    prof = profile_with(tmp_path, "it-online", "side_bets.perfect_pairs", "odd_bet", f'"{odd_bet}"')
    s = play(prof, it_pp(stake), EIGHTS, [D("stand")])
    assert [(b["result"], b["net"]) for b in s["side_bets"]] == [("same_colour", 10 * stake)]
    assert s["total_net"] == -101 + 10 * stake
    assert refused(prof, it_pp(101 - stake), EIGHTS, [D("stand")]).rule == "IT"


# ------------------------------------------------ IT / RO: half insurance of an odd bet

ODD_BET = [{"seat": 1, "amount": 101}]
T9_V_ACE = ["TS", "AH", "9D", "7C"]  # 19 against an ace; the dealer's second card 7: soft 18, no blackjack


@pytest.mark.parametrize("name", ["it-online", "ro-online"])
def test_it_ro_default_half_insurance_of_an_odd_bet_is_rounded_down(name: str) -> None:
    """insurance.odd_bet = "round_down": IT "una puntata pari a metà della puntata iniziale", RO "Asigurarea costă
    jumătate din pariul inițial": half of 101 is 50, lost; 51 is refused; the 19 wins 101."""
    s = play(name, ODD_BET, T9_V_ACE, [D("insurance"), D("stand")])
    assert [(i["amount"], i["net"]) for i in s["insurance"]] == [(50, -50)] and s["total_net"] == 101 - 50
    assert (
        "outside 50-50" in refused(name, ODD_BET, T9_V_ACE, [D("insurance", amount=51), D("stand")]).message
    )


@pytest.mark.parametrize("name", ["it-online", "ro-online"])
def test_it_ro_house_rounds_the_half_up_or_refuses_it(tmp_path: Path, name: str) -> None:
    """insurance.odd_bet = "round_up": half of 101 is 51; = "refuse": an odd bet cannot be insured (cites the
    book's insurance rule); declining, the round plays."""
    up = profile_with(tmp_path, name, "insurance", "odd_bet", '"round_up"')
    s = play(up, ODD_BET, T9_V_ACE, [D("insurance"), D("stand")])
    assert [(i["amount"], i["net"]) for i in s["insurance"]] == [(51, -51)] and s["total_net"] == 101 - 51
    no = profile_with(tmp_path, name, "insurance", "odd_bet", '"refuse"')
    err = refused(no, ODD_BET, T9_V_ACE, [D("insurance"), D("stand")])
    assert err.rule == ("IT" if name == "it-online" else "RO") and "no such part" in err.message
    assert play(no, ODD_BET, T9_V_ACE, [D("no_insurance"), D("stand")])["total_net"] == 101


# ------------------------------------------------ MO-2004 art.4.2: a round without its per-round burn

ONE_BET = [{"seat": 1, "amount": 10000}]


def test_mo2004_art4_2_default_a_round_file_may_leave_the_per_round_burn_out() -> None:
    """burn.round_without_burn = "accept": a round written without its leading burn plays (19 beats 17)."""
    assert play("mo-2004", ONE_BET, MO_19_V_17, [D("stand")])["total_net"] == 10000


def test_mo2004_art4_2_house_holds_every_round_to_its_burn(tmp_path: Path) -> None:
    """burn.round_without_burn = "refuse": art.4.2 "retirar uma carta no início de cada jogada seguinte": without
    a burn the round is invalid (cites art.4); with the burn card first it plays."""
    prof = profile_with(tmp_path, "mo-2004", "burn", "round_without_burn", '"refuse"')
    err = refused(prof, ONE_BET, MO_19_V_17, [D("stand")])
    assert err.rule == "MO-2004 art.4" and "0 card(s)" in err.message
    burnt = [{"card": "2C", "to": "burn"}, *MO_19_V_17]
    assert play(prof, ONE_BET, burnt, [D("stand")])["total_net"] == 10000


# ------------------------------------------------ PT-2001 r.43c: "três ases de naipes diferentes"

JACKPOT_BET = [{"seat": 1, "amount": 1000, "jackpot_chip": True}]
# A-A of hearts split (r.26: one card each): AD on the first hand, 5C on the second; the dealer 9-7 draws 2S: 18.
# The seat's first cards (r.42, split pairs included, in deal order): AH AH AD 5C.
AH_AH_AD = ["AH", "9C", "AH", "7D", "AD", "5C", "2S"]


def judged(profile: str) -> tuple[Combination | None, str, list[Effect]]:
    """The jackpot combination of the round's seat 1, as the table's jackpot and the dispute report judge it."""
    doc = {"profile": profile, "bets": JACKPOT_BET, "cards": AH_AH_AD, "decisions": [D("split")]}
    result = replay(doc)
    first = result.settlement.jackpot[0]["first_cards"]
    assert first == ["AH", "AH", "AD", "5C"]
    reading = load_profile(profile).jackpot_different_suits
    _, fx = award(jackpot_meter(), "r1", {1: first}, reading)
    return evaluate(first, reading), dispute_report.text(dispute_report.build(doc, result)), fx


def jackpot_meter() -> MeterState:
    cfg = JackpotConfig.from_dict({"enabled": True, "mode": "automatic", "bet_value": 100, "increment_bp": 5000,
                                   "reserve_bp": 0, "seed": 1_000_000, "currency": "EUR"})  # fmt: skip
    return MeterState.initial(cfg)


def pending(fx: list[Effect]) -> list[tuple[str, int]]:
    """The hits the table's jackpot freezes as pending (PT-2001 r.49), from its `hit_pending` events."""
    out = []
    for e in fx:
        data = getattr(e, "data", None)
        if isinstance(data, dict) and data.get("action") == "hit_pending":
            out.append((data["combination"], data["amount"]))
    return out


def test_pt2001_r43c_default_three_aces_not_all_of_one_suit() -> None:
    """jackpot.different_suits = "not_all_one": r.43c "Se as primeiras três cartas forem ases de naipes
    diferentes: 250 vezes" read as not all of one suit: AH AH AD is three aces, 250 x the 100 bet."""
    combo, report, fx = judged("pt-2001")
    assert combo is Combination.THREE_ACES_MIXED and "r.43c" in report
    assert pending(fx) == [("THREE_ACES_MIXED", 25000)]


def test_pt2001_r43c_house_reads_every_suit_different(tmp_path: Path) -> None:
    """jackpot.different_suits = "all_different": AH AH AD has two hearts, so not r.43c; its first two cards
    AH AH are r.43d's "ases do mesmo naipe", 100 x the 100 bet; the exact odds move with the reading."""
    prof = profile_with(tmp_path, "pt-2001", "jackpot", "different_suits", '"all_different"')
    combo, report, fx = judged(prof)
    assert combo is Combination.TWO_ACES_SUITED and "r.43d" in report and "r.43c" not in report
    assert pending(fx) == [("TWO_ACES_SUITED", 10000)]
    default, other = combination_odds(6), combination_odds(6, "all_different")
    assert default.probabilities == enumerated_odds(6).probabilities  # the count agrees with the formulas
    assert other.hit_frequency == default.hit_frequency and other.top == default.top
    moved = (
        default.probabilities[Combination.THREE_ACES_MIXED]
        - other.probabilities[Combination.THREE_ACES_MIXED]
    )
    assert moved > 0 and other.fixed_ev < default.fixed_ev


# ------------------------------------------------ PT-2001 r.42: the order of a split seat's first cards

# A-A split (r.26: one card each): 5C on the first hand, AS on the second; the dealer 9-7 draws 2S: 18.
AH_AD_SPLIT = ["AH", "9C", "AD", "7D", "5C", "AS", "2S"]


def first_cards(profile: str) -> tuple[list[str], Combination | None]:
    doc = {"profile": profile, "bets": JACKPOT_BET, "cards": AH_AD_SPLIT, "decisions": [D("split")]}
    first = replay(doc).settlement.jackpot[0]["first_cards"]
    return first, evaluate(first)


def test_pt2001_r42_default_split_cards_count_in_deal_order() -> None:
    """jackpot.split_cards = "deal_order": r.42 "as primeiras ... cartas originariamente distribuídas ao jogador,
    incluindo as correspondentes a pares divididos" as dealt: AH AD, then 5C and AS: two aces of different suits
    (r.43e, 25 x)."""
    assert first_cards("pt-2001") == (["AH", "AD", "5C", "AS"], Combination.TWO_ACES_MIXED)


def test_pt2001_r42_house_counts_split_cards_hand_by_hand(tmp_path: Path) -> None:
    """jackpot.split_cards = "hand_order": the first hand's AH 5C, then the second's AD AS: the first two cards are
    no longer two aces, so no combination; the table's jackpot waits until the seat is finished to judge it."""
    prof = profile_with(tmp_path, "pt-2001", "jackpot", "split_cards", '"hand_order"')
    assert first_cards(prof) == (["AH", "5C", "AD", "AS"], None)


@pytest.mark.parametrize(
    ("order", "after_5c", "final"),
    [
        ("deal_order", ["AH", "AD", "5C"], ["AH", "AD", "5C", "AS"]),
        ("hand_order", None, ["AH", "5C", "AD", "AS"]),
    ],
)
def test_pt2001_r42_the_table_judges_a_split_seat_when_its_order_is_settled(
    tmp_path: Path, order: str, after_5c: list[str] | None, final: list[str]
) -> None:
    """The live table's jackpot (award.decided_cards): in deal order AH AD 5C is final at the third card (a
    non-ace); in hand order a seat dealt two aces is judged only once it is finished, here when the second split
    ace gets its card (r.26: one card each)."""
    prof = load_profile(profile_with(tmp_path, "pt-2001", "jackpot", "split_cards", f'"{order}"'))
    engine = RoundEngine(prof, [SeatBet(1, 1000, jackpot_chip=True)], burn_before_deal=0)
    tracker = SimpleNamespace(engine=engine)
    for code in ["AH", "9C", "AD", "7D"]:
        engine.on_card(Card.parse(code), face_up=False, to=None)
    engine.act("split")
    assert decided_cards(tracker, [1], "players") is None  # AH AD split, no card yet on either hand
    engine.on_card(Card.parse("5C"), face_up=False, to=None)
    assert decided_cards(tracker, [1], "players") == ({1: after_5c} if after_5c else None)
    engine.on_card(Card.parse("AS"), face_up=False, to=None)
    assert decided_cards(tracker, [1], "players") == {1: final}
