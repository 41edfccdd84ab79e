"""The pit terminal's dealer commands: their arguments from the selection and the retained documents, and the
bet the controller last published for a seat, the chips the selector offers (docs/terminal.md)."""

from __future__ import annotations

from typing import Any

from controller.actions import DECLINE_INSURANCE

CHIPS = (100, 500, 1000, 2500, 5000, 10000, 50000, 100000)  # the chip denominations, in minor units


def chips_within(limits: Any) -> tuple[int, ...]:
    """The chips the selector offers: within the open session's bet limits as ``state/table`` publishes them
    (``limits``: ``{min_bet, max_bet}`` in minor units, null without a session: every chip), and multiples of
    the minimum, so that every bet they make is one the table takes (PT-2001 r.14 asks for multiples; no
    profile refuses them). When no chip fits, the minimum itself."""
    lo, hi = 0, CHIPS[-1]
    if isinstance(limits, dict):
        lo = _amount(limits.get("min_bet"), lo)
        hi = _amount(limits.get("max_bet"), hi)
    return tuple(c for c in CHIPS if lo <= c <= hi and (not lo or c % lo == 0)) or (lo or CHIPS[0],)


def _amount(value: Any, default: int) -> int:
    """An amount in minor units from an outside document (an integer, not a bool, not negative), else default."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def shown_bet(table: dict[str, Any], seat: int) -> int:
    """The seat's bet as the controller last published it (state/table, while betting)."""
    bets = table.get("bets")
    held = bets.get(str(seat)) if isinstance(bets, dict) else None
    amount = held.get("amount") if isinstance(held, dict) else 0
    return amount if isinstance(amount, int) and not isinstance(amount, bool) else 0


def dealer_args(action: str, *, seat: int, chip: int, bet_so_far: int, rnd: dict[str, Any]) -> dict[str, Any]:
    """The arguments of dealer command ``action``: ``bet_so_far`` is the seat's bet this terminal last asked
    for, else the one shown (``place_bet`` adds the selected chip to it)."""
    turn = v if isinstance(v := rnd.get("turn"), dict) else {}
    if action == "place_bet":  # the key adds the selected chip to the seat's bet (x clears it)
        return {"seat": seat, "amount": bet_so_far + chip}
    if action in ("clear_bet", "jackpot_chip", "cut"):
        return {"seat": seat}
    if action in ("insurance", DECLINE_INSURANCE, "even_money") and turn.get("seat"):
        args: dict[str, Any] = {"seat": turn["seat"]}
        if action == "insurance":  # insurance is half the main bet (PT-2001 r.26)
            bet = next(
                (s.get("bet", 0) for s in rnd.get("seats") or [] if isinstance(s, dict)
                 and s.get("seat") == turn["seat"]), 0,
            )  # fmt: skip
            args["amount"] = int(bet) // 2 if isinstance(bet, int) else 0
        return args
    return {}
