"""`tablectl demo --auto`, what it prints: each card, bet, settlement and round summary that came over MQTT as
one line of plain text (controller/plain.py), in a dealer's words (controller/words.py): cards as on the
table (`Q♥`), hands numbered from 1, outcomes in words, money in major units with the table's currency."""

from __future__ import annotations

from typing import Any

from controller.plain import clean
from controller.words import OUTCOME_WORDS, RECIPIENT_WORDS, card_face, cards_text, hand_label, money, words


def recipient_words(recipient: Any) -> str:
    """events/card 'recipient': 'seat:1:0' -> 'Seat 1' ('Seat 1, hand 2' for a later hand), 'dealer' -> 'Dealer',
    'burn' -> 'burnt'."""
    text = str(recipient)
    if text.startswith("seat:"):
        _, seat, *hand = text.split(":")
        index = int(hand[0]) if hand and hand[0].isdigit() else 0
        return hand_label(seat, index)
    return words(RECIPIENT_WORDS, text)


def card_line(data: dict[str, Any]) -> str:
    """One events/card as a line: 'card 2 to Seat 1: Q♥', 'card 1 burnt: J♦', 'card 7 to Dealer: face down'."""
    card = "face down (hole card)" if data.get("hidden") else card_face(data.get("code"))
    to = recipient_words(data.get("recipient"))
    where = to if data.get("recipient") in ("burn", "held", "void") else f"to {to}"
    return clean(f"card {data.get('shoe_seq')} {where}: {card}", 200)


def _hands(data: dict[str, Any]) -> list[dict[str, Any]]:
    hands = data.get("hands")
    return [h for h in hands if isinstance(h, dict)] if isinstance(hands, list) else []


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def settlement_line(data: dict[str, Any], currency: str | None = None) -> str:
    """events/settlement: the dealer's hand, then each hand's cards, total, outcome and net."""
    hands = _hands(data)
    split = {str(h.get("seat")) for h in hands if h.get("hand")}
    parts = "; ".join(
        f"{hand_label(h.get('seat'), h.get('hand'), str(h.get('seat')) in split)} {cards_text(_list(h.get('cards')))}"
        f" = {h.get('total')} {words(OUTCOME_WORDS, h.get('outcome'))} net {money(h.get('net'), currency, sign=True)}"
        for h in hands
    )
    dealer = cards_text(_list(data.get("dealer_cards")))
    return clean(
        f"settlement {data.get('round_id')}: dealer {dealer} = {data.get('dealer_total')} | {parts}", 1000
    )


def round_summary(data: dict[str, Any], currency: str | None = None) -> str:
    """One round in words: each hand's bet, cards, total, result and what it won or lost, then the dealer."""
    hands = _hands(data)
    split = {str(h.get("seat")) for h in hands if h.get("hand")}
    parts = [
        f"{hand_label(h.get('seat'), h.get('hand'), str(h.get('seat')) in split)} bet "
        f"{money(h.get('stake', h.get('bet')), currency)}: {cards_text(_list(h.get('cards')))} = "
        f"{h.get('total')}, {words(OUTCOME_WORDS, h.get('outcome'))}, {money(h.get('net'), currency, sign=True)}"
        for h in hands
    ]
    for ins in _list(data.get("insurance")):
        if isinstance(ins, dict):
            parts.append(f"Seat {ins.get('seat')} insurance {money(ins.get('net'), currency, sign=True)}")
    tag = ", blackjack" if data.get("dealer_blackjack") else (", bust" if data.get("dealer_bust") else "")
    dealer = cards_text(_list(data.get("dealer_cards")))
    line = f"round {data.get('round_id')}: {'; '.join(parts)} · dealer {dealer} = {data.get('dealer_total')}{tag}"
    return clean(line, 1000)


def bets_line(data: dict[str, Any], currency: str | None = None) -> str:
    """One events/round of the dealing phase as a line: the bet of each seat."""
    bets = ", ".join(
        f"Seat {b.get('seat')} {money(b.get('amount'), currency)}"
        for b in _list(data.get("bets"))
        if isinstance(b, dict)
    )
    return clean(f"round {data.get('round_id')}: bets {bets}", 400)
