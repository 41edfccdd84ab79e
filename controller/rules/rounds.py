"""Round files (docs/rounds.md): validate, then replay them through the RoundEngine the live table uses."""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from controller.data import data_path
from controller.rules.cards import RANKS, SUITS, Card, CardError
from controller.rules.engine import RoundEngine
from controller.rules.errors import RulesError
from controller.rules.profile_model import Profile
from controller.rules.profiles import ProfileError, load_profile
from controller.rules.round_state import BLACKJACK, OPEN, STOOD
from controller.rules.settlement import Settlement
from controller.rules.types import (
    INSURANCE_ACTIONS,
    Action,
    Recipient,
    RoundError,
    RoundPhase,
    RuleViolation,
    SeatBet,
)

SCHEMA_PATH = data_path("schemas", "round.schema.json")


class InvalidRound(RulesError, ValueError):
    """A round file that cannot be replayed: the message names the card or decision, `rule` the rule."""

    def __init__(self, message: str, rule: str | None = None) -> None:
        super().__init__(f"{message} ({rule})" if rule else message)
        self.message = message
        self.rule = rule


@dataclass(frozen=True)
class ReplayResult:
    engine: RoundEngine
    settlement: Settlement

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": True,
            "profile": self.engine.profile.name,
            "settlement": self.settlement.to_json(),
            "dealer_errors": [e.to_json() for e in self.engine.dealer_errors],
            # Where every card went (a hand, the dealer, burn, held or void), in shoe order, and the
            # decisions as applied (implicit hits / stands included): what the engine understood of the file.
            "cards": [{"card": c["card"], "to": c["recipient"]} for c in self.engine.description()["cards"]],
            "decisions": [
                {k: d[k] for k in ("seat", "hand", "player", "action", "amount", "implicit") if k in d}
                for d in self.engine.description()["decisions"]
            ],
        }


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))


def load_round_file(path: str | Path) -> object:
    """The JSON document in a round file, as written there (untrusted: `validate_round` checks it)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidRound(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidRound(f"{path}: not valid JSON: {exc}") from exc


def validate_round(doc: Any) -> None:
    if isinstance(doc, dict) and isinstance(doc.get("cards"), list):
        for i, c in enumerate(doc["cards"], 1):
            code = c.get("card") if isinstance(c, dict) else c
            why = card_code_problem(code)
            if why is not None:
                raise InvalidRound(f"card #{i} {_show(code)}: {why}")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        raise InvalidRound(f"round file: at {where}: {err.message}")


def _show(value: Any) -> str:
    """A value from the file, quoted and bounded (the file is untrusted)."""
    text = repr(value) if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def card_code_problem(code: Any) -> str | None:
    """What is wrong with a card code, in words ("unknown suit X"), or None when it is a card."""
    if not isinstance(code, str):
        return f"a card is a string like 'AS' or 'TD', not {type(code).__name__}"
    if code != code.strip() or not code:
        return "empty or padded with spaces: write rank then suit, like 'AS' or 'TD'"
    text = code.upper()
    rank, suit = (text[:2], text[2:]) if text.startswith("10") else (text[:1], text[1:])
    if rank != "10" and rank not in RANKS:
        return f"unknown rank {code[: len(rank)]} (ranks: A 2-9 T or 10 J Q K)"
    if not suit:
        return "no suit (suits: S H D C)"
    if len(suit) > 1:
        return f"{suit!r} after the rank: one suit letter expected (S H D C)"
    if suit not in SUITS:
        return f"unknown suit {code[-1]} (suits: S H D C)"
    return None


def _card_owed(engine: RoundEngine) -> bool:
    """A hand asked for a card (hit, double, split) that has not come yet: listed after that decision, a
    surrender comes after the additional card (PT-2001 r.36, MO-2004 art.18.2)."""
    nxt = engine.next_hand()
    if nxt is None or engine.phase is not RoundPhase.PLAYERS:
        return False
    seat, hand = nxt.place
    return engine.seats[seat].hands[hand].needs_card


def _decision_ready(engine: RoundEngine, action: Action, seat: int, hand: int) -> bool:
    """Whether the decision at the head of the list applies now (else the next card comes first)."""
    if engine.phase is RoundPhase.INSURANCE and action in INSURANCE_ACTIONS:
        return True
    if action is Action.SURRENDER and engine.surrender_window_open and not _card_owed(engine):
        return True  # PT-2001 r.36: surrenders are decided right after the first two cards
    if engine.phase is RoundPhase.INSURANCE:  # a hand decision closes the insurance window
        return engine.next_hand() == Recipient.player(seat, hand)
    t = engine.turn()
    return engine.phase is RoundPhase.PLAYERS and t is not None and (t.seat, t.hand) == (seat, hand)


def replay(doc: dict[str, Any], *, profiles: Callable[[str], Profile] = load_profile) -> ReplayResult:
    """Replay a round description; raises InvalidRound naming the offending card or decision. ``profiles``: how its
    profile is found (a round file: a name or a path; a document from a table: ``known_profile``, names only)."""
    validate_round(doc)
    try:
        profile = profiles(doc["profile"])
    except ProfileError as exc:
        raise InvalidRound(f"profile: {exc}") from exc
    bets = [
        SeatBet(
            b["seat"],
            b["amount"],
            dict(b.get("side_bets", {})),
            bool(b.get("jackpot_chip", False)),
            b.get("player"),
            b.get("pair_bet_on"),
        )
        for b in doc["bets"]
    ]
    burns = doc.get("burn_before_deal")
    written = "burn_before_deal"
    marked = _leading_burns(doc["cards"])
    if burns is not None and marked > burns:
        # Both written and they disagree: the marked cards were burnt, so the round burnt more than it says; the
        # book's burn rule decides, not a silent void of the extra one (PT-2001 r.10, MO-2004 art.4).
        raise InvalidRound(
            f"burn_before_deal says {burns} card(s) but the file marks {marked} leading card(s) as burnt; "
            f"{profile.name} burns "
            + " or ".join(str(n) for n in sorted(_burns_allowed(profile)))
            + " before a round: write the burns once",
            profile.cite("burn"),
        )
    if burns is None:
        # Burns written as leading cards marked "to": "burn" are counted and checked like a written number:
        # two leading burns where the book burns one are the same invalid round as burn_before_deal: 2.
        burns, written = _leading_burns(doc["cards"]), "leading burn cards"
    # The profile says how many cards may be burnt before a round: none, the per-round burn, or the
    # shoe-start burn (PT-2001 r.10: one; MO-2004 art.4.1-4.2: one or as many as decks, one per round; the
    # online books burn nothing).
    allowed = _burns_allowed(profile)
    if burns not in allowed:
        raise InvalidRound(
            f"{written}: {burns} card(s), but {profile.name} burns "
            + " or ".join(str(n) for n in sorted(allowed))
            + " before a round",
            profile.cite("burn"),
        )
    first_of_game = doc.get("first_of_game")
    if first_of_game is None:
        # MO-2004 art.4.1-4.2: the shoe-start burns ("antes do início do jogo") are told apart from the per-round
        # burn by their number; after them comes the first card of the game (art.5.1.1).
        shoe_start = profile.burn_before_round(shoe_start=True)
        first_of_game = bool(burns) and burns == shoe_start != profile.burn_before_round(shoe_start=False)
    try:
        engine = RoundEngine(profile, bets, burn_before_deal=burns, first_of_game=first_of_game)
    except RoundError as exc:
        raise InvalidRound(f"bets: {exc.message}", exc.rule) from exc
    cards = deque(enumerate(doc["cards"], 1))
    decisions = deque(enumerate(doc.get("decisions", []), 1))
    # A file with `after_cards` / `implicit` (written by description()) is replayed exactly. A hand-written
    # file lists decisions only: a hand with no decision left in the file stands when a card comes.
    exact = any("after_cards" in d or "implicit" in d for _, d in decisions)
    fed = 0
    while cards or decisions:
        if decisions:
            i, d = decisions[0]
            action, seat, hand = Action(d["action"]), d["seat"], d.get("hand", 0)
            at = d.get("after_cards")
            if at is not None and at < fed:
                raise InvalidRound(
                    f"decision #{i} ({action}) comes after {at} cards, but {fed} were already out"
                )
            if at is not None:
                ready = at == fed
            elif d.get("player") is not None:
                # a co-bettor's decision follows the titular's, in file order (PT-2001 r.15)
                ready = engine.phase is not RoundPhase.INITIAL_DEAL
            else:
                ready = _decision_ready(engine, action, seat, hand)
            if ready or not cards:
                decisions.popleft()
                if d.get("implicit") and action is Action.HIT and cards:
                    _feed_card(engine, *cards.popleft())  # the hand drew without asking first
                    fed += 1
                else:
                    _apply_decision(engine, i, d, action, seat, hand)
                continue
        if not exact and _implicit_stand(engine, decisions):
            continue
        if decisions and not exact:
            if _redundant_stand(engine, decisions[0][1]):
                decisions.popleft()
                continue
            _refuse_if_stale(engine, *decisions[0])
        i, c = cards.popleft()
        _feed_card(engine, i, c)
        fed += 1
    engine.close_insurance()  # no insurance decision recorded for a seat: it declined
    # Hand-written files: no card left and no decision left, so each hand still to play stood (no card came
    # out for it). A hand that may not stand, or a dealer still owed a card, leaves the round incomplete.
    while not exact and _implicit_stand(engine, decisions):
        pass
    if not engine.is_complete():
        raise InvalidRound(_incomplete(engine))
    return ReplayResult(engine, engine.settle())


def _redundant_stand(engine: RoundEngine, d: dict[str, Any]) -> bool:
    """A hand-written `stand` for a hand that already stood by itself (21, a double's card, split aces) or is a
    blackjack: it says what happened, nothing to apply (PT-2001 r.18: no card on 21)."""
    if d["action"] != "stand" or d.get("player") is not None:
        return False
    st, hand = engine.seats.get(d["seat"]), d.get("hand", 0)
    return st is not None and hand < len(st.hands) and st.hands[hand].status in (STOOD, BLACKJACK)


def _refuse_if_stale(engine: RoundEngine, i: int, d: dict[str, Any]) -> None:
    """The order of refusal: a listed decision that can no longer apply is refused now, with its own rule,
    before the cards that follow it in the file are judged (they would be blamed for the decision)."""
    action, seat, hand = Action(d["action"]), d["seat"], d.get("hand", 0)
    st = engine.seats.get(seat)
    if engine.phase is RoundPhase.INITIAL_DEAL or d.get("player") is not None:
        return
    if st is None:
        stale = True
    elif action in INSURANCE_ACTIONS:
        stale = engine.phase is not RoundPhase.INSURANCE
    elif engine.phase is RoundPhase.INSURANCE:
        stale = hand < len(st.hands) and st.hands[hand].status != OPEN
    elif engine.phase is not RoundPhase.PLAYERS:
        stale = True
    elif hand < len(st.hands):
        stale = st.hands[hand].status != OPEN
    else:
        stale = not any(h.status == OPEN for h in st.hands)  # no hand left that could split into it
    if action is Action.SURRENDER and engine.surrender_window_open:
        stale = False
    if st is not None and engine.phase is RoundPhase.COMPLETE and action not in INSURANCE_ACTIONS:
        stale = True
    if not stale:
        return
    label = f"decision #{i} (seat {seat} hand {hand}: {action})"
    why = engine.explain(action, seat, hand)
    if why is not None:
        raise InvalidRound(f"{label} not allowed: {why.message}", why.rule)
    if st is not None and hand >= len(st.hands) and action not in INSURANCE_ACTIONS:
        raise InvalidRound(
            f"{label}: seat {seat} has no hand {hand} (hand 0 is the first; each split adds one)",
            engine.profile.cite("split"),
        )
    if st is not None and hand < len(st.hands) and engine.phase is RoundPhase.PLAYERS:
        raise InvalidRound(
            f"{label} comes too late: that hand is already {st.hands[hand].status}",
            engine.profile.cite("deal_order"),
        )
    if engine.is_complete():
        raise InvalidRound(f"{label} after the round ended", engine.profile.cite("deal_order"))
    raise InvalidRound(f"{label} comes too late (phase {engine.phase})", engine.profile.cite("deal_order"))


def _burns_allowed(profile: Profile) -> set[int]:
    """How many cards a round may burn before its first card: none, the per-round or the shoe-start burn."""
    allowed = {0, profile.burn_before_round(shoe_start=False), profile.burn_before_round(shoe_start=True)}
    if profile.burn.per_round and profile.burn.round_without_burn == "refuse":
        allowed.discard(0)  # house choice burn.round_without_burn: MO-2004 art.4.2's burn is due every round
    return allowed


def _leading_burns(cards: list[Any]) -> int:
    """Cards marked `"to": "burn"` at the start of the file: the round's burns (PT-2001 r.10, MO art.4)."""
    n = 0
    for c in cards:
        if not (isinstance(c, dict) and c.get("to") == "burn"):
            break
        n += 1
    return n


def _implicit_stand(engine: RoundEngine, decisions: deque[tuple[int, dict[str, Any]]]) -> bool:
    """Hand-written files: the next card is not for a hand that has no decision left in the file.

    A card closes the insurance window (seats without a decision decline); the hand whose turn it is stands
    if the file lists no further decision for it and the profile lets it stand (PT-2001 r.18: above 11). A
    hand that may not stand takes the card (an implicit hit). Returns True when something changed.
    """
    if engine.phase is RoundPhase.INSURANCE:
        engine.close_insurance()
        return True
    t = engine.turn()
    if engine.phase is not RoundPhase.PLAYERS or t is None or t.kind != "player":
        return False
    pending = any(
        d["seat"] == t.seat and d.get("hand", 0) == t.hand and Action(d["action"]) not in INSURANCE_ACTIONS
        for _, d in decisions
    )
    if pending or Action.STAND not in engine.allowed_actions():
        return False
    engine.act(Action.STAND, seat=t.seat, hand=t.hand)
    return True


def _apply_decision(
    engine: RoundEngine, i: int, d: dict[str, Any], action: Action, seat: int, hand: int
) -> None:
    label = f"decision #{i} (seat {seat} hand {hand}: {action})"
    if "after_cards" not in d and _redundant_stand(engine, d):
        return
    _refuse_if_stale(engine, i, d)
    if engine.is_complete():
        why = engine.explain(action, seat, hand)  # name the book's rule when the decision is forbidden anyway
        if why is not None:
            raise InvalidRound(f"{label} not allowed: {why.message}", why.rule)
        raise InvalidRound(f"{label} after the round ended", engine.profile.cite("deal_order"))
    kwargs: dict[str, Any] = {"seat": seat, "amount": d.get("amount")}
    if action not in INSURANCE_ACTIONS or d.get("player") is not None:
        kwargs["hand"] = hand
    if d.get("player") is not None:
        kwargs["player"] = d["player"]
    try:
        engine.act(action, **kwargs)
    except RuleViolation as exc:
        raise InvalidRound(f"{label} not allowed: {exc.message}", exc.rule) from exc


def _feed_card(engine: RoundEngine, i: int, c: Any) -> None:
    entry = {"card": c} if isinstance(c, str) else c
    try:
        card = Card.parse(entry["card"])
        to = Recipient.from_json(entry["to"]) if "to" in entry else None
    except (CardError, ValueError) as exc:
        raise InvalidRound(f"card #{i} ({entry.get('card')}): {exc}") from exc
    try:
        engine.on_card(card, face_up=bool(entry.get("face_up", False)), to=to)
    except RoundError as exc:
        raise InvalidRound(f"card #{i} ({card}): {exc.message}", exc.rule) from exc


def _incomplete(engine: RoundEngine) -> str:
    t = engine.turn()
    if t is not None and t.kind == "insurance":
        return f"round incomplete: seat {t.seat} has not decided on insurance / even money"
    if t is not None and t.kind == "player":
        return f"round incomplete: seat {t.seat} hand {t.hand} must decide (no decision left in the file)"
    exp = engine.expected_recipient()
    return f"round incomplete (phase {engine.phase}): a card for {exp} is missing"
