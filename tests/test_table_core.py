"""The pure table core driven input by input (no I/O): procedures, faults, rejections, snapshots."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.effects import GpioWrite, Rejected
from controller.rules.profiles import load_profile
from controller.table import inputs
from controller.table.core import TableCore
from controller.table.messages import messages
from drivers import events as ev
from tablebench.table_testing import Harness


def play_simple_round(h: Harness, *, burn: bool) -> str:
    """Seat 1 bets 1000: TS 7S (17) stands; dealer 6D 8C (14) draws 5H -> 19. Returns the round id."""
    h.dealer("place_bet", seat=1, amount=1000)
    round_id = h.dealer("no_more_bets").result["round_id"]
    if burn:
        assert h.card("2C")["recipient"] == "burn"
    assert h.card("TS")["recipient"] == {"seat": 1, "hand": 0}
    assert h.card("6D")["recipient"] == "dealer"
    h.card("7S")
    h.card("8C")
    assert h.core.state == "players"
    h.dealer("stand")
    assert h.core.state == "dealer"
    h.card("5H")
    assert h.core.state == "settled"
    return round_id


# ---------------------------------------------------------------- session, loading, closing


def test_continuous_session_open_round_lid_cycle_close_pt2001_r53_r59_r62() -> None:
    h = Harness()
    h.open_continuous()
    assert h.core.state == "betting"  # no cut with a shuffler (PT-2001 r.52)
    rid = play_simple_round(h, burn=True)  # r.10: one card burnt before dealing starts
    # r.59-60: the lid opens automatically; the round stays contestable until its cards go in (r.62)
    assert isinstance(h.commands()[-1], ev.OpenLid)
    assert h.core.view()["contestable_rounds"] == [rid]
    assert h.core.outputs["lid_lock"] is False
    h.lid_cycle()
    assert h.core.state == "cards_returned"
    assert h.core.view()["contestable_rounds"] == []
    assert h.records("rounds_final")[0]["rounds"] == [rid]
    assert h.core.outputs["lid_lock"] is True
    # the second round burns nothing: PT-2001 r.10 burns only before the first deal
    h.dealer("next_round")
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("no_more_bets")
    assert h.card("9S")["recipient"] == {"seat": 2, "hand": 0}
    final = h.records("round_final")[0]
    assert final["round_id"] == rid and final["description"]["burn_before_deal"] == 1


def test_close_table_runs_deck_check_and_unlocks_for_removal_pt2001_r55() -> None:
    h = Harness()
    h.open_continuous()
    play_simple_round(h, burn=True)
    h.lid_cycle()
    h.dev(ev.ShuffleStarted())
    h.sup("close_table")
    assert h.core.state == "closing"
    assert not h.commands(ev.RunDeckCheck)  # not while shuffling
    h.dev(ev.ShuffleFinished(312))
    assert h.commands(ev.RunDeckCheck)
    full = {r + s: 6 for r in ev.RANKS for s in ev.SUITS}
    h.dev(ev.DeckCheckResult(full))
    assert h.core.state == "closed"
    assert h.records("deck_check")[0]["ok"] is True


@pytest.mark.parametrize(
    "change, what",
    [({"AS": 5}, "missing"), ({"KD": 7}, "extra"), ({"XX": 1}, "unknown")],
)
def test_deck_check_failure_blocks_reopening_until_acknowledged_pt2001_r55(change: dict, what: str) -> None:
    h = Harness()
    h.open_continuous()
    h.sup("close_table")
    counts = {r + s: 6 for r in ev.RANKS for s in ev.SUITS} | change
    h.dev(ev.DeckCheckResult(counts))
    assert h.core.state == "deck_check_failed"
    assert h.records("deck_check")[0][what]
    assert h.alerts("deck_check")[0].severity == "critical"
    with pytest.raises(Rejected, match=r"r\.55"):
        h.sup("open_table", profile="pt-2001")
    h.sup("ack_deck_check", user="chief-rui")
    assert h.records("deck_check_acknowledged")[0]["user"] == "chief-rui"
    h.sup("open_table", profile="pt-2001")
    assert h.core.state == "loading"


def test_loading_in_one_packet_does_not_open_pt2001_r54() -> None:
    h = Harness()
    h.sup("open_table", profile="pt-2001", shuffler="continuous")
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(312))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleFinished(312))
    assert h.core.state == "loading"
    assert "r.54" in h.alerts("loading")[0].reason


def test_loading_with_wrong_card_count_does_not_open_pt2001_r53() -> None:
    h = Harness()
    h.sup("open_table", profile="pt-2001", shuffler="continuous")
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    h.dev(ev.DiscardInserted(150))
    h.dev(ev.DiscardInserted(161))
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.dev(ev.ShuffleFinished(311))
    assert h.core.state == "loading"
    assert "311 cards inside, expected 6 decks x 52 = 312" in h.alerts("loading")[0].reason


def test_open_table_rejects_a_shoe_the_profile_does_not_allow() -> None:
    h = Harness()
    with pytest.raises(Rejected, match="does not allow a continuous shoe"):
        h.sup("open_table", profile="it-online", shuffler="continuous")
    assert h.core.state == "closed"


# ---------------------------------------------------------------- r.61 carry-over


def test_lid_that_did_not_open_carries_the_cards_to_the_next_round_pt2001_r61() -> None:
    h = Harness()
    h.open_continuous()
    first = play_simple_round(h, burn=True)
    h.apply(inputs.CommandFailed("OpenLid", "shuffling"))
    assert h.core.outputs["lid_lock"] is True
    assert h.records("lid_not_opened")[0]["carried"] == [first]
    h.dealer("next_round")
    h.dealer("place_bet", seat=1, amount=500)
    h.dealer("no_more_bets")
    assert h.core.view()["carried_rounds"] == [first]  # still contestable (r.62)
    h.card("TH")
    h.card("9C")
    h.card("QH")  # seat 1: 20
    h.card("8D")  # dealer: 17 -> stands
    h.dealer("stand")
    second = h.core.round.round_id
    assert h.core.state == "settled"
    h.lid_cycle()  # this time the lid opens: both rounds' cards go in together
    assert h.records("rounds_final")[-1]["rounds"] == [first, second]
    assert h.core.view()["contestable_rounds"] == []


def test_lid_timeout_tick_carries_the_cards_pt2001_r61() -> None:
    h = Harness()
    h.open_continuous()
    rid = play_simple_round(h, burn=True)
    h.apply(inputs.Tick())  # one second later: still waiting
    assert not h.records("lid_not_opened")
    h.now += 60
    h.apply(inputs.Tick())
    assert h.records("lid_not_opened")[0]["carried"] == [rid]


def test_next_round_refused_while_the_lid_is_open_pt2001_r59_r60() -> None:
    h = Harness()
    h.open_continuous()
    play_simple_round(h, burn=True)
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    with pytest.raises(Rejected, match=r"r\.59-60"):
        h.dealer("next_round")


# ---------------------------------------------------------------- batch shoe: cut, warning card, burn


def test_batch_shoe_cut_warning_card_last_round_and_reshuffle_pt2001_r8_r9_r11() -> None:
    h = Harness()
    h.open_batch()
    assert h.core.state == "cut"
    h.dealer("cut", seat=1)
    assert h.core.state == "betting"
    # a round with two seats; the warning card comes out during it (r.11: this round is the last)
    h.dealer("place_bet", seat=1, amount=500)
    h.dealer("place_bet", seat=4, amount=500)
    h.dealer("no_more_bets")
    h.card("2C")  # burn (r.10)
    h.seq = 312 - 50 - 1  # the shoe has dealt 261 cards: pretend the device counted them
    h.core.shoe.dealt = 261
    h.core.shoe.last_seq = h.seq
    h.dev(ev.WarningCardOut())
    assert h.records("warning_card_out")[0] == {
        "position_from_end": 51,
        "valid": True,
        "expected": "near card 50 from the end (PT-2001 r.9, 2 player(s))",
    }
    for code in ["TS", "9S", "6D", "7S", "9H", "8C"]:
        h.card(code)
    h.dealer("stand")
    h.dealer("stand")
    h.card("5H")
    assert h.core.state == "settled"
    h.dealer("next_round")
    assert h.core.state == "shuffling"  # r.11: reshuffle after the last round
    assert isinstance(h.commands()[-1], ev.StartShuffle)
    h.dev(ev.ShuffleFinished(312))
    assert h.core.state == "cut"
    # r.8: on later shoes the right passes to the next occupied seat
    with pytest.raises(Rejected, match="seat 4 has the right to cut"):
        h.dealer("cut", seat=1)
    h.dealer("cut", seat=4)
    assert h.core.state == "betting"
    h.dealer("place_bet", seat=1, amount=500)
    h.dealer("no_more_bets")
    assert h.core.round.burn_before_deal == 1  # new shoe: burn again (r.10)


def test_warning_card_just_before_a_round_still_allows_that_round_pt2001_r11() -> None:
    h = Harness()
    h.open_batch()
    h.dealer("cut", inspector=True)
    h.core.shoe.dealt = 262
    h.dev(ev.WarningCardOut())  # between rounds
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("no_more_bets")
    rid = h.core.round.round_id
    assert h.core.shoe.last_round == rid
    for code in ["2C", "TS", "6D", "7S", "8C"]:
        h.card(code)
    h.dealer("stand")
    h.card("5H")
    h.dealer("next_round")
    assert h.core.state == "shuffling"


@pytest.mark.parametrize(
    "profile, players, from_end, valid",
    [
        ("pt-2001", 3, 50, True),
        ("pt-2001", 3, 100, False),  # r.9: near the 50th from the end
        ("pt-2001", 1, 156, True),  # r.9: one player -> near the middle
        ("pt-2001", 1, 50, False),
        ("mo-2004", 2, 30, True),  # MO-2004 art.2.1.1: among the last 30 cards or more
        ("mo-2004", 2, 200, True),
        ("mo-2004", 2, 29, False),
    ],
)
def test_warning_card_position_validated_pt2001_r9_mo2004_art2(
    profile: str, players: int, from_end: int, valid: bool
) -> None:
    h = Harness()
    h.open_batch(profile)
    h.dealer("cut", seat=1) if profile == "pt-2001" else h.dealer("cut", dealer=True)
    amount = h.core.tp.min_bet
    for seat in range(1, players + 1):
        h.dealer("place_bet", seat=seat, amount=amount)
    total = h.core.tp.total_cards
    h.core.shoe.dealt = total - from_end
    h.dev(ev.WarningCardOut())
    assert h.records("warning_card_out")[0]["valid"] is valid
    assert bool(h.alerts("warning_card_position")) is (not valid)


def test_dealer_cut_refused_where_the_profile_says_players_cut_pt2001_r8() -> None:
    h = Harness()
    h.open_batch("pt-2001")
    with pytest.raises(Rejected, match=r"r\.8"):
        h.dealer("cut", dealer=True)


def test_burn_policy_mo2004_as_many_as_decks_then_one_per_round_art4() -> None:
    h = Harness()
    h.open_batch("mo-2004")
    h.dealer("cut", dealer=True)
    h.dealer("place_bet", seat=1, amount=10000)
    h.dealer("no_more_bets")
    decks = h.core.tp.decks
    assert h.core.round.burn_before_deal == decks  # art.4.1.1
    for code in ["2C", "3C", "4C", "5C", "6C", "7C"][:decks]:
        assert h.card(code)["recipient"] == "burn"
    assert h.card("TS")["recipient"] == {"seat": 1, "hand": 0}
    assert h.card("6D")["recipient"] == "dealer"
    h.card("7S")  # seat 1: 17; no hole card (MO-2004 art.5.2)
    h.dealer("stand")
    # art.4.2: one burn before the dealer's second card
    assert h.card("2D")["recipient"] == "burn"
    h.card("KD")  # dealer 16 -> draws
    h.card("2H")
    assert h.core.state == "settled"
    h.dealer("next_round")
    h.dealer("place_bet", seat=1, amount=10000)
    h.dealer("no_more_bets")
    assert h.core.round.burn_before_deal == 1  # art.4.2: one card at the start of each following round


def test_continuous_shuffler_warning_card_is_an_error_pt2001_r52() -> None:
    h = Harness()
    h.open_continuous()
    h.dev(ev.WarningCardOut())
    assert "r.52" in h.alerts("warning_card")[0].reason


# ---------------------------------------------------------------- dealer errors


def test_dealer_drawing_on_17_card_does_not_count_pt2001_r19() -> None:
    h = Harness()
    h.open_continuous()
    rid = play_simple_round(h, burn=True)  # dealer stood on 19
    entry = h.card("4S")
    assert entry["counts"] is False and entry["recipient"] == "void"
    assert entry["errors"][0]["rule"] == "PT-2001 r.19"
    assert "PT-2001 r.19" in h.alerts("dealer_error")[0].reason
    finals = [r for r in h.records("round_final") if r["round_id"] == rid]
    assert finals[-1]["description"]["dealer_errors"][0]["rule"] == "PT-2001 r.19"


def test_face_up_card_is_invalid_mo2004_art5_1_1() -> None:
    h = Harness()
    h.open_batch("mo-2004")
    h.dealer("cut", dealer=True)
    h.dealer("place_bet", seat=1, amount=10000)
    h.dealer("no_more_bets")
    for code in ["2C", "3C", "4C", "5C", "6C", "7C"]:
        h.card(code)  # burn
    h.card("TS")
    entry = h.card("9D", face_up=True)
    assert entry["counts"] is False
    assert entry["errors"][0]["rule"] == "MO-2004 art.5.1.1"
    assert h.alerts("dealer_error")


def test_card_before_no_more_bets_goes_to_the_discard_with_an_alert() -> None:
    h = Harness()
    h.open_continuous()
    h.card("AS")
    assert h.records("card_discarded")[0]["card"] == "AS"
    assert h.core.state == "betting"


# ---------------------------------------------------------------- faults


def start_round(h: Harness) -> None:
    h.open_continuous()
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("place_bet", seat=2, amount=500)
    h.dealer("no_more_bets")
    for code in ["2C", "TS", "9H", "6D", "7S", "8C", "8H"]:
        h.card(code)
    assert h.core.state == "players"


@pytest.mark.parametrize("phase", ["betting", "dealing", "players", "dealer", "settled"])
def test_jam_in_each_phase_blocks_dealing_until_a_supervisor_clears_it_pt2001_r51(phase: str) -> None:
    h = Harness()
    h.open_continuous()
    if phase != "betting":
        h.start_round({1: 1000})
        h.card("2C")
        if phase != "dealing":
            for code in ["TS", "6D", "7S", "8C"]:
                h.card(code)
            if phase in ("dealer", "settled"):
                h.dealer("stand")
            if phase == "settled":
                h.card("5H")
    assert h.core.state == phase
    h.clear()
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    assert h.core.state == "jammed"
    assert GpioWrite("warning_light", True) in h.effects
    assert h.core.outputs["lid_lock"] is True  # the lid stays locked
    assert "r.51" in h.alerts("jam")[0].reason
    with pytest.raises(Rejected, match="dealing blocked"):
        h.dealer("hit")
    with pytest.raises(Rejected, match="still reports a jam"):
        h.sup("clear_jam")
    with pytest.raises(Rejected, match="needs a chief inspector"):
        h.apply(inputs.SupervisorInput("d1", "clear_jam", {}, "dealer"))
    h.sup("unlock_lid")  # the chief inspector alone opens the lid (r.51)
    h.dev(ev.JamCleared())
    h.sup("clear_jam", user="chief-rui")
    cleared = h.records("jam_cleared")[0]
    assert cleared["user"] == "chief-rui" and cleared["at"].endswith("Z")
    assert h.core.state == "resync" and isinstance(h.commands()[-1], ev.ReportCounts)
    h.dev(ev.CardsInside(h.core.inside))  # every card accounted for: continue
    expected = "settled" if phase == "settled" else phase
    assert h.core.state == expected
    assert h.core.outputs["warning_light"] is False
    assert not h.records("round_void")


def test_jam_losing_a_card_voids_the_round_and_returns_bets_pt_online_r27_r28() -> None:
    h = Harness()
    start_round(h)
    h.dev(ev.Jammed(ev.JamLocation.OUTPUT))
    h.sup("unlock_lid")
    h.dev(ev.JamCleared())
    h.sup("clear_jam")
    h.dev(ev.CardsInside(h.core.inside - 1))  # a card left the machine unseen
    assert h.core.state == "settled"
    void = h.records("round_void")[0]
    assert void["bets_returned"] == {"1": 1000, "2": 500}
    assert "PT-ONLINE-2015 r.27-28" in h.alerts("round_void")[0].reason
    assert h.records("round_final")[-1]["void"] is True
    assert h.commands(ev.OpenLid)  # the voided round's cards still go back (r.59)


def test_forced_lid_is_tamper_until_the_supervisor_locks_it_pt2001_r60() -> None:
    h = Harness()
    start_round(h)
    h.dev(ev.LidChanged(ev.LidState.FORCED_OPEN))
    assert h.core.state == "tamper"
    assert h.alerts("tamper")[0].severity == "critical"
    with pytest.raises(Rejected, match="close it"):
        h.sup("lock_lid")
    h.dev(ev.LidChanged(ev.LidState.CLOSED))
    h.sup("lock_lid")
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "players"


def test_lid_opening_without_authorisation_is_tamper_pt2001_r60() -> None:
    h = Harness()
    h.open_continuous()
    h.dev(ev.LidChanged(ev.LidState.OPEN))
    assert h.core.state == "tamper"


def test_lid_switch_open_while_locked_is_tamper() -> None:
    h = Harness()
    h.open_continuous()
    h.apply(inputs.GpioInput("lid_switch", True))
    assert h.core.state == "tamper"


def test_unreadable_card_replaced_by_supervisor_recorded_and_reported_pt2001_r51() -> None:
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.unreadable(damaged=True)
    assert h.core.outputs["warning_light"] is True
    assert "r.51" in h.alerts("card_unreadable")[0].reason
    with pytest.raises(Rejected, match="awaits replacement"):
        h.dealer("stand")
    with pytest.raises(Rejected, match="card must be a code"):
        h.sup("replace_card", card="ZZ")
    h.sup("replace_card", user="chief-rui", card="TS")
    rec = h.records("card_replaced")[0]
    assert rec["user"] == "chief-rui" and rec["card"] == "TS" and rec["damaged"] is True
    assert h.core.round.cards[-1]["recipient"] == {"seat": 1, "hand": 0}
    assert h.core.outputs["warning_light"] is False
    assert any(  # reported to the inspection service (r.51)
        e.topic == "events/shoe" and e.data.get("procedure") == "card_replaced" for e in messages(h.effects)
    )


def test_link_down_blocks_dealing_until_a_supervisor_clears_it_after_link_up() -> None:
    """Product guide (safety first): the link coming back does not clear the fault; a supervisor does."""
    h = Harness()
    start_round(h)
    h.dev(ev.LinkDown(reason="unplugged"))
    assert h.core.state == "link_down" and h.core.outputs["warning_light"] is True
    with pytest.raises(Rejected, match="link_down"):
        h.dealer("stand")
    h.dev(ev.LinkUp())
    assert h.core.state == "link_down" and h.core.outputs["warning_light"] is True
    h.sup("clear_link")
    assert h.core.state == "resync"
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "players"


def test_card_sequence_gap_voids_the_round_pt_online_r27() -> None:
    h = Harness()
    start_round(h)
    h.seq += 1  # one card came out that the controller never saw
    h.card("5S")
    assert h.core.state == "settled"
    assert h.records("round_void")[0]["missing"] == 1


def test_restart_mid_round_resumes_when_every_card_is_known() -> None:
    h = Harness()
    start_round(h)
    h.apply(inputs.Restart())
    assert h.core.state == "resync"
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "players"


def test_supervisor_void_round_returns_bets() -> None:
    h = Harness()
    start_round(h)
    h.sup("void_round", reason="dispute")
    assert h.records("round_void")[0]["bets_returned"] == {"1": 1000, "2": 500}


# ---------------------------------------------------------------- rejections and snapshots


@pytest.mark.parametrize(
    "action, args, match",
    [
        ("place_bet", {"seat": 9, "amount": 500}, "seat must be"),
        ("place_bet", {"seat": 1, "amount": 100}, r"below|outside.*PT-2001 r\.14"),  # the minimum (r.14)
        ("place_bet", {"seat": 1, "amount": 15500}, r"outside.*PT-2001 r\.37"),  # above 30 x minimum (r.37)
        ("place_bet", {"seat": 1, "amount": 700}, r"not a multiple of the minimum 500 \(PT-2001 r\.14\)"),
        ("place_bet", {"seat": 1, "amount": 500.0}, "integer in minor units"),
        ("no_more_bets", {}, "r.13"),
        ("hit", {}, "not allowed in state betting"),
        ("frobnicate", {}, "unknown dealer action"),
    ],
)
def test_bad_dealer_inputs_are_rejected_with_a_reason(action: str, args: dict, match: str) -> None:
    h = Harness()
    h.open_continuous()
    before = h.core.snapshot()
    with pytest.raises(Rejected, match=match):
        h.dealer(action, **args)
    assert h.core.snapshot() == before


DEALER_ACTIONS = st.sampled_from(
    [
        "place_bet",
        "clear_bet",
        "no_more_bets",
        "hit",
        "stand",
        "double",
        "split",
        "surrender",
        "next_round",
        "cut",
    ]
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(
                st.just("dealer"), DEALER_ACTIONS, st.integers(0, 8), st.sampled_from([0, 500, 1000, 99999])
            ),
            st.tuples(
                st.just("card"), st.sampled_from(["AS", "TD", "6H", "9C", "2S", "KH"]), st.just(0), st.just(0)
            ),
        ),
        max_size=30,
    )
)
def test_a_rejected_input_never_changes_the_state(steps: list) -> None:
    """Property: any dealer input either applies or raises Rejected leaving the snapshot identical."""
    h = Harness()
    h.open_continuous()
    for kind, what, seat, amount in steps:
        if kind == "card":
            h.card(what)
            continue
        before = h.core.snapshot()
        try:
            h.dealer(what, seat=seat, amount=amount)
        except Rejected:
            assert h.core.snapshot() == before


def test_snapshot_restore_round_trip_mid_round() -> None:
    h = Harness()
    start_round(h)
    h.dealer("hit")
    snap = h.core.snapshot()
    other = TableCore(load_profile)
    other.restore(snap)
    assert other.snapshot() == snap
    assert other.state == "players"
    # both continue identically
    s1 = h.core.apply(inputs.DeviceInput(ev.CardOut("3", "D", 8)), 5)
    s2 = other.apply(inputs.DeviceInput(ev.CardOut("3", "D", 8)), 5)
    assert s1.effects == s2.effects
    assert other.snapshot() == h.core.snapshot()


def test_card_delivered_after_a_link_fault_is_dealt_when_known() -> None:
    """A card drawn while the link was down reaches the controller after LinkUp: it is known, so it counts."""
    h = Harness()
    h.open_continuous()
    h.start_round({1: 1000})
    h.card("2C")
    h.dev(ev.LinkDown(reason="unplugged"))
    h.dev(ev.LinkUp())
    entry = h.card("TS")  # still link_down (awaiting the supervisor): delivered late
    assert entry["recipient"] == {"seat": 1, "hand": 0}
    for code in ["6D", "7S", "8C"]:
        h.card(code)
    assert h.core.state == "link_down" and h.core.resume_to == "players"
    h.sup("clear_link")
    assert h.core.state == "resync" and h.core.resume_to == "players"
    h.dev(ev.CardsInside(h.core.inside))
    assert h.core.state == "players"


def test_batch_close_gathers_every_card_before_the_deck_check_pt2001_r55() -> None:
    h = Harness()
    h.open_batch()
    h.dealer("cut", seat=3)
    h.dealer("place_bet", seat=3, amount=500)
    h.dealer("no_more_bets")
    for code in ["2C", "TS", "6D", "7S", "8C"]:
        h.card(code)
    h.dealer("stand")
    h.card("5H")
    h.clear()
    h.sup("close_table")
    assert h.commands() == [ev.StartShuffle()]  # the six cards out go back in first
    h.dev(ev.ShuffleStarted())
    h.dev(ev.ShuffleFinished(312))
    assert h.commands(ev.RunDeckCheck)
    h.dev(ev.DeckCheckResult({r + s: 6 for r in ev.RANKS for s in ev.SUITS}))
    assert h.core.state == "closed"
