"""What the table's configuration decides about opening a session (pure; the service applies it).

The configuration is the authority an inspector reads: ``table.profile`` is the rule profile the table is
approved for, ``shoe.mode`` the shoe it has, ``table.min_bet``/``table.max_bet`` the house's limits inside the
profile's (PT-2001 r.14, r.37; checked against the profile by ``controller.config.profile.bet_problems``).
An ``open_table`` without a profile or shuffler takes the configured ones; one that contradicts them is refused
with the reason. The limits reach the core in the profile text the session pins (the ``[bets]`` lines
replaced, the result parsed back and compared), so the core's bet checks and the published ``limits`` are the
table's own.
"""

from __future__ import annotations

import re
from typing import Any

from controller.config.model import TableConfig
from controller.rules.profiles import ProfileError, profile_toml

_BETS_HEADER = re.compile(r"^\s*\[bets\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


class OpenRefused(ValueError):
    """The open_table contradicts the configuration; the message is the reason answered and journaled."""


def open_args(config: TableConfig, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with the configured profile and shuffler filled in; ``OpenRefused`` when they contradict."""
    configured = config.table.profile
    name = args.get("profile")
    if name not in (None, "") and name != configured:
        shown = name[:64] if isinstance(name, str) else repr(name)[:64]
        raise OpenRefused(
            f"this table is configured for {configured} (table.profile); open_table named {shown!r}"
        )
    mode = str(config.shoe.mode)
    shuffler = args.get("shuffler")
    if shuffler not in (None, "") and shuffler != mode:
        shown = shuffler[:32] if isinstance(shuffler, str) else repr(shuffler)[:32]
        raise OpenRefused(
            f"this table's shoe is configured as {mode} (shoe.mode); open_table named {shown!r}"
        )
    return {**args, "profile": configured, "shuffler": mode}


def table_limits(config: TableConfig) -> dict[str, int]:
    """The configured overrides only (``min_bet``/``max_bet`` set in [table])."""
    t = config.table
    return {k: v for k, v in (("min_bet", t.min_bet), ("max_bet", t.max_bet)) if v is not None}


def with_table_limits(profile_text: str, limits: dict[str, int]) -> str:
    """The profile's text with its ``[bets]`` ``min_bet``/``max_bet`` lines set to the table's limits.

    Parsed back and compared with the original: only those values may differ, else ``OpenRefused`` (a
    profile written so the lines cannot be found, e.g. an inline ``bets = {...}``, is refused, never guessed).
    """
    if not limits:
        return profile_text
    lines = profile_text.splitlines(keepends=True)
    in_bets, done = False, set()
    for i, line in enumerate(lines):
        if _ANY_HEADER.match(line):
            in_bets = bool(_BETS_HEADER.match(line))
            continue
        if not in_bets:
            continue
        for key, value in limits.items():
            m = re.match(rf"^(\s*{key}\s*=\s*)\d[\d_]*(.*)$", line.rstrip("\r\n"))
            if m and key not in done:
                ending = line[len(line.rstrip("\r\n")) :]
                lines[i] = f"{m.group(1)}{value}  # table.{key} (the table's configuration){ending}"
                done.add(key)
    text = "".join(lines)
    try:
        before, after = profile_toml(profile_text, source="the rule profile"), profile_toml(text, source="it")
    except ProfileError as exc:
        raise OpenRefused(f"the rule profile cannot take the table's bet limits: {exc}") from None
    want = {**before.get("bets", {}), **limits}
    if after.get("bets") != want or {k: v for k, v in after.items() if k != "bets"} != {
        k: v for k, v in before.items() if k != "bets"
    }:
        raise OpenRefused(
            "the rule profile's [bets] min_bet/max_bet lines were not found for the table's limits"
        )
    return text
