"""The players' personal data (issue 41): kept only in the floor's database (table ``players``), never on a table
or the bridge, never in a log line.

- ``register``: a card number with a name and details; the floor gives it a random pseudonym (``player_id``);
- ``erase``: the name and details gone, the card number replaced by the tombstone ``erased:<player_id>`` in the
  floor's own data (the registry keeps only the card's SHA-256, to know the archived events of the card for
  the erased player's; the floor's alerts have the card replaced). The archived envelopes are the tables'
  journals, chained and signed: they are not edited and still verify; they keep the card number the table
  published (docs/floor.md "Players");
- retention: ``erase_expired`` erases every player not seen at a table (nor registered) for the retention days.

Every change is journaled in ``player_log`` with who, when and the player's pseudonym, never a name or a detail.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation

import psycopg

from floor.players.events import CARD, card_of

MAX_NAME, MAX_DETAILS = 100, 500
TOMBSTONE = "erased:"


class PlayerError(ValueError):
    """A refused card, name, detail or setting, or a player that does not exist; the text says which."""


@dataclass(frozen=True, slots=True)
class Registered:
    player_id: str
    card: str | None  # None once erased
    name: str | None
    details: str | None
    erased_at: datetime | None

    @property
    def reference(self) -> str:
        """How the floor's reports name the player: the card, or the tombstone once erased."""
        return f"card:{self.card}" if self.card else f"{TOMBSTONE}{self.player_id}"


@dataclass(frozen=True, slots=True)
class Settings:
    comp_share_pct: Decimal
    retention_days: int | None


def card_digest(card: str) -> str:
    return hashlib.sha256(card.encode()).hexdigest()


def check_card(card: str) -> str:
    if not CARD.match(f"card:{card}"):
        raise PlayerError("card number: 4 to 32 letters and digits")
    return card


def _check_text(value: str, limit: int, what: str) -> str:
    if not value.strip() or len(value) > limit or not value.isprintable():
        raise PlayerError(f"{what}: printable text of 1 to {limit} characters")
    return value


def _log(cur: psycopg.Cursor, by: str, action: str, player_id: str | None, detail: str = "") -> None:
    cur.execute(
        "INSERT INTO player_log (user_name, action, player_id, detail) VALUES (%s, %s, %s, %s)",
        (by[:64], action, player_id, detail[:300]),
    )


def register(conn: psycopg.Connection, card: str, name: str, details: str, by: str) -> str:
    """Register (or update the name and details of) ``card``; returns its pseudonym."""
    check_card(card)
    _check_text(name, MAX_NAME, "name")
    if details:
        _check_text(details, MAX_DETAILS, "details")
    with conn.transaction():
        cur = conn.cursor()
        row = cur.execute(
            "SELECT player_id, erased_at FROM players WHERE card_sha256 = %s FOR UPDATE", (card_digest(card),)
        ).fetchone()
        if row and row[1] is not None:
            raise PlayerError(f"card erased as {TOMBSTONE}{row[0]}: a new card number is needed")
        if row:
            cur.execute(
                "UPDATE players SET name = %s, details = %s WHERE player_id = %s",
                (name, details or None, row[0]),
            )
            _log(cur, by, "update", row[0], "name and details changed")
            return str(row[0])
        player_id = "P" + secrets.token_hex(8)
        cur.execute(
            "INSERT INTO players (player_id, card, card_sha256, name, details, registered_by)"
            " VALUES (%s, %s, %s, %s, %s, %s)",
            (player_id, card, card_digest(card), name, details or None, by[:64]),
        )
        _log(cur, by, "register", player_id)
        return player_id


def find(conn: psycopg.Connection, who: str) -> Registered | None:
    """A player by card number, ``card:<number>``, pseudonym or ``erased:<pseudonym>``."""
    who = who.removeprefix(TOMBSTONE)
    card = card_of(who) or (who if CARD.match(f"card:{who}") else None)
    row = conn.execute(
        "SELECT player_id, card, name, details, erased_at FROM players WHERE player_id = %s OR card_sha256 = %s",
        (who, card_digest(card) if card else ""),
    ).fetchone()
    return Registered(*row) if row else None


def erase(conn: psycopg.Connection, who: str, by: str, why: str) -> Registered:
    """Erase a player's personal data (see the module's text); returns the player as now kept."""
    found = find(conn, who)
    if found is None:
        raise PlayerError("no such player (a card number or a pseudonym)")
    if found.erased_at is not None:
        raise PlayerError(f"already erased ({found.reference})")
    assert found.card is not None
    tombstone = f"{TOMBSTONE}{found.player_id}"
    pattern = rf"card:{found.card}(?![0-9A-Za-z])"  # the card is letters and digits only: no regex meta
    with conn.transaction():
        cur = conn.cursor()
        cur.execute(
            "UPDATE players SET card = NULL, name = NULL, details = NULL, erased_at = now() WHERE player_id = %s",
            (found.player_id,),
        )
        cur.execute(
            "UPDATE floor_alerts SET message = regexp_replace(message, %s, %s, 'g'),"
            " details = regexp_replace(details::text, %s, %s, 'g')::jsonb"
            " WHERE message ~ %s OR details::text ~ %s",
            (pattern, tombstone, pattern, tombstone, pattern, pattern),
        )
        _log(cur, by, "erase", found.player_id, why)
    erased = find(conn, found.player_id)
    assert erased is not None
    return erased


def directory(conn: psycopg.Connection, references: set[str]) -> dict[str, Registered]:
    """The registry's row for each ``card:<number>`` reference that has one (erased ones by the card's hash)."""
    digests = {card_digest(c): r for r in references if (c := card_of(r))}
    if not digests:
        return {}
    rows = conn.execute(
        "SELECT card_sha256, player_id, card, name, details, erased_at FROM players WHERE card_sha256 = ANY(%s)",
        (list(digests),),
    ).fetchall()
    return {digests[d]: Registered(*rest) for d, *rest in rows}


def settings(conn: psycopg.Connection) -> Settings:
    row = conn.execute("SELECT comp_share_pct, retention_days FROM player_settings WHERE id = 1").fetchone()
    return Settings(Decimal(row[0]), row[1]) if row else Settings(Decimal(0), None)


def parse_share(text: str) -> Decimal:
    try:
        share = Decimal(text)
    except InvalidOperation:
        raise PlayerError(f"comp share {text[:20]!r}: a per cent from 0 to 100") from None
    if not share.is_finite() or not 0 <= share <= 100 or share != share.quantize(Decimal("0.01")):
        raise PlayerError(f"comp share {text[:20]!r}: a per cent from 0 to 100, at most 2 decimals")
    return share


def change_settings(
    conn: psycopg.Connection, by: str, *, comp_share_pct: Decimal | None = None,
    retention_days: int | None = None, keep_forever: bool = False,
) -> Settings:  # fmt: skip
    if retention_days is not None and not 1 <= retention_days <= 36500:
        raise PlayerError("retention: 1 to 36500 days")
    with conn.transaction():
        cur = conn.cursor()
        before = settings(conn)
        share = before.comp_share_pct if comp_share_pct is None else comp_share_pct
        days = None if keep_forever else (retention_days or before.retention_days)
        cur.execute(
            "UPDATE player_settings SET comp_share_pct = %s, retention_days = %s, changed_at = now(),"
            " changed_by = %s WHERE id = 1",
            (share, days, by[:64]),
        )
        _log(cur, by, "settings", None, f"comp share {share} %, retention {days or 'until erased'} days")
    return settings(conn)


def erase_expired(conn: psycopg.Connection, by: str, now: datetime | None = None) -> list[str]:
    """Erase every player not seen at a table (``events/player``) nor registered within the retention days;
    returns their pseudonyms. Nothing without a retention setting."""
    days = settings(conn).retention_days
    if days is None:
        return []
    rows = conn.execute(
        "SELECT p.player_id, p.card FROM players p WHERE p.erased_at IS NULL"
        " AND p.registered_at < coalesce(%s, now()) - make_interval(days => %s)"
        " AND NOT EXISTS (SELECT 1 FROM events e WHERE e.topic = 'events/player'"
        "  AND e.data->>'player' = 'card:' || p.card AND e.ts >= coalesce(%s, now()) - make_interval(days => %s))",
        (now, days, now, days),
    ).fetchall()
    return [
        erase(conn, player_id, by, f"retention: not seen for {days} days").player_id for player_id, _ in rows
    ]
