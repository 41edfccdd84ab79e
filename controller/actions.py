"""Command names by role: the one list the table core, the MQTT intake and the terminals share (docs/mqtt.md).

`tests/test_actions.py` checks the MQTT dealer schema against it.
"""

from __future__ import annotations

DEALER_BETTING = ("place_bet", "clear_bet", "jackpot_chip", "no_more_bets")
# A hand's (or, for insurance, a seat's) decisions; the rules engine says which are allowed now.
DEALER_PLAY = (
    "hit",
    "stand",
    "double",
    "split",
    "surrender",
    "insurance",
    "decline_insurance",
    "even_money",
    "five_card",  # MO-2004 art.19
)
DEALER_OTHER = ("next_round", "cut")
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
    "void_round",
    "run_deck_check",  # PT-2001 r.55: the verification at close is done in a supervisor's presence
    "clear_shoe_fault",  # shoe_sequence / card_count (a frame that cannot be a card): a supervisor only
    "clear_journal_io",  # the journal writes again (disk freed, remounted): the fault ends, cards are counted
    "clear_integrity",  # closed table only: the integrity fault was looked into (in a session: close_table)
)
TECHNICIAN_ACTIONS = ("clear_jam", "clear_link", "run_deck_check")  # PT-2001 r.51: or a technician is called
