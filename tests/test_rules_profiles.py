"""Rule profiles: every shipped profile loads; bad files fail naming the key."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from controller.rules.profiles import (
    PROFILE_DIR,
    ProfileError,
    list_profiles,
    load_profile,
    profile_from_dict,
)

EXPECTED = {"pt-2001", "mo-2004", "pt-online-2015", "it-online", "ro-online"}


def raw(name: str) -> dict:
    return tomllib.loads((PROFILE_DIR / f"{name}.toml").read_text())


def test_all_profiles_listed_and_load() -> None:
    assert set(list_profiles()) >= EXPECTED
    for name in EXPECTED:
        p = load_profile(name)
        assert p.name == name
        assert p.min_bet <= p.max_bet


def test_load_by_path() -> None:
    assert load_profile(str(PROFILE_DIR / "mo-2004.toml")).name == "mo-2004"


def test_pt2001_settings_cite_their_rules() -> None:
    p = load_profile("pt-2001")
    assert p.decks in (4, 6)  # r.3
    assert p.seats in (6, 7)  # r.2
    assert p.hole_card and p.deal_direction == "ascending"  # r.17
    assert p.max_bet == 30 * p.min_bet  # r.37
    assert p.burn.shoe_start == "one" and not p.burn.per_round  # r.10
    assert p.continuous_shuffler_allowed  # r.56-57
    assert p.shoe.warning_card_from_end == 50 and p.shoe.warning_card_single_player == "middle"  # r.9
    assert p.jackpot_allowed  # r.38
    assert p.burn_before_round(shoe_start=True) == 1 and p.burn_before_round(shoe_start=False) == 0


def test_mo2004_burn_and_no_hole_card_art4_art5() -> None:
    p = load_profile("mo-2004")
    assert not p.hole_card
    assert p.burn_before_round(shoe_start=True) == p.decks  # art.4.1.1
    assert p.burn_before_round(shoe_start=False) == 1  # art.4.2
    assert p.burn.before_dealer_second  # art.4.2
    assert p.shoe.warning_card_from_end == 30  # art.2.1.1
    assert not p.jackpot_allowed


def test_online_profiles() -> None:
    assert load_profile("pt-online-2015").max_bet <= 100 * load_profile("pt-online-2015").min_bet  # r.11
    it = load_profile("it-online")
    assert it.deal_direction == "descending" and it.seats == 5 and it.play.max_hands == 2
    ro = load_profile("ro-online")
    assert ro.seats == 3 and ro.dealer_peek and ro.play.max_hands == 2


def test_every_setting_line_has_a_rule_comment() -> None:
    for path in PROFILE_DIR.glob("*.toml"):
        for line in path.read_text().splitlines():
            s = line.strip()
            if not s or s.startswith("#") or s.startswith("[") or "=" not in s:
                continue
            key = s.split("=")[0].strip()
            if key in ("name", "book", "title", "stake", "stake_included", "pays"):
                continue  # identity, and side-bet entries cited on their table header
            in_citations = re.search(r'"(PT-2001|MO-2004|PT-ONLINE-2015|IT|RO)', s.split("=", 1)[1])
            assert "#" in s or in_citations, f"{path.name}: {s!r} has no rule comment"


@pytest.mark.parametrize(
    ("mutate", "key"),
    [
        (lambda d: d.update(decks="six"), "decks"),
        (lambda d: d["table"].update(seats=12), "table.seats"),
        (lambda d: d["table"].pop("hole_card"), "table.hole_card"),
        (lambda d: d["play"].update(double="10-11"), "play.double"),
        (lambda d: d["play"].update(dobule=True), "play.dobule"),
        (lambda d: d["bets"].update(max_bet=50000), "bets.max_bet"),  # > 30 x min (PT-2001 r.37)
        (lambda d: d["bets"].update(max_bet=15100), "bets.max_bet"),  # not a multiple (r.14)
        (lambda d: d["burn"].update(before_dealer_second=True), "burn.before_dealer_second"),
        (lambda d: d["insurance"].update(min="3/4"), "insurance.min"),
        (lambda d: d["citations"].pop("surrender"), "citations.surrender"),
        (lambda d: d.update(decks=5), "decks"),  # PT-2001 r.3: four or six
    ],
)
def test_bad_profile_names_the_key(mutate, key: str) -> None:
    d = raw("pt-2001")
    mutate(d)
    with pytest.raises(ProfileError, match=re.escape(key)):
        profile_from_dict(d, source="bad.toml")


def test_jackpot_only_pt2001_r38() -> None:
    d = raw("mo-2004")
    d["jackpot"]["allowed"] = True
    with pytest.raises(ProfileError, match=r"jackpot\.allowed"):
        profile_from_dict(d)


def test_side_bet_pay_table_checked() -> None:
    d = raw("it-online")
    d["side_bets"]["perfect_pairs"]["pays"]["rainbow"] = 2
    with pytest.raises(ProfileError, match=r"side_bets\.perfect_pairs\.pays\.rainbow"):
        profile_from_dict(d)


def test_unknown_profile_and_bad_toml(tmp_path: Path) -> None:
    with pytest.raises(ProfileError, match="not found"):
        load_profile("nope")
    bad = tmp_path / "x.toml"
    bad.write_text("name = [")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(str(bad))
