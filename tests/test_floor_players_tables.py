"""The table side's own player events (issue 41) through the floor: two real table cores seat players with the
dealer's and the supervisor's ``player_in``/``player_out`` and close a table; what they publish is archived in
chained envelopes and rated by the floor, each figure recomputed from the simulator's rounds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import psycopg

from floor.players.load import load_players
from floor.players.visits import EndReason
from floor.reports.play_rounds import seat_rounds
from tablebench.ap_players import REGULAR_SEAT, SUBJECT_SEAT, simulate
from tests.support.floor import migrated_database
from tests.support.players import FloorClock

WHEN = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def test_the_tables_own_player_events_are_rated_on_the_floor():
    t1, t2 = (
        simulate("random", shoes=1, seed=11, player=None),
        simulate("random", shoes=1, seed=12, player=None),
    )
    c = FloorClock(WHEN)
    h1, h2 = c.table("T1"), c.table("T2")
    h1.dealer("player_in", seat=SUBJECT_SEAT, card="4711AB")
    h1.dealer("player_in", seat=REGULAR_SEAT, anonymous="red scarf, <b>glasses</b>")
    c.flush("T1")
    c.deal("T1", t1[:4])
    h2.dealer("player_in", seat=SUBJECT_SEAT, card="4711AB")  # still in at T1: the floor ends that visit now
    c.flush("T2")
    c.deal("T2", t2[:3])
    h2.sup("player_out", user="alice", seat=SUBJECT_SEAT)
    c.flush("T2")
    h1.dealer("next_round")
    h1.sup("close_table", user="alice")  # ends every visit at T1 (the card's too: the floor's ended already)
    c.flush("T1")
    with migrated_database() as dsn:
        c.store(dsn)
        with psycopg.connect(dsn) as conn:
            rep = load_players(conn, WHEN - timedelta(hours=1), WHEN + timedelta(hours=2))
    assert rep.problems == [] and rep.refused == 0
    card = next(r for r in rep.players if r.player == "card:4711AB")
    anon = next(r for r in rep.players if r.player.startswith("anon:"))
    assert [v.end_reason for v in card.visits] == [EndReason.MOVED, EndReason.PLAYER_OUT]
    assert [v.end_reason for v in anon.visits] == [EndReason.CLOSE_TABLE]
    assert anon.visits[0].description == "red scarf, <b>glasses</b>"
    mine = [s for rounds in (t1[:4], t2[:3]) for r in rounds for s in seat_rounds(
        r.description, round_id=r.round_id, shoe=r.shoe, count=r.count)[0] if s.seat == SUBJECT_SEAT]  # fmt: skip
    assert len(card.play.rounds) == 7 and card.play.handle == sum(s.staked for s in mine)
    assert card.play.win == -sum(s.net for s in mine)
