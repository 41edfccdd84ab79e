"""What the dealer must see without scrolling, even at 80x24 with seven seats (issue 30): the last settlement as
the net per seat, the open alerts as a count and the most severe in words, and the inputs allowed now with their
keys. Pure functions of the documents (no Textual): tests/test_terminal_view.py covers them."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from controller.plain import clean
from controller.terminal.view import alert_sort_key, dealer_soft
from controller.words import ACTION_WORDS, SEVERITY_WORDS, alert_words, money, words


def seat_nets(settlement: dict[str, Any]) -> dict[str, int]:
    """Each seat's net of the round in minor units, as the rules engine settled it (``seat_nets``: its hands,
    insurance, side bets, prizes and co-bettors; controller/rules/settlement.py), in seat order. A value that is
    not an integer (the document comes from outside) is left out."""
    nets = settlement.get("seat_nets")
    if not isinstance(nets, dict):
        return {}
    found = {
        str(seat): net for seat, net in nets.items() if isinstance(net, int) and not isinstance(net, bool)
    }
    return dict(sorted(found.items(), key=lambda kv: kv[0].zfill(4)))


def settled_summary(settlement: dict[str, Any], currency: str | None) -> Text:
    """'Last round, dealer 20, net in EUR: Seat 1 +10.00 · Seat 2 -10.00 · …' (PT-ONLINE-2015 r.31): the
    currency said once, so that seven seats fit two lines at 80 columns (the round's id and its cards in full
    are in the last round's panel, below)."""
    if not settlement:
        return Text("Last round: none settled yet")
    total = settlement.get("dealer_total", "?")
    if settlement.get("dealer_blackjack"):
        dealer = "dealer blackjack"
    elif settlement.get("dealer_bust"):
        dealer = f"dealer {total} bust"
    elif dealer_soft({"cards": settlement.get("dealer_cards"), "total": total}):
        dealer = f"dealer soft {total}"
    else:
        dealer = f"dealer {total}"
    nets = seat_nets(settlement)
    per_seat = " · ".join(f"Seat {seat} {money(net, sign=True)}" for seat, net in nets.items())
    unit = f", net in {currency}" if currency else ", net"
    head = Text(f"Last round, {dealer}{unit}: ", style="bold")
    return head + Text(clean(per_seat or "no bets", 400))


def alert_summary(alerts_open: list[Any], ack_key: str = "F9") -> Text:
    """'No open alert' or '2 ALERTS OPEN · most severe: Shoe jam (critical) · F9 acknowledges'."""
    alerts = sorted((a for a in alerts_open if isinstance(a, dict)), key=alert_sort_key)
    if not alerts:
        return Text("No open alert")
    worst = alerts[0]
    count = len(alerts)
    style = "bold white on red" if worst.get("severity") == "critical" else "bold yellow"
    line = (
        f"{count} ALERT{'S' if count > 1 else ''} OPEN · most severe: {alert_words(worst.get('kind'))} "
        f"({words(SEVERITY_WORDS, worst.get('severity'))}) · {ack_key} acknowledges"
    )
    return Text(clean(line, 200), style=style)


def allowed_text(enabled: set[str], keys: dict[str, str]) -> str:
    """The inputs the controller accepts now with their keys, in the keys' order: 'h Hit · s Stand'."""
    shown = [f"{key} {words(ACTION_WORDS, action)}" for action, key in keys.items() if action in enabled]
    return " · ".join(shown) or "—"
