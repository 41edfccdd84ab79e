"""Tell the floor's listeners that the archive changed: one PostgreSQL NOTIFY channel, delivered on commit.

The payload names the tables the transaction wrote, so the dashboard refreshes only their tiles (floor/web/live.py):
``t1 SITE:TABLE,TABLE;SITE:TABLE`` (sites and tables sorted). An empty payload means every table: a writer that
does not know which (an alert of the floor, a repair), more tables than fit in PostgreSQL's payload (under 8000
bytes), and so anything the listener does not understand. The listener reads payloads as hostile input
(``named_tables``): a payload that is too long, malformed or names an id no archived table could have is "every
table", never an error and never a partial refresh of a wrong set.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import psycopg

from floor.common.messages import TableRef

NOTIFY_CHANNEL = "floor_archive"  # the dashboard LISTENs (floor/web/app.py)
PAYLOAD_LIMIT = 7900  # bytes; PostgreSQL refuses a payload of 8000 or more
ALL_TABLES = ""  # the payload that names every table
_FORMAT = "t1 "  # the payload's version: a listener that does not know it refreshes every table
_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")  # a site or table id as a topic level (floor/common/messages.py)


def payload(tables: Iterable[TableRef] | None) -> str:
    """The notification's payload for ``tables`` (None: every table); every table when they do not fit."""
    if tables is None:
        return ALL_TABLES
    by_site: dict[str, set[str]] = {}
    for t in tables:
        if not (_ID.match(t.site) and _ID.match(t.table_id)):
            return ALL_TABLES  # not a name the listener would accept: say every table rather than drop it
        by_site.setdefault(t.site, set()).add(t.table_id)
    if not by_site:
        return ALL_TABLES
    text = _FORMAT + ";".join(f"{site}:{','.join(sorted(ids))}" for site, ids in sorted(by_site.items()))
    return text if len(text) <= PAYLOAD_LIMIT else ALL_TABLES


def named_tables(text: str) -> frozenset[TableRef] | None:
    """The tables a notification names; None for every table (an empty payload, or one not understood)."""
    if len(text) > PAYLOAD_LIMIT or not text.startswith(_FORMAT):
        return None
    out: set[TableRef] = set()
    for group in text[len(_FORMAT) :].split(";"):
        site, sep, ids = group.partition(":")
        if not sep or not _ID.match(site):
            return None
        for table_id in ids.split(","):
            if not _ID.match(table_id):
                return None
            out.add(TableRef(site, table_id))
    return frozenset(out)


def notify(cur: psycopg.Cursor, tables: Iterable[TableRef] | None = None) -> None:
    """Tell listeners the archive changed for ``tables`` (None: every table, or a writer that does not know
    which); delivered when the transaction commits."""
    cur.execute("SELECT pg_notify(%s, %s)", (NOTIFY_CHANNEL, payload(tables)))
