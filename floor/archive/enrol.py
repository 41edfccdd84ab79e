"""Enrolling a table's audit key on the floor (issue 25): the floor learns each table's key from an operator, not
from what a broker account publishes.

``enrol`` records the key (from the table's integrity manifest, ``audit_public_key``, or given as hex) with who
enrolled it and when, ``key_source = 'enrolled'``. A table whose key the floor already trusts keeps it unless the
operator replaces it (``replace``: a re-keyed table); then every checkpoint of that table is judged again against
the new key and its events proven again. ``set_trust_on_first_use`` turns trust on first use on or off for one
table (off by default: floor/archive/chain.py)."""

from __future__ import annotations

from dataclasses import dataclass

import psycopg

from controller.hex64 import HEX64
from floor.archive.store import ensure_tables
from floor.common.messages import TableRef
from floor.common.notify import notify
from floor.common.rows import one_row


class EnrolError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Enrolment:
    table: TableRef
    public_key: str | None
    key_source: str | None
    trust_on_first_use: bool
    enrolled_by: str | None


def enrolment(conn: psycopg.Connection, table: TableRef) -> Enrolment | None:
    row = conn.execute(
        "SELECT public_key, key_source, trust_on_first_use, enrolled_by FROM floor_tables"
        " WHERE site = %s AND table_id = %s",
        (table.site, table.table_id),
    ).fetchone()
    return Enrolment(table, row[0], row[1], bool(row[2]), row[3]) if row else None


def enrol(
    conn: psycopg.Connection, table: TableRef, public_key: str, user: str, *, replace: bool = False
) -> bool:
    """Record ``public_key`` as the table's audit key; False when it already was. Raises ``EnrolError`` for a
    bad key, or another key already trusted without ``replace``."""
    key = public_key.strip().lower()
    if not HEX64.fullmatch(key):
        raise EnrolError("the audit public key is 64 hex digits (raw Ed25519)")
    if not user or len(user) > 64:
        raise EnrolError("who enrols: 1-64 characters")
    with conn.transaction():
        cur = conn.cursor()
        ensure_tables(cur, [table])
        current = one_row(
            cur.execute(
                "SELECT public_key, key_source FROM floor_tables WHERE site = %s AND table_id = %s FOR UPDATE",
                (table.site, table.table_id),
            ),
            f"floor_tables row of {table.site}/{table.table_id}",
        )
        if current[0] == key and current[1] == "enrolled":
            return False
        if current[0] is not None and current[0] != key and not replace:
            raise EnrolError(
                f"{table.site}/{table.table_id} already has audit key {current[0][:16]}... ({current[1]}):"
                " give --replace to enrol another (its checkpoints are then judged again)"
            )
        cur.execute(
            "UPDATE floor_tables SET public_key = %s, key_source = 'enrolled', key_event_id = NULL,"
            " enrolled_by = %s, enrolled_at = now() WHERE site = %s AND table_id = %s",
            (key, user, table.site, table.table_id),
        )
        if current[0] is not None and current[0] != key:  # judged with another key: judge again
            cur.execute(
                "UPDATE checkpoints SET signature_ok = NULL, chain = 'pending', problem = NULL,"
                " events_proven = false, walk_next = last_event_id, walk_expect = event_chain"
                " WHERE site = %s AND table_id = %s",
                (table.site, table.table_id),
            )
            cur.execute(
                "UPDATE events SET verified = false WHERE site = %s AND table_id = %s",
                (table.site, table.table_id),
            )
        notify(cur)
    return True


def set_trust_on_first_use(conn: psycopg.Connection, table: TableRef, on: bool) -> None:
    with conn.transaction():
        cur = conn.cursor()
        ensure_tables(cur, [table])
        cur.execute(
            "UPDATE floor_tables SET trust_on_first_use = %s WHERE site = %s AND table_id = %s",
            (on, table.site, table.table_id),
        )
