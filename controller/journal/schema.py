"""The journal database's schema (SQLite): the tables, indexes and append-only triggers, created if missing
(why one database: controller/journal/store.py; the chain's record kinds: controller/journal/records.py).

- ``records``: append-only; each row carries ``hash = sha256(prev_hash | seq | ts | kind | data)``, so a
  changed or deleted row breaks the chain (``Journal.verify``). Triggers refuse UPDATE/DELETE from this program,
  but for ``tablectl journal prune`` (controller/ops/prune.py): it deletes the records before a signed
  checkpoint record, which stays as the anchor ``verify`` starts from (``find_anchor``, controller/journal/verify.py).
- ``outbox``: the ids of the events waiting for the broker's acknowledgement, nothing else: each event's topic,
  payload, QoS and retain flag are its row in ``events``, written in the same transaction (``Journal.outbox_pending``
  joins them). Ids come from the journal (the last one + 1), not from SQLite: no AUTOINCREMENT, whose counter cost
  every commit a page of the log (issue 44). The last id is found again at open (``last_event_id``), so an id is
  never reused, even after the outbox is acknowledged and the kept events pruned. Journals from before keep the
  whole envelope here: ``migrate_outbox`` rebuilds the table once, keeping every pending row.
- ``meta``: named integers the journal keeps beside its tables, written only off the cards' path: ``event_id_floor``,
  the last event id of a journal migrated from the AUTOINCREMENT outbox (its counter went with the old table).
- ``retained``: the latest payload of each retained state topic, republished after every reconnect.
- ``snapshots``: the controller state as of a record ``seq``; start-up loads the newest one and replays
  only the records after it, so start-up time does not grow with the journal. Each snapshot's SHA-256 is in a
  chained ``snapshot`` record; a snapshot that does not match one is never restored
  (``Journal.latest_snapshot``).
- ``events``: every published envelope, exactly as first published, kept after the broker's ack for the
  configured retention (``Journal.prune_events``) so a consumer can fetch a gap again (``cmd/replay``). No index
  on ``ts``: it cost every card's commit a page of the log (issue 44); the prune finds its bound by ``event_id``
  instead (``first_event_at``, controller/journal/store.py)."""

from controller.journal.records import KIND_INDEXED

# The one place records are deleted, ``tablectl journal prune`` (controller/ops/prune.py), drops this trigger
# and creates it again inside its transaction.
NO_DELETE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS records_no_delete BEFORE DELETE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;"""
SCHEMA = f"""
CREATE TABLE IF NOT EXISTS records (
    seq       INTEGER PRIMARY KEY,
    ts        REAL    NOT NULL,
    kind      TEXT    NOT NULL,
    data      TEXT    NOT NULL,
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL
);
-- Reading one kind (start-up: the alert book, the checkpoints) must not scan the whole journal: with this index
-- start-up does not grow with the journal (docs/performance.md). Not the kinds every card's commit writes
-- (records.UNINDEXED_KINDS, read by seq): journals from before issue 44 have the whole index, dropped once.
DROP INDEX IF EXISTS records_kind;
CREATE INDEX IF NOT EXISTS records_kind_indexed ON records(kind, seq) WHERE {KIND_INDEXED};
CREATE TRIGGER IF NOT EXISTS records_no_update BEFORE UPDATE ON records
    BEGIN SELECT RAISE(ABORT, 'journal records are append-only'); END;
{NO_DELETE_TRIGGER}
-- Pending event ids; the envelope is the row of the same id in ``events`` (journals from before issue 44 have
-- the whole envelope here and an AUTOINCREMENT counter: migrate_outbox rebuilds the table once).
CREATE TABLE IF NOT EXISTS outbox (
    event_id INTEGER PRIMARY KEY
);
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS retained (
    topic   TEXT PRIMARY KEY,
    payload TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    seq   INTEGER PRIMARY KEY,
    ts    REAL    NOT NULL,
    state TEXT    NOT NULL
);
-- Every published envelope (exact text) with the seq of the ``published`` record that chains its digest.
CREATE TABLE IF NOT EXISTS events (
    event_id INTEGER PRIMARY KEY,
    ts       REAL    NOT NULL,
    topic    TEXT    NOT NULL,
    payload  TEXT    NOT NULL,
    qos      INTEGER NOT NULL,
    retain   INTEGER NOT NULL,
    seq      INTEGER NOT NULL
);
-- Journals created before issue 44 have this index: dropped once (it cost every commit a page).
DROP INDEX IF EXISTS events_ts;
"""
