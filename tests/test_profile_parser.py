"""One parser of rule profiles (issue 17): ``controller.rules.profiles`` (``profile_toml``, ``parse_profile``,
``load_profile``) is the only code that turns a profile's TOML into data. Everything else asks it, so a profile
means the same to the core, the configuration checks, the service and the tools."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from controller.config.opening import OpenRefused, with_table_limits
from controller.data import PROFILES_DIR
from controller.rules.profiles import (
    ProfileError,
    ProfileSyntaxError,
    load_profile,
    parse_profile,
    profile_toml,
)

ROOT = Path(__file__).resolve().parent.parent
# The modules that read TOML that is not a rule profile, and what they read.
OTHER_TOML = {
    "controller/bench/config.py": "the bench's own settings",
    "controller/bench/rig.py": "the bench's users file",
    "controller/broker.py": "the broker accounts file",
    "controller/config/load.py": "the table configuration",
    "controller/mqtt/floor_bridge.py": "the floor bridge's configuration",
    "floor/cli/bridge.py": "(its error type only)",
    "floor/common/layout.py": "the floor's layout (pits and areas)",
    "floor/progressive/config.py": "a linked progressive's link.toml",
    "controller/mqtt/client_options.py": "a pit terminal's or console's client configuration",
    "controller/mqtt/auth.py": "the supervisors' credentials file",
    "controller/stack.py": "the demo's table configuration",
    "controller/layers_doc.py": "pyproject.toml's import contract, for the drawing",
    "drivers/emulator/scenario.py": "an emulated shoe's scenario",
}


def _tomllib_users() -> set[str]:
    users = set()
    for package in ("controller", "drivers", "floor"):
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom)
                    else []
                )
                if any(n == "tomllib" or n.startswith("tomllib.") for n in names):
                    users.add(path.relative_to(ROOT).as_posix())
    return users


def test_only_the_rules_engine_parses_profile_toml() -> None:
    users = _tomllib_users()
    assert "controller/rules/profiles.py" in users
    unexpected = users - set(OTHER_TOML) - {"controller/rules/profiles.py"}
    assert not unexpected, f"read a rule profile with controller.rules.profiles, not tomllib: {unexpected}"


def test_a_profile_text_and_its_file_give_the_same_profile() -> None:
    path = PROFILES_DIR / "pt-2001.toml"
    from_text = parse_profile(path.read_text(encoding="utf-8"), source=path.name, path=str(path))
    assert from_text == load_profile("pt-2001")
    assert from_text.decks == 6  # PT-2001 r.3


def test_not_toml_and_a_bad_key_are_told_apart() -> None:
    with pytest.raises(ProfileSyntaxError, match=r"x\.toml: not valid TOML"):
        profile_toml("decks = \n", source="x.toml")
    text = (
        (PROFILES_DIR / "pt-2001.toml").read_text(encoding="utf-8").replace("decks = 6", "decks = 'six'", 1)
    )
    with pytest.raises(ProfileError, match="key decks") as bad:
        parse_profile(text, source="x.toml")
    assert not isinstance(bad.value, ProfileSyntaxError)


def test_the_opening_refuses_limits_it_cannot_write_through_the_same_parser() -> None:
    with pytest.raises(OpenRefused, match="not valid TOML"):
        with_table_limits("[bets]\nmin_bet = 100\nmax_bet = \n", {"min_bet": 200})
