"""The players at the seats (controller/table/players.py) alone (issue 41)."""

from __future__ import annotations

import pytest

from controller.effects import Rejected
from controller.table.machine_names import TableState, Trigger
from controller.table.players import SeatedPlayers
from controller.table.sink import EffectSink
from tablebench.concern_kit import Stub, StubGate, events, records, setup, sink


def build() -> tuple[SeatedPlayers, EffectSink]:
    fx = sink()
    duty = Stub({"by": "Ana"})
    return SeatedPlayers(fx, StubGate(TableState.BETTING, {Trigger.SEAT_PLAYER}), setup(), duty), fx


def test_one_player_per_seat_and_seats_of_the_table_only_pt2001_r2() -> None:
    players, _fx = build()
    with pytest.raises(Rejected, match=r"PT-2001 r\.2"):
        players.sv_player_in("chief", {"seat": 8, "anonymous": "red scarf"})
    players.sv_player_in("chief", {"seat": 1, "anonymous": "red scarf"})
    with pytest.raises(Rejected, match="already holds a player"):
        players.sv_player_in("chief", {"seat": 1, "anonymous": "blue hat"})
    with pytest.raises(Rejected, match="exactly one of"):
        players.sv_player_in("chief", {"seat": 2})
    assert players.seated and list(players.seats) == [1]


def test_the_dealer_seats_in_the_name_of_the_dealer_on_duty_and_pseudonyms_are_never_reused() -> None:
    players, fx = build()
    players.dealer_player_in({"seat": 3, "anonymous": "green tie"})
    assert records(fx, "player_in")[0]["by"] == "Ana"  # the dealer on duty (issue 41)
    first = players.seats[3].player
    players.dealer_player_out({"seat": 3})
    players.dealer_player_in({"seat": 3, "anonymous": "green tie"})
    assert players.seats[3].player != first  # the session's count goes on
    assert [e["action"] for e in events(fx, "player")] == ["in", "out", "in"]
    snap: dict[str, object] = {}
    players.snapshot_into(snap)
    other, _ = build()
    other.restore_from(snap)
    assert other.seats == players.seats and other.anonymous == players.anonymous
