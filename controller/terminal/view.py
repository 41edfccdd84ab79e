"""Pure projections of the MQTT documents onto what the pit terminal shows (no Textual, no I/O), so the
formatting and the enabling rules are tested on their own."""

from __future__ import annotations

import math
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from controller.actions import DEALER_ACTIONS, DEALER_BETTING, DEALER_PLAY
from controller.rules.cards import Card
from controller.rules.hands import hand_value
from controller.table.machine_names import TableState
from controller.words import (
    ACTION_WORDS,
    HIDDEN_CODE,
    OUTCOME_WORDS,
    SEVERITY_RANK,
    STATE_WORDS,
    card_face,
    hand_label,
    lid_words,
    money,
    words,
)

# Dealer inputs shown as buttons/keys, by command name (docs/mqtt.md "Dealer").
PLAY_INPUTS = DEALER_PLAY
BETTING_INPUTS = DEALER_BETTING
ROUND_END_INPUTS = ("next_round",)


def enabled_inputs(status: str, connected: bool, table: dict[str, Any]) -> set[str]:
    """The dealer inputs to enable now: exactly the ones the controller says it accepts (``state/table``
    ``dealer_inputs``, decided by its state machine and, during play, its rules engine); the terminal decides
    nothing itself. Nothing while the broker or the controller is unreachable, nor from a document without the
    list; a name that is not a dealer command is ignored."""
    if not connected or status != "online":
        return set()
    inputs = table.get("dealer_inputs")
    if not isinstance(inputs, list):
        return set()
    return {a for a in inputs if isinstance(a, str) and a in DEALER_ACTIONS}


def _list(value: Any) -> list[Any]:
    """A list from an outside document, or [] for anything else."""
    return value if isinstance(value, list) else []


def dealer_blackjack(dealer: dict[str, Any]) -> bool:
    """The dealer's natural (two cards, 21, both shown): state/round does not flag it as it flags a seat's."""
    cards = _list(dealer.get("cards"))
    return len(cards) == 2 and "??" not in cards and number(dealer.get("total")) == 21


def hand_text(hand: dict[str, Any]) -> str:
    """'10♥ A♠ = 21 (blackjack)', 'K♠ 5♦ 9♣ = 24 (bust)', 'A♠ 6♥ = soft 17 (x2)'; with the dealer's hole card
    face down no total (the card reveals nothing: 'A♥ (face down)', PT-2001 r.17)."""
    codes = _list(hand.get("cards"))
    cards = " ".join(card_face(c) for c in codes) or "–"
    if not codes or HIDDEN_CODE in codes:
        return cards
    total = int(number(hand.get("total")))
    tags = []
    if hand.get("blackjack"):
        tags.append("blackjack")
    elif total > 21:
        tags.append("bust")
    if hand.get("doubled"):
        tags.append("x2")
    soft = "soft " if hand.get("soft") and total and not hand.get("blackjack") and total <= 21 else ""
    extra = f" ({', '.join(tags)})" if tags else ""
    return f"{cards} = {soft}{total}{extra}"


def dealer_soft(dealer: dict[str, Any]) -> bool:
    """Whether the dealer's total counts an ace as 11 (state/round does not say it for the dealer as it does for
    a seat): the rules' own count on the cards shown, when it agrees with the published total."""
    codes = _list(dealer.get("cards"))
    if not codes or HIDDEN_CODE in codes:
        return False
    try:
        value = hand_value([Card.parse(str(c)) for c in codes])
    except ValueError:  # CardError: not a card code
        return False
    return value.soft and value.total == dealer.get("total")


def turn_text(turn: Any, split: bool | None = None) -> str:
    """Whose turn: 'Seat 4' ('Seat 4, hand 2' only when that seat split: ``split``, the turn's seat)."""
    if not isinstance(turn, dict) or not turn:
        return "—"
    if turn.get("kind") == "player":
        return hand_label(turn.get("seat"), turn.get("hand", 0), split)
    if turn.get("kind") == "insurance":
        return f"Seat {turn.get('seat')}: insurance?"
    if turn.get("kind") == "dealer":
        return "Dealer"
    return str(turn.get("kind"))


# Amounts in minor units inside the controller's refusal texts ("bet 50000 outside the table limits
# 500..15000"): the words that precede an amount, and a range of limits.
_AMOUNT_WORDS = r"(bet|minimum|maximum|stake|main bet|amount|insurance|meter|limit)"
_AMOUNT = re.compile(rf"\b{_AMOUNT_WORDS} (-?\d+)\b(?![.\d])")
_LIMITS = re.compile(r"\blimits (\d+)(\.\.|-)(\d+)\b")


def money_in_text(text: str, currency: str | None = None) -> str:
    """A refusal reason with its minor-unit amounts in the table's currency, two decimals:
    'bet 50000 outside the table limits 500..15000' -> 'bet 500.00 outside the table limits 5.00 to 150.00'.
    Only numbers after an amount word are touched (seat numbers, rule numbers and counts stay)."""
    text = _LIMITS.sub(
        lambda m: f"limits {money(int(m.group(1)))} to {money(int(m.group(3)), currency)}", text
    )
    return _AMOUNT.sub(lambda m: f"{m.group(1)} {money(int(m.group(2)), currency)}", text)


def lid_text(lid: dict[str, Any]) -> str:
    """locked / open (and why: 'unlocked by supervisor alice') as the dealer needs it (PT-2001 r.59-60)."""
    return lid_words(lid.get("state", "?"), lid.get("unlocked_by"))


@dataclass
class DealerResults:
    """The indicator of the dealer's latest results (PT-ONLINE-2015 r.4c): the dealer's last N final totals,
    'BJ' for a dealer blackjack and 'bust' above 21, newest first."""

    size: int = 10
    entries: deque[str] = field(default_factory=deque)
    seen: set[str] = field(default_factory=set)

    def add(self, settlement: dict[str, Any]) -> None:
        rid = str(settlement.get("round_id"))
        if rid in self.seen:  # a settlement redelivered (QoS 1) counts once
            return
        self.seen.add(rid)
        total = int(number(settlement.get("dealer_total")))
        if settlement.get("dealer_blackjack"):
            label = "blackjack"
        elif settlement.get("dealer_bust") or total > 21:
            label = f"{total} bust"
        else:
            label = str(total)
        self.entries.appendleft(label)
        while len(self.entries) > self.size:
            self.entries.pop()

    def text(self) -> str:
        return " · ".join(self.entries) if self.entries else "—"


def settlement_lines(s: dict[str, Any], currency: str | None = None) -> list[str]:
    """The last round's essentials (PT-ONLINE-2015 r.31): cards, totals, amounts and outcome per hand."""
    if not s:
        return ["no round settled yet"]
    dealer = " ".join(card_face(c) for c in _list(s.get("dealer_cards")))
    d_total = s.get("dealer_total", "?")
    if dealer_soft({"cards": s.get("dealer_cards"), "total": d_total}) and not s.get("dealer_blackjack"):
        d_total = f"soft {d_total}"
    d_tag = " blackjack" if s.get("dealer_blackjack") else (" bust" if s.get("dealer_bust") else "")
    lines = [f"Round {s.get('round_id')}", f"Dealer: {dealer} = {d_total}{d_tag}"]
    hands = [h for h in _list(s.get("hands")) if isinstance(h, dict)]
    split = {str(h.get("seat")) for h in hands if h.get("hand")}
    for h in hands:
        cards = " ".join(card_face(c) for c in _list(h.get("cards")))
        stake = h.get("stake", h.get("bet"))
        outcome = words(OUTCOME_WORDS, h.get("outcome", h.get("result", "?")))
        lines.append(
            f"{hand_label(h.get('seat'), h.get('hand'), str(h.get('seat')) in split)}: {cards} = "
            f"{h.get('total', '?')}  stake {money(stake, currency)}  {outcome}  "
            f"net {money(h.get('net'), currency, sign=True)}"
        )
    for ins in _list(s.get("insurance")):
        if isinstance(ins, dict):
            lines.append(
                f"Seat {ins.get('seat')} insurance: net {money(ins.get('net'), currency, sign=True)}"
            )
    return lines


def number(value: Any, default: float = 0.0) -> float:
    """A number from an outside document, or ``default`` for anything else (a string, NaN, a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return default
    try:
        as_float = float(value)
    except OverflowError:  # an integer beyond any float
        return default
    return as_float if math.isfinite(as_float) else default


def alert_age(raised_at: Any, now: float | None = None) -> str:
    raised = number(raised_at, default=float("nan"))
    if raised != raised:
        return "unknown"
    secs = max(0, int(min((time.time() if now is None else now) - raised, 10**9)))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{(secs % 3600) // 60:02d}m"


def alert_sort_key(alert: dict[str, Any]) -> tuple[int, float, float]:
    """Most severe first, then the most escalated, then the newest."""
    return (
        SEVERITY_RANK.get(str(alert.get("severity")), 3),
        -number(alert.get("level")),
        -number(alert.get("raised_at")),
    )


# The table's states in which the dealer deals cards from the shoe (controller/table/machine.py).
DEALING_STATES = ("dealing", "players", "dealer")


def card_refusal(
    table: dict[str, Any], rnd: dict[str, Any], enabled: set[str], keys: dict[str, str]
) -> str | None:
    """Why the dealer must not draw a card now, in one line, or None when the next card is due: only while a
    round is dealt (the table's state), no decision awaited (the inputs the table accepts now, ``dealer_inputs``,
    and the round's ``allowed_actions``), the round not complete (the dealer stood: PT-2001 r.19, a card drawn
    then does not count) and no damaged card awaiting its replacement (r.51)."""
    if not table:
        return "waiting for the table's first report"
    if table.get("awaiting_card_replacement"):
        key = keys.get("replace_card", "F14")
        return f"a damaged card awaits its replacement: {key} (supervisor) replaces it first (PT-2001 r.51)"
    state = str(table.get("state"))
    if rnd.get("complete") and state in (*DEALING_STATES, "settled"):
        return "no card is due: the dealer stands, the round is settled (PT-2001 r.19: a card now does not count)"
    if state not in DEALING_STATES:
        return f"no card is due: the table is {words(STATE_WORDS, state).lower()}"
    decisions = [a for a in ACTION_WORDS if a in PLAY_INPUTS and a in keys
                 and (a in enabled or a in _list(rnd.get("allowed_actions")))]  # fmt: skip
    if decisions:
        return "a decision is due first: " + "  ·  ".join(
            f"{keys[a]}: {ACTION_WORDS[a].lower()}" for a in decisions
        )
    return None


def _bet_hint(table: dict[str, Any], enabled: set[str], keys: dict[str, str], seat: int, pick: str,
              bet: int, chip: str, chip_amount: int | None) -> str | None:  # fmt: skip
    """The bet the selected chip makes on the seat, named only if the table takes it now (``dealer_inputs``,
    ``limits``); else what to do instead (a smaller chip)."""
    if "place_bet" not in enabled:
        return None
    limits = v if isinstance(v := table.get("limits"), dict) else {}
    lo, hi = (x if isinstance(x, int) and not isinstance(x, bool) else None
              for x in (limits.get("min_bet"), limits.get("max_bet")))  # fmt: skip
    amount = bet + (chip_amount or 0)
    if chip_amount is None or ((lo is None or amount >= lo) and (hi is None or amount <= hi)):
        verb = f"add {chip}" if bet else f"bet {chip}"
        return f"{keys['place_bet']}: {verb} on Seat {seat}"
    if hi is not None and bet < hi:
        return f"[: a smaller chip (Seat {seat} at most {money(hi)})"
    return f"{pick}: another seat (Seat {seat} is at the maximum)"


def next_hint(
    *,
    status: str,
    table: dict[str, Any],
    rnd: dict[str, Any],
    shoe: dict[str, Any],
    jam: dict[str, Any],
    lid: dict[str, Any],
    enabled: set[str],
    keys: dict[str, str],
    demo: bool,
    seat: int,
    chip: str,
    seats: int = 7,
    bet: int = 0,
    chip_amount: int | None = None,
    supervisor: bool = True,
    seated: bool | None = None,
) -> str:
    """The next useful key for the person at the terminal, in words ("c: next card"), from the documents;
    the seat keys as the table has them (``seats``: "1-7" at a seven-seat table); every key named as ``keys``
    maps it (dealer commands, supervisor actions, demo actions by name; pit_keys.py), the usual key otherwise.
    A dealer key is named only when the table accepts it now (``enabled``: its ``dealer_inputs``; a bet within
    its ``limits``: ``bet`` the seat's bet so far, ``chip_amount`` the chip, minor units); a card only when one
    is due (``card_refusal``); a supervisor key only where this terminal has a supervisor channel
    (``supervisor``), else who does it. ``seated``: whether a player is seated at the selected seat
    (``state/players``; None: not known): while the seat has a bet and no player, the line adds that a swipe of
    his card (or the player-in key) rates his play (issue 41: a round counts for a player only with his bet
    and himself at the seat)."""
    pick = f"1-{seats}" if seats > 1 else "1"

    def k(action: str, usual: str) -> str:
        return keys.get(action, usual)

    def sv(action: str, usual: str) -> str:
        return f"{k(action, usual)} (supervisor)" if supervisor else "a supervisor"

    hint = _next_hint(status, table, rnd, shoe, jam, lid, enabled, keys, demo, seat, chip, pick, bet,
                      chip_amount, k, sv)  # fmt: skip
    if not supervisor and "a supervisor" in hint:
        hint += " (from a terminal with a supervisor account: this one has none)"
    if seated is False and status == "online" and table.get("state") == "betting" and bet > 0:
        hint += (
            f"  ·  a player at Seat {seat} is rated once seated: swipe his card (or {k('player_in', 'a')})"
        )
    return hint


def _next_hint(
    status: str, table: dict[str, Any], rnd: dict[str, Any], shoe: dict[str, Any], jam: dict[str, Any],
    lid: dict[str, Any], enabled: set[str], keys: dict[str, str], demo: bool, seat: int, chip: str, pick: str,
    bet: int, chip_amount: int | None, k: Any, sv: Any,
) -> str:  # fmt: skip
    if status == "unreachable":
        return "the broker is unreachable: wait, the terminal reconnects by itself"
    if status != "online":
        return "the controller is not online: wait for it (nothing can be entered meanwhile)"
    if not table:
        return "waiting for the table's first report"
    state = str(table.get("state"))
    faults = table.get("faults") or []
    if state == TableState.JAMMED:
        if jam.get("jammed") and not jam.get("device_cleared"):
            unlock = f"{sv('unlock_lid', 'F5')} unlocks the lid, " if lid.get("state") == "locked" else ""
            free = (
                f"{k('free', 'u')} frees the cards on the device" if demo else "free the cards on the device"
            )
            then = sv("clear_jam", "F4")
            return f"jam at {jam.get('location', '?')}: {unlock}{free}, then {then} releases the table"
        return f"jam cleared on the device: {sv('clear_jam', 'F4')} releases the table"
    if state == TableState.LINK_DOWN or "link_down" in faults:
        if shoe.get("linked") is False:
            return "shoe link down: check the shoe's cable and power; the table waits"
        return f"shoe link back: {sv('clear_link', 'F12')} clears the link fault"
    if state == TableState.TAMPER:
        return f"tamper: a supervisor inspects the shoe; {sv('ack_alert', 'F9')} acknowledges the alert"
    if state == TableState.DECK_CHECK_FAILED:
        return f"the deck check failed: {sv('ack_deck_check', 'F10')} acknowledges it"
    if table.get("awaiting_card_replacement"):  # PT-2001 r.51: the dealer waits, the chief inspector replaces
        return (
            f"damaged card: wait for {sv('replace_card', 'F14')} to replace it (PT-2001 r.51); "
            "no card from the shoe until then"
        )
    if state == TableState.CLOSED:
        inside = table.get("cards_inside")
        if demo and isinstance(inside, int) and inside > 0:
            return (
                f"closed: {k('machine', 'l')} takes every card out of the machine, then {sv('open_table', 'F2')} "
                "opens a new session"
            )
        return f"the table is closed: {sv('open_table', 'F2')} opens it"
    if state == TableState.LOADING:
        return (
            f"{k('machine', 'l')}: load the cards in two packets and close the lid"
            if demo
            else "load the cards, close the lid"
        )
    if state == TableState.CLOSING:
        if lid.get("state") == "open":
            return (
                f"{k('machine', 'l')}: the cards in, close the lid (the deck check follows)"
                if demo
                else "cards in, close the lid"
            )
        return "closing: the deck check runs (PT-2001 r.55)"
    if state == TableState.SHUFFLING:
        return "the shoe is shuffling: wait"
    if state == TableState.CUT:
        if "cut" not in enabled:
            return "wait for the cut"
        cut = keys.get("cut", "t")
        return f"{cut}: Seat {seat} cuts the cards ({pick} chooses the seat with the right, PT-2001 r.8)"
    if state == TableState.BETTING:
        bet_hint = _bet_hint(table, enabled, keys, seat, pick, bet, chip, chip_amount)
        if "no_more_bets" in enabled:
            parts = [f"{k('no_more_bets', 'n')}: no more bets", bet_hint, f"{pick}: another seat"]
            return "  ·  ".join(p for p in dict.fromkeys(parts) if p)
        if bet_hint is None:
            return "betting: wait (the table takes no bet now)" if "place_bet" not in enabled else "—"
        return f"{bet_hint}  ·  {pick}: choose the seat  ·  [ ]: the chip"
    if state in (*DEALING_STATES, "no_more_bets"):
        allowed = [a for a in ACTION_WORDS if a in enabled and a in keys]
        if allowed:
            return "  ·  ".join(f"{keys[a]}: {ACTION_WORDS[a].lower()}" for a in allowed)
        if card_refusal(table, rnd, enabled, keys) is None:
            return f"{k('draw', 'c')}: next card" if demo else "deal the next card from the shoe"
        return (
            "the round is complete: wait for the settlement" if rnd.get("complete") else "wait for the table"
        )
    if state == TableState.SETTLED and table.get("shuffler") not in (None, "continuous"):
        return f"{keys['next_round']}: next round" if "next_round" in enabled else "wait for the table"
    if state == TableState.SETTLED:
        return (
            f"{k('machine', 'l')}: cards in + close the lid"
            if demo
            else "put the round's cards in and close the lid"
        )
    if state == TableState.CARDS_RETURNED:
        if "next_round" in enabled:
            return f"{keys['next_round']}: next round"
        if lid.get("state") == "open":
            return f"{k('machine', 'l')}: close the lid" if demo else "close the lid"
        return "wait for the table"
    return "—"
