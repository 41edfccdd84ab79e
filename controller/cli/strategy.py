"""``tablectl strategy --profile NAME [--json]``: the basic strategy and house edge of a rule profile
(controller/rules/strategy.py: infinite-shoe model; docs/profiles.md "Basic strategy and house edge")."""

from __future__ import annotations

import argparse
import json
import sys

from controller.rules.profiles import ProfileError, load_profile
from controller.rules.strategy import MOVE_WORDS, VALUES, chart, house_edge

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
    edge, rows = house_edge(profile), chart(profile)
    if args.json:
        out = {
            "profile": profile.name,
            "model": "infinite shoe",
            "house_edge_percent": round(edge.house_edge * 100, 3),
            "rtp_percent": round(edge.rtp * 100, 3),
            "chart": {name: {_up(u): row[u].value for u in VALUES} for name, row in rows.items()},
            "legend": {m.value: w for m, w in MOVE_WORDS.items()},
        }
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{profile.name}: house edge {edge.house_edge * 100:.2f} % (return to the player {edge.rtp * 100:.2f} %),"
    )
    print("basic strategy on an infinite shoe (six or more decks play within about 0.1 point of it)")
    print("hand        " + " ".join(f"{_up(u):>2}" for u in _UP_ORDER) + "   (dealer's up card)")
    for name, row in rows.items():
        print(f"{name:<11} " + " ".join(f"{row[u].value:>2}" for u in _UP_ORDER))
    print("  " + ", ".join(f"{m.value} {w}" for m, w in MOVE_WORDS.items()) + "; insurance never")
    return 0
