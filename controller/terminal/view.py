"""Pure projections of the MQTT documents onto what the pit terminal shows (no Textual, no I/O), so the
formatting and the enabling rules are tested on their own."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from controller.actions import DEALER_BETTING, DEALER_PLAY

# Dealer inputs shown as buttons/keys, by command name (docs/mqtt.md "Dealer").
PLAY_INPUTS = DEALER_PLAY
BETTING_INPUTS = DEALER_BETTING
ROUND_END_INPUTS = ("next_round",)
SEVERITY_RANK = {"critical": 0, "warning": 1, "info": 2}


def money(cents: int | None) -> str:
    """Integer minor units -> '1,234.50' (never through a float)."""
    if cents is None:
        return "—"
    sign = "-" if cents < 0 else ""
    units, minor = divmod(abs(int(cents)), 100)
    return f"{sign}{units:,}.{minor:02d}"


def enabled_inputs(
    status: str,
    connected: bool,
    table: dict[str, Any],
    rnd: dict[str, Any],
    jackpot: dict[str, Any] | None = None,
) -> set[str]:
    """The dealer inputs to enable now. During play the controller's ``allowed_actions`` (the rules engine's
    answer, by command name) is authoritative; betting inputs follow the table state. The dealer enters
    jackpot chips only in manual mode (PT-2001 r.41b; automatic tables sense them, r.41a) while the jackpot
    is playable. Nothing is enabled while the broker or the controller is unreachable."""
    if not connected or status != "online":
        return set()
    state = str(table.get("state", ""))
    if state == "betting":
        allowed = {"place_bet"}
        if table.get("bets"):
            allowed |= {"clear_bet", "no_more_bets"}
            if jackpot and jackpot.get("mode") == "manual" and jackpot.get("playable"):
                allowed.add("jackpot_chip")
        return allowed
    if state in ("settled", "cards_returned"):
        return {"next_round"}
    if state in ("dealing", "players", "dealer"):
        return {str(a) for a in rnd.get("allowed_actions") or [] if a in PLAY_INPUTS}
    return set()


def hand_label(seat: Any, hand: Any) -> str:
    """'seat 3' for the original hand, 'seat 3 hand 1' for a split hand (hand indices are 0-based)."""
    return f"seat {seat}" if not hand else f"seat {seat} hand {hand}"


def card_text(code: str) -> str:
    """'TS' -> '10♠'; the withheld hole card stays '??' (PT-2001 r.17)."""
    if len(code) != 2 or code == "??":
        return code
    rank = "10" if code[0] == "T" else code[0]
    suit = {"S": "♠", "H": "♥", "D": "♦", "C": "♣"}.get(code[1], code[1])
    return rank + suit


def hand_text(hand: dict[str, Any]) -> str:
    cards = " ".join(card_text(c) for c in hand.get("cards") or []) or "–"
    total = int(hand.get("total") or 0)
    tags = []
    if hand.get("blackjack"):
        tags.append("BJ")
    elif total > 21:
        tags.append("bust")
    elif hand.get("soft") and total:
        tags.append("soft")
    if hand.get("doubled"):
        tags.append("x2")
    extra = f" ({', '.join(tags)})" if tags else ""
    return f"{cards} = {total}{extra}" if hand.get("cards") else cards


def turn_text(turn: dict[str, Any] | None) -> str:
    if not turn:
        return "—"
    if turn.get("kind") == "player":
        return f"seat {turn.get('seat')} hand {turn.get('hand', 0)}"
    if turn.get("kind") == "insurance":
        return f"insurance: seat {turn.get('seat')}"
    return str(turn.get("kind"))


def lid_text(lid: dict[str, Any]) -> str:
    """locked / open / shuffling as the dealer needs it (PT-2001 r.59-60)."""
    state = str(lid.get("state", "?"))
    by = lid.get("unlocked_by")
    return f"{state} (unlocked: {by})" if by and state != "locked" else state


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
        if settlement.get("dealer_blackjack"):
            label = "BJ"
        elif settlement.get("dealer_bust") or int(settlement.get("dealer_total") or 0) > 21:
            label = f"{int(settlement.get('dealer_total') or 0)} bust"
        else:
            label = str(int(settlement.get("dealer_total") or 0))
        self.entries.appendleft(label)
        while len(self.entries) > self.size:
            self.entries.pop()

    def text(self) -> str:
        return " · ".join(self.entries) if self.entries else "—"


def settlement_lines(s: dict[str, Any]) -> list[str]:
    """The last round's essentials (PT-ONLINE-2015 r.31): cards, totals, amounts and outcome per hand."""
    if not s:
        return ["no round settled yet"]
    dealer = " ".join(card_text(c) for c in s.get("dealer_cards") or [])
    d_total = s.get("dealer_total", "?")
    d_tag = " BJ" if s.get("dealer_blackjack") else (" bust" if s.get("dealer_bust") else "")
    lines = [f"round {s.get('round_id')}", f"dealer: {dealer} = {d_total}{d_tag}"]
    for h in s.get("hands") or []:
        cards = " ".join(card_text(c) for c in h.get("cards") or [])
        stake = h.get("stake", h.get("bet"))
        lines.append(
            f"{hand_label(h.get('seat'), h.get('hand'))}: {cards} = {h.get('total', '?')}  "
            f"stake {money(stake)}  {h.get('outcome', h.get('result', '?'))}  net {money(h.get('net'))}"
        )
    for ins in s.get("insurance") or []:
        lines.append(f"insurance seat {ins.get('seat')}: net {money(ins.get('net'))}")
    return lines


def alert_age(raised_at: float, now: float | None = None) -> str:
    secs = max(0, int((time.time() if now is None else now) - float(raised_at)))
    if secs < 60:
        return f"{secs}s"
    if secs < 3600:
        return f"{secs // 60}m{secs % 60:02d}s"
    return f"{secs // 3600}h{(secs % 3600) // 60:02d}m"


def alert_sort_key(alert: dict[str, Any]) -> tuple[int, int, float]:
    """Most severe first, then the most escalated, then the newest."""
    return (
        SEVERITY_RANK.get(str(alert.get("severity")), 3),
        -int(alert.get("level") or 0),
        -float(alert.get("raised_at") or 0),
    )
