"""What a person must never read on a screen or in a report (issue 30): an identifier from the code. Found in a
text: the snake_case names the product uses (alert kinds, table states, round phases, hand statuses, outcomes,
commands and decisions), the jackpot combinations' enum names (TWO_ACES_MIXED), raw card codes (KS, TD, 2H),
a hand numbered from 0 ("hand 0"), and the recipients' wire form ("seat:1:0")."""

from __future__ import annotations

import re

from controller.actions import DEALER_ACTIONS, SUPERVISOR_ACTIONS
from controller.alert_kinds import ALERT_KINDS
from controller.jackpot.hits import Combination
from controller.rules.types import Action, RoundPhase
from controller.table.machine import STATES
from controller.words import OUTCOME_WORDS, STATUS_WORDS
from drivers.cards import RANKS, SUITS

CODE_NAMES = {
    *ALERT_KINDS,
    *STATES,
    *DEALER_ACTIONS,
    *SUPERVISOR_ACTIONS,
    *(a.value for a in Action),
    *(p.value for p in RoundPhase),
    *OUTCOME_WORDS,
    *STATUS_WORDS,
    *(c.name for c in Combination),
}
SNAKE = re.compile(r"(?<![\w/.-])[A-Za-z]+(?:_[A-Za-z]+)+(?![\w/.-])")
CARD_CODE = re.compile(rf"(?<![\w#/.-])[{RANKS}][{SUITS}](?![\w/.-])")
HAND_ZERO = re.compile(r"\bhand 0\b")
WIRE_SEAT = re.compile(r"\bseat:\d+(?::\d+)?")
# money for people: major units, two decimals (a sign for a net), e.g. "+1,234.50" / "-10.00 EUR"
MONEY = re.compile(r"[+-]?\d{1,3}(?:,\d{3})*\.\d\d")


def code_names(text: str) -> list[str]:
    """Every identifier from the code found in ``text`` (empty: it reads as people's words)."""
    found = [w for w in SNAKE.findall(text) if w in CODE_NAMES or w.isupper()]
    found += CARD_CODE.findall(text)
    found += HAND_ZERO.findall(text) + WIRE_SEAT.findall(text)
    return found
