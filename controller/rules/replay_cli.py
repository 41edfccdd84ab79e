"""`tablectl replay ROUND.json [--pretty]`: settle a round description and report dealer errors as JSON.

Exit 0 for a valid round (dealer errors included in the output), 1 for an invalid round, 2 if unreadable.
"""

from __future__ import annotations

import argparse
import json
import sys

from controller.rules.rounds import InvalidRound, load_round_file, replay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("round", help="round description (JSON, see docs/rounds.md); '-' reads stdin")
    parser.add_argument("--pretty", action="store_true", help="indent the JSON output")


def main(args: argparse.Namespace) -> int:
    indent = 2 if args.pretty else None
    try:
        doc = json.load(sys.stdin) if args.round == "-" else load_round_file(args.round)
    except (InvalidRound, json.JSONDecodeError) as exc:
        print(f"replay: {exc}", file=sys.stderr)
        return 2
    try:
        result = replay(doc)
    except InvalidRound as exc:
        print(json.dumps({"valid": False, "error": exc.message, "rule": exc.rule}, indent=indent))
        print(f"replay: invalid round: {exc}", file=sys.stderr)
        return 1
    try:
        print(json.dumps(result.to_json(), indent=indent))
    except BrokenPipeError:  # e.g. piped into `head`
        sys.stderr.close()
    return 0
