"""docs/profile-settings.md (issue 28): every setting of the profile model, with each shipped profile's value and
its book's words, generated from the profile files; nothing the schema or a file declares is left out."""

from __future__ import annotations

import re

from controller.docs_gen import ROOT
from controller.rules.profile_doc import file_settings, render, schema_settings
from controller.rules.profiles import PROFILE_DIR, list_profiles

DOC = ROOT / "docs" / "profile-settings.md"


def _rows(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\| `([a-z0-9_.]+)` \| (.*) \|$", line)
        if m:
            rows[m.group(1)] = re.split(r"(?<!\\)\| ", m.group(2))
    return rows


def test_every_setting_of_the_profile_model_has_a_row_with_each_shipped_profile() -> None:
    rows = _rows(DOC.read_text())
    declared = schema_settings()
    assert (
        "table.dealer_completes_hand" in declared and "payouts.rounding" in declared
    )  # the walk reaches them
    missing = [k for k in declared if k not in rows]
    assert not missing, f"settings missing from docs/profile-settings.md: {missing}"
    assert all(len(cells) == len(list_profiles()) for cells in rows.values())


def test_every_setting_a_shipped_profile_writes_is_shown_with_its_value_and_words() -> None:
    rows = _rows(DOC.read_text())
    names = list_profiles()
    for col, name in enumerate(names):
        for key, (value, words) in file_settings((PROFILE_DIR / f"{name}.toml").read_text()).items():
            if key in ("name", "book", "title"):
                continue  # who the profile is, not a setting
            assert key in rows, f"{name}: {key} not in docs/profile-settings.md"
            cell = rows[key][col]
            assert f"`{value}`" in cell.replace("\\|", "|"), (name, key, cell)
            assert words.replace("|", "\\|") in cell, (name, key, cell)


def test_a_setting_left_out_of_a_file_is_said_to_take_the_default() -> None:
    rows = _rows(render())
    assert rows["table.dealer_second_card_always"][list_profiles().index("pt-2001")].strip() == "not set"
