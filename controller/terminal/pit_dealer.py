"""The pit terminal's dealer commands: their arguments from the selection and the retained documents, and the
bet the controller last published for a seat (docs/terminal.md)."""

from __future__ import annotations

from typing import Any

from controller.actions import DECLINE_INSURANCE


def shown_bet(table: dict[str, Any], seat: int) -> int:
    """The seat's bet as the controller last published it (state/table, while betting)."""
    bets = table.get("bets")
    held = bets.get(str(seat)) if isinstance(bets, dict) else None
    amount = held.get("amount") if isinstance(held, dict) else 0
    return amount if isinstance(amount, int) and not isinstance(amount, bool) else 0


def dealer_args(action: str, *, seat: int, chip: int, bet_so_far: int, rnd: dict[str, Any]) -> dict[str, Any]:
    """The arguments of dealer command ``action``: ``bet_so_far`` is the seat's bet this terminal last asked
    for, else the one shown (``place_bet`` adds the selected chip to it)."""
    turn = rnd.get("turn") if isinstance(rnd.get("turn"), dict) else {}
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
