"""[jackpot] configuration section: PT-2001 r.40, r.41, r.44, r.47."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from controller.jackpot import JackpotError
from controller.jackpot.config import JackpotConfig, Mode

SCHEMA = json.loads((Path(__file__).parents[1] / "schemas" / "config" / "jackpot.schema.json").read_text())

GOOD = {
    "enabled": True,
    "mode": "automatic",
    "bet_value": 100,
    "increment_bp": 5000,
    "reserve_bp": 500,
    "seed": 1_000_000,
    "currency": "EUR",
}


def test_valid_section_parses_and_round_trips() -> None:
    cfg = JackpotConfig.from_dict(GOOD)
    assert cfg.mode is Mode.AUTOMATIC and cfg.seed == 1_000_000
    assert JackpotConfig.from_dict(cfg.to_dict()) == cfg
    jsonschema.validate(GOOD, SCHEMA)


def test_seed_below_10000_bets_refused_naming_seed_pt2001_r44() -> None:
    with pytest.raises(JackpotError, match=r"jackpot\.seed: 999999 .*10000 x bet_value = 1000000.*r\.44"):
        JackpotConfig.from_dict({**GOOD, "seed": 999_999})
    # exactly 10,000 x the bet is allowed
    assert JackpotConfig.from_dict({**GOOD, "seed": 1_000_000}).seed == 1_000_000


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("enabled", "yes"),
        ("mode", "auto"),
        ("bet_value", 0),
        ("bet_value", 1.5),
        ("bet_value", True),
        ("increment_bp", -1),
        ("increment_bp", 10_001),
        ("reserve_bp", 5001),  # 5000 + 5001 > 100 %
        ("seed", "lots"),
        ("currency", "eur"),
        ("currency", "EUR\n"),
    ],
)
def test_bad_value_error_names_the_key(key: str, value: object) -> None:
    with pytest.raises(JackpotError, match=rf"jackpot\.{key}"):
        JackpotConfig.from_dict({**GOOD, key: value})


def test_missing_and_unknown_keys_named() -> None:
    d = dict(GOOD)
    del d["increment_bp"]
    with pytest.raises(JackpotError, match=r"jackpot\.increment_bp: missing"):
        JackpotConfig.from_dict(d)
    with pytest.raises(JackpotError, match=r"unknown key.*percent"):
        JackpotConfig.from_dict({**GOOD, "percent": 5})
    with pytest.raises(JackpotError, match="expected a table"):
        JackpotConfig.from_dict([1, 2])


def test_schema_rejects_what_the_loader_rejects_per_key() -> None:
    for key, value in [("mode", "auto"), ("bet_value", 0), ("currency", "eur"), ("increment_bp", 10_001)]:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**GOOD, key: value}, SCHEMA)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({**GOOD, "extra": 1}, SCHEMA)


values = st.one_of(st.none(), st.booleans(), st.integers(-(10**12), 10**12), st.text(max_size=5), st.floats())


@settings(deadline=None)  # the first jsonschema call warms caches; no timing in tests
@given(st.dictionaries(st.sampled_from([*GOOD, "other"]), values))
def test_arbitrary_sections_give_a_config_or_a_named_error(d: dict[str, object]) -> None:
    """Property: never a crash; an accepted config satisfies r.44 and the schema."""
    try:
        cfg = JackpotConfig.from_dict(d)
    except JackpotError as exc:
        assert str(exc).startswith("jackpot")
        return
    assert cfg.seed >= 10_000 * cfg.bet_value
    jsonschema.validate(cfg.to_dict(), SCHEMA)


@given(st.integers(1, 10_000), st.integers(0, 200_000_000))
def test_seed_rule_matches_exactly(bet_value: int, seed: int) -> None:
    """PT-2001 r.44: accepted iff seed >= 10,000 x bet_value."""
    ok = seed >= 10_000 * bet_value
    try:
        JackpotConfig.from_dict({**GOOD, "bet_value": bet_value, "seed": seed})
        assert ok
    except JackpotError:
        assert not ok


@pytest.mark.parametrize("name", ["table.example.toml", "demo.toml"])
def test_shipped_table_configs_jackpot_sections_are_valid(name: str) -> None:
    import tomllib

    data = tomllib.loads((Path(__file__).parents[1] / "firmware_configs" / name).read_text())
    cfg = JackpotConfig.from_dict(data["jackpot"])
    assert cfg.seed >= 10_000 * cfg.bet_value


@pytest.mark.parametrize(
    "extra",
    [{}, {"correction_ceiling": 2_000_000, "correction_max_change": 5_000, "correction_confirm_s": 60}],
)
def test_to_dict_is_what_asdict_made(extra: dict[str, object]) -> None:
    """to_dict (in every input's rollback copy) gives exactly the dict ``dataclasses.asdict`` gave, ``mode`` as
    its text and unset optional keys left out."""
    from dataclasses import asdict

    cfg = JackpotConfig.from_dict({**GOOD, **extra})
    expected = {**asdict(cfg), "mode": "automatic"}
    expected = {k: v for k, v in expected.items() if v is not None}
    d = cfg.to_dict()
    assert d == expected and list(d) == list(expected) and type(d["mode"]) is str
