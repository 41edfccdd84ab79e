"""The pit terminal's supervisor keys: the argument the credential prompt proposes, and the signed command(s) a
confirmed credential sends on ``cmd/supervisor`` (docs/terminal.md)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from controller.client import TableClient
from controller.plain import clean
from controller.terminal.credentials import Credential
from controller.terminal.pit_rules import game_name, profile_of_game
from controller.words import ACTION_WORDS, RANK_FACES, SUIT_SYMBOLS, card_face, money, words

SupervisorCall = Callable[[], Awaitable[Any]]


class SupervisorArgumentError(Exception):
    """The prompt's argument cannot be sent; ``str(exc)`` is the refusal the terminal shows."""


CORRECTION_ACTIONS = ("jackpot_correct", "jackpot_correct_confirm")  # dual control (docs/jackpot.md)


def supervisor_default(
    action: str,
    profile: str,
    alerts_open: list[Any],
    hits: list[dict[str, Any]],
    correction: dict[str, Any] | None = None,
) -> str:
    """What the prompt proposes: the profile to open, the open alerts' ids, the first pending jackpot hit, the
    correction awaiting its second supervisor (``correction``: state/jackpot ``pending_correction``)."""
    default = game_name(profile) if action == "open_table" else ""  # the game by its name, not its id
    if action == "jackpot_correct_confirm":
        cid = (correction or {}).get("correction_id")
        default = str(cid) if isinstance(cid, int) and not isinstance(cid, bool) else ""
    elif action == "jackpot_correct":
        pass  # nothing to propose: the supervisor types the new meter and the reason
    elif action == "ack_alert":
        default = ",".join(str(a.get("alert_id")) for a in alerts_open if isinstance(a, dict))
    elif action.startswith("jackpot_") and hits:
        default = str(hits[0].get("hit_id"))
    return default


def correction_prompt(
    action: str, label: str | None, correction: dict[str, Any] | None, currency: str | None
) -> str | None:
    """The confirming supervisor sees what he confirms: who asked, the meter now and after, the reason."""
    if action != "jackpot_correct_confirm" or not correction:
        return label
    old, new = correction.get("old_meter"), correction.get("value")
    return (
        f"confirm correction {correction.get('correction_id')} asked by {clean(str(correction.get('by')), 32)}: "
        f"meter {money(old, currency)} -> {money(new, currency)} ({clean(str(correction.get('reason')), 80)})"
    )


def supervisor_call(
    action: str, cred: Credential, sup: TableClient, profile: str, alerts_open: list[Any]
) -> SupervisorCall:
    """The signed command(s) for ``action`` with the prompt's argument; ``SupervisorArgumentError`` if the
    argument is not what the action takes."""
    what = words(ACTION_WORDS, action)
    if action == "ack_alert":
        try:
            ids = [int(x) for x in cred.arg.replace(" ", "").split(",") if x]
        except ValueError:
            raise SupervisorArgumentError(
                f"refused: {what}: alert ids must be whole numbers, got {cred.arg!r}"
            ) from None
        ids = ids or [a["alert_id"] for a in alerts_open
                      if isinstance(a, dict) and isinstance(a.get("alert_id"), int)]  # fmt: skip

        async def ack_all() -> dict[str, Any]:
            for alert_id in ids:
                await sup.supervisor(cred.user, cred.pin, "ack_alert", alert_id=alert_id)
            return {"acknowledged": ids}

        return ack_all
    args: dict[str, Any] = {}
    if action == "jackpot_correct":
        value, _, reason = cred.arg.strip().partition(" ")
        if not value.isascii() or not value.isdigit() or len(value) > 15 or not reason.strip():
            raise SupervisorArgumentError(
                f"refused: {what}: type the new meter in minor units, then the reason (e.g. 150000 void round),"
                f" got {cred.arg[:60]!r}"
            )
        args.update(value=int(value), reason=reason.strip())
    elif action == "jackpot_correct_confirm":
        if not cred.arg.isascii() or not cred.arg.isdigit() or len(cred.arg) > 9:
            raise SupervisorArgumentError(
                f"refused: {what}: the correction id must be a whole number, got {cred.arg[:40]!r}"
            )
        args["correction_id"] = int(cred.arg)
    elif action == "open_table":
        args["profile"] = profile_of_game(cred.arg) if cred.arg else profile
    elif (
        action == "replace_card"
    ):  # PT-2001 r.51: the card the chief inspector puts in the damaged one's place
        code = card_code(cred.arg)
        if code is None:
            raise SupervisorArgumentError(
                f"refused: {what}: type the replacement card as on its face, e.g. K♠, KS or 10H,"
                f" got {cred.arg[:20]!r}"
            )
        args["card"] = code
    elif action.startswith("jackpot_"):
        if not cred.arg.isdigit():
            raise SupervisorArgumentError(
                f"refused: {what}: the jackpot hit id must be a whole number, got {cred.arg!r}"
            )
        args["hit_id"] = int(cred.arg)
    return lambda: sup.supervisor(cred.user, cred.pin, action, **args)


_RANK_INPUT = {face: rank for rank, face in RANK_FACES.items()} | {"T": "T"}
_SUIT_INPUT = {symbol: suit for suit, symbol in SUIT_SYMBOLS.items()} | {s: s for s in SUIT_SYMBOLS}


def card_code(text: str) -> str | None:
    """The card a person typed, as its code: 'K♠', 'ks', 'KS', '10♥', '10h', 'TH' -> 'KS', 'TH'; None for
    anything that is not one card."""
    typed = "".join(text.split()).upper()
    if not 2 <= len(typed) <= 3:
        return None
    rank, suit = _RANK_INPUT.get(typed[:-1]), _SUIT_INPUT.get(typed[-1])
    if rank is None or suit is None:
        return None
    code = rank + suit
    return code if card_face(code) != code else None
