"""controller/config/opening.py: the configuration's profile, shoe and bet limits for open_table (pure)."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path

import pytest

from controller.config import load_config
from controller.config.opening import OpenRefused, open_args, table_limits, with_table_limits
from controller.rules.profiles import profile_from_dict

ROOT = Path(__file__).resolve().parents[1]
PROFILES = sorted((ROOT / "firmware_configs" / "profiles").glob("*.toml"))


@pytest.fixture
def config():
    return load_config(ROOT / "firmware_configs" / "demo.toml", check_files=False)


def test_open_args_fill_in_the_configured_profile_and_shoe(config) -> None:
    assert open_args(config, {}) == {"profile": "pt-2001", "shuffler": "continuous"}
    same = {"profile": "pt-2001", "shuffler": "continuous", "x": 1}
    assert open_args(config, same) == same


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ({"profile": "mo-2004"}, "configured for pt-2001 (table.profile)"),
        ({"profile": "../pt-2001"}, "configured for pt-2001"),
        ({"profile": ["pt-2001"]}, "configured for pt-2001"),
        ({"shuffler": "batch"}, "configured as continuous (shoe.mode)"),
        ({"shuffler": 7}, "configured as continuous (shoe.mode)"),
    ],
)
def test_open_args_refuse_what_contradicts_the_configuration(config, args, reason) -> None:
    with pytest.raises(OpenRefused, match=reason.replace("(", r"\(").replace(")", r"\)")):
        open_args(config, args)


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.stem)
def test_table_limits_replace_only_the_profiles_bet_limits(path: Path) -> None:
    """PT-2001 r.14 (the table minimum), r.37 (the maximum): the house sets them inside the profile's rules."""
    text = path.read_text()
    before = tomllib.loads(text)
    lo = before["bets"]["min_bet"] * 2
    out = with_table_limits(text, {"min_bet": lo, "max_bet": lo * 10})
    after = tomllib.loads(out)
    assert (after["bets"]["min_bet"], after["bets"]["max_bet"]) == (lo, lo * 10)
    assert {k: v for k, v in after.items() if k != "bets"} == {k: v for k, v in before.items() if k != "bets"}
    prof = profile_from_dict(after, source=path.name)
    assert (prof.min_bet, prof.max_bet) == (lo, lo * 10)
    assert with_table_limits(text, {}) == text


def test_a_profile_whose_limit_lines_cannot_be_found_is_refused_not_guessed() -> None:
    text = 'name = "x"\nbets = { min_bet = 500, max_bet = 15000 }\n'
    with pytest.raises(OpenRefused, match="not found"):
        with_table_limits(text, {"min_bet": 1000})
    decoy = "[other]\nmin_bet = 1\n[bets]\nmax_bet = 15000\n"  # min_bet only outside [bets]
    with pytest.raises(OpenRefused, match="not found"):
        with_table_limits(decoy, {"min_bet": 1000})


def test_table_limits_are_the_configured_overrides_only(config) -> None:
    assert table_limits(config) == {"min_bet": 500, "max_bet": 15000}
    t = dataclasses.replace(config.table, min_bet=None, max_bet=None)
    assert table_limits(dataclasses.replace(config, table=t)) == {}


def test_the_tables_currency_is_its_own_else_its_jackpots(config) -> None:
    """Issue 36: what every amount is in, from the configuration (`table.currency`, else the jackpot's)."""
    assert config.table.currency is None and config.jackpot.enabled and config.currency == "EUR"
    off = dataclasses.replace(config.jackpot, enabled=False)
    assert dataclasses.replace(config, jackpot=off).currency is None
    chf = dataclasses.replace(config.table, currency="CHF")
    assert dataclasses.replace(config, table=chf, jackpot=off).currency == "CHF"


def test_a_table_currency_other_than_the_jackpots_is_refused_naming_the_key(tmp_path: Path) -> None:
    from controller.config import ConfigError

    text = (ROOT / "firmware_configs" / "demo.toml").read_text()
    path = tmp_path / "table.toml"
    path.write_text(text.replace("[table]\n", '[table]\ncurrency = "USD"\n', 1))
    with pytest.raises(ConfigError, match=r"table\.currency.*USD differs from jackpot\.currency EUR"):
        load_config(path, check_files=False)
