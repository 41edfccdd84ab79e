"""Exact jackpot math (PT-2001 r.42-44) cross-checked by brute-force enumeration of physical cards."""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from controller.cli.jackpot_math import CliError, add_arguments, main, profile_decks
from controller.data import PROFILES_DIR
from controller.jackpot.hits import Combination, evaluate
from controller.jackpot.math import (
    break_even_meter,
    combination_odds,
    long_run_return,
    meter_drift_per_bet,
    return_at_meter,
)

ROOT = Path(__file__).parents[1]


def brute_force(decks: int) -> dict[Combination | None, Fraction]:
    """Every ordered draw of physical cards from the shoe, each card a distinct object, classified by
    ``hits.evaluate``. A draw stops at its first non-ace (r.43 names only aces, so nothing after it can
    change the combination) or after four cards; each path's weight is the product of 1/(cards left)."""
    shoe = [f"{r}{s}" for _ in range(decks) for s in "SHDC" for r in "A23456789TJQK"]
    out: dict[Combination | None, Fraction] = {}

    def walk(drawn: list[str], left: list[int], weight: Fraction) -> None:
        if len(drawn) == 4 or (drawn and drawn[-1][0] != "A"):
            combo = evaluate(drawn)
            out[combo] = out.get(combo, Fraction(0)) + weight
            return
        w = weight / len(left)
        for i, idx in enumerate(left):
            walk([*drawn, shoe[idx]], left[:i] + left[i + 1 :], w)

    walk([], list(range(len(shoe))), Fraction(1))
    assert sum(out.values()) == 1
    return out


@pytest.mark.parametrize("decks", [1, 2, 3])
def test_formulas_match_brute_force_enumeration(decks: int) -> None:
    odds = combination_odds(decks)
    brute = brute_force(decks)
    for combo in Combination:
        assert odds.probabilities[combo] == brute.get(combo, Fraction(0)), combo
    assert odds.hit_frequency == 1 - brute[None]


def test_known_values_six_decks() -> None:
    """Hand-checkable: two aces first from 312 cards = 24/312 x 23/311; top = 2 x 12*11*10*9 / (312)_4."""
    odds = combination_odds(6)
    assert odds.hit_frequency == Fraction(24 * 23, 312 * 311)
    assert odds.top == Fraction(2 * 12 * 11 * 10 * 9, 312 * 311 * 310 * 309)
    assert combination_odds(1).top == 0  # one deck has only two red aces: the top prize is impossible


def test_returns() -> None:
    odds = combination_odds(6)
    # long run: contributions paid back plus the seed once per top hit
    lr = long_run_return(odds, 100, 5000, 500, 1_000_000)
    assert lr == Fraction(5500, 10_000) + odds.top * 10_000
    # return at a meter: fixed EV plus the chance of the top times the meter in bets
    assert return_at_meter(odds, 100, 2_000_000) == odds.fixed_ev + odds.top * 20_000
    be = break_even_meter(odds, 100)
    assert be is not None and return_at_meter(odds, 100, 0) + odds.top * be / 100 == 1
    assert break_even_meter(combination_odds(1), 100) is None
    assert meter_drift_per_bet(odds, 100, 5000) == 50 - odds.fixed_ev * 100


def ns(**kw: object) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args([])
    for k, v in kw.items():
        setattr(args, k, v)
    return args


def test_cli_json(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(ns(decks=6, bet_value=100, increment_bp=5000, seed=1_000_000, json=True))
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["decks"] == 6
    top = out["combinations"]["FOUR_ACES_ONE_COLOUR"]
    assert Fraction(top["fraction"]) == combination_odds(6).top
    assert round(top["one_in"]) == 391_191
    assert out["long_run_return"]["decimal"] == pytest.approx(0.5 + float(combination_odds(6).top) * 10_000)


def test_cli_refuses_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(ns(decks=6, bet_value=100, seed=5)) == 2
    assert "below 10000 x bet" in capsys.readouterr().err
    assert main(ns(decks=0)) == 2


def test_profile_decks_from_a_profiles_directory(tmp_path: Path) -> None:
    shipped = (PROFILES_DIR / "pt-2001.toml").read_text(encoding="utf-8")
    (tmp_path / "four.toml").write_text(re.sub(r"(?m)^decks = 6\b", "decks = 4", shipped))
    (tmp_path / "bad.toml").write_text(re.sub(r"(?m)^decks = 6\b", "decks = 'six'", shipped))
    (tmp_path / "garbled.toml").write_text("decks = \n")
    assert profile_decks("four", tmp_path) == 4  # PT-2001 r.3: 4 or 6 decks
    with pytest.raises(CliError, match=r"bad\.toml: key decks"):
        profile_decks("bad", tmp_path)
    with pytest.raises(CliError, match="not valid TOML"):
        profile_decks("garbled", tmp_path)
    with pytest.raises(CliError, match="no file"):
        profile_decks("nope", tmp_path)


def test_tablectl_jackpot_math_text() -> None:
    tablectl = Path(sys.executable).parent / "tablectl"
    r = subprocess.run(
        [
            str(tablectl),
            "jackpot-math",
            "--decks",
            "4",
            "--bet-value",
            "100",
            "--increment-bp",
            "1000",
            "--seed",
            "1000000",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "four aces of one colour" in r.stdout and "hit frequency" in r.stdout
    assert "FOUR_ACES_ONE_COLOUR" not in r.stdout and "minor units" not in r.stdout  # issue 30: words, money
    assert "drifts DOWN" in r.stdout  # 10 % increment is less than the fixed prizes' ~33 %


def test_profile_decks_from_the_rules_engine() -> None:
    """The shipped pt-2001 profile (PT-2001 r.3: 4 or 6 decks) gives the deck count; unknown name: error."""
    rules = pytest.importorskip("controller.rules.profiles")
    assert profile_decks("pt-2001") == rules.load_profile("pt-2001").decks
    with pytest.raises(CliError, match="nope"):
        profile_decks("nope")
