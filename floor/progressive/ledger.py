"""The link's rows in PostgreSQL: its state (``progressive_links``, locked ``FOR UPDATE`` by every change), its
parameter versions, and its hits. Every writer (the controller's engine, the dual-control commands) changes a link
only inside a transaction holding that lock, so they never interleave."""

from __future__ import annotations

import enum
from dataclasses import dataclass, fields, replace
from datetime import datetime
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from floor.progressive.journal import GENESIS, Head
from floor.progressive.meter import Meter
from floor.progressive.params import LinkParams

NOTIFY_CHANNEL = "floor_progressive"  # a link's status or parameters changed (the controller LISTENs)


class LinkStatus(enum.StrEnum):
    RUNNING = "running"  # tables take linked chips
    SUSPENDED = "suspended"  # tables refuse linked chips; parameters may change (dual control)


class HitStatus(enum.StrEnum):
    PENDING = "pending"
    PAID = "paid"
    REJECTED = "rejected"


@dataclass(frozen=True, slots=True)
class Link:
    link: str
    site: str
    params_version: int
    params: LinkParams
    status: LinkStatus
    meter: Meter
    next_order: int
    pub_seq: int
    journal: Head
    updated_at: datetime


@dataclass(frozen=True, slots=True)
class Hit:
    hit_id: int
    order: int
    table_id: str
    round_id: str
    seat: int
    combination: str
    amount_minor: int
    status: HitStatus
    ordered_at: datetime


_METER_COLUMNS = [f.name for f in fields(Meter)]
_SELECT = (
    "SELECT l.link, l.site, l.params_version, p.params, l.status, l.next_order, l.pub_seq, l.journal_seq,"
    f" l.journal_hash, l.updated_at, {', '.join('l.' + c for c in _METER_COLUMNS)}"
    " FROM progressive_links l JOIN progressive_params p ON p.link = l.link AND p.version = l.params_version"
    " WHERE l.link = %s"
)


def _link(row: tuple[Any, ...]) -> Link:
    meter = Meter.from_dict(dict(zip(_METER_COLUMNS, row[10:], strict=True)))
    return Link(
        link=row[0],
        site=row[1],
        params_version=row[2],
        params=LinkParams.from_dict(row[3]),
        status=LinkStatus(row[4]),
        meter=meter,
        next_order=row[5],
        pub_seq=row[6],
        journal=Head(row[7], row[8]),
        updated_at=row[9],
    )


def read(cur: psycopg.Cursor, link: str, *, lock: bool = False) -> Link | None:
    """The link's state; ``lock``: held ``FOR UPDATE`` until the transaction ends."""
    row = cur.execute(_SELECT + (" FOR UPDATE OF l" if lock else ""), (link,)).fetchone()
    return _link(row) if row else None


def save(cur: psycopg.Cursor, link: Link) -> None:
    """Write the link's state (the database checks the meter's invariants as constraints on this row)."""
    link.meter.check()
    sets = ", ".join(f"{c} = %s" for c in _METER_COLUMNS)
    cur.execute(
        f"UPDATE progressive_links SET {sets}, status = %s, params_version = %s, next_order = %s, pub_seq = %s,"
        " journal_seq = %s, journal_hash = %s, updated_at = now() WHERE link = %s",
        (
            *(getattr(link.meter, c) for c in _METER_COLUMNS),
            link.status.value,
            link.params_version,
            link.next_order,
            link.pub_seq,
            link.journal.seq,
            link.journal.hash,
            link.link,
        ),
    )


def create(cur: psycopg.Cursor, params: LinkParams, status: LinkStatus, who: str) -> Link:
    """A new link at its base, parameters version 1 (from its link.toml, recorded as set by ``who``)."""
    cur.execute(
        "INSERT INTO progressive_params (link, version, params, set_by, approved_by, reason)"
        " VALUES (%s, 1, %s, %s, %s, 'created from its configuration file')",
        (params.link, Jsonb(params.to_dict()), who, who),
    )
    meter = Meter.initial(params)
    cur.execute(
        f"INSERT INTO progressive_links (link, site, params_version, status, journal_hash, {', '.join(_METER_COLUMNS)})"
        f" VALUES (%s, %s, 1, %s, %s, {', '.join(['%s'] * len(_METER_COLUMNS))})",
        (params.link, params.site, status.value, GENESIS, *(getattr(meter, c) for c in _METER_COLUMNS)),
    )
    link = read(cur, params.link, lock=True)
    assert link is not None
    return link


def add_params(
    cur: psycopg.Cursor, link: Link, params: LinkParams, by: str, approved_by: str, reason: str
) -> Link:
    version = link.params_version + 1
    cur.execute(
        "INSERT INTO progressive_params (link, version, params, set_by, approved_by, reason)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (link.link, version, Jsonb(params.to_dict()), by, approved_by, reason),
    )
    return replace(link, params=params, params_version=version)


_HIT_SELECT = (
    "SELECT hit_id, hit_order, table_id, round_id, seat, combination, amount_minor, status, ordered_at"
    " FROM progressive_hits WHERE link = %s"
)


def _hit(r: tuple[Any, ...]) -> Hit:
    return Hit(r[0], r[1], r[2], r[3], r[4], r[5], r[6], HitStatus(r[7]), r[8])


def pending_hits(cur: psycopg.Cursor, link: str) -> list[Hit]:
    rows = cur.execute(_HIT_SELECT + " AND status = 'pending' ORDER BY hit_order", (link,)).fetchall()
    return [_hit(r) for r in rows]


def hit(cur: psycopg.Cursor, link: str, hit_id: int) -> Hit | None:
    row = cur.execute(_HIT_SELECT + " AND hit_id = %s", (link, hit_id)).fetchone()
    return _hit(row) if row else None


def last_wins(cur: psycopg.Cursor, link: str, n: int = 25) -> list[Hit]:
    """The newest ``n`` hits not rejected (pending or paid), newest first."""
    rows = cur.execute(_HIT_SELECT + " AND status <> 'rejected' ORDER BY hit_order DESC LIMIT %s", (link, n))
    return [_hit(r) for r in rows.fetchall()]
