"""Check the ``[shoe]`` and bet settings against the table's rule profile (``firmware_configs/profiles/``).

The profile is the authority on decks, shuffler kinds, cut card, warning card, burn policy and bet limits
(RULES.md: "where books disagree the table's rule profile decides"); the table configuration must agree with
it or the table is refused. The profile is read by the rules engine's one parser (``controller.rules.profiles``
``parse_profile``: TOML, schema, rules) and compared as the typed ``Profile`` it returns.
"""

from __future__ import annotations

from pathlib import Path

from controller.config.errors import ConfigError, Problem
from controller.config.keys import ShoeMode
from controller.config.model import ShoeConfig, TableSection
from controller.rules.profiles import Profile, ProfileError, ProfileSyntaxError, parse_profile


def profile_path(name: str, profiles_dir: Path) -> Path:
    return profiles_dir / f"{name}.toml"


def read_profile(path: Path, referenced_by: str) -> Profile:
    """Parse and validate the profile; a missing or broken profile is a problem of ``table.profile``."""
    try:
        text = path.read_text(encoding="utf-8")
        return parse_profile(text, source=path.name, path=str(path))
    except FileNotFoundError:
        raise ConfigError.one(
            referenced_by, "table.profile", f"rule profile file not found: {path}"
        ) from None
    except (OSError, UnicodeDecodeError, ProfileSyntaxError) as exc:
        msg = f"cannot read rule profile {path}: {exc}"
        raise ConfigError.one(referenced_by, "table.profile", msg) from None
    except ProfileError as exc:  # names the profile's bad key
        raise ConfigError.one(path, "", f"rule profile is invalid: {exc}") from None


def shoe_problems(shoe: ShoeConfig, profile: Profile, profile_file: Path, file: str) -> list[Problem]:
    """Every disagreement between the shoe settings and the profile, and the profile-independent rules."""
    problems: list[Problem] = []
    src = str(shoe.source) if shoe.source else file
    name = profile_file.name

    def refuse(key: str, reason: str) -> None:
        problems.append(Problem(src, f"shoe.{key}", reason))

    decks = profile.decks
    if shoe.decks != decks:
        refuse("decks", f"{shoe.decks} disagrees with rule profile {name} (decks = {decks})")

    shufflers = list(profile.shoe.shufflers)
    kinds = {"continuous"} if shoe.mode is ShoeMode.CONTINUOUS else {"manual", "automatic"}
    if not kinds & set(shufflers):
        refuse("mode", f"a {shoe.mode} shoe is not allowed by rule profile {name} (shufflers = {shufflers})")

    if shoe.mode is ShoeMode.CONTINUOUS:
        # PT-2001 r.52: an automatic shuffler has no cut and no warning card, whatever the profile says.
        if shoe.cut_card:
            refuse("cut_card", "a continuous shuffler has no cut card (PT-2001 r.52); set cut_card = false")
        if shoe.warning_card_from_end:
            refuse("warning_card_from_end", "a continuous shuffler has no warning card (PT-2001 r.52); set 0")
    else:
        cut = profile.shoe.cut_card
        if shoe.cut_card != (cut != "none"):
            refuse(
                "cut_card", f"{shoe.cut_card} disagrees with rule profile {name} (shoe.cut_card = {cut!r})"
            )
        warn = profile.shoe.warning_card_from_end
        if shoe.warning_card_from_end != warn:
            refuse(
                "warning_card_from_end",
                f"{shoe.warning_card_from_end} disagrees with rule profile {name} (PT-2001 r.9 / MO-2004 "
                f"art.2.1.1: shoe.warning_card_from_end = {warn})",
            )
        if shoe.warning_card_from_end >= shoe.decks * 52:
            refuse(
                "warning_card_from_end",
                f"{shoe.warning_card_from_end} is not inside a {shoe.decks}-deck shoe",
            )

    start = profile.burn.shoe_start  # PT-2001 r.10 "one"; MO-2004 art.4.1 "decks" or "one"
    expected = {"none": 0, "one": 1, "decks": shoe.decks}.get(start)
    if expected is not None and shoe.burn_cards != expected:
        refuse(
            "burn_cards",
            f"{shoe.burn_cards} disagrees with rule profile {name} (burn.shoe_start = {start!r})",
        )
    per_round = profile.burn.per_round  # MO-2004 art.4.2
    if (shoe.burn_each_round > 0) != per_round:
        refuse(
            "burn_each_round",
            f"{shoe.burn_each_round} disagrees with rule profile {name} "
            f"(burn.per_round = {str(per_round).lower()})",
        )
    return problems


def bet_problems(table: TableSection, profile: Profile, file: str) -> list[Problem]:
    """The table's bet overrides against the profile's ratio and multiple rules (PT-2001 r.14, r.37)."""
    lo = table.min_bet if table.min_bet is not None else profile.min_bet
    hi = table.max_bet if table.max_bet is not None else profile.max_bet
    if (
        not (isinstance(lo, int) and isinstance(hi, int))
        or lo <= 0
        or (table.min_bet, table.max_bet) == (None, None)
    ):
        return []
    problems = []
    ratio = profile.max_multiple
    if isinstance(ratio, int) and ratio > 0 and hi > ratio * lo:
        why = f"{hi} is above {ratio} x the minimum {lo} allowed by the rule profile ({profile.cite('max_bet')})"
        problems.append(Problem(file, "table.max_bet", why))
    if profile.multiple_of_min is True and hi % lo:
        why = f"{hi} is not a multiple of the minimum {lo} (rule profile multiple_of_min; {profile.cite('bet_limits')})"
        problems.append(Problem(file, "table.max_bet", why))
    return problems
