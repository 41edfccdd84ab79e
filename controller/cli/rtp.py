"""`tablectl rtp --decks 6`: exact RTP of perfect pairs and insurance (IT) for a deck count."""

from __future__ import annotations

import argparse
import json
import sys

from controller.rules.rtp import as_percent, insurance_rtp, perfect_pairs_probabilities, perfect_pairs_rtp


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--decks", type=int, default=6, help="decks in the pack (default 6, IT)")
    parser.add_argument("--json", action="store_true", help="print JSON (exact fractions as strings)")


def main(args: argparse.Namespace) -> int:
    if not 1 <= args.decks <= 16:
        print(f"rtp: --decks must be 1-16, got {args.decks}", file=sys.stderr)
        return 2
    pp, ins = perfect_pairs_rtp(args.decks), insurance_rtp(args.decks)
    if args.json:
        probs = {k: str(v) for k, v in perfect_pairs_probabilities(args.decks).items()}
        out = {
            "decks": args.decks,
            "perfect_pairs": {"rtp": str(pp), "percent": as_percent(pp), "probabilities": probs},
            "insurance": {"rtp": str(ins), "percent": as_percent(ins)},
        }
        print(json.dumps(out, indent=2))
        return 0
    print(f"decks: {args.decks}")
    print(f"perfect pairs RTP: {as_percent(pp)} % (exactly {pp})")
    print(f"insurance RTP:     {as_percent(ins)} % (exactly {ins})")
    return 0
