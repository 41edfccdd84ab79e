"""Whether the floor can reach a table, and when it last heard from it (docs/floor.md "A table out of reach").

The table broker's bridge publishes its link state on ``<prefix>/link/floor`` (mosquitto bridge notifications,
rendered by ``controller.mqtt.floor_bridge``): ``1`` when it connects to the floor broker, and ``0`` as its last will,
which the floor broker publishes itself when the bridge stops answering (1.5 × its keepalive: under 30 s with
the rendered ``keepalive_interval``). Retained, so an archive that starts later learns it at once. The archive
stores it in ``floor_tables`` (``link``, ``link_at``) and keeps ``last_contact_at``: the last time anything
arrived from the table (an event, a state document, its status, a re-fetch answer, its bridge's notice, or the
table broker's heartbeat: its ``$SYS/broker/uptime``, published every ``sys_interval`` (10 s) and carried out by
the bridge as ``<prefix>/link/uptime``). The heartbeat is what shows a cut table even when the floor broker
restarted meanwhile (a restarted broker no longer holds the bridge's will): ``Contact.reachable`` is false once
nothing arrived for ``CONTACT_STALE_S``.

Contact is news only: a retained message the floor broker hands over again (the RETAIN flag set on arrival: sent
because a subscription was made, e.g. by a worker reconnecting after the floor broker restarted, never because the
table just published it) says what was true once, not that the table is reachable now. Its content is stored
(events, the bridge's link state, the status) but ``last_contact_at`` is left alone, so a table cut off while the
floor broker restarts is still shown out of reach ``CONTACT_STALE_S`` after the last real contact.

The table's head (``link/head``, controller/mqtt/replay.py): ``{"last_event_id": N, "ts"}`` every 10 s. N raises
``known_to`` like an arrived id does, so events lost at the end of the stream (the table idle since) become a hole
the repair asks for within seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from controller.mqtt.floor_bridge import HEARTBEAT_TOPIC, LINK_TOPIC
from controller.topics import EVENT_HEAD
from floor.common.messages import TableRef, split_topic
from floor.common.tableset import Only, floor_tables

if TYPE_CHECKING:  # the bridge is rendered on table hosts, which have no psycopg
    import psycopg

HEARTBEAT_S = 10  # mosquitto's default sys_interval: how often the table broker publishes it
CONTACT_STALE_S = 30  # no heartbeat, event or notice for this long: the table is shown out of reach
LINK_UP, LINK_DOWN = "up", "down"
_PAYLOADS = {b"1": LINK_UP, b"0": LINK_DOWN}


@dataclass(frozen=True, slots=True)
class LinkNotice:
    table: TableRef
    link: str  # LINK_UP | LINK_DOWN


@dataclass(frozen=True, slots=True)
class Contact:
    """What the floor knows of a table's reachability (for the dashboard and ``tablectl floor`` queries)."""

    table: TableRef
    status: str | None  # the controller's own retained status: online / offline
    link: str | None  # the bridge: up / down / None (never heard: a table without notifications)
    link_at: datetime | None
    last_contact_at: datetime | None

    def reachable(self, now: datetime) -> bool:
        fresh = (
            self.last_contact_at is not None
            and (now - self.last_contact_at).total_seconds() < CONTACT_STALE_S
        )
        return fresh and self.link != LINK_DOWN and self.status != "offline"


def link_notice(topic: str, payload: bytes) -> LinkNotice | None:
    """The bridge's notice if ``topic`` is a table's ``link/floor`` with a known payload, else None."""
    split = split_topic(topic)
    if split is None or split[1] != LINK_TOPIC:
        return None
    link = _PAYLOADS.get(bytes(payload).strip())
    return None if link is None else LinkNotice(split[0], link)


def is_link_topic(topic: str) -> bool:
    """The bridge's notice, the table broker's heartbeat or the table's head (none is an envelope)."""
    split = split_topic(topic)
    return split is not None and split[1] in (LINK_TOPIC, HEARTBEAT_TOPIC, EVENT_HEAD)


@dataclass(frozen=True, slots=True)
class Head:
    table: TableRef
    last_event_id: int


def head(topic: str, payload: bytes) -> Head | str | None:
    """The table's ``link/head`` (None: another topic; a string: why the payload is refused)."""
    split = split_topic(topic)
    if split is None or split[1] != EVENT_HEAD:
        return None
    if len(payload) > 256:
        return "head larger than 256 bytes"
    try:
        doc = json.loads(payload)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return "head is not JSON"
    n = doc.get("last_event_id") if isinstance(doc, dict) else None
    if not isinstance(n, int) or isinstance(n, bool) or not 0 <= n < 2**62:
        return "head's last_event_id is not an event id"
    return Head(split[0], n)


def heartbeat(topic: str) -> TableRef | None:
    split = split_topic(topic)
    return split[0] if split is not None and split[1] == HEARTBEAT_TOPIC else None


def record_heartbeats(cur: psycopg.Cursor, tables: set[TableRef]) -> None:
    """Heard from: an arrival without ids (appended, no row shared between workers); the gap pass sets
    ``last_contact_at`` of every table with an arrival (floor/archive/gaps.py)."""
    order = sorted(tables, key=lambda t: (t.site, t.table_id))
    cur.execute(
        "INSERT INTO floor_arrivals (site, table_id, lo, hi) SELECT s, t, 0, 0 FROM unnest(%s::text[], %s::text[])"
        " AS v(s, t)",
        ([t.site for t in order], [t.table_id for t in order]),
    )


def store_link(cur: psycopg.Cursor, notice: LinkNotice, *, contact: bool = True) -> None:
    """The bridge's link state; a "1" is contact unless it is the retained one handed over again."""
    cur.execute(
        "INSERT INTO floor_tables (site, table_id) VALUES (%s, %s) ON CONFLICT DO NOTHING",
        (notice.table.site, notice.table.table_id),
    )
    cur.execute(
        "UPDATE floor_tables SET link = %s, link_at = now(),"
        " last_contact_at = CASE WHEN %s THEN now() ELSE last_contact_at END"
        " WHERE site = %s AND table_id = %s",
        (notice.link, contact and notice.link == LINK_UP, notice.table.site, notice.table.table_id),
    )


def contacts(conn: psycopg.Connection, only: Only = None) -> list[Contact]:
    """Every table's (or those of ``only``: tableset.py) reachability, ordered by site and table."""
    tables, params = floor_tables(only)
    return [
        Contact(TableRef(site, table_id), status, link, link_at, last)
        for site, table_id, status, link, link_at, last in conn.execute(
            f"SELECT site, table_id, status, link, link_at, last_contact_at FROM {tables} t"
            " ORDER BY site, table_id",
            params,
        ).fetchall()
    ]


ARCHIVE_STALE_S = 10  # no archive worker heard from (subscribed) for this long: the archive is not receiving
WORKER_BEAT_S = 2.0  # how often each worker says so (floor/archive/worker.py maintenance thread)


@dataclass(frozen=True, slots=True)
class ArchiveReceiving:
    """Whether the archive is taking in what the floor broker carries (None: no worker ever said: unknown)."""

    receiving: bool | None
    last_seen: datetime | None  # the newest word of a subscribed worker

    def words(self) -> str:
        if self.receiving is not False:
            return ""
        when = self.last_seen.strftime("%Y-%m-%d %H:%M:%S UTC") if self.last_seen else "an unknown time"
        return (
            f"the archive is not receiving: no archive worker subscribed on the floor broker since {when};"
            " tables are not known to be out of reach, the floor cannot tell"
        )


def record_worker(cur: psycopg.Cursor, worker: str, subscribed: bool) -> None:
    cur.execute(
        "INSERT INTO floor_workers (worker, seen_at, subscribed) VALUES (%s, now(), %s) ON CONFLICT (worker)"
        " DO UPDATE SET seen_at = now(), subscribed = EXCLUDED.subscribed",
        (worker[:200], subscribed),
    )


def archive_receiving(conn: psycopg.Connection) -> ArchiveReceiving:
    row = conn.execute(
        "SELECT count(*), max(seen_at) FILTER (WHERE subscribed), now() FROM floor_workers"
    ).fetchone()
    if row is None or not row[0]:
        return ArchiveReceiving(None, None)
    last, now = row[1], row[2]
    fresh = last is not None and (now - last).total_seconds() < ARCHIVE_STALE_S
    return ArchiveReceiving(fresh, last)
