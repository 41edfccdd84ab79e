"""Simulated players' rounds (bench/tablebench/ap_players.py) dealt on the real table core (``Harness``): each
round's bets, cards and decisions in the order the engine recorded them, as a dealer would press and a shoe
would read them; one batch shoe, cut by the inspector (PT-2001 r.8)."""

from __future__ import annotations

from collections import deque

from drivers import events as ev
from tablebench.ap_players import SimRound
from tablebench.table_testing import Harness

_COMMANDS = {"no_insurance": "decline_insurance"}


def deal_on_table(h: Harness, rounds: list[SimRound], *, end_shoe: bool = False) -> None:
    """``end_shoe``: the warning card comes out before the last round (PT-2001 r.11: the shoe's last round), then
    the shoe is reshuffled: a new shoe starts (``state/shoe.shoe_no``) and the dealt one has ended."""
    h.open_batch()
    h.dealer("cut", inspector=True)
    for i, rnd in enumerate(rounds):
        desc = rnd.description
        if i:
            h.dealer("next_round")
        if end_shoe and i == len(rounds) - 1:
            h.dev(ev.WarningCardOut())
        h.start_round({b["seat"]: b["amount"] for b in desc["bets"]})
        cards = deque(c["card"] for c in desc["cards"])
        fed = 0
        for d in desc["decisions"]:
            while fed < d["after_cards"]:
                h.card(cards.popleft())
                fed += 1
            if d.get("implicit"):
                continue  # the hand drew without asking: the next card is its hit
            action = _COMMANDS.get(d["action"], d["action"])
            h.dealer(action, seat=d["seat"], **({} if action == "decline_insurance" else {"hand": d["hand"]}))
        while cards:
            h.card(cards.popleft())
        assert h.core.state == "settled", f"round {rnd.round_id} ended in {h.core.state}"
    if end_shoe:
        shoe = h.core.shoe.no
        h.dealer("next_round")
        assert h.core.state == "shuffling"
        h.dev(ev.ShuffleFinished(h.core.tp.total_cards))
        assert h.core.shoe.no == shoe + 1
