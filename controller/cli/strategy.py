"""``tablectl strategy --profile NAME [--json]``: the house edge of a rule profile for the shoe it deals
(controller/rules/shoe_math.py: the profile's decks, basic strategy and composition-dependent play), the infinite
shoe beside it as a check, and the basic strategy chart (controller/rules/strategy.py; docs/profiles.md "Basic
strategy and house edge")."""

from __future__ import annotations

import argparse
import json
import sys

from controller.rules.profiles import ProfileError, load_profile
from controller.rules.shoe_math import finite_chart, finite_house_edge
from controller.rules.strategy import MOVE_WORDS, VALUES, house_edge

_UP_ORDER = (*range(2, 11), 1)  # columns as the charts print them: 2 .. 10, then the ace


def _up(v: int) -> str:
    return "A" if v == 1 else str(v)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", required=True, help="a shipped profile name or a profile file")
    parser.add_argument("--json", action="store_true", help="print JSON")


def main(args: argparse.Namespace) -> int:
    try:
        profile = load_profile(args.profile)
    except ProfileError as exc:
        print(f"strategy: {exc}", file=sys.stderr)
        return 2
    edge, rows, shoe = house_edge(profile), finite_chart(profile), finite_house_edge(profile)
    if args.json:
        out = {
            "profile": profile.name,
            "decks": shoe.decks,
            "house_edge_percent": round(shoe.basic_strategy * 100, 3),
            "rtp_percent": round(shoe.rtp * 100, 3),
            "composition_dependent_house_edge_percent": round(shoe.composition_dependent * 100, 3),
            "infinite_shoe_house_edge_percent": round(edge.house_edge * 100, 3),
            "chart_model": f"{shoe.decks} decks, basic strategy (total-dependent)",
            "chart": {name: {_up(u): row[u].value for u in VALUES} for name, row in rows.items()},
            "legend": {m.value: w for m, w in MOVE_WORDS.items()},
        }
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{profile.name}, {shoe.decks} decks: house edge {shoe.basic_strategy * 100:.3f} % with basic strategy"
        f" (return to the player {shoe.rtp * 100:.3f} %);"
    )
    print(
        f"  {shoe.composition_dependent * 100:.3f} % playing each hand by its exact cards;"
        f" {edge.house_edge * 100:.3f} % on an infinite shoe (the check)"
    )
    print(f"basic strategy for {shoe.decks} decks (each hand's first two cards):")
    print("hand        " + " ".join(f"{_up(u):>2}" for u in _UP_ORDER) + "   (dealer's up card)")
    for name, row in rows.items():
        print(f"{name:<11} " + " ".join(f"{row[u].value:>2}" for u in _UP_ORDER))
    print("  " + ", ".join(f"{m.value} {w}" for m, w in MOVE_WORDS.items()) + "; insurance never")
    return 0
