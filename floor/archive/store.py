"""The floor archive's PostgreSQL store: versioned migrations and the writes the archive makes.

Migrations are the plain SQL files of ``floor/migrations/`` (``NNNN_name.sql``), applied in order,
each in its own transaction, and recorded in ``schema_migrations`` (version, name, sha256, applied_at). A file
already applied whose text changed is refused (a released migration is never edited). Several archive workers
may start at once: the migration runs under a PostgreSQL advisory lock.

Idempotence: a batch is copied (``COPY``) straight into ``events`` in a savepoint; if any of its ids is already
there, the savepoint is undone and the batch is inserted row by row, in its order, with ``ON CONFLICT
(site, table_id, event_id) DO NOTHING``, so a QoS 1
redelivery, a replayed event or the same event seen by two workers is stored once. Another payload under an
archived id is kept aside and alerted (floor/archive/quarantine.py), never silently dropped: the table's signed
chain decides which is the table's (floor/archive/verify_events.py).
"""

from __future__ import annotations

import functools
import hashlib
import json
import json.encoder
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from floor.archive.chain import record_checkpoint
from floor.archive.claims import hold_unproven
from floor.archive.quarantine import BATCH_IDS, batch_keys, conflicting, id_spans, known, span_columns
from floor.common.messages import (
    CHECKPOINT_TOPIC,
    CHECKPOINT_TYPE,
    SOFTWARE_TOPIC,
    Envelope,
    Rejected,
    Status,
    TableRef,
)

MIGRATIONS_DIR = Path(__file__).resolve().parent.parent / "migrations"
DEFAULT_DSN = "postgresql://postgres@127.0.0.1:5432/floor"
_MIGRATION_NAME = re.compile(r"^(\d{4})_([a-z0-9_]+)\.sql$")
_MIGRATE_LOCK = 0x7AB1EF10  # advisory lock ids (one constant each)
REPAIR_LOCK = 0x7AB1EF11
LOGIN_LOCK = 0x7AB1EF12  # dashboard: failed logins are counted one at a time (floor/accounts/logins.py)


class MigrationError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.sql.encode()).hexdigest()


def migrations(directory: Path = MIGRATIONS_DIR) -> list[Migration]:
    out = []
    for path in sorted(directory.glob("*.sql")):
        m = _MIGRATION_NAME.match(path.name)
        if not m:
            raise MigrationError(f"{path.name}: migration files are named NNNN_name.sql")
        out.append(Migration(int(m.group(1)), m.group(2), path.read_text()))
    versions = [m.version for m in out]
    if versions != list(range(1, len(out) + 1)):
        raise MigrationError(f"migration versions must be 1..N without gaps, found {versions}")
    return out


def connect(dsn: str, **kw: Any) -> psycopg.Connection:
    return psycopg.connect(dsn, **kw)


def migrate(conn: psycopg.Connection, directory: Path = MIGRATIONS_DIR) -> list[int]:
    """Apply every migration not yet applied; returns the versions applied now."""
    applied_now = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATE_LOCK,))
        # Only when missing: a role without the right to create (the installed archive and dashboard roles,
        # systemd/floor/grants.sql) checks an up-to-date schema without touching it.
        exists = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()
        if not (exists and exists[0]):
            conn.execute(
                "CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,"
                " sha256 text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
            )
        done = {v: d for v, d in conn.execute("SELECT version, sha256 FROM schema_migrations").fetchall()}
        for mig in migrations(directory):
            if mig.version in done:
                if done[mig.version] != mig.digest:
                    raise MigrationError(
                        f"migration {mig.version} ({mig.name}) changed since it was applied; add a new one"
                    )
                continue
            conn.execute(mig.sql)
            conn.execute(
                "INSERT INTO schema_migrations (version, name, sha256) VALUES (%s, %s, %s)",
                (mig.version, mig.name, mig.digest),
            )
            applied_now.append(mig.version)
        unknown = sorted(set(done) - {m.version for m in migrations(directory)})
        if unknown:
            raise MigrationError(f"database has migrations {unknown} this program does not know (newer?)")
    return applied_now


def schema_version(conn: psycopg.Connection) -> int:
    row = conn.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()
    return int(row[0]) if row else 0


# ---- writes ----
_EVENT_COLUMNS = "site, table_id, event_id, topic, type, ts, data, raw, source, prev, chain"
_COPY_EVENTS = f"COPY events ({_EVENT_COLUMNS}) FROM STDIN"


def ensure_tables(cur: psycopg.Cursor, tables: Iterable[TableRef]) -> None:
    order = sorted(set(tables), key=lambda t: (t.site, t.table_id))
    cur.execute(  # one statement for the batch's tables (a flood's batch spans hundreds)
        "INSERT INTO floor_tables (site, table_id) SELECT * FROM unnest(%s::text[], %s::text[])"
        " ON CONFLICT DO NOTHING",
        ([t.site for t in order], [t.table_id for t in order]),
    )


def record_arrivals(
    cur: psycopg.Cursor, envelopes: list[Envelope], stale: frozenset[TableRef] = frozenset()
) -> None:
    """One ``floor_arrivals`` row per table of the batch (lowest and highest id): what the gap finder reads
    (floor/archive/gaps.py), duplicates included (a retained checkpoint delivered again still says how far
    the table got). Appended only: no row is shared with another worker's transaction. ``stale``: tables of
    which only retained messages handed over again arrived (no contact: floor/archive/contact.py)."""
    insert_arrivals(cur, id_spans(envelopes), stale)


def insert_arrivals(
    cur: psycopg.Cursor, spans: dict[TableRef, tuple[int, int]], stale: frozenset[TableRef] = frozenset()
) -> None:
    """Append one arrival row per table: ids ``lo..hi`` (0, 0: heard from, no ids), contact unless ``stale``."""
    if not spans:
        return
    order = sorted(spans, key=lambda t: (t.site, t.table_id))
    cur.execute(
        "INSERT INTO floor_arrivals (site, table_id, lo, hi, contact)"
        " SELECT * FROM unnest(%s::text[], %s::text[], %s::bigint[], %s::bigint[], %s::boolean[])",
        (*span_columns(spans, order), [t not in stale for t in order]),
    )


def _row(e: Envelope) -> tuple[Any, ...]:
    return (e.table.site, e.table.table_id, e.event_id, e.topic, e.type, e.ts, Jsonb(e.data), e.raw, e.source,
            e.prev, e.chain)  # fmt: skip


# COPY's text format: a backslash, a newline, a carriage return and a tab inside a value are escaped
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"})
_COPY_NULL = "\\N"


@functools.lru_cache(maxsize=1 << 16)  # sites, tables, topics, types: a floor's few thousand names
def _copy_name(value: str) -> str:
    return value.translate(_COPY_ESCAPES)


def _json_text() -> Callable[[Any], str]:
    """``json.dumps`` with its defaults (the text psycopg's ``Jsonb`` sends), its C encoder made once (``dumps``
    makes one a call: half its time for an envelope's ``data``); ``json.dumps`` itself without the accelerator.
    No check for circular references: the value was parsed from JSON."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return json.dumps
    encode = make(None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ", ", ",
                  False, False, True)  # fmt: skip
    return lambda value: "".join(encode(value, 0))


_dumps_data = _json_text()


def _copy_hex(value: str | None) -> str:
    """``prev``/``chain``: 64 hex digits as the door checked them (nothing to escape), else escaped."""
    if value is None:
        return _COPY_NULL
    return value if value.isalnum() and value.isascii() else value.translate(_COPY_ESCAPES)


def _copy_line(e: Envelope) -> str:
    """One row of ``_COPY_EVENTS`` in COPY's text format, as ``write_row(_row(e))`` would encode it (the same
    values stored): ``data`` is the JSON text it arrived in (``data_text``: jsonb reads it to the same value) or
    else the text psycopg's ``Jsonb`` sends (``json.dumps``, whose output escapes every control character itself,
    so only its backslashes need COPY's escape), ``raw`` the bytea hex form."""
    data = e.data_text
    if data is None:
        data = _dumps_data(e.data)
        if "\\" in data:
            data = data.replace("\\", "\\\\")
    elif "\\" in data or "\n" in data or "\r" in data or "\t" in data:  # escapes, or spaces between tokens
        data = data.translate(_COPY_ESCAPES)
    return "\t".join((
        _copy_name(e.table.site), _copy_name(e.table.table_id), str(e.event_id),
        _COPY_NULL if e.topic is None else _copy_name(e.topic), _copy_name(e.type), e.ts.isoformat(), data,
        "\\\\x" + e.raw.hex(), _copy_name(e.source), _copy_hex(e.prev), _copy_hex(e.chain),
    )) + "\n"  # fmt: skip


def _copy(cur: psycopg.Cursor, envelopes: list[Envelope]) -> None:
    """COPY the envelopes into ``events``, the raw bytes as received: the batch encoded here as COPY's text (one
    write; ``write_row`` encodes value by value, the JSON once more through psycopg's dumpers)."""
    with cur.copy(_COPY_EVENTS) as copy:
        copy.write("".join(map(_copy_line, envelopes)))


EVERY_WORKER = frozenset({CHECKPOINT_TOPIC, SOFTWARE_TOPIC})  # envelopes' topics each worker subscribes to
# on its own as well as through the shared subscription (floor/archive/worker.py): delivered to every worker


def _archived(cur: psycopg.Cursor, envelopes: list[Envelope]) -> set[tuple[str, str, int]]:
    """The keys (site, table, event id) of these envelopes already in ``events``."""
    if not envelopes:
        return set()
    sql = f"SELECT e.site, e.table_id, e.event_id FROM events e JOIN ({BATCH_IDS}) b USING (site, table_id, event_id)"
    return {(s, t, n) for s, t, n in cur.execute(sql, batch_keys(envelopes))}


def _fresh(envelopes: list[Envelope], archived: set[tuple[str, str, int]]) -> list[Envelope]:
    """The envelopes whose id is not ``archived``, each id once (its first envelope in the batch)."""
    seen, fresh = set(archived), []
    for e in envelopes:
        key = (e.table.site, e.table.table_id, e.event_id)
        if key not in seen:
            seen.add(key)
            fresh.append(e)
    return fresh


def _copy_all(cur: psycopg.Cursor, envelopes: list[Envelope]) -> int:
    """COPY ``envelopes`` in a savepoint (a duplicate id undoes it alone, raising UniqueViolation)."""
    if envelopes:
        with cur.connection.transaction():
            _copy(cur, envelopes)
    return len(envelopes)


def store_envelopes(
    cur: psycopg.Cursor, envelopes: list[Envelope], stale: frozenset[TableRef] = frozenset()
) -> int:
    """Insert envelopes (duplicates ignored, another payload under an archived id kept aside); returns how many
    rows were new. ``stale``: tables heard from only by retained messages handed over again (no contact)."""
    if not envelopes:
        return 0
    ensure_tables(cur, (e.table for e in envelopes))
    envelopes = hold_unproven(cur, known(cur, envelopes), record_checkpoint)
    if not envelopes:
        return 0
    # what every worker receives (its own subscription to these topics, for their retained messages) is often
    # archived already by another worker: looked up first (a few keys), else its COPY undoes the whole batch's
    fresh = _fresh(envelopes, _archived(cur, [e for e in envelopes if e.topic in EVERY_WORKER]))
    try:  # the usual batch is all new: COPY it straight in, in a savepoint a duplicate id undoes alone
        new = _copy_all(cur, fresh)
    except (
        psycopg.errors.UniqueViolation
    ):  # a redelivery, a re-fetch or another worker had some: the archived
        # ids looked up and the rest copied (the first payload of an id in the batch wins, as it always did)
        fresh = _fresh(envelopes, _archived(cur, envelopes))
        try:
            new = _copy_all(cur, fresh)
        except psycopg.errors.UniqueViolation:  # another worker committed some of them meanwhile: row by row,
            # in the batch's order, duplicates ignored
            cur.executemany(  # psycopg pipelines the batch: one round trip, not one per row
                f"INSERT INTO events ({_EVENT_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
                " ON CONFLICT DO NOTHING",
                [_row(e) for e in envelopes],
            )
            new = max(cur.rowcount, 0)
    if new < len(envelopes):
        conflicting(cur, envelopes)
    record_arrivals(cur, envelopes, stale)
    for e in envelopes:
        if e.type == CHECKPOINT_TYPE:
            record_checkpoint(cur, e)
    return new


def store_status(cur: psycopg.Cursor, status: Status, *, contact: bool = True) -> None:
    """The controller's status; contact unless it is the retained one handed over again."""
    ensure_tables(cur, [status.table])
    cur.execute(
        "UPDATE floor_tables SET status = %s, status_at = now(),"
        " last_contact_at = CASE WHEN %s THEN now() ELSE last_contact_at END WHERE site = %s AND table_id = %s",
        (status.status, contact, status.table.site, status.table.table_id),
    )


def store_rejected(cur: psycopg.Cursor, rejected: Rejected) -> None:
    cur.execute(
        "INSERT INTO rejected_messages (topic, reason, size) VALUES (%s, %s, %s)",
        (rejected.topic, rejected.reason[:200], rejected.size),
    )


def dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))
