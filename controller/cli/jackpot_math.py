"""`tablectl jackpot-math`: exact jackpot combination probabilities and returns (PT-2001 r.42-44)."""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

from controller.data import PROFILES_DIR
from controller.jackpot.config import MIN_SEED_MULTIPLE
from controller.jackpot.math import (
    Odds,
    break_even_meter,
    combination_odds,
    long_run_return,
    meter_drift_per_bet,
    return_at_meter,
)
from controller.rules.profiles import Profile, ProfileError, load_profile
from controller.words import COMBINATION_WORDS, money, words


class CliError(Exception):
    pass


def profile_decks(name: str, profiles_dir: Path = PROFILES_DIR) -> int:
    """Deck count of a rule profile, read by the rules engine's one profile parser."""
    return _profile(name, profiles_dir).decks


def profile_reading(name: str, profiles_dir: Path = PROFILES_DIR) -> str:
    """The profile's reading of PT-2001 r.43c "ases de naipes diferentes" (`jackpot.different_suits`)."""
    return _profile(name, profiles_dir).jackpot_different_suits


def _profile(name: str, profiles_dir: Path) -> Profile:
    path = profiles_dir / f"{name}.toml"
    if not path.is_file():
        raise CliError(f"profile {name!r}: no file {path}")
    try:
        return load_profile(str(path))
    except (OSError, ProfileError) as exc:  # the parser names what is wrong; report it, never a traceback
        raise CliError(f"profile {name!r}: {exc}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", default="pt-2001", help="rule profile: deck count, reading of r.43c")
    parser.add_argument("--decks", type=int, help="deck count (overrides the profile)")
    parser.add_argument(
        "--bet-value", type=int, help="jackpot bet in cents, e.g. 100 for 1.00 (PT-2001 r.47)"
    )
    parser.add_argument("--increment-bp", type=int, help="share of the bet to the meter, basis points (r.40)")
    parser.add_argument("--reserve-bp", type=int, default=0, help="share to the reserve pool, basis points")
    parser.add_argument(
        "--seed", type=int, help="meter starting value in cents (at least 10,000 x the bet, r.44)"
    )
    parser.add_argument(
        "--meter", type=int, help="meter value for the return at a given meter (default: seed)"
    )
    parser.add_argument("--currency", help="ISO 4217 code the amounts are written with (text output)")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object for scripts (amounts in cents: 100 is 1.00)",
    )


def _num(x: Fraction) -> dict[str, Any]:
    return {"fraction": f"{x.numerator}/{x.denominator}", "decimal": float(x), "one_in": _one_in(x)}


def _one_in(x: Fraction) -> float | None:
    return None if x == 0 else float(1 / x)


def report(odds: Odds, args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {
        "decks": odds.decks,
        "model": "first 4 cards of a seat from a full shoe, without replacement; highest combination only",
        "combinations": {
            c.name: {"label": words(COMBINATION_WORDS, c), "multiplier": c.multiplier, **_num(p)}
            for c, p in odds.probabilities.items()
        },
        "hit_frequency": _num(odds.hit_frequency),
        "fixed_prizes_ev_bets": _num(odds.fixed_ev),
    }
    if args.bet_value is not None:
        bet = args.bet_value
        if bet <= 0:
            raise CliError("--bet-value must be a positive integer (minor units)")
        be = break_even_meter(odds, bet)
        out["bet_value_minor"] = bet
        out["break_even_meter"] = None if be is None else {"minor_units": float(be), "fraction": str(be)}
        if args.seed is not None:
            if args.seed < MIN_SEED_MULTIPLE * bet:
                raise CliError(
                    f"--seed {args.seed} is below {MIN_SEED_MULTIPLE} x bet = {MIN_SEED_MULTIPLE * bet}"
                )
            meter = args.seed if args.meter is None else args.meter
            out["seed_minor"] = args.seed
            out["return_at_meter"] = {"meter_minor": meter, **_num(return_at_meter(odds, bet, meter))}
            if args.increment_bp is not None:
                bps = (args.increment_bp, args.reserve_bp)
                if min(bps) < 0 or sum(bps) > 10_000:  # PT-2001 r.40: shares of the bet
                    raise CliError("--increment-bp/--reserve-bp must be basis points summing to 0..10000")
                out["increment_bp"], out["reserve_bp"] = args.increment_bp, args.reserve_bp
                lr = long_run_return(odds, bet, args.increment_bp, args.reserve_bp, args.seed)
                out["long_run_return"] = _num(lr)
                out["meter_drift_per_bet_minor"] = float(meter_drift_per_bet(odds, bet, args.increment_bp))
    return out


def _text(r: dict[str, Any], currency: str | None = None) -> str:
    """For people: the combinations in words (controller/words.py), amounts in money (major units)."""
    lines = [f"decks: {r['decks']}  ({r['model']})", ""]
    lines.append(f"{'combination':<32} {'pays':>6} {'probability':>16} {'1 in':>14}  exact")
    for c in r["combinations"].values():
        pays = "100 %" if c["multiplier"] is None else f"{c['multiplier']}x"
        one_in = "never" if c["one_in"] is None else f"{c['one_in']:,.1f}"
        lines.append(f"{c['label']:<32} {pays:>6} {c['decimal']:>16.10f} {one_in:>14}  {c['fraction']}")
    hf = r["hit_frequency"]
    lines.append(f"hit frequency per seat-round: {hf['decimal']:.10f} (1 in {hf['one_in']:,.1f})")
    lines.append(f"fixed prizes EV: {r['fixed_prizes_ev_bets']['decimal']:.6f} bets per jackpot bet")
    if "bet_value_minor" in r:
        lines.append(f"jackpot bet: {money(r['bet_value_minor'], currency)}")
    if "break_even_meter" in r:
        be = r["break_even_meter"]
        shown = "n/a (top prize impossible)" if be is None else money(round(be["minor_units"]), currency)
        lines.append(f"break-even meter (return 100 %): {shown}")
    if "return_at_meter" in r:
        rm = r["return_at_meter"]
        lines.append(f"return at meter {money(rm['meter_minor'], currency)}: {rm['decimal'] * 100:.4f} %")
    if "long_run_return" in r:
        lines.append(
            f"long-run return (increment {r['increment_bp']} bp + reserve {r['reserve_bp']} bp"
            f" + seed per top hit): {r['long_run_return']['decimal'] * 100:.4f} %"
        )
        drift = r["meter_drift_per_bet_minor"]
        note = "" if drift >= 0 else "  (the meter drifts DOWN between top hits: increment < fixed prizes)"
        cents = Fraction(drift).limit_denominator(10**6)
        shown = f"{'+' if cents >= 0 else '-'}{abs(float(cents)) / 100:,.4f}"  # sub-cent: four decimals
        lines.append(
            f"meter drift per bet between top hits: {shown}{f' {currency}' if currency else ''}{note}"
        )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    try:
        decks = args.decks if args.decks is not None else profile_decks(args.profile)
        if decks < 1:
            raise CliError(f"--decks must be a positive integer, got {decks}")
        r = report(combination_odds(decks, profile_reading(args.profile)), args)
    except CliError as exc:
        print(f"jackpot-math: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(r, indent=2) if args.json else _text(r, getattr(args, "currency", None)))
    return 0
