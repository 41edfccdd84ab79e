"""Promote the standby floor server to primary (``tablectl floor promote``, docs/floor.md "Promote the standby").

A person decides, not a program: nothing here or in the installer promotes by itself. Debian keeps no tool that
promotes safely with two servers and no witness (a third vote): a standby that merely lost sight of a primary
that is still writing would make two primaries, each acknowledging events the other never sees (see the docs).

The checks before ``pg_promote()``: this server is a standby; the old primary's PostgreSQL does not answer at the
address given (``--old-primary``: it must be stopped or cut off first); how far it had replayed is printed, so
the technician knows what the archive's repair pass will re-fetch from the tables."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from datetime import datetime

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from floor.backup.replication import Role, read_replication

OLD_PRIMARY_TIMEOUT_S = 3.0


class PromoteError(RuntimeError):
    """Refused or failed; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class Promoted:
    timeline: int
    last_replayed_at: datetime | None  # commit time of the last transaction the standby had replayed


def answers(address: str, timeout: float = OLD_PRIMARY_TIMEOUT_S) -> bool:
    """Whether something accepts TCP connections at ``host:port``."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise PromoteError(f"--old-primary {address!r}: expected HOST:PORT")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return True
    except OSError:
        return False


def promote(conn: psycopg.Connection, old_primary: str | None, *, timeout: int = 60) -> Promoted:
    """Promote the server ``conn`` is connected to (autocommit, a role allowed ``pg_promote``)."""
    state = read_replication(conn)
    if state.role is not Role.STANDBY:
        raise PromoteError("this server is not a standby (it already takes writes): nothing to promote")
    if old_primary is not None and answers(old_primary):
        raise PromoteError(
            f"the old primary still answers at {old_primary}: stop its PostgreSQL (or cut it off) first;"
            " promoting now would make two primaries"
        )
    row = conn.execute("SELECT pg_promote(true, %s)", (timeout,)).fetchone()
    if not (row and row[0]):
        raise PromoteError(f"PostgreSQL did not finish the promotion within {timeout} s (see its log)")
    again = conn.execute("SELECT pg_is_in_recovery(), pg_walfile_name(pg_current_wal_lsn())").fetchone()
    if again is None or again[0]:
        raise PromoteError("PostgreSQL says it is still in recovery after the promotion (see its log)")
    return Promoted(
        int(str(again[1])[:8], 16), state.last_replayed_at
    )  # a WAL file's name begins with its timeline


def this_server(dsn: str) -> str:
    """The DSN of the server to promote: of a pair's DSN (several hosts, ``target_session_attrs=read-write``, as
    the installer writes it, this server first) the first host alone, whatever it is."""
    params = conninfo_to_dict(dsn)
    for key in ("host", "hostaddr", "port"):
        if isinstance(params.get(key), str):
            params[key] = str(params[key]).split(",")[0]
    params["target_session_attrs"] = "any"
    return make_conninfo("", **params)
