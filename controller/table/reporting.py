"""What the table publishes: pure projections of the core's state onto the MQTT documents (docs/mqtt.md).

Two rules shape these documents:
- nothing reveals a card still inside the shoe (only counts of what is inside);
- the dealer's hole card (PT-2001 r.17: dealt face down) is withheld from every published document until the
  dealer turns it over: its card event carries ``hidden: true`` and no code, and the round state shows it as
  ``"??"``. The journal keeps the real card (it is not published).
Hand indices are 0-based everywhere (0 = the original hand, split hands 1, 2, …), as in `tablectl replay`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.actions import command_name
from controller.rules.hands import hand_value

if TYPE_CHECKING:
    from controller.rules.engine import RoundEngine
    from controller.rules.types import Turn
    from controller.table.rounds import RoundTracker

HIDDEN_CARD = "??"


def recipient_text(recipient: object) -> str:
    """'seat:3:0', 'dealer', 'burn', 'held' (PT-2001 r.18) or 'void'."""
    if isinstance(recipient, dict) and "seat" in recipient:
        return f"seat:{recipient['seat']}:{recipient.get('hand', 0)}"
    if recipient in ("dealer", "burn", "held", "void"):
        return str(recipient)
    return "void"


def hole_card_hidden(engine: RoundEngine | None) -> bool:
    """True while the dealer's face-down second card must stay unpublished (PT-2001 r.17)."""
    if engine is None or not engine.profile.hole_card or len(engine.dealer) < 2:
        return False
    return str(getattr(engine.phase, "value", engine.phase)) not in ("dealer", "complete")


def is_hole_card(engine: RoundEngine, entry: dict[str, Any]) -> bool:
    """The card just dealt is the dealer's face-down second card, still unrevealed (PT-2001 r.17)."""
    return entry.get("recipient") == "dealer" and len(engine.dealer) == 2 and hole_card_hidden(engine)


def card_event(round_id: str, entry: dict[str, Any], *, hidden: bool) -> dict[str, Any]:
    """Data of an ``events/card`` message for one card out of the shoe."""
    data: dict[str, Any] = {
        "round_id": round_id,
        "shoe_seq": entry["shoe_seq"],
        "face_up": entry["face_up"],
        "recipient": recipient_text(entry["recipient"]),
        "counts": bool(entry["counts"]),
    }
    if hidden:
        data["hidden"] = True  # the hole card: revealed by an events/round "hole_card_revealed"
    else:
        code = entry["card"]
        data.update(code=code, rank=code[0], suit=code[1])
    if entry.get("errors"):
        data["errors"] = entry["errors"]
    return data


def _phase(engine: RoundEngine) -> str:
    return str(getattr(engine.phase, "value", engine.phase))


def round_state(
    tracker: RoundTracker | None,
    *,
    void: bool,
    contestable: bool,
    allowed: Callable[[], list[str]] | None = None,
) -> dict[str, Any]:
    """Data of the retained ``state/round``: seats, hands, dealer, whose turn and which inputs are allowed.
    ``allowed``: the engine's ``allowed_commands``, when the caller already has them (read, never changed)."""
    if tracker is None:
        return {"round_id": None, "phase": "none"}
    engine = tracker.engine
    hide = hole_card_hidden(engine)
    seats = []
    for seat_no, st in engine.seats.items():
        hands = []
        for idx, h in enumerate(st.hands):
            value = h.value
            hands.append(
                {
                    "hand": idx,
                    "cards": [str(c) for c in h.cards],
                    "total": value.total,
                    "soft": value.soft,
                    "blackjack": h.blackjack,
                    "stake": h.stake,
                    "doubled": h.doubled,
                    "status": h.status,
                }
            )
        seats.append(
            {
                "seat": seat_no,
                "bet": st.bet.amount,
                "side_bets": dict(st.bet.side_bets),
                "jackpot_chip": bool(st.bet.jackpot_chip),
                "insurance": st.insurance,
                "hands": hands,
            }
        )
    dealer_cards = [str(c) for c in engine.dealer]
    if hide:
        dealer_cards[1] = HIDDEN_CARD
    shown = engine.dealer[:1] if hide else engine.dealer
    turn = engine.turn()
    return {
        "round_id": tracker.round_id,
        "phase": "void" if void else _phase(engine),
        "seats": seats,
        "dealer": {
            "cards": dealer_cards,
            "total": hand_value(shown).total if shown else 0,
            "hole_card_hidden": hide,
        },
        "turn": _turn(turn),
        "allowed_actions": [] if void else allowed() if allowed is not None else allowed_commands(engine),
        "complete": engine.is_complete(),
        "contestable": contestable,  # PT-2001 r.62: final but open to complaint until the cards go in
        "dealer_errors": [
            {"rule": e.rule, "message": e.message, "card": str(e.card) if e.card else None}
            for e in engine.dealer_errors
        ],
    }


def allowed_commands(engine: RoundEngine) -> list[str]:
    """The dealer inputs the rules allow now, by their command names (the pit terminal enables these)."""
    names = (str(getattr(a, "value", a)) for a in engine.allowed_actions())
    return sorted(command_name(n) for n in names)


def _turn(turn: Turn | None) -> dict[str, Any] | None:
    """{"kind": "player", "seat": 2, "hand": 0} | {"kind": "insurance", "seat": 1} | {"kind": "dealer"}."""
    if turn is None:
        return None
    out: dict[str, Any] = {"kind": str(turn.kind)}
    if turn.seat is not None:
        out["seat"] = turn.seat
        if turn.kind == "player":
            out["hand"] = turn.hand
    return out


def settlement_event(round_id: str, settlement: dict[str, Any]) -> dict[str, Any]:
    return {"round_id": round_id, **settlement}
