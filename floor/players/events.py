"""The tables' player events (issue 41), checked before the floor uses them: every string from a table is hostile.

``events/player`` data (the table side's contract):
``{"action": "in"|"out", "seat": int, "player": "card:<number>"|"anon:<session_id>-<n>", "description"
(anonymous only, at most 60 characters), "by": user, "session_id", "reason" (out only: "player_out" |
"close_table")}``. The card number is 4-32 letters and digits. Anything else is refused with the reason (and
counted by the loader); a refused event is never guessed at. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

from floor.common.text import whole

TOPIC = "events/player"
STATE_TOPIC = "state/players"
MAX_SEAT = 16
MAX_DESCRIPTION = 60
CARD = re.compile(r"card:([0-9A-Za-z]{4,32})\Z")
ANON = re.compile(r"anon:[A-Za-z0-9_.-]{1,64}-[0-9]{1,9}\Z")
_SESSION = re.compile(r"[A-Za-z0-9_.:-]{1,64}\Z")
MAX_NAME = 64


class Move(StrEnum):
    IN = "in"
    OUT = "out"


class OutReason(StrEnum):
    PLAYER_OUT = "player_out"
    CLOSE_TABLE = "close_table"


@dataclass(frozen=True, slots=True)
class PlayerEvent:
    site: str
    table: str
    event_id: int
    ts: datetime
    move: Move
    seat: int
    player: str  # "card:<number>" or "anon:<session>-<n>"
    by: str  # who seated or unseated him (a user, or the dealer on duty)
    session_id: str  # the table session's id ("" when the table sent none)
    description: str = ""  # an anonymous player's, as the table sent it (shown as text, never markup)
    reason: OutReason | None = None

    @property
    def card(self) -> str | None:
        return card_of(self.player)


def card_of(player: str) -> str | None:
    """The card number of a ``card:<number>`` player reference, else None."""
    m = CARD.match(player)
    return m.group(1) if m else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def parse_player_event(
    site: str, table: str, event_id: int, ts: datetime, data: dict[str, Any]
) -> PlayerEvent | str:
    """A ``PlayerEvent`` or the reason it is refused."""
    move = data.get("action")
    if move not in (Move.IN.value, Move.OUT.value):
        return "action is neither in nor out"
    seat = whole(data.get("seat"))
    if seat is None or not 1 <= seat <= MAX_SEAT:
        return f"seat is not a whole number from 1 to {MAX_SEAT}"
    player = _text(data.get("player"))
    if player is None or not (CARD.match(player) or ANON.match(player)):
        return "player is neither card:<4-32 letters and digits> nor anon:<session>-<n>"
    by = _text(data.get("by"))  # a user, or the dealer on duty's name ("José Maria"): shown as text only
    if by is None or not 1 <= len(by) <= MAX_NAME or not by.isprintable():
        return f"by is not a name of 1 to {MAX_NAME} printable characters"
    session = data.get("session_id")  # not needed to rate: absent is no reason to lose a visit
    session_id = "" if session is None else str(session) if whole(session) is not None else _text(session)
    if session_id is None or (session_id and not _SESSION.match(session_id)):
        return "session_id is not a session id"
    description = data.get("description", "")
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        return f"description is not text of at most {MAX_DESCRIPTION} characters"
    if description and not player.startswith("anon:"):
        return "a description is for an anonymous player only"
    reason: OutReason | None = None
    if move == Move.OUT.value:
        raw = data.get("reason")
        if raw not in (OutReason.PLAYER_OUT.value, OutReason.CLOSE_TABLE.value):
            return "an out without reason player_out or close_table"
        reason = OutReason(raw)
    elif "reason" in data:
        return "an in carries no reason"
    return PlayerEvent(
        site, table, event_id, ts, Move(move), seat, player, by, session_id, description, reason
    )
