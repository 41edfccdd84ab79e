"""The players identified at the seats (issue 41, table side), like the dealer on duty (dealer_duty.py): the pit
seats a player with ``player_in`` (a player card's number, or an anonymous player with a description) and unseats
him with ``player_out``; both journaled with who did it (``player_in`` / ``player_out`` records), published on
``events/player`` and kept in the retained ``state/players``; the seated players survive a restart (snapshot
key ``players``) and every visit ends when the table closes (``close_table``).

The snapshot key and ``state/players`` appear only once players are used: a table that never seats one
publishes and snapshots exactly what it did before (tests/test_core_equivalence.py).

A player seated at another table is the floor's to notice; here: one seat per card, one player per seat."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from controller.effects import Rejected
from controller.table.base import seat_arg
from controller.table.concern import DutyFace, Handlers, SetupFace
from controller.table.gate import Gate
from controller.table.machine_names import Trigger
from controller.table.player_ids import anonymous_player, card_number, card_player, description
from controller.table.record_kinds import RecordKind
from controller.table.sink import EffectSink

TRIGGER = Trigger.SEAT_PLAYER  # machine.py: players are seated and unseated while a session is open


class OutReason(StrEnum):
    """Why a visit ended (events/player ``reason``)."""

    PLAYER_OUT = "player_out"
    CLOSE_TABLE = "close_table"


@dataclass(frozen=True, slots=True)
class SeatedPlayer:
    player: str  # "card:<number>" or "anon:<session_id>-<n>"
    since: str  # when he was seated (ISO, UTC)
    description: str | None = None  # anonymous players only

    def to_dict(self) -> dict[str, Any]:
        return {
            "player": self.player,
            "since": self.since,
            **({"description": self.description} if self.description is not None else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SeatedPlayer:
        return cls(str(d["player"]), str(d["since"]), d.get("description"))


class SeatedPlayers:
    """Owns who sits where (snapshot ``players``, only once players were used)."""

    name: ClassVar[str] = "players"

    def __init__(self, fx: EffectSink, gate: Gate, setup: SetupFace, duty: DutyFace) -> None:
        self.fx, self.gate, self.setup, self.duty = fx, gate, setup, duty
        self.seats: dict[int, SeatedPlayer] = {}
        # the session whose anonymous players are counted, and how many it had: pseudonyms are never reused
        self.anonymous: tuple[str | None, int] | None = None

    def handlers(self) -> Handlers:
        """The pit seats players: the dealer on duty (issue 41: the dealer role names nobody else) or a
        supervisor."""
        return Handlers(
            dealer={"player_in": self.dealer_player_in, "player_out": self.dealer_player_out},
            supervisor={"player_in": self.sv_player_in, "player_out": self.sv_player_out},
        )

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        if self.used():  # issue 41: only once players were seated (the pseudonyms' count is kept with them)
            snap["players"] = self.snapshot()

    def restore_from(self, snap: dict[str, Any]) -> None:
        self.restore(snap.get("players"))

    @property
    def seated(self) -> bool:
        """A player sits at a seat now."""
        return bool(self.seats)

    def dealer_player_in(self, args: dict[str, Any]) -> None:
        self.player_in(args, by=self.duty.by())

    def dealer_player_out(self, args: dict[str, Any]) -> None:
        self.player_out(args, by=self.duty.by())

    def sv_player_in(self, user: str, args: dict[str, Any]) -> None:
        self.player_in(args, by=user)

    def sv_player_out(self, user: str, args: dict[str, Any]) -> None:
        self.player_out(args, by=user)

    # ---- commands: ``by`` is the supervisor, or the dealer on duty ----
    def player_in(self, args: dict[str, Any], by: str) -> None:
        self.gate.allow(TRIGGER, "player_in")
        seat = seat_arg(args, self.setup.tp.seats)
        card, anonymous = args.get("card"), args.get("anonymous")
        if (card is None) == (anonymous is None):
            raise Rejected("player_in takes exactly one of card (a player card's number) or anonymous")
        if seat in self.seats:
            raise Rejected(f"seat {seat} already holds a player: player_out first")
        if card is not None:
            player, about = card_player(card_number(card)), None
            other = next((s for s, p in self.seats.items() if p.player == player), None)
            if other is not None:  # the log keeps refusals: the seat is named, never the card
                raise Rejected(f"that player card is already seated at seat {other} of this table")
        else:
            about = description(anonymous)
            player = self._pseudonym()
        at = self.fx.ts()
        self.seats[seat] = SeatedPlayer(player, at, about)
        extra = {"description": about} if about is not None else {}
        self.fx.record(RecordKind.PLAYER_IN, seat=seat, player=player, **extra, by=by, at=at)
        self.fx.event(
            "player", action="in", seat=seat, player=player, **extra, by=by, session_id=self.setup.session.id
        )
        self.fx.result = {"seat": seat, "player": player}

    def player_out(self, args: dict[str, Any], by: str) -> None:
        self.gate.allow(TRIGGER, "player_out")
        seat = seat_arg(args, self.setup.tp.seats)
        if seat not in self.seats:
            raise Rejected(f"seat {seat} has no player")
        self._out(seat, by, OutReason.PLAYER_OUT)
        self.fx.result = {"seat": seat}

    def end_all(self, by: str, reason: OutReason = OutReason.CLOSE_TABLE) -> None:
        """The table closes: every visit ends, seat by seat (nothing recorded when nobody sits)."""
        for seat in sorted(self.seats):
            self._out(seat, by, reason)

    def _out(self, seat: int, by: str, reason: OutReason) -> None:
        player = self.seats.pop(seat).player
        at = self.fx.ts()
        self.fx.record(RecordKind.PLAYER_OUT, seat=seat, player=player, reason=reason, by=by, at=at)
        self.fx.event(
            "player", action="out", seat=seat, player=player, by=by, session_id=self.setup.session.id,
            reason=reason,
        )  # fmt: skip

    def _pseudonym(self) -> str:
        session = self.setup.session.id
        n = self.anonymous[1] + 1 if self.anonymous is not None and self.anonymous[0] == session else 1
        self.anonymous = (session, n)
        return anonymous_player(session, n)

    # ---- the state as plain data ----
    def used(self) -> bool:
        """Players were seated in this table's life (the snapshot keeps them, and the pseudonyms' count)."""
        return bool(self.seats) or self.anonymous is not None

    def document(self) -> dict[str, Any]:
        """``state/players``: who sits where and since when (the pseudonym only, never the description)."""
        return {
            "seats": {
                str(seat): {"player": p.player, "since": p.since} for seat, p in sorted(self.seats.items())
            }
        }

    def snapshot(self) -> dict[str, Any]:
        return {
            "seats": {str(seat): p.to_dict() for seat, p in sorted(self.seats.items())},
            "anonymous": list(self.anonymous) if self.anonymous is not None else None,
        }

    def restore(self, snap: dict[str, Any] | None) -> None:
        snap = snap or {}
        self.seats = {int(seat): SeatedPlayer.from_dict(p) for seat, p in (snap.get("seats") or {}).items()}
        counted = snap.get("anonymous")
        self.anonymous = (counted[0], int(counted[1])) if counted else None
