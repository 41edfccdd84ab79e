"""Pure blackjack game logic: cards, hands, rule profiles, the round engine and its settlement."""

from controller.rules.cards import Card, CardError
from controller.rules.engine import RoundEngine
from controller.rules.profiles import Profile, ProfileError, list_profiles, load_profile
from controller.rules.settlement import Settlement
from controller.rules.types import (
    Action,
    CardOutcome,
    DealerError,
    Recipient,
    RoundError,
    RoundPhase,
    RuleViolation,
    SeatBet,
    Turn,
)

__all__ = [
    "Action", "Card", "CardError", "CardOutcome", "DealerError", "Profile", "ProfileError", "Recipient",
    "RoundEngine", "RoundError", "RoundPhase", "RuleViolation", "SeatBet", "Settlement", "Turn",
    "list_profiles", "load_profile",
]  # fmt: skip
