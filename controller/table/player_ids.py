"""How a player is named at the table (issue 41): a player card's number or an anonymous player's description,
checked where they enter (``player_in``), and the names the table publishes (``card:<number>``,
``anon:<session_id>-<n>``). Pure: the table core, the pit terminal and the tests share it.

Personal data: the table knows a player only by the card number (or a pseudonym and a description the pit
writes); names and anything else about a player live only in the floor's database. A refusal never repeats what
was given (the service log keeps refusal reasons): it says what a card number or a description must be."""

from __future__ import annotations

import re
from typing import Any

from controller.effects import Rejected

# the player card number, by fullmatch (the schemas: ^[0-9A-Za-z]{4,32}$)
CARD_NUMBER = re.compile(r"[0-9A-Za-z]{4,32}")
CARD_MIN, CARD_MAX = 4, 32
DESCRIPTION_MAX = 60
CARD_PREFIX, ANONYMOUS_PREFIX = "card:", "anon:"


def card_number(value: Any) -> str:
    """The card number as given, or ``Rejected`` (the value is not repeated: see the module's doc)."""
    if not isinstance(value, str) or not CARD_NUMBER.fullmatch(value):
        raise Rejected(f"a player card number is {CARD_MIN}-{CARD_MAX} letters or digits (A-Z, a-z, 0-9)")
    return value


def description(value: Any) -> str:
    """An anonymous player's description as given: 1-60 printable characters (no control, format or
    line-separator character), not only spaces; or ``Rejected``."""
    if (
        not isinstance(value, str)
        or not 1 <= len(value) <= DESCRIPTION_MAX
        or not value.isprintable()
        or not value.strip()
    ):
        raise Rejected(
            f"an anonymous player's description is 1-{DESCRIPTION_MAX} printable characters "
            "(no control characters, not only spaces)"
        )
    return value


def card_player(number: str) -> str:
    """The player a card names, as published: ``card:<number>``."""
    return CARD_PREFIX + number


def anonymous_player(session_id: str | None, n: int) -> str:
    """The ``n``-th anonymous player of the session, as published: ``anon:<session_id>-<n>``."""
    return f"{ANONYMOUS_PREFIX}{session_id}-{n}"
