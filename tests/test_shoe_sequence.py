"""The core's card accounting on the shoe line (pure core, no I/O): issue 14 item 2 and issue 13 §5.

- A card that left the shoe unseen (lost before its commit, counted missing at the resync) takes its shoe_seq
  with it: the next round's first card is not a gap, so that round is not voided too.
- A valid CRC is not proof of a card: a repeated or out-of-order shoe_seq raises ``shoe_sequence`` at once, a
  card code more often in a round than the decks hold raises ``card_count`` at once. Either: the card is not
  dealt, lid locked, light on, dealing refused, critical alert, cleared only by a supervisor.
The same attacks against the real service (a hostile device on the pty) are in hil_tests/test_shoe_line.py.
"""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.table import inputs
from drivers import events as ev
from tablebench.table_testing import Harness

SAFE = {"lid_lock": True, "warning_light": True}


def mid_round() -> Harness:
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    for code in ("2C", "TS", "6D", "7S", "8C"):  # burn, seat 1, dealer, seat 1, dealer hole card
        h.card(code)
    assert h.core.state == "players"
    return h


def test_the_round_after_a_lost_card_is_not_voided_for_it() -> None:
    """Issue 14 item 2: a card leaves unseen, the link drops; after clear_link the resync counts one card
    missing and voids this round (PT-ONLINE-2015 r.27-28); the next round's first card (shoe_seq one past the
    lost one) must not look like a gap."""
    h = mid_round()
    h.seq += 1  # the card that left the shoe and never reached the journal
    h.dev(ev.LinkDown("unplugged"))
    h.dev(ev.LinkUp())
    h.sup("clear_link")
    assert h.core.state == "resync"
    h.dev(ev.CardsInside(h.core.inside - 1))
    assert len(h.records("round_void")) == 1 and h.core.state == "settled"
    h.lid_cycle()
    h.dealer("next_round")
    h.start_round({1: 1000})
    h.card("4H")  # burn, shoe_seq = lost + 1
    h.card("9D")
    assert h.records("card_gap") == []
    assert len(h.records("round_void")) == 1, "the next round was voided for the earlier loss"
    assert h.core.round_void is False and h.core.shoe.last_seq == h.seq


@pytest.mark.parametrize("seq_delta", [0, -2])  # the same shoe_seq again; an older one
def test_repeated_or_out_of_order_shoe_seq_is_a_fault_at_once(seq_delta: int) -> None:
    """The same card's frame again (a replayed frame): the fault, the round goes on after the resync."""
    h = mid_round()
    cards_before = list(h.core.round.cards)
    inside = h.core.inside
    again = next(c["card"] for c in cards_before if c["shoe_seq"] == h.seq + seq_delta)
    h.dev(ev.CardOut(again[0], again[1], h.seq + seq_delta))
    assert h.core.state == "shoe_sequence" and h.core.resume_to == "players"
    assert h.core.round.cards == cards_before and h.core.inside == inside  # not dealt, not counted
    assert h.core.outputs == SAFE and h.core.lid.unlock is None
    (alert,) = h.alerts("shoe_sequence")
    assert alert.severity == "critical"
    assert h.core.view()["faults"] == ["shoe_sequence"]
    with pytest.raises(Rejected):
        h.dealer("hit", seat=1)  # dealing refused while the fault is raised
    with pytest.raises(Rejected):  # not a technician's to clear
        h.apply(inputs.supervisor("tom", "clear_shoe_fault", {}, role="technician"))
    h.sup("clear_shoe_fault", user="chief-rui")
    assert h.records("shoe_fault_cleared")[0]["user"] == "chief-rui"
    h.dev(ev.CardsInside(inside))
    assert h.core.state == "players" and h.records("round_void") == []
    h.dealer("stand", seat=1)  # the round goes on


@pytest.mark.parametrize("seq_delta", [0, -2])
def test_two_different_cards_claiming_one_shoe_number_void_the_round(seq_delta: int) -> None:
    """Issue 27 §3: a forged frame took a real card's number (or the other way round): the identities differ,
    which card a seat holds can no longer be told, so the round is void (PT-ONLINE-2015 r.27-28) and its bets
    returned; the shoe-line fault stays until a supervisor clears it. Before, the counts matched at the resync
    and the round went on with the forged card."""
    h = mid_round()
    dealt = next(c["card"] for c in h.core.round.cards if c["shoe_seq"] == h.seq + seq_delta)
    other = "AS" if dealt != "AS" else "KH"
    h.dev(ev.CardOut(other[0], other[1], h.seq + seq_delta))
    (void,) = h.records("round_void")
    assert void["shoe_seq"] == h.seq + seq_delta and void["cards"] == [dealt, other]
    assert "two different cards claimed shoe number" in void["reason"]
    assert void["bets_returned"] == {1: 1000} or void["bets_returned"] == {"1": 1000}
    assert h.core.state == "shoe_sequence"
    h.sup("clear_shoe_fault", user="chief-rui")
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "settled"
    assert len(h.records("round_void")) == 1


def test_a_card_code_more_often_than_the_decks_hold_is_a_fault_at_once() -> None:
    """Six decks hold six aces of spades: a seventh in one round cannot be a card the shoe dealt."""
    h = Harness()
    h.open_continuous()
    decks = h.core.tp.decks
    h.start_round({s: 1000 for s in range(1, 8)})
    for _ in range(decks):
        h.card("AS")
    assert h.core.state in ("dealing", "players") and h.records("card_count") == []
    dealt = len(h.core.round.cards)
    h.card("AS")
    assert h.core.state == "card_count"
    assert len(h.core.round.cards) == dealt  # the impossible card is not dealt
    (rec,) = h.records("card_count")
    assert rec["card"] == "AS" and rec["decks"] == decks
    assert h.alerts("card_count")[0].severity == "critical" and h.core.outputs == SAFE
    with pytest.raises(Rejected):
        h.dealer("place_bet", seat=1, amount=1000)
    h.sup("clear_shoe_fault", fault="card_count")
    assert h.core.state == "resync"
    # the shoe counts the seventh ace out too (a foreign card slipped in): nothing unaccounted, the round goes
    # on without it; a forged frame (no card out) would leave one card too many inside and void the round
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state in ("dealing", "players") and h.records("round_void") == []


def test_a_rebooted_shoe_may_start_its_shoe_seq_again() -> None:
    h = mid_round()
    h.dev(ev.Identified(2, "EMU-CSM", "1.0.0", "EMU0001", 6, True, boot_id=77))
    h.seq = 0
    h.card("9H")  # shoe_seq 1 after a new boot: not a repeat
    assert h.records("shoe_sequence") == []
    h.card("3H")
    h.dev(ev.CardOut("5", "H", 1))  # but 1 again is a repeat
    assert h.core.state == "shoe_sequence"


def test_a_lid_opening_replayed_after_a_restart_is_not_tamper() -> None:
    """The lid opened for the lid cycle (PT-2001 r.59-60), the service died before committing it; protocol v2
    sends that LidChanged again after the restart: it is the opening the restart interrupted, not tamper."""
    h = mid_round()
    h.dealer("stand", seat=1)
    h.card("9S")  # the dealer's draw: 8 + 6... until the round settles
    while h.core.state != "settled":
        h.card("TC")
    assert h.core.lid.unlock == "auto"
    h.apply(inputs.Restart())
    h.dev(ev.LidChanged(ev.LidState.OPEN))  # the replayed opening
    assert "tamper" not in h.core.faults and not h.alerts("tamper")
    assert h.records("lid_opened_before_restart")
    # ... and the table, counting the cards after the restart, keeps the lock output locked (PT-2001 r.60)
    assert h.core.outputs["lid_lock"] is True and h.core.outputs["warning_light"] is True
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    assert h.core.outputs["lid_lock"] is True and "tamper" not in h.core.faults


def test_the_rounds_cards_inserted_while_counting_after_a_restart_resume_with_the_cards_returned() -> None:
    """PT-2001 r.59, r.62: the lid opened for the lid cycle, the service restarted, and the dealer put the round's
    cards in while the table was still counting (resync; the lid was open). The table resumes with the cards
    returned (the lid cycle goes on: close the lid, next round), not back in ``settled`` waiting for cards that
    are already in (found by a 300-round soak: the bench waited 30 s for ``cards_returned``)."""
    h = mid_round()
    h.dealer("stand", seat=1)
    h.card("9S")
    while h.core.state != "settled":
        h.card("TC")
    h.apply(inputs.Restart())
    h.dev(ev.LidChanged(ev.LidState.OPEN))  # the replayed opening
    assert h.core.state == "resync"
    out = h.core.out
    h.dev(ev.DiscardInserted(out))  # the round's cards go in while the table counts
    assert h.records("rounds_final")
    h.dev(ev.CardsInside(h.core.inside))  # the count agrees: resume
    assert h.core.state == "cards_returned"
    assert (
        h.core.outputs["lid_lock"] is True
    )  # still latched: the opening after a restart was no unlock (r.60)
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dealer("next_round")
    assert h.core.state == "betting"
