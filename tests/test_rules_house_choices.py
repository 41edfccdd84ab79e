"""Choices the books leave to the house, each a profile setting (docs/profiles.md "House choices"): the shipped
default and the other reading, settled through `tablectl replay` with a profile file written to tmp_path."""

from __future__ import annotations

import argparse
import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest

from controller.cli.replay import main as replay_main
from controller.rules.profiles import PROFILE_DIR, ProfileError, load_profile


def profile_with(tmp_path: Path, name: str, section: str, **settings: Any) -> str:
    """A copy of a shipped profile with settings changed in one section (`side_bets.over_13` style paths)."""
    text = (PROFILE_DIR / f"{name}.toml").read_text()
    data = tomllib.loads(text)
    node = data
    for part in section.split("."):
        node = node[part]
    node.update(settings)
    path = tmp_path / f"{name}-{len(list(tmp_path.glob('*.toml')))}.toml"
    path.write_text(_dump(data))
    return str(path)


def _dump(data: dict, prefix: str = "") -> str:
    """Minimal TOML writer for profile data (strings, ints, bools, lists, nested tables)."""
    scalars, tables = [], []
    for k, v in data.items():
        (tables if isinstance(v, dict) else scalars).append((k, v))
    out = [f"{k} = {json.dumps(v)}" for k, v in scalars]
    for k, v in tables:
        name = f"{prefix}{k}"
        out.append(f"\n[{name}]\n" + _dump(v, name + "."))
    return "\n".join(out) + "\n"


def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: dict) -> tuple[int, dict]:
    path = tmp_path / "round.json"
    path.write_text(json.dumps(doc))
    rc = replay_main(argparse.Namespace(round=str(path), json=True, pretty=False, report=False, html=None))
    return rc, json.loads(capsys.readouterr().out)


def R(profile: str, bets: list[Any], cards: list[Any], decisions: list[Any] = ()) -> dict:
    out_bets = [b if isinstance(b, dict) else {"seat": b[0], "amount": b[1]} for b in bets]
    out_dec = [d if isinstance(d, dict) else {"seat": d[0], "action": d[1]} for d in decisions]
    return {"profile": profile, "bets": out_bets, "cards": list(cards), "decisions": out_dec}


def H(seat: int, action: str, hand: int = 0, **kw: Any) -> dict:
    return {"seat": seat, "hand": hand, "action": action, **kw}


def net(tmp_path, capsys, doc) -> int:
    rc, out = cli(tmp_path, capsys, doc)
    assert rc == 0, out
    return out["settlement"]["total_net"]


# ---------------------------------------------------------------- PT-2001 r.26 vs r.27: resplitting aces

ACES = ["AS", "TS", "AD", "7C", "AH", "9D", "8C", "5H"]
ACES_DECISIONS = [(1, "split"), H(1, "split", 0)]


def test_pt2001_r26_default_split_aces_are_not_split_again(tmp_path, capsys) -> None:
    rc, out = cli(tmp_path, capsys, R("pt-2001", [(1, 1000)], ACES, ACES_DECISIONS))
    assert rc == 1 and out["rule"] == "PT-2001 r.26", out


def test_pt2001_r27_house_lets_split_aces_split_again(tmp_path, capsys) -> None:
    """r.27 "poderá voltar a fazê-lo, se vier a obter ... cartas adicionais do mesmo valor": three ace hands of
    20, 19 and 16 (one card each) against the dealer's 17: +1000 +1000 -1000."""
    prof = profile_with(tmp_path, "pt-2001", "play", resplit_aces=True)
    assert net(tmp_path, capsys, R(prof, [(1, 1000)], ACES, ACES_DECISIONS)) == 1000


# ---------------------------------------------------------------- PT-2001 r.35, MO-2004 art.15: special prizes

DOUBLED_678 = ["6D", "TS", "7D", "8D", "2C", "7C"]  # MO: 6-7 doubled, 8 of diamonds: 21; burn; dealer T+7


@pytest.mark.parametrize(
    ("after_double", "prize"), [("original_bet", 30000), ("doubled_bet", 60000), ("no", 0)]
)
def test_mo2004_art15_prize_after_a_double(tmp_path, capsys, after_double: str, prize: int) -> None:
    """art.15 "três vezes a importância da sua aposta": the doubled 21 wins 20000, the prize on the chosen bet."""
    prof = profile_with(tmp_path, "mo-2004", "special_prizes", after_double=after_double)
    assert net(tmp_path, capsys, R(prof, [(1, 10000)], DOUBLED_678, [(1, "double")])) == 20000 + prize


SPLIT_777 = ["7H", "TS", "7D", "7C", "7S", "7D", "TD"]  # PT: 7-7 split; hand 0 draws 7: three 7s; hand 1 17


@pytest.mark.parametrize(("split_hands", "total"), [(True, 1000 + 3000), (False, 1000)])
def test_pt2001_r35_prize_on_a_split_hand(tmp_path, capsys, split_hands: bool, total: int) -> None:
    prof = profile_with(tmp_path, "pt-2001", "special_prizes", split_hands=split_hands)
    decisions = [(1, "split"), H(1, "hit", 0), H(1, "stand", 1)]
    assert net(tmp_path, capsys, R(prof, [(1, 1000)], SPLIT_777, decisions)) == total


@pytest.mark.parametrize(("across", "total"), [(False, -1000), (True, -1000 + 3000)])
def test_pt2001_r35_three_sevens_dealt_across_split_hands(tmp_path, capsys, across: bool, total: int) -> None:
    """r.35 "O jogador a quem forem distribuídas cartas ... três «7»": 7-7 split, the first split hand gets a 7
    (the seat was dealt three 7s) and stands on 14; hand 1 7+T pushes the dealer's 17."""
    prof = profile_with(tmp_path, "pt-2001", "special_prizes", across_split=across)
    cards = ["7H", "TS", "7D", "7C", "7S", "TD"]
    decisions = [(1, "split"), H(1, "stand", 0), H(1, "stand", 1)]
    assert net(tmp_path, capsys, R(prof, [(1, 1000)], cards, decisions)) == total


# ---------------------------------------------------------------- MO-2004 art.13: any pair formed twice


@pytest.mark.parametrize(("each", "pair_net"), [(True, 22000), (False, 11000)])
def test_mo2004_art13_1_2_any_pair_formed_again_after_a_split(
    tmp_path, capsys, each: bool, pair_net: int
) -> None:
    """8-8 (first pair), split, the first hand draws 8 (second pair, art.13.1.2); hands 16 and 20 v 17."""
    prof = profile_with(tmp_path, "mo-2004", "side_bets.any_pair", each_pair=each)
    bet = {"seat": 1, "amount": 10000, "side_bets": {"any_pair": 1000}}
    cards = ["8H", "TS", "8D", "8C", "2S", "TD", "3S", "7C"]
    decisions = [(1, "split"), H(1, "stand", 0), H(1, "hit", 1), H(1, "stand", 1)]
    assert net(tmp_path, capsys, R(prof, [bet], cards, decisions)) == -10000 + 10000 + pair_net


# ---------------------------------------------------------------- MO-2004 art.13.3: the ace in over/under 13


@pytest.mark.parametrize(("ace", "side_net"), [("one", -1000), ("eleven", 1000)])
def test_mo2004_art13_3_the_ace_in_over_13(tmp_path, capsys, ace: str, side_net: int) -> None:
    """A+5: 6 with the ace as 1 (over 13 loses), 16 with the ace as 11 (art.8, wins 1:1); 16 loses to 18."""
    prof = profile_with(tmp_path, "mo-2004", "side_bets.over_13", ace=ace)
    bet = {"seat": 1, "amount": 10000, "side_bets": {"over_13": 1000}}
    assert (
        net(tmp_path, capsys, R(prof, [bet], ["AH", "TS", "5D", "3S", "8C"], [(1, "stand")]))
        == -10000 + side_net
    )


# ---------------------------------------------------------------- MO-2004 art.16.1 vs art.13.1.1: J+Q

JQ = ["JH", "TS", "QD", "9C", "8C", "3S", "7C"]


def test_mo2004_art16_default_j_and_q_split_by_value(tmp_path, capsys) -> None:
    """split_match = value (art.16.5 "carta de valor igual"): J+9 = 19 and Q+8 = 18 beat T+7."""
    assert net(tmp_path, capsys, R("mo-2004", [(1, 10000)], JQ, [(1, "split")])) == 20000


def test_mo2004_art13_1_1_reading_j_and_q_are_not_a_pair(tmp_path, capsys) -> None:
    """split_match = rank (art.13.1.1 "«J» Valete e «Q» Rainha não formam um par")."""
    prof = profile_with(tmp_path, "mo-2004", "play", split_match="rank")
    rc, out = cli(tmp_path, capsys, R(prof, [(1, 10000)], JQ, [(1, "split")]))
    assert rc == 1 and out["rule"] == "MO-2004 art.16" and "not a pair" in out["error"]


# ---------------------------------------------------------------- PT-2001 r.18 vs r.19: an unclaimed card


def _unclaimed(profile: str) -> dict:
    """Seats 1 and 2 stand on 18; while seat 2 decides, the dealer pushes 3C, unseen, onto seat 1; nobody asks
    for a card; the dealer stands on T+7."""
    doc = R(
        profile,
        [(1, 1000), (2, 1000)],
        ["TS", "9S", "TH", "8D", "9D", "7C", {"card": "3C", "to": {"seat": 1}}],
    )
    doc["decisions"] = [H(1, "stand", after_cards=6), H(2, "stand", after_cards=7)]
    return doc


def test_pt2001_r19_default_the_unclaimed_card_is_void_when_the_dealer_stands(tmp_path, capsys) -> None:
    rc, out = cli(tmp_path, capsys, _unclaimed("pt-2001"))
    assert (
        rc == 0
        and out["settlement"]["dealer_cards"] == ["TH", "7C"]
        and out["settlement"]["total_net"] == 2000
    )
    assert [e["rule"] for e in out["dealer_errors"]] == ["PT-2001 r.18"]


def test_pt2001_r18_house_gives_the_unclaimed_card_to_the_dealer(tmp_path, capsys) -> None:
    """r.18 "se nenhum vier a pedir cartas, a dita carta será para o jogo da banca": 17 + 3 = 20 beats both 18s."""
    prof = profile_with(tmp_path, "pt-2001", "play", unclaimed_card="dealer")
    rc, out = cli(tmp_path, capsys, _unclaimed(prof))
    assert rc == 0 and out["settlement"]["dealer_cards"] == ["TH", "7C", "3C"]
    assert out["settlement"]["total_net"] == -2000


# ---------------------------------------------------------------- PT-2001 r.14, r.33: insurance amounts


INSURED = ["TS", "AH", "9D", "7C"]


def test_pt2001_r33_default_any_insurance_up_to_half(tmp_path, capsys) -> None:
    doc = R("pt-2001", [(1, 1500)], INSURED, [H(1, "insurance", amount=700), (1, "stand")])
    assert net(tmp_path, capsys, doc) == 1500 - 700


def test_pt2001_r14_house_insurance_in_multiples_of_the_minimum(tmp_path, capsys) -> None:
    """r.14 "igual ao mínimo fixado ... ou múltiplo dele" applied to the insurance: 700 refused, 500 taken."""
    prof = profile_with(tmp_path, "pt-2001", "insurance", multiple_of_min=True)
    rc, out = cli(
        tmp_path, capsys, R(prof, [(1, 1500)], INSURED, [H(1, "insurance", amount=700), (1, "stand")])
    )
    assert rc == 1 and out["rule"] == "PT-2001 r.14" and "700" in out["error"]
    assert net(tmp_path, capsys, R(prof, [(1, 1500)], INSURED, [H(1, "insurance", amount=500)])) == 1000
    # Without an amount: the most allowed that is a multiple of the minimum (half of 1500 = 750 -> 500).
    assert net(tmp_path, capsys, R(prof, [(1, 1500)], INSURED, [H(1, "insurance")])) == 1000


# ---------------------------------------------------------------- rounding of 3:2 and half a bet


@pytest.mark.parametrize(("rounding", "bj", "surrender"), [("down", 499, -167), ("up", 500, -166)])
def test_rounding_of_3_to_2_and_surrender_on_odd_amounts(tmp_path, capsys, rounding, bj, surrender) -> None:
    """PT-ONLINE-2015 r.25a "vez e meia" of 333 is 499.5; r.15e "perdendo metade" of 333 is 166.5."""
    prof = profile_with(tmp_path, "pt-online-2015", "payouts", rounding=rounding)
    assert net(tmp_path, capsys, R(prof, [(1, 333)], ["AS", "9H", "KD", "7C"])) == bj
    assert (
        net(tmp_path, capsys, R(prof, [(1, 333)], ["TS", "9H", "6D", "7C"], [(1, "surrender")])) == surrender
    )


# ---------------------------------------------------------------- RO: the dealer peeks with a ten up

PEEK = ["5S", "KH", "6D", "AC", "9C"]


def test_ro_default_the_dealer_peeks_with_a_ten_and_ends_the_round(tmp_path, capsys) -> None:
    rc, out = cli(tmp_path, capsys, R("ro-online", [(1, 1000)], PEEK, [(1, "double")]))
    assert rc == 1 and "decision #1" in out["error"]  # the round ended on the dealer's blackjack


def test_ro_house_peeks_only_with_an_ace(tmp_path, capsys) -> None:
    """peek_with_ten = false: the 11 doubles (20) and loses both bets to the blackjack shown at the end."""
    prof = profile_with(tmp_path, "ro-online", "table", peek_with_ten=False)
    assert net(tmp_path, capsys, R(prof, [(1, 1000)], PEEK, [(1, "double")])) == -2000


# ---------------------------------------------------------------- profile keys are validated


@pytest.mark.parametrize(
    ("section", "settings", "key"),
    [
        ("play", {"resplit_after_declinig": False}, "play.resplit_after_declinig"),
        ("play", {"unclaimed_card": "seat"}, "play.unclaimed_card"),
        ("special_prizes", {"after_double": "maybe"}, "special_prizes.after_double"),
        ("citations", {"surender": "PT-2001 r.36"}, "citations"),
        ("payouts", {"rounding": "nearest"}, "payouts.rounding"),
        ("insurance", {"multiple_of_min": "yes"}, "insurance.multiple_of_min"),
    ],
)
def test_unknown_or_bad_profile_keys_are_errors(
    tmp_path: Path, section: str, settings: dict, key: str
) -> None:
    with pytest.raises(ProfileError, match=re.escape(f"key {key}")):
        load_profile(profile_with(tmp_path, "pt-2001", section, **settings))


def test_a_setting_only_for_one_side_bet_is_refused_elsewhere(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match=r"side_bets\.sevens\.ace"):
        load_profile(profile_with(tmp_path, "mo-2004", "side_bets.sevens", ace="eleven"))


# ---------------------------------------------------------------- MO-2004 art.6.1: an unshown extra dealer card

EXTRA = ["TH", "9S", "9D", "3S", "8C", {"card": "2D", "to": "dealer"}]  # 19 v 17; the dealer draws on 17


@pytest.mark.parametrize(("option", "total", "dealer"), [("void", 10000, 17), ("valid", 0, 19)])
def test_mo2004_art6_1_an_unshown_card_drawn_on_17(
    tmp_path, capsys, option: str, total: int, dealer: int
) -> None:
    """art.6.1 "Se a banca tomar, indevidamente, uma carta adicional, esta considera-se inválida e é retirada,
    podendo, no entanto, considerar-se válida se não tiver sido mostrada": a dealer error either way."""
    prof = profile_with(tmp_path, "mo-2004", "play", unshown_dealer_card=option)
    rc, out = cli(tmp_path, capsys, R(prof, [(1, 10000)], EXTRA, [(1, "stand")]))
    assert rc == 0 and (out["settlement"]["total_net"], out["settlement"]["dealer_total"]) == (total, dealer)
    assert [e["rule"] for e in out["dealer_errors"]] == ["MO-2004 art.6.1"]


def test_mo2004_art6_1_a_shown_card_is_always_void(tmp_path, capsys) -> None:
    prof = profile_with(tmp_path, "mo-2004", "play", unshown_dealer_card="valid")
    cards = [*EXTRA[:-1], {"card": "2D", "to": "dealer", "face_up": True}]
    rc, out = cli(tmp_path, capsys, R(prof, [(1, 10000)], cards, [(1, "stand")]))
    assert rc == 0 and out["settlement"]["total_net"] == 10000


# ---------------------------------------------------------------- insurance on a blackjack (IT, PT-2001 r.33-34)

BJ_VS_ACE = ["AH", "AS", "KD", "7C", "9C"]  # seat 1 A-K, dealer A up, hole 7: no dealer blackjack


def test_ro_default_a_blackjack_box_may_insure(tmp_path, capsys) -> None:
    """RO "Jucătorul poate cumpăra Asigurare dacă prima carte a crupierului este un As" (insurance.on_blackjack =
    true, as IT's "su ciascuna postazione attiva"): the blackjack insures 500 and loses it (the dealer checks:
    no blackjack), and is paid 3:2 at the end."""
    doc = R("ro-online", [(1, 1000)], BJ_VS_ACE[:4], [{"seat": 1, "action": "insurance", "amount": 500}])
    assert net(tmp_path, capsys, doc) == 1500 - 500


def test_house_offers_a_blackjack_even_money_only(tmp_path, capsys) -> None:
    """insurance.on_blackjack = false: PT-2001 r.34's even money is the blackjack's only offer; insuring it is
    refused citing the even-money rule."""
    prof = profile_with(tmp_path, "pt-2001", "insurance", on_blackjack=False)
    rc, out = cli(tmp_path, capsys, R(prof, [(1, 1000)], BJ_VS_ACE, [{"seat": 1, "action": "insurance"}]))
    assert rc == 1 and out["rule"] == "PT-2001 r.34" and "not insured" in out["error"], out


# ---------------------------------------------------------------- a double above the table maximum

DOUBLE_11 = ["6D", "TS", "5D", "7C", "9H"]  # seat 1 6-5 doubles to 21 (9H); dealer T-7


def test_pt2001_default_a_double_may_pass_the_table_maximum(tmp_path, capsys) -> None:
    """bets.double_within_max = false: a 15000 bet (the pt-2001 maximum, r.37) doubles to 30000 and wins it."""
    assert net(tmp_path, capsys, R("pt-2001", [(1, 15000)], DOUBLE_11, [(1, "double")])) == 30000


def test_house_keeps_a_doubled_stake_within_the_maximum(tmp_path, capsys) -> None:
    """bets.double_within_max = true: the same double is refused citing the maximum's rule (PT-2001 r.37)."""
    prof = profile_with(tmp_path, "pt-2001", "bets", double_within_max=True)
    rc, out = cli(tmp_path, capsys, R(prof, [(1, 15000)], DOUBLE_11, [(1, "double")]))
    assert rc == 1 and out["rule"] == "PT-2001 r.37" and "above the maximum 15000" in out["error"], out


# ---------------------------------------------------------------- PT-2001 r.15: a co-bettor's insurance

CO_VS_ACE = ["TH", "AS", "9D", "7C"]  # seat 1 19 against A up, hole 7: no dealer blackjack
CO_BETS = [{"seat": 1, "amount": 1000}, {"seat": 1, "amount": 500, "player": "p2"}]
CO_INSURES = [{"seat": 1, "action": "no_insurance"}, {"seat": 1, "action": "insurance", "player": "p2"}]


def test_pt2001_r15_default_a_co_bettor_insures_although_the_holder_declines(tmp_path, capsys) -> None:
    """r.15 "os donos das apostas complementares são livres de o fazer, ou não", read as free whatever the holder
    does (insurance.co_bet_without_holder = true): p2 insures 250 and loses it; both 19s beat 18."""
    doc = R("pt-2001", CO_BETS, CO_VS_ACE, [*CO_INSURES, (1, "stand")])
    assert net(tmp_path, capsys, doc) == 1000 + 500 - 250


def test_pt2001_r15_house_reads_it_literally_only_after_the_holder_insured(tmp_path, capsys) -> None:
    """r.15 "Se o titular do lugar fizer «seguro» da sua aposta, os donos ... são livres de o fazer" read
    literally (co_bet_without_holder = false): with the holder declining, p2's insurance is refused."""
    prof = profile_with(tmp_path, "pt-2001", "insurance", co_bet_without_holder=False)
    rc, out = cli(tmp_path, capsys, R(prof, CO_BETS, CO_VS_ACE, [*CO_INSURES, (1, "stand")]))
    assert rc == 1 and "has not insured" in out["error"], out
