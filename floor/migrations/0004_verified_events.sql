-- Floor archive, schema version 3 (issue 25): events proven the table's, quarantined envelopes, enrolled keys.

-- The envelope's place in the table's published-events hash chain (controller/journal/event_chain.py), and whether
-- a signed checkpoint's head proves it (floor/verify_events.py). Not yet verified: after the last
-- checkpoint, or its chain not walked yet.
ALTER TABLE events ADD COLUMN prev text;
ALTER TABLE events ADD COLUMN chain text;
ALTER TABLE events ADD COLUMN verified boolean NOT NULL DEFAULT false;
CREATE INDEX events_unverified ON events (site, table_id, event_id) WHERE NOT verified;

-- Envelopes not stored as the table's: a second payload for an archived event id (until the table's chain
-- decides which is its own), or one a signed checkpoint's chain disproves. Never read as the table's events.
CREATE TABLE quarantined_events (
    site           text        NOT NULL,
    table_id       text        NOT NULL,
    event_id       bigint      NOT NULL,
    digest         text        NOT NULL,   -- SHA-256 of raw
    topic          text,
    type           text        NOT NULL,
    ts             timestamptz NOT NULL,
    data           jsonb       NOT NULL,
    raw            bytea       NOT NULL,
    source         text        NOT NULL,
    prev           text,
    chain          text,
    reason         text        NOT NULL,
    quarantined_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (site, table_id, event_id, digest)
);

-- Each signed checkpoint's head of the published events, and how far back the floor has proven events with it
-- (walk_next: the next event id to prove, walk_expect: the chain value it must carry).
ALTER TABLE checkpoints ADD COLUMN event_chain text;
ALTER TABLE checkpoints ADD COLUMN walk_next bigint;
ALTER TABLE checkpoints ADD COLUMN walk_expect text;
ALTER TABLE checkpoints ADD COLUMN events_proven boolean NOT NULL DEFAULT false;

-- A table's audit key is enrolled by an operator (tablectl floor enrol); trust on first use only where turned on.
ALTER TABLE floor_tables DROP CONSTRAINT floor_tables_key_source_check;
ALTER TABLE floor_tables ADD CONSTRAINT floor_tables_key_source_check
    CHECK (key_source IN ('enrolled', 'state/software', 'first-checkpoint'));
ALTER TABLE floor_tables ADD COLUMN trust_on_first_use boolean NOT NULL DEFAULT false;
ALTER TABLE floor_tables ADD COLUMN enrolled_by text;
ALTER TABLE floor_tables ADD COLUMN enrolled_at timestamptz;
