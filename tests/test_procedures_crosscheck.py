"""Cross-check of the table's shoe procedures and fault handling against the rule books (RULES.md 1-4, 8).

Each test drives the pure core through the Harness and checks what a rule asks; the bugs this cross-check found
are pinned here (the docstring names the rule and what went wrong before the fix).
"""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.table import inputs
from controller.table.core import CARD_CODES
from controller.table.messages import messages
from drivers import events as ev
from tablebench.table_testing import Harness


def play_round(h: Harness, seats: tuple[int, ...] = (1,)) -> str:
    """One round: each seat stands on its first two cards, the dealer 6D 8C draws 5H (19)."""
    for seat in seats:
        h.dealer("place_bet", seat=seat, amount=h.core.tp.min_bet)
    rid = h.dealer("no_more_bets").result["round_id"]
    for _ in range(h.core.round.burn_before_deal):
        assert h.card("2C")["recipient"] == "burn"
    hole = h.core.rules_profile.hole_card
    firsts = ["TS", "9S", "TH", "9H", "TD", "9D", "TC"][: len(seats)]
    seconds = ["7S", "8S", "7H", "8H", "7D", "8D", "7C"][: len(seats)]
    for code in firsts:
        h.card(code)
    h.card("6D")
    for code in seconds:
        h.card(code)
    if hole:
        h.card("8C")
    for _ in seats:
        h.dealer("stand")
    if h.core.state == "dealer" and h.core.round.engine.profile.burn.before_dealer_second:
        assert h.card("3C")["recipient"] == "burn"  # MO-2004 art.4.2
    if not hole:
        h.card("8C")
    h.card("5H")
    assert h.core.state == "settled"
    return rid


def full_inventory(decks: int, without: tuple[str, ...] = ()) -> dict[str, int]:
    counts = {code: decks for code in CARD_CODES}
    for code in without:
        counts[code] -= 1
    return counts


# ---------------------------------------------------------------- cut card / last round (r.8, r.52, r.56)


@pytest.mark.parametrize("profile", ["pt-2001", "mo-2004"])
def test_cut_card_from_a_continuous_shuffler_announces_no_last_round_pt2001_r52_r56(profile: str) -> None:
    """PT-2001 r.52: no cut card with an automatic shuffler; r.56: no "last round of the shoe" announcement
    with a continuous one. Before the fix a CutCardOut from a continuous shuffler announced a last round
    and left ``last_round_of_shoe`` set for the rest of the session."""
    h = Harness()
    h.open_continuous(profile)
    h.dev(ev.CutCardOut())
    assert h.core.view()["last_round_of_shoe"] is False
    assert not [
        p for p in messages(h.effects) if p.event_type == "shoe" and p.data.get("procedure") == "last_round"
    ]
    assert "r.52" in h.alerts("cut_card")[0].reason
    play_round(h)
    h.lid_cycle()
    h.dealer("next_round")
    assert h.core.state == "betting"  # no reshuffle: the cards stay inside for the session (r.57)


def test_cut_card_from_a_batch_shoe_makes_the_round_the_last_pt2001_r11() -> None:
    """PT-2001 r.11 (the cut card marks the end of the playable shoe): the round in progress is the last."""
    h = Harness()
    h.open_batch()
    h.dealer("cut", seat=1)
    h.dealer("place_bet", seat=1, amount=500)
    rid = h.dealer("no_more_bets").result["round_id"]
    h.card("2C")
    h.dev(ev.CutCardOut())
    assert h.core.shoe.last_round == rid
    assert not h.alerts("cut_card")


def test_after_an_inspector_cut_the_next_shoe_starts_again_at_the_lowest_occupied_seat_pt2001_r8() -> None:
    """PT-2001 r.8: if no player cuts, the inspector does, "the next shoe proceeding as at the start of play":
    the lowest-numbered occupied seat has the right again. Before the fix any seat could cut that shoe."""
    h = Harness()
    h.open_batch()
    h.dealer("cut", inspector=True)
    h.dealer("place_bet", seat=3, amount=500)
    h.dealer("place_bet", seat=5, amount=500)
    h.dealer("no_more_bets")
    _last_round_of_the_shoe(h)
    assert h.core.state == "shuffling"
    h.dev(ev.ShuffleFinished(312))
    assert h.core.state == "cut"
    with pytest.raises(Rejected, match=r"seat 3 has the right to cut this shoe, not seat 5 \(PT-2001 r\.8\)"):
        h.dealer("cut", seat=5)
    h.dealer("cut", seat=3)
    assert h.core.shoe.cutter == 3 and h.core.state == "betting"


def _last_round_of_the_shoe(h: Harness) -> None:
    """Two seats bet (already placed, no more bets called): the warning card comes out, so this round is the
    last of the shoe (PT-2001 r.11); both stand, the dealer draws, and the next round reshuffles."""
    h.dev(ev.WarningCardOut())
    for code in ["2C", "TS", "9S", "6D", "7S", "9H", "8C"]:  # burn, the deal of two seats and the dealer
        h.card(code)
    h.dealer("stand")
    h.dealer("stand")
    h.card("5H")
    h.dealer("next_round")


def test_the_right_to_cut_passes_seat_by_seat_and_the_inspector_may_always_cut_pt2001_r8() -> None:
    """PT-2001 r.8: on later shoes the right passes to the next occupied seat; if nobody wants it, the
    inspector cuts."""
    h = Harness()
    h.open_batch()
    h.dealer("cut", seat=2)
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("place_bet", seat=6, amount=500)
    h.dealer("no_more_bets")
    _last_round_of_the_shoe(h)
    h.dev(ev.ShuffleFinished(312))
    with pytest.raises(Rejected, match="seat 6 has the right"):
        h.dealer("cut", seat=2)
    h.dealer("cut", inspector=True)  # seat 6 declined
    assert h.core.shoe.cutter == "inspector"


# ---------------------------------------------------------------- burn per profile and shuffler (r.10, art.4)


@pytest.mark.parametrize(
    "profile, shuffler, first, later",
    [
        ("pt-2001", "continuous", 1, 0),  # PT-2001 r.10: one card before dealing starts, nothing per round
        ("pt-2001", "batch", 1, 0),
        ("mo-2004", "continuous", 6, 1),  # MO-2004 art.4.1.1 as many as decks; art.4.2 one per round
        ("mo-2004", "batch", 6, 1),
    ],
)
def test_burn_before_the_first_and_later_rounds_per_profile_pt2001_r10_mo2004_art4(
    profile: str, shuffler: str, first: int, later: int
) -> None:
    """PT-2001 r.10 / MO-2004 art.4.1-4.2 (the shuffler-dealer included, art.4.2): the burn before a round."""
    h = Harness()
    (h.open_continuous if shuffler == "continuous" else h.open_batch)(profile)
    if h.core.state == "cut":
        h.dealer("cut", inspector=True) if profile == "pt-2001" else h.dealer("cut", dealer=True)
    assert h.core.state == "betting"
    play_round(h)
    assert h.records("round_started")[0]["burn"] == first
    if shuffler == "continuous":
        h.lid_cycle()
    h.dealer("next_round")
    play_round(h)
    assert h.records("round_started")[1]["burn"] == later


@pytest.mark.parametrize("profile", ["pt-2001", "mo-2004"])
def test_no_cut_and_no_warning_card_with_a_continuous_shuffler_pt2001_r52(profile: str) -> None:
    """PT-2001 r.52: no cut (the table never waits in ``cut``, a cut is refused) and no warning card."""
    h = Harness()
    h.open_continuous(profile)
    assert h.core.state == "betting"
    with pytest.raises(Rejected, match="cut is not allowed in state betting"):
        h.dealer("cut", seat=1)
    h.dev(ev.WarningCardOut())
    assert h.core.view()["last_round_of_shoe"] is False
    assert h.alerts("warning_card")


# ---------------------------------------------------------------- lid and loading (r.53-55, r.59-60)


@pytest.mark.parametrize(
    "opening",
    [
        ev.LidChanged(ev.LidState.FORCED_OPEN),
        ev.LidChanged(ev.LidState.OPEN),
        inputs.GpioInput("lid_switch", True),
    ],
    ids=["forced", "open_unlocked", "lid_switch"],
)
def test_lid_opened_after_a_failed_deck_check_is_a_tamper_alert_not_a_crash_pt2001_r55_r60(
    opening: object,
) -> None:
    """PT-2001 r.60 (the lid is never opened by hand) after a failed deck check (r.55): before the fix the
    opening raised a MachineError out of the core (no ``forced`` transition from ``deck_check_failed``), so
    the device event was lost with a traceback and no tamper alert was raised."""
    h = Harness()
    h.open_continuous()
    h.sup("close_table")
    h.dev(ev.DeckCheckResult(full_inventory(6, without=("AS",))))
    assert h.core.state == "deck_check_failed"
    h.clear()
    if isinstance(opening, inputs.GpioInput):
        h.apply(opening)
    else:
        h.dev(opening)
    assert h.core.state == "deck_check_failed"  # the failed check still has to be acknowledged
    assert h.alerts("tamper")[0].severity == "critical"
    assert h.core.outputs["warning_light"] is True
    h.sup("ack_deck_check")
    assert h.core.state == "closed"


def test_cards_inserted_beyond_those_out_are_flagged_pt2001_r54() -> None:
    """PT-2001 r.54: the cards are loaded once per session; inserting more cards than came out adds cards."""
    h = Harness()
    h.open_continuous()
    play_round(h)
    out = h.core.out
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(out + 2))
    alert = h.alerts("cards_added")[0]
    assert alert.severity == "critical" and alert.details == {"inserted": out + 2, "out": out}


def test_a_normal_lid_cycle_raises_no_cards_added_alert_pt2001_r59() -> None:
    """PT-2001 r.59: the round's cards go back through the window: no alert when the counts match."""
    h = Harness()
    h.open_continuous()
    play_round(h)
    h.lid_cycle()
    assert not h.alerts("cards_added") and not h.alerts("discard_count")


# ---------------------------------------------------------------- deck verification at close (r.55)


def test_continuous_close_with_a_card_missing_flags_the_shortfall_pt2001_r55() -> None:
    """PT-2001 r.55: at closing every deck must be complete. Before the fix a card missing from the discard
    left the table waiting in ``closing`` for ever: the deck check only ran once no card was out."""
    h = Harness()
    h.open_continuous()
    play_round(h)
    h.lid_cycle()
    h.dealer("next_round")
    play_round(h)
    h.sup("close_table")
    assert h.core.state == "closing" and isinstance(h.commands()[-1], ev.OpenLid)
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(h.core.out - 1))  # one card of the last round never came back
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleStarted())
    assert not h.commands(ev.RunDeckCheck)
    h.dev(ev.ShuffleFinished(311))
    alert = h.alerts("deck_count")[0]
    assert alert.severity == "critical" and "1 card(s) short of 312" in alert.reason
    assert isinstance(h.commands()[-1], ev.RunDeckCheck)
    h.dev(ev.DeckCheckResult(full_inventory(6, without=("5H",))))
    assert h.core.state == "deck_check_failed"
    assert h.core.deck_check.missing == {"5H": 1}


def test_batch_close_with_a_card_missing_flags_the_shortfall_pt2001_r55() -> None:
    """PT-2001 r.55 with a batch shoe: the cards go back in for a shuffle; a card short is flagged."""
    h = Harness()
    h.open_batch()
    h.dealer("cut", seat=1)
    play_round(h)
    h.dealer("next_round")
    h.sup("close_table")
    assert isinstance(h.commands()[-1], ev.StartShuffle)
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(311))
    assert h.alerts("deck_count")
    h.dev(ev.DeckCheckResult(full_inventory(6, without=("KD",))))
    assert h.core.state == "deck_check_failed"


def test_close_with_every_card_back_runs_the_deck_check_without_a_shortfall_pt2001_r55() -> None:
    """PT-2001 r.55: all cards back in: the inventory runs and the table closes; no shortfall alert."""
    h = Harness()
    h.open_continuous()
    play_round(h)
    h.sup("close_table")
    h.lid_cycle()
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(312))
    assert not h.alerts("deck_count")
    assert isinstance(h.commands()[-1], ev.RunDeckCheck)
    h.dev(ev.DeckCheckResult(full_inventory(6)))
    assert h.core.state == "closed"


# ---------------------------------------------------------------- a shoe procedure interrupted by a fault


def test_reshuffle_finished_during_a_jam_does_not_strand_the_table_pt2001_r11_r51() -> None:
    """PT-2001 r.11 (reshuffle after the last round) interrupted by a jam (r.51): before the fix the
    ShuffleFinished that arrived during the jam was consumed there and the table stayed in ``shuffling``."""
    h = Harness()
    h.open_batch()
    h.dealer("cut", seat=1)
    h.dev(ev.WarningCardOut())  # just before the round: that round is still played, then reshuffle
    play_round(h)
    h.dealer("next_round")
    assert h.core.state == "shuffling"
    h.dev(ev.ShuffleStarted())
    h.dev(ev.Jammed(ev.JamLocation.SHUFFLER))
    h.dev(ev.ShuffleFinished(312))
    h.sup("unlock_lid")
    h.dev(ev.JamCleared())
    h.sup("clear_jam")
    h.clear()
    h.dev(ev.CardsInside(312))
    assert h.core.state == "shuffling"
    assert h.commands(ev.StartShuffle) == [ev.StartShuffle()]  # shuffled again, not cut unshuffled
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(312))
    assert h.core.state == "cut" and h.core.shoe.no == 2


def test_loading_shuffle_reported_during_a_link_fault_completes_the_loading_pt2001_r53_r54() -> None:
    """PT-2001 r.53-54: the loading's count reached the controller only while the link was down (consumed
    by the resync); before the fix the table stayed in ``loading`` for ever."""
    h = Harness()
    h.sup("open_table", profile="pt-2001", shuffler="continuous")
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(156))
    h.dev(ev.DiscardInserted(156))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleStarted())
    h.dev(ev.LinkDown("usb reset"))
    h.dev(ev.ShuffleFinished(312))
    h.dev(ev.LinkUp())
    h.sup("clear_link")  # the link fault is cleared by a supervisor, not by the link coming back
    h.dev(ev.CardsInside(312))
    assert h.core.state == "betting"
    assert h.records("session_loaded")[0]["packets"] == 2


def test_loading_in_one_packet_is_still_refused_after_a_fault_pt2001_r54() -> None:
    """PT-2001 r.54: at least two packets, also when the loading's end is checked after a fault."""
    h = Harness()
    h.sup("open_table", profile="pt-2001", shuffler="continuous")
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(312))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.Jammed(ev.JamLocation.SHUFFLER))
    h.dev(ev.JamCleared())
    h.sup("clear_jam")
    h.dev(ev.CardsInside(312))
    assert h.core.state == "loading"
    assert "at least two required (PT-2001 r.54)" in h.alerts("loading")[0].reason


def test_restart_during_the_closing_lid_cycle_opens_the_lid_again_pt2001_r55_r60() -> None:
    """PT-2001 r.55 (every card in for the inventory) after a restart that re-locked the lid (r.60): the
    controller opens it again for the discard instead of waiting for ever."""
    h = Harness()
    h.open_continuous()
    play_round(h)
    h.sup("close_table")
    h.apply(inputs.Restart())
    assert h.core.state == "resync" and h.core.lid.unlock is None
    h.clear()
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "closing"
    assert h.commands(ev.OpenLid) and h.core.lid.unlock == "closing"
    h.lid_cycle()
    h.dev(ev.ShuffleFinished(312))
    h.dev(ev.DeckCheckResult(full_inventory(6)))
    assert h.core.state == "closed"


# ---------------------------------------------------------------- jam (r.51) and void (PT-ONLINE r.27-28)


def test_jam_only_a_supervisor_clears_it_and_the_dealer_cannot_deal_pt2001_r51() -> None:
    """PT-2001 r.51: warning light on, dealing blocked; a dealer cannot clear it; a chief inspector does."""
    h = Harness()
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=500)
    h.dealer("no_more_bets")
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    assert h.core.outputs["warning_light"] is True and h.core.outputs["lid_lock"] is True
    for action in ("hit", "stand", "next_round", "no_more_bets"):
        with pytest.raises(Rejected, match="dealing blocked"):
            h.dealer(action)
    h.dev(ev.JamCleared())
    for role in ("dealer", "floor", "cashier"):
        with pytest.raises(Rejected):
            h.apply(inputs.SupervisorInput("d1", "clear_jam", {}, role))
    assert h.core.state == "jammed"
    h.sup("clear_jam", user="chief-rui")
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "dealing" and h.core.outputs["warning_light"] is False


def test_cards_unaccounted_for_after_a_link_fault_void_the_round_pt_online_r27_r28() -> None:
    """PT-ONLINE-2015 r.27-28: a card left the machine unseen during the fault: the round is void, the bets
    are returned, and the voided round's cards still go back with the lid cycle (PT-2001 r.59)."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.card("TS")
    h.dev(ev.LinkDown("cable"))
    h.dev(ev.LinkUp())
    h.sup("clear_link")  # the link fault is cleared by a supervisor, not by the link coming back
    h.dev(ev.CardsInside(h.core.inside - 1))
    assert h.core.state == "settled"
    assert h.records("round_void")[0]["bets_returned"] == {"1": 1000}
    assert h.commands(ev.OpenLid)


def test_deck_check_result_before_any_profile_is_only_recorded_pt2001_r55() -> None:
    """PT-2001 r.55 checks the decks of a session; with no profile loaded there are no decks to check against.
    Before the fix the result was published as a deck check of 0 decks (``decks`` must be >= 1)."""
    h = Harness()
    h.sup("run_deck_check")
    h.dev(ev.DeckCheckResult(full_inventory(6)))
    assert h.records("deck_check_ignored")
    assert not [p for p in messages(h.effects) if p.event_type == "deck_check"]
    assert h.core.state == "closed"


@pytest.mark.parametrize(
    "profile, burnt_before_void, next_burn",
    [
        ("pt-2001", 0, 1),  # PT-2001 r.10: nothing was burnt: the next round burns the card
        ("pt-2001", 1, 0),  # the burn was done: r.10 burns only once
        ("mo-2004", 3, 6),  # MO-2004 art.4.1.1: half the shoe burn: the next round burns as many as decks
        ("mo-2004", 6, 1),  # art.4.2: the shoe burn was done: one per round
    ],
)
def test_first_round_voided_before_its_burn_passes_the_burn_on_pt2001_r10_mo2004_art4(
    profile: str, burnt_before_void: int, next_burn: int
) -> None:
    """PT-2001 r.10 / MO-2004 art.4.1: the burn comes before the first deal of a shoe. Before the fix a first
    round voided before its burn was complete left the shoe without it (the next round burnt nothing)."""
    h = Harness()
    h.open_continuous(profile)
    h.dealer("place_bet", seat=1, amount=h.core.tp.min_bet)
    h.dealer("no_more_bets")
    for code in ["2C", "3C", "4C", "5C", "6C", "7C"][:burnt_before_void]:
        assert h.card(code)["recipient"] == "burn"
    h.sup("void_round", reason="dealer called away")
    assert h.records("round_void")
    h.lid_cycle()
    h.dealer("next_round")
    h.dealer("place_bet", seat=1, amount=h.core.tp.min_bet)
    h.dealer("no_more_bets")
    assert h.core.round.burn_before_deal == next_burn


def test_the_bank_may_reshuffle_after_any_round_mo2004_art2_2_2() -> None:
    """MO-2004 art.2.2.2: the bank may reshuffle at the end of any round, whether or not the second white card
    came out; PT-2001 has no such rule (the warning card closes the shoe, r.11), nor has a continuous shuffler."""
    h = Harness()
    h.open_batch(profile="mo-2004")
    h.dealer("cut", dealer=True)
    h.dealer("place_bet", seat=1, amount=10000)
    h.dealer("no_more_bets")
    deal = ["2C", "3D", "4H", "5S", "6C", "7D", "8H", "9S", "TC", "JD"]  # the shoe's burn (6), then the deal
    for code in deal[:9]:
        h.card(code)
    h.dealer("stand")
    h.card("QH")  # MO-2004 art.4.2: one burnt before the dealer's second card
    h.card("KS")
    assert h.core.state == "settled"
    h.clear()
    h.dealer("next_round", reshuffle=True)
    assert h.core.state == "shuffling" and h.commands(ev.StartShuffle)
    assert h.records("reshuffle_requested")[0]["rule"] == "MO-2004 art.2.2.2"

    pt = Harness()
    pt.open_batch()
    pt.dealer("cut", seat=1)
    pt.dealer("place_bet", seat=1, amount=500)
    pt.dealer("no_more_bets")
    for code in ["2C", "TS", "9S", "6D", "7S"]:
        pt.card(code)
    pt.dealer("stand")
    pt.card("5H")
    before = pt.core.snapshot()
    with pytest.raises(Rejected, match=r"MO-2004 art\.2\.2\.2"):
        pt.dealer("next_round", reshuffle=True)
    assert pt.core.snapshot() == before
    pt.dealer("next_round")
    assert pt.core.state == "betting"

    cont = Harness()  # a continuous shuffler has no shoe to end (PT-2001 r.56)
    cont.open_continuous(profile="mo-2004")
    cont.dealer("place_bet", seat=1, amount=10000)
    cont.dealer("no_more_bets")
    while cont.core.state in ("dealing", "players", "dealer"):
        engine = cont.core.round.engine
        if engine.expected_recipient() is not None:
            cont.card(["2C", "3D", "4H", "5S", "6C", "7D", "8H", "9S"][cont.seq % 8])
        else:
            cont.dealer("stand")
    cont.lid_cycle()
    with pytest.raises(Rejected, match=r"continuous shuffler"):
        cont.dealer("next_round", reshuffle=True)
