-- Floor archive, schema version 2: gap repair driven by what arrives, and each table's last contact
-- (floor/repair.py, floor/contact.py; docs/floor.md "Gaps" and "A table out of reach").

-- One row per table per stored batch: "ids lo..hi of this table just arrived" (appended by every archive
-- worker in the batch's transaction, no row shared between workers). The maintenance pass consumes them
-- (DELETE ... RETURNING), so it looks only at tables that received something, never at every table.
CREATE TABLE floor_arrivals (
    site      text        NOT NULL,
    table_id  text        NOT NULL,
    lo        bigint      NOT NULL,
    hi        bigint      NOT NULL,
    at        timestamptz NOT NULL DEFAULT now()
);

-- The highest event id the floor knows the table has written (an archived event, or a checkpoint's
-- last_event_id): the gap walk looks up to here, however far above an open hole it lies.
ALTER TABLE floor_tables ADD COLUMN known_to bigint NOT NULL DEFAULT 0;
-- Last time anything arrived from the table (an event, a state document, its status, its bridge's notice).
ALTER TABLE floor_tables ADD COLUMN last_contact_at timestamptz;
-- The table broker's bridge to the floor: 'up' / 'down' (the bridge's notification, its last will when the
-- link dies), and since when.
ALTER TABLE floor_tables ADD COLUMN link text CHECK (link IN ('up', 'down'));
ALTER TABLE floor_tables ADD COLUMN link_at timestamptz;

-- Checkpoints not yet looked at by the chain check: the check reads these, not the whole table.
CREATE INDEX checkpoints_pending ON checkpoints (site, table_id, seq) WHERE chain = 'pending';

-- What the floor already has tells what the table wrote at least.
UPDATE floor_tables f SET known_to = greatest(
    (SELECT coalesce(max(event_id), 0) FROM events e WHERE e.site = f.site AND e.table_id = f.table_id),
    (SELECT coalesce(max(last_event_id), 0) FROM checkpoints c
      WHERE c.site = f.site AND c.table_id = f.table_id AND c.chain <> 'rejected'));
