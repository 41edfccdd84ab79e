"""One round as the table sees it: the bets, the rules engine, and a log of what was fed to the engine.

The log (cards and dealer actions, in order) is the round's serialisable state: a snapshot stores it and
``RoundTracker.restore`` rebuilds the engine by feeding it again, so the engine itself never needs pickling.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the engine is imported when a round begins (default_engine_factory)
    from controller.rules.cards import Card
    from controller.rules.engine import RoundEngine
    from controller.rules.profiles import Profile
    from controller.rules.types import CardOutcome

# (profile, bets, burn before the deal, first of the game) -> the round's rules engine
EngineFactory = Callable[["Profile", list[dict[str, Any]], int, bool], "RoundEngine"]


# exact types: a subclass of str or int (an enum) is not plain
_PLAIN = frozenset((str, int, float, bool, type(None)))


def jsonable(obj: Any) -> Any:
    """Engine results (dataclasses, enums, Card) as JSON-able values."""
    # Fast paths first: most of what the table publishes is already plain JSON (a hot path: every input).
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    # a plain value is itself (as below): kept without a call, most values are (records, documents)
    if kind is dict:
        return {
            k if type(k) is str else str(k): v if type(v) in _PLAIN else jsonable(v) for k, v in obj.items()
        }
    if kind is list:
        return [v if type(v) in _PLAIN else jsonable(v) for v in obj]
    if hasattr(obj, "to_json") and not isinstance(obj, type):
        return jsonable(obj.to_json())
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "rank") and hasattr(obj, "suit") and len(dataclasses.fields(obj)) == 2:
            return f"{obj.rank}{obj.suit}"
        return {f.name: jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if hasattr(obj, "to_dict"):
        return jsonable(obj.to_dict())
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def default_engine_factory(
    profile: Profile, bets: list[dict[str, Any]], burn_before_deal: int, first_of_game: bool
) -> RoundEngine:
    from controller.rules.engine import RoundEngine
    from controller.rules.types import SeatBet

    seat_bets = [SeatBet(**b) for b in bets]
    return RoundEngine(profile, seat_bets, burn_before_deal=burn_before_deal, first_of_game=first_of_game)


def default_card(code: str) -> Card:
    from controller.rules.cards import Card

    return Card.parse(code)


class RoundTracker:
    def __init__(
        self,
        round_id: str,
        profile: Profile,
        bets: list[dict[str, Any]],
        burn_before_deal: int,
        first_of_game: bool = False,
        *,
        engine_factory: EngineFactory = default_engine_factory,
        make_card: Callable[[str], Card] = default_card,
    ) -> None:
        self.round_id = round_id
        self.bets = bets
        self.burn_before_deal = burn_before_deal
        self.first_of_game = first_of_game
        self._make_card = make_card
        self.engine = engine_factory(profile, bets, burn_before_deal, first_of_game)  # RoundError: bad bets
        self.log: list[dict[str, Any]] = []  # {"card": code, "face_up": bool} | {"act": name, "args": {...}}
        self.cards: list[
            dict[str, Any]
        ] = []  # what the journal/export shows: card, recipient, counted, errors

    # ---- feeding ----
    def card(self, code: str, face_up: bool = False, to_dealer: bool = False) -> CardOutcome:
        """``to_dealer``: a card the dealer drew for himself after the round ended (PT-2001 r.19), unless the
        engine still awaits the burn and the dealer's second card after nobody was left in play (MO-2004 art.4.2,
        art.7.1): those go where the engine puts them."""
        kwargs: dict[str, Any] = {"face_up": face_up}
        if to_dealer and self.engine.late_card_awaited() is None:
            from controller.rules.types import Recipient

            kwargs["to"] = Recipient.dealer()
        outcome = self.engine.on_card(self._make_card(code), **kwargs)
        self.log.append({"card": code, "face_up": face_up, "to_dealer": to_dealer})
        return outcome

    def act(self, action: str, args: dict[str, Any]) -> None:
        """``args``: amount / seat / hand, as the engine's ``act`` takes them."""
        self.engine.act(action, **args)
        self.log.append({"act": action, "args": args})

    # ---- state ----
    def to_dict(self) -> dict[str, Any]:
        return {
            "round_id": self.round_id,
            "bets": self.bets,
            "burn_before_deal": self.burn_before_deal,
            "first_of_game": self.first_of_game,
            "log": self.log,
            "cards": self.cards,
        }

    @classmethod
    def restore(
        cls,
        data: dict[str, Any],
        profile: Profile,
        *,
        engine_factory: EngineFactory = default_engine_factory,
        make_card: Callable[[str], Card] = default_card,
    ) -> RoundTracker:
        tracker = cls(
            data["round_id"],
            profile,
            data["bets"],
            data["burn_before_deal"],
            data.get("first_of_game", False),
            engine_factory=engine_factory,
            make_card=make_card,
        )
        for step in data["log"]:
            if "card" in step:
                tracker.card(step["card"], step["face_up"], step.get("to_dealer", False))
            else:
                tracker.act(step["act"], step["args"])
        tracker.cards = list(data.get("cards", []))
        return tracker

    @property
    def card_count(self) -> int:
        return sum(1 for step in self.log if "card" in step)
