"""What the controller takes from the archive: the ``events/jackpot`` envelopes naming its link, read from
PostgreSQL (the archive already verified each table's chain and repaired its gaps), never from the wire.

``fetch`` reads the next envelopes not yet taken from ``progressive_queue`` (the archive's insert queues each;
``progressive_inputs`` holds every one taken, the exactly-once key); ``parse`` turns one into a typed input or a
``Refused`` with the reason. Every field is hostile until checked: sizes bounded, integers integers, the
combination one of PT-2001 r.43's."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg

from controller.jackpot.config import CURRENCY_CODE
from controller.jackpot.hits import Combination

JACKPOT_TOPIC = "events/jackpot"
ROUND_ID = re.compile(r"^[\x21-\x7e]{1,64}\Z")  # printable ASCII, bounded
MAX_CHIPS = 64  # a round's linked chips at one table (seats x one chip each, PT-2001 r.47), generously
MAX_SEAT = 16
MAX_REASON = 200


@dataclass(frozen=True, slots=True)
class Source:
    site: str
    table_id: str
    event_id: int
    ts: datetime  # when the table committed it


@dataclass(frozen=True, slots=True)
class Contribution:
    source: Source
    round_id: str
    chips: int
    bet_value: int
    amount_minor: int
    currency: str | None  # the table's, when it says (it must be the link's)


@dataclass(frozen=True, slots=True)
class HitPending:
    source: Source
    round_id: str
    seat: int
    combination: Combination


@dataclass(frozen=True, slots=True)
class Paid:
    source: Source
    hit_id: int
    amount_minor: int


@dataclass(frozen=True, slots=True)
class Verified:
    """The table's supervisor verified the hit (PT-2001 r.49): journaled; payment follows as ``paid``."""

    source: Source
    hit_id: int


@dataclass(frozen=True, slots=True)
class Rejected:
    source: Source
    hit_id: int
    reason: str


@dataclass(frozen=True, slots=True)
class Refused:
    source: Source
    action: str
    reason: str


Input = Contribution | HitPending | Verified | Paid | Rejected | Refused


def fetch(
    cur: psycopg.Cursor, link: str, site: str, *, verified_only: bool, limit: int
) -> list[tuple[Source, Any]]:
    """The next archived envelopes of ``link`` not taken yet (``progressive_queue``, filled by the archive's insert),
    in the order the archive committed them (a round's hits at one table stay together and in the table's order)."""
    rows = cur.execute(
        "SELECT e.site, e.table_id, e.event_id, e.ts, e.data FROM progressive_queue q"
        " JOIN events e ON e.site = q.site AND e.table_id = q.table_id AND e.event_id = q.event_id"
        " WHERE q.link = %s AND q.site = %s AND (e.verified OR NOT %s)"
        " ORDER BY e.received_at, e.site, e.table_id, e.event_id LIMIT %s",
        (link, site, verified_only, limit),
    ).fetchall()
    return [(Source(r[0], r[1], r[2], r[3]), r[4]) for r in rows]


def dequeue(cur: psycopg.Cursor, link: str, sources: list[Source]) -> None:
    """Taken (applied, refused or found taken already): off the queue, in the transaction that took them."""
    if sources:
        cur.execute(
            "DELETE FROM progressive_queue q USING unnest(%s::text[], %s::text[], %s::bigint[]) AS t(site, tab, id)"
            " WHERE q.link = %s AND q.site = t.site AND q.table_id = t.tab AND q.event_id = t.id",
            ([s.site for s in sources], [s.table_id for s in sources], [s.event_id for s in sources], link),
        )


def _int(data: dict[str, Any], key: str, lo: int, hi: int) -> int:
    value = data.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{key}: expected an integer from {lo} to {hi}, got {str(value)[:40]!r}")
    return value


def _round(data: dict[str, Any]) -> str:
    value = data.get("round_id")
    if not isinstance(value, str) or not ROUND_ID.match(value):
        raise ValueError(f"round_id: expected 1 to 64 printable characters, got {str(value)[:40]!r}")
    return value


def _contribution(src: Source, d: dict[str, Any]) -> Input:
    chips = _int(d, "chips", 0, MAX_CHIPS)
    bet_value = _int(d, "bet_value", 1, 10**9)
    amount = _int(d, "amount_minor", 0, MAX_CHIPS * 10**9)
    if amount != chips * bet_value:
        raise ValueError(f"amount_minor {amount} is not chips x bet_value ({chips} x {bet_value})")
    currency = d.get("currency")
    if currency is not None and (not isinstance(currency, str) or not CURRENCY_CODE.match(currency)):
        raise ValueError(f"currency: not an ISO 4217 code, got {str(currency)[:40]!r}")
    return Contribution(src, _round(d), chips, bet_value, amount, currency)


def _hit_pending(src: Source, d: dict[str, Any]) -> Input:
    name = d.get("combination")
    if not isinstance(name, str) or name not in Combination.__members__:
        raise ValueError(f"combination: not one of PT-2001 r.43's, got {str(name)[:40]!r}")
    return HitPending(src, _round(d), _int(d, "seat", 1, MAX_SEAT), Combination[name])


def _paid(src: Source, d: dict[str, Any]) -> Input:
    return Paid(src, _int(d, "hit_id", 1, 2**62), _int(d, "amount_minor", 0, 10**15))


def _verified(src: Source, d: dict[str, Any]) -> Input:
    return Verified(src, _int(d, "hit_id", 1, 2**62))


def _rejected(src: Source, d: dict[str, Any]) -> Input:
    reason = d.get("reason")
    text = reason[:MAX_REASON] if isinstance(reason, str) else ""
    return Rejected(src, _int(d, "hit_id", 1, 2**62), text)


_PARSERS = {
    "contribution": _contribution,
    "hit_pending": _hit_pending,
    "verified": _verified,
    "paid": _paid,
    "rejected": _rejected,
}


def parse(src: Source, data: Any) -> Input:
    """One archived envelope's data as a typed input; a ``Refused`` (with the reason) for anything else."""
    if not isinstance(data, dict):
        return Refused(src, "?", "data is not an object")
    action = data.get("action")
    parser = _PARSERS.get(action) if isinstance(action, str) else None
    shown = str(action)[:32]
    if parser is None:
        return Refused(src, shown, f"unknown action {shown!r}")
    try:
        return parser(src, data)
    except ValueError as exc:
        return Refused(src, shown, str(exc)[:MAX_REASON])
