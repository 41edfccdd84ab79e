"""`tablectl demo --auto`, what it prints: each card, bet, settlement and round summary that came over MQTT as
one line of plain text (controller/terminal/plain.py)."""

from __future__ import annotations

from typing import Any


def card_line(data: dict[str, Any]) -> str:
    """One events/card as a line; what came over MQTT is printed as plain text (controller/terminal/plain.py)."""
    from controller.terminal.plain import clean

    card = "face down (hole card)" if data.get("hidden") else str(data.get("code"))
    return clean(f"card #{data.get('shoe_seq')} {data.get('recipient')}: {card}", 200)


def settlement_line(data: dict[str, Any]) -> str:
    from controller.terminal.plain import clean
    from controller.terminal.view import hand_label, money

    dealer = " ".join(str(c) for c in data.get("dealer_cards") or [])
    hands = "; ".join(
        f"{hand_label(h.get('seat'), h.get('hand'))} {' '.join(str(c) for c in h.get('cards') or [])} = "
        f"{h.get('total')} {h.get('outcome')} net {money(h.get('net'))}"
        for h in data.get("hands") or []
        if isinstance(h, dict)
    )
    return clean(
        f"settlement {data.get('round_id')}: dealer {dealer} = {data.get('dealer_total')} | {hands}", 1000
    )


def round_summary(data: dict[str, Any]) -> str:
    """One round in words: each hand's bet, cards, total, result and what it won or lost, then the dealer."""
    from controller.terminal.plain import clean
    from controller.terminal.view import card_text, hand_label, money

    def signed(cents: Any) -> str:
        text = money(cents)
        return f"+{text}" if isinstance(cents, int) and cents > 0 else text

    hands = [h for h in data.get("hands") or [] if isinstance(h, dict)]
    split = {str(h.get("seat")) for h in hands if h.get("hand")}
    parts = [
        f"{hand_label(h.get('seat'), h.get('hand'), str(h.get('seat')) in split)} bet "
        f"{money(h.get('stake', h.get('bet')))}: {' '.join(card_text(c) for c in h.get('cards') or [])} = "
        f"{h.get('total')}, {str(h.get('outcome')).replace('_', ' ')}, {signed(h.get('net'))}"
        for h in hands
    ]
    for ins in data.get("insurance") or []:
        if isinstance(ins, dict):
            parts.append(f"Seat {ins.get('seat')} insurance {signed(ins.get('net'))}")
    tag = ", blackjack" if data.get("dealer_blackjack") else (", bust" if data.get("dealer_bust") else "")
    dealer = " ".join(card_text(c) for c in data.get("dealer_cards") or [])
    line = f"round {data.get('round_id')}: {'; '.join(parts)} · dealer {dealer} = {data.get('dealer_total')}{tag}"
    return clean(line, 1000)


def bets_line(data: dict[str, Any]) -> str:
    """One events/round of the dealing phase as a line: the bet of each seat."""
    from controller.terminal.plain import clean
    from controller.terminal.view import money

    bets = ", ".join(
        f"Seat {b.get('seat')} {money(b.get('amount'))}"
        for b in data.get("bets") or []
        if isinstance(b, dict)
    )
    return clean(f"round {data.get('round_id')}: bets {bets}", 400)
