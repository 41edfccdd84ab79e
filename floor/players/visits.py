"""A player's visits (issue 41): from the tables' ``events/player``, who sat at which seat of which table, when.

A **visit** is one player at one seat of one table, from its ``in`` to what ended it:

- ``player_out``: the table's ``out`` (the player left);
- ``close_table``: the table's ``out`` when it closed;
- ``moved``: the player sat down at another table or seat while still in here. One player has one visit at a time
  across the floor: the floor ends this one at the moment of the other ``in`` (the table's own ``out`` for it,
  if it comes later, changes nothing);
- ``replaced``: another player was seated at this seat while he was in (a table should refuse that; said);
- ``open``: still seated at the end of what was read.

Events are taken in the order the tables committed them: by time, and within one table by event id. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from floor.players.events import Move, PlayerEvent


class EndReason(StrEnum):
    PLAYER_OUT = "player_out"
    CLOSE_TABLE = "close_table"
    MOVED = "moved"
    REPLACED = "replaced"
    OPEN = "open"


@dataclass
class Visit:
    player: str
    site: str
    table: str
    seat: int
    start: datetime
    start_event: int  # the ``in`` (the table's event id)
    by: str  # who seated him
    description: str = ""  # an anonymous player's
    end: datetime | None = None
    end_event: int | None = None  # the table's event that ended it (None: ended from elsewhere, or open)
    end_reason: EndReason = EndReason.OPEN
    moved_to: str = ""  # "<site>/<table> seat N" when ended by an ``in`` elsewhere

    @property
    def key(self) -> str:
        return f"{self.site}/{self.table}/{self.seat}/{self.start_event}"

    def holds(self, first_event: int, started: datetime | None) -> bool:
        """Is a round of this visit's table that began with ``first_event`` (at ``started``) within it?"""
        if first_event <= self.start_event:
            return False
        if self.end_event is not None:
            return first_event < self.end_event
        if self.end is not None:  # ended from another table: by time
            return started is not None and started < self.end
        return True

    def ending(self) -> str:
        """The end in words (a rating says why a visit ended)."""
        if self.end_reason is EndReason.MOVED:
            return f"moved: seated at {self.moved_to} while still in here (ended then)"
        return {EndReason.PLAYER_OUT: "left the seat", EndReason.CLOSE_TABLE: "the table closed",
                EndReason.REPLACED: "another player was seated at this seat",
                EndReason.OPEN: "still seated"}[self.end_reason]  # fmt: skip


@dataclass
class VisitsFound:
    visits: list[Visit]
    problems: list[str]


def _order(e: PlayerEvent) -> tuple[datetime, str, str, int]:
    return (e.ts, e.site, e.table, e.event_id)


def build_visits(events: list[PlayerEvent]) -> VisitsFound:
    """Every visit of ``events`` (any tables, any order), and what did not fit (an ``out`` nobody was in for)."""
    visits: list[Visit] = []
    problems: list[str] = []
    by_player: dict[str, Visit] = {}
    by_seat: dict[tuple[str, str, int], Visit] = {}

    def close(v: Visit, e: PlayerEvent, reason: EndReason, same_table: bool) -> None:
        v.end, v.end_reason = e.ts, reason
        v.end_event = e.event_id if same_table else None
        by_player.pop(v.player, None)
        by_seat.pop((v.site, v.table, v.seat), None)

    for e in sorted(events, key=_order):
        seat = (e.site, e.table, e.seat)
        here = by_seat.get(seat)
        if e.move is Move.IN:
            mine = by_player.get(e.player)
            if mine is not None and mine is here:
                problems.append(
                    f"{e.site}/{e.table} event {e.event_id}: {e.player} seated again at seat {e.seat}"
                )
                continue
            if mine is not None:
                mine.moved_to = f"{e.site}/{e.table} seat {e.seat}"
                close(mine, e, EndReason.MOVED, (mine.site, mine.table) == (e.site, e.table))
            if here is not None:
                close(here, e, EndReason.REPLACED, True)
            v = Visit(e.player, e.site, e.table, e.seat, e.ts, e.event_id, e.by, e.description)
            visits.append(v)
            by_player[e.player] = by_seat[seat] = v
            continue
        if here is not None and here.player == e.player:
            assert e.reason is not None  # an out always has one (events.py)
            close(here, e, EndReason(e.reason.value), True)
        elif not any(v.player == e.player and (v.site, v.table, v.seat) == seat for v in visits):
            problems.append(
                f"{e.site}/{e.table} event {e.event_id}: out of {e.player} at seat {e.seat}, never in"
            )
        # else: the visit was ended already (the player moved): the table's own out changes nothing
    return VisitsFound(visits, problems)
