"""Constants and small helpers the concerns of the core share (no state: each concern owns its own)."""

from __future__ import annotations

import pickle
from typing import Any, cast

from controller.actions import SUPERVISOR
from controller.effects import Rejected
from controller.rules.profiles import parse_profile
from controller.table.machine_names import Trigger
from drivers.cards import CARD_CODES

LID_OPEN_TIMEOUT_S = (
    10.0  # after OpenLid, how long the lid has to open before the round's cards are carried (r.61)
)
SUPERVISOR_ROLES = (SUPERVISOR,)
FAULT_TRIGGER: dict[str, Trigger] = {  # a fault's name -> the machine's trigger that enters its state
    "jam": Trigger.JAM,
    "link_down": Trigger.LINK_LOST,
    "tamper": Trigger.FORCED,
    "journal_io": Trigger.JOURNAL_FAILED,
    "integrity": Trigger.INTEGRITY_FAILED,
    "shoe_sequence": Trigger.SEQUENCE_FAULT,
    "card_count": Trigger.COUNT_FAULT,
}
PROFILE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _parse_profile_text(text: str, name: str) -> Any:
    """A rule profile from the TOML text pinned in the session (no file is read)."""
    return parse_profile(text, source=f"{name} (pinned in the session)")


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    return cast(dict[str, Any], pickle.loads(pickle.dumps(data, pickle.HIGHEST_PROTOCOL)))


def _card_valid(code: str) -> bool:
    return code in CARD_CODES


def seat_arg(args: dict[str, Any], seats: int) -> int:
    """The seat an input names: an integer 1..``seats`` (PT-2001 r.2), or ``Rejected``."""
    seat = args.get("seat")
    if not isinstance(seat, int) or isinstance(seat, bool) or not 1 <= seat <= seats:
        raise Rejected(f"seat must be an integer 1..{seats} (PT-2001 r.2), got {seat!r}")
    return seat
