"""Command names by role: the one list the table core, the MQTT intake and the terminals share (docs/mqtt.md).

`tests/test_actions.py` checks the MQTT dealer schema against it.
"""

from __future__ import annotations

# Who sends commands (cmd/<role>, docs/mqtt.md); the signed roles add a user's Ed25519 signature to the ACL.
DEALER, SUPERVISOR, TECHNICIAN = "dealer", "supervisor", "technician"
ROLES = (DEALER, SUPERVISOR, TECHNICIAN)
SIGNED_ROLES = (SUPERVISOR, TECHNICIAN)
# Broker accounts are named after their role (``dealer-T1``, ``monitor``): the command roles and the readers.
ACCOUNT_ROLES = (*ROLES, "monitor", "archive")

# The chip-slot sensors (PT-2001 r.41a) are the GPIO inputs chip_slot_<seat>.
CHIP_SLOT_PREFIX = "chip_slot_"

# One decision, two documented names: the dealer command ``decline_insurance`` (docs/mqtt.md; the cmd_dealer and
# state_table schemas; the dealer_action records and decision events of journals in the field) is the rules
# engine's ``Action.NO_INSURANCE`` (docs/rounds.md, round files). Both written here once (the vocabulary sits
# below the rules engine, which takes its name from here); ``engine_action`` and
# ``command_name`` are the only translation between the two.
DECLINE_INSURANCE = "decline_insurance"
NO_INSURANCE = (
    "no_insurance"  # the rules engine's name: Action.NO_INSURANCE (controller/rules/types.py) is this
)
_ENGINE_ACTIONS = {DECLINE_INSURANCE: NO_INSURANCE}
_COMMAND_NAMES = {engine: command for command, engine in _ENGINE_ACTIONS.items()}


def engine_action(command: str) -> str:
    """The rules engine's (and the round files') name of a dealer command's decision."""
    return _ENGINE_ACTIONS.get(command, command)


def command_name(action: str) -> str:
    """The dealer command (docs/mqtt.md) that takes the rules engine's decision ``action``."""
    return _COMMAND_NAMES.get(action, action)


DEALER_BETTING = ("place_bet", "clear_bet", "jackpot_chip", "no_more_bets")
# A hand's (or, for insurance, a seat's) decisions; the rules engine says which are allowed now.
DEALER_PLAY = (
    "hit",
    "stand",
    "double",
    "split",
    "surrender",
    "insurance",
    DECLINE_INSURANCE,
    "even_money",
    "five_card",  # MO-2004 art.19
)
# A player identified at a seat, and his visit ended (issue 41): the pit terminal (dealer) or a supervisor.
PLAYER_ACTIONS = ("player_in", "player_out")
DEALER_OTHER = ("next_round", "cut", "dealer_sign_in", *PLAYER_ACTIONS)  # dealer_sign_in: on duty (issue 29)
DEALER_ACTIONS = DEALER_BETTING + DEALER_PLAY + DEALER_OTHER

SUPERVISOR_ACTIONS = (
    "open_table",
    "close_table",
    "clear_jam",
    "clear_link",  # the shoe link fault, once the link is back (product guide: an authorised person clears it)
    "unlock_lid",
    "lock_lid",
    "replace_card",
    "ack_alert",
    "ack_deck_check",
    "jackpot_verify",
    "jackpot_pay",
    "jackpot_correct",
    "jackpot_correct_confirm",  # the second supervisor's approval of a pending jackpot_correct (dual control)
    "void_round",
    "run_deck_check",  # PT-2001 r.55: the verification at close is done in a supervisor's presence
    "clear_shoe_fault",  # shoe_sequence / card_count (a frame that cannot be a card): a supervisor only
    "clear_journal_io",  # the journal writes again (disk freed, remounted): the fault ends, cards are counted
    "clear_integrity",  # closed table only: the integrity fault was looked into (in a session: close_table)
    *PLAYER_ACTIONS,
)
# The dealer's buttons (GPIO inputs ``button_<action>``, controller/config/model.py): a press is the dealer
# action of its name, the same interface as the MQTT dealer commands. Insurance from a button is for the seat
# whose decision is awaited (rules engine ``act`` without a seat); a button gives no amount, so insurance is the
# largest the profile allows (PT-2001 r.33), even money a blackjack's (r.34).
BUTTONS = (
    "hit",
    "stand",
    "double",
    "split",
    "surrender",
    "insurance",
    "even_money",
    "no_more_bets",
    "next_round",
)
BUTTON_ACTIONS = {f"button_{action}": action for action in BUTTONS}  # GPIO input name -> dealer action
assert set(BUTTONS) <= set(DEALER_ACTIONS)

TECHNICIAN_ACTIONS = ("clear_jam", "clear_link", "run_deck_check")  # PT-2001 r.51: or a technician is called
