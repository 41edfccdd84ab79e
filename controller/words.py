"""The words people read: one vocabulary for every screen and report (issue 30).

The pit terminal, the alert console, the dispute report (``tablectl replay --report``), ``tablectl demo --auto``,
``tablectl jackpot-math`` and the floor dashboard show the product's internal names (alert kinds, table states,
round phases, hand statuses, outcomes, decisions, lid reasons, jackpot combinations, card codes, hand indexes,
minor units) only through this module: a person reads "Dealer error", "No insurance", "K♠", "Seat 2, hand 1",
"10.00 EUR" — never ``dealer_error``, ``no_insurance``, ``KS``, ``hand 0`` or ``1000``.

A low layer: it imports nothing from the product (the card alphabet is ``drivers/cards.py``'s), so the table, the
rules' report, the terminal, the floor and the bench can all import it. Pure functions and tables; every value
from outside that is not a known name is returned as given (the screens still show it as plain text).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from controller.actions import DECLINE_INSURANCE, engine_action
from drivers.cards import RANKS, SUITS

UNKNOWN = "unknown"  # a value nobody has reported yet
FACE_DOWN = "(face down)"  # the dealer's hole card until it is revealed (PT-2001 r.17)
HIDDEN_CODE = "??"  # how state/round withholds the hole card
SUIT_SYMBOLS = dict(zip(SUITS, "\u2660\u2665\u2666\u2663", strict=True))  # ♠ ♥ ♦ ♣ as on the table
RANK_FACES = {r: ("10" if r == "T" else r) for r in RANKS}

# Every alert kind (controller/alert_kinds.py; tests/test_words.py checks that each has a label).
ALERT_WORDS = {
    "jam": "Shoe jam",
    "link_down": "Shoe link down",
    "tamper": "Lid opened while locked",
    "forced_lid": "Lid forced open",
    "device_error": "Shoe error",
    "shoe_sequence": "Card out of sequence",
    "card_count": "Card seen too often",
    "shoe_command": "Shoe command failed",
    "card_unreadable": "Unreadable card",
    "dealer_error": "Dealer error",
    "round_void": "Round void",
    "shoe_count": "Shoe count differs",
    "discard_count": "Cards still out",
    "discard_lid_closed": "Cards in with the lid closed",
    "cards_added": "Cards added",
    "loading": "Loading not as the rules ask",
    "deck_check": "Deck check failed",
    "deck_count": "Cards short at closing",
    "deck_verification": "Deck check impossible",
    "cut_card": "Cut card where none belongs",
    "warning_card": "Warning card where none belongs",
    "warning_card_position": "Warning card out of place",
    "profile_mismatch": "Wrong kind of shoe",
    "jackpot_pending": "Jackpot hit to verify and pay",
    "display_fault": "Jackpot sign not connected",
    "jackpot_link": "Progressive link unavailable",
    "jackpot_correction": "Jackpot meter corrected",
    "disk_space": "Journal disk low on space",
    "config_integrity": "Configuration changed",
    "command_rejected": "Command refused",
    "command_lockout": "User or source locked out",
    "command_flood": "Too many commands",
    "journal_io": "Journal write failed",
    "integrity": "Journal or configuration does not check out",
    "journal_integrity": "Journal contradicts its checkpoints",
    # the floor's own alerts (floor/archive/chain.py, repair.py)
    "event_missing": "Event missing from the archive",
    "replay_unanswered": "Table did not resend missing events",
    "login_lockout": "Dashboard login locked out",  # floor/accounts/logins.py
    "backup_late": "Backup or restore check late",  # floor/backup/health.py
    "backup_failed": "Backup, restore check or WAL archiving failed",
    "standby_behind": "Standby floor server behind",  # floor/backup/replication.py
    "standby_gone": "Standby floor server not connected",
    # surveillance only (floor/protection/advantage.py)
    "advantage_play": "Possible advantage play",
}
SEVERITY_WORDS = {"critical": "critical", "warning": "warning", "info": "notice"}
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}  # most severe first

# Every command and decision (docs/mqtt.md "Dealer"/"Supervisor"; the rules engine's actions).
ACTION_WORDS = {
    "place_bet": "Place bet",
    "clear_bet": "Clear bet",
    "jackpot_chip": "Jackpot chip",
    "no_more_bets": "No more bets",
    "hit": "Hit",
    "stand": "Stand",
    "double": "Double",
    "split": "Split",
    "surrender": "Surrender",
    "insurance": "Insurance",
    DECLINE_INSURANCE: "No insurance",
    engine_action(DECLINE_INSURANCE): "No insurance",  # the rules engine's name of the same decision
    "even_money": "Even money",
    "five_card": "Five cards",
    "next_round": "Next round",
    "cut": "Cut the cards",
    "dealer_sign_in": "Dealer sign-in",
    "player_in": "Player in",
    "player_out": "Player out",
    "open_table": "Open table",
    "close_table": "Close table",
    "clear_jam": "Clear jam",
    "unlock_lid": "Unlock lid",
    "lock_lid": "Lock lid",
    "jackpot_verify": "Verify jackpot",
    "jackpot_pay": "Pay jackpot",
    "ack_alert": "Acknowledge alerts",
    "ack_deck_check": "Acknowledge deck check",
    "clear_link": "Clear link fault",
    "replace_card": "Replace a card",
    "jackpot_correct": "Correct jackpot",
    "jackpot_correct_confirm": "Confirm jackpot correction",
    "void_round": "Void the round",
    "run_deck_check": "Run the deck check",
    "clear_shoe_fault": "Clear shoe fault",
    "clear_journal_io": "Clear journal fault",
    "clear_integrity": "Clear integrity fault",
}
# The table's state (controller/table/machine.py).
STATE_WORDS = {
    "closed": "Closed",
    "loading": "Loading the cards",
    "closing": "Closing (deck check)",
    "deck_check_failed": "Deck check failed",
    "cut": "Waiting for the cut",
    "betting": "Betting",
    "no_more_bets": "No more bets",
    "dealing": "Dealing",
    "players": "Players",
    "dealer": "Dealer's turn",
    "settled": "Settled",
    "cards_returned": "Cards returned",
    "shuffling": "Shuffling",
    "jammed": "JAMMED",
    "link_down": "SHOE LINK DOWN",
    "tamper": "TAMPER",
    "resync": "Resynchronising",
    "journal_io": "JOURNAL WRITE FAILED",
    "integrity": "INTEGRITY FAULT",
    "shoe_sequence": "CARD OUT OF SEQUENCE",
    "card_count": "CARD SEEN TOO OFTEN",
}
# The round's phase (state/round "phase", the rules engine's RoundPhase).
PHASE_WORDS = {
    "none": "no round",
    "initial_deal": "Dealing",
    "insurance": "Insurance",
    "players": "Players",
    "dealer": "Dealer's turn",
    "complete": "Settled",  # the banner says the table is "Settled" then: one word for one thing
    "void": "Void",
}
# A hand's status during the round.
STATUS_WORDS = {
    "open": "to play",
    "playing": "playing",
    "stood": "stood",
    "bust": "bust",
    "surrendered": "surrendered",
    "even_money": "even money",
    "five_card": "five cards",
    "blackjack": "blackjack",
    "doubled": "doubled",
}
# A hand's outcome at the settlement (controller/rules/settlement.py).
OUTCOME_WORDS = {
    "blackjack": "blackjack, wins",
    "win": "wins",
    "push": "push",
    "lose": "loses",
    "bust": "bust",
    "surrender": "surrendered",
    "even_money": "even money",
    "five_card": "five cards",
}
# Why the lid may open (state/lid "unlocked_by": controller/table/lid.py); "supervisor:<user>" is by_whom().
LID_WORDS = {
    "auto": "opened for the round's cards",
    "loading": "opened for the loading",
    "closing": "opened for the closing",
    "supervisor": "unlocked by a supervisor",
}
LID_STATE_WORDS = {"locked": "locked", "unlocked": "unlocked", "open": "open", "forced_open": "FORCED OPEN"}
# The jackpot's combinations (controller/jackpot/hits.py Combination, PT-2001 r.43 a-e), by enum name.
COMBINATION_WORDS = {
    "TWO_ACES_MIXED": "two aces of different suits",
    "TWO_ACES_SUITED": "two aces of one suit",
    "THREE_ACES_MIXED": "three aces, not all of one suit",
    "THREE_ACES_SUITED": "three aces of one suit",
    "FOUR_ACES_ONE_COLOUR": "four aces of one colour",
}
# Where a card went (events/card "recipient").
RECIPIENT_WORDS = {"burn": "burnt", "dealer": "Dealer", "held": "held back", "void": "void round"}
# The dealer on duty (events/dealer "action", issue 29) and why nobody is ("reason").
DEALER_DUTY_WORDS = {
    "signed_in": "signed in as dealer",
    "signed_out": "signed out",
    "close_table": "the table closed",
}

# A player at a seat (events/player "action" and "reason", issue 41).
PLAYER_WORDS = {
    "in": "seated",
    "out": "left",
    "player_out": "left the seat",
    "close_table": "the table closed",
}

# Every table above by its subject, e.g. for a web page's script (the floor dashboard can serve
# ``json.dumps(VOCABULARY)`` once and label on the client exactly as the terminal and the reports do).
VOCABULARY: dict[str, dict[str, str]] = {
    "alert": ALERT_WORDS,
    "severity": SEVERITY_WORDS,
    "action": ACTION_WORDS,
    "state": STATE_WORDS,
    "phase": PHASE_WORDS,
    "status": STATUS_WORDS,
    "outcome": OUTCOME_WORDS,
    "lid": LID_WORDS,
    "lid_state": LID_STATE_WORDS,
    "combination": COMBINATION_WORDS,
    "recipient": RECIPIENT_WORDS,
    "dealer_duty": DEALER_DUTY_WORDS,
    "player": PLAYER_WORDS,
}


def words(table: dict[str, str], value: Any) -> str:
    """A known internal name in words; anything else as given (underscores as spaces): never a code name."""
    if value is None:
        return UNKNOWN
    name = getattr(value, "name", None) if not isinstance(value, str) else None
    key = str(value)
    if key in table:
        return table[key]
    if isinstance(name, str) and name in table:  # an enum member by its name (Combination.TWO_ACES_MIXED)
        return table[name]
    return key.replace("_", " ")


def alert_words(kind: Any) -> str:
    return words(ALERT_WORDS, kind)


def lid_words(state: Any, unlocked_by: Any = None) -> str:
    """'locked', 'open (unlocked by supervisor alice)', 'open (opened for the round's cards)'."""
    shown = words(LID_STATE_WORDS, state)
    if not unlocked_by or state == "locked":
        return shown
    why = str(unlocked_by)
    if why.startswith("supervisor:"):
        reason = f"unlocked by supervisor {why.split(':', 1)[1]}"
    else:
        reason = words(LID_WORDS, why)
    return f"{shown} ({reason})"


def card_face(code: Any) -> str:
    """'KS' -> 'K♠', 'TH' -> '10♥' as on the table; the withheld hole card '??' -> '(face down)' (r.17)."""
    text = str(code)
    if text == HIDDEN_CODE:
        return FACE_DOWN
    if len(text) != 2 or text[0] not in RANK_FACES or text[1] not in SUIT_SYMBOLS:
        return text
    return RANK_FACES[text[0]] + SUIT_SYMBOLS[text[1]]


def cards_text(codes: Any) -> str:
    """A list of card codes as faces separated by spaces; '–' for none."""
    return " ".join(card_face(c) for c in codes) if isinstance(codes, list | tuple) and codes else "–"


def hand_number(index: Any) -> int:
    """The hand as people number it (1, 2, ...), from the documents' index (0, 1, ...)."""
    return (index if isinstance(index, int) and not isinstance(index, bool) else 0) + 1


def hand_label(seat: Any, hand: Any, split: bool | None = None) -> str:
    """'Seat 3' for a seat playing one hand, 'Seat 3, hand 2' for a split hand (hands numbered from 1).
    ``split`` unknown: any hand after the first says so."""
    number = hand_number(hand)
    if split is None:
        split = number > 1
    return f"Seat {seat}, hand {number}" if split else f"Seat {seat}"


def money(minor: Any, currency: str | None = None, *, sign: bool = False) -> str:
    """Integer minor units -> '1,234.50 EUR' (never through a float), the one way money is written for people.
    ``sign``: '+10.00' for a gain. '—' for nothing, 'unknown' for a non-number. Without a known currency the
    amount alone (the currency is said once beside it, e.g. in a header)."""
    if minor is None:
        return "—"
    if isinstance(minor, bool) or not isinstance(minor, int):
        return UNKNOWN
    lead = "-" if minor < 0 else ("+" if sign and minor > 0 else "")
    units, cents = divmod(abs(int(minor)), 100)
    text = f"{lead}{units:,}.{cents:02d}"
    return f"{text} {currency}" if currency else text


def local_time(value: Any) -> str:
    """A moment for people, in the local time of the computer that shows it, with its zone:
    '2026-11-29 06:15:03 WET' (sorts as it reads). Epoch seconds or an aware datetime; anything else as given."""
    if isinstance(value, datetime):
        moment = value if value.tzinfo is not None else value.replace(tzinfo=UTC)
    elif isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e11:
        moment = datetime.fromtimestamp(value, UTC)
    else:
        return str(value)[:40] if value is not None else UNKNOWN
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S %Z")


def count(n: int, thing: str, things: str | None = None) -> str:
    """A count in words: '1 table', '2 tables', '0 open alerts' (``things``: an irregular plural)."""
    return f"{n} {_plural(n, thing, things)}"


def _plural(n: int, thing: str, things: str | None = None) -> str:
    return thing if n == 1 else (things or thing + "s")


_CARD_CODE = re.compile(rf"(?<![\w#])([{RANKS}][{SUITS}])(?!\w)")
_SEAT_HAND = re.compile(r"\bseat (\d+) hand (\d+)\b")
_SNAKE = re.compile(r"\b[a-z]+(?:_[a-z]+)+\b")
_PLURAL = re.compile(r"\b(\d+) ((?:[A-Za-z-]+ ){0,2}?)([A-Za-z]+)\(s\)")  # "3 card(s)", "1 outbox row(s)"


def in_words(text: str) -> str:
    """A sentence written by the code (a rules engine's reason, a refusal) in people's words: card codes as
    faces ('4H' -> '4♥'), 'seat 1 hand 0' -> 'Seat 1, hand 1', counts in words ('1 card(s)' -> '1 card',
    '3 card(s)' -> '3 cards'), and every known snake_case name (an alert kind, a decision, a state, a status) by
    its label. Anything else is left as it is."""
    text = _SEAT_HAND.sub(lambda m: f"Seat {m.group(1)}, hand {int(m.group(2)) + 1}", text)
    text = _PLURAL.sub(
        lambda m: m.group(1) + " " + m.group(2) + count(int(m.group(1)), m.group(3)).split(" ", 1)[1], text
    )
    text = _CARD_CODE.sub(lambda m: card_face(m.group(1)), text)
    return _SNAKE.sub(lambda m: _KNOWN.get(m.group(0), m.group(0)), text)


# every snake_case name the tables above know, by its label in lower case (for in_words)
_KNOWN = {
    name: label if table is ALERT_WORDS else label.lower()
    for table in (STATUS_WORDS, OUTCOME_WORDS, PHASE_WORDS, STATE_WORDS, ACTION_WORDS, ALERT_WORDS)
    for name, label in table.items()
    if "_" in name
}
