-- Floor archive, schema version 1 (floor/store.py applies the files of this folder in order and
-- records each in schema_migrations; never edit a file once released: add the next one).

-- Every envelope a table published (events, retained states, alerts, audit checkpoints), once.
CREATE TABLE events (
    site        text        NOT NULL,
    table_id    text        NOT NULL,
    event_id    bigint      NOT NULL CHECK (event_id >= 1),
    topic       text,                   -- relative topic (events/card ...); NULL for a replayed state document
    type        text        NOT NULL,
    ts          timestamptz NOT NULL,   -- when the table committed it
    data        jsonb       NOT NULL,
    raw         bytea       NOT NULL,   -- the envelope bytes exactly as received
    source      text        NOT NULL CHECK (source IN ('live', 'replay')),
    received_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (site, table_id, event_id)
);
CREATE INDEX events_by_topic ON events (site, table_id, topic, event_id);  -- latest document of a table
CREATE INDEX events_by_ts ON events (ts);
CREATE INDEX events_software ON events (site, table_id, event_id) WHERE topic = 'state/software';

-- One row per table the floor has heard of.
CREATE TABLE floor_tables (
    site            text    NOT NULL,
    table_id        text    NOT NULL,
    first_seen      timestamptz NOT NULL DEFAULT now(),
    contiguous_to   bigint  NOT NULL DEFAULT 0,   -- every event_id <= this is archived or alerted missing
    status          text,                         -- online / offline (retained status topic)
    status_at       timestamptz,
    public_key      text,                         -- the table's audit key (hex, raw Ed25519)
    key_source      text CHECK (key_source IN ('state/software', 'first-checkpoint')),
    key_event_id    bigint,
    PRIMARY KEY (site, table_id)
);

-- Signed audit checkpoints (controller/audit/checkpoint.py), kept as the journal's anchor off the table.
CREATE TABLE checkpoints (
    site          text    NOT NULL,
    table_id      text    NOT NULL,
    seq           bigint  NOT NULL,
    event_id      bigint  NOT NULL,
    hash          text    NOT NULL,
    prev_seq      bigint  NOT NULL,
    prev_hash     text    NOT NULL,
    last_event_id bigint  NOT NULL,
    key_id        text    NOT NULL,
    doc           jsonb   NOT NULL,
    signature_ok  boolean,                       -- NULL: not checked yet (no trusted key yet)
    chain         text    NOT NULL DEFAULT 'pending'
                  CHECK (chain IN ('pending', 'genesis', 'anchor', 'linked', 'broken', 'rejected')),
    problem       text,
    PRIMARY KEY (site, table_id, seq)
);

-- Alerts the floor itself raises (missing events, broken checkpoint chain, bad messages).
CREATE TABLE floor_alerts (
    alert_id        bigserial PRIMARY KEY,
    site            text    NOT NULL,
    table_id        text    NOT NULL,
    kind            text    NOT NULL,
    severity        text    NOT NULL CHECK (severity IN ('info', 'warning', 'critical')),
    message         text    NOT NULL,
    details         jsonb   NOT NULL DEFAULT '{}',
    dedupe_key      text    NOT NULL UNIQUE,
    raised_at       timestamptz NOT NULL DEFAULT now(),
    acknowledged_by text,
    acknowledged_at timestamptz
);

-- Re-fetch requests sent to tables (contract: cmd/replay), and what came back.
CREATE TABLE replay_requests (
    request_id    text    PRIMARY KEY,
    site          text    NOT NULL,
    table_id      text    NOT NULL,
    from_event_id bigint  NOT NULL,
    to_event_id   bigint  NOT NULL,
    sent_at       timestamptz NOT NULL DEFAULT now(),
    answered_at   timestamptz,
    ok            boolean,
    sent          integer,
    missing       jsonb,
    reason        text
);

-- Event ids given up after the re-fetch (the table no longer has them): each named in a floor alert.
CREATE TABLE missing_events (
    site      text   NOT NULL,
    table_id  text   NOT NULL,
    event_id  bigint NOT NULL,
    alert_id  bigint REFERENCES floor_alerts (alert_id),
    PRIMARY KEY (site, table_id, event_id)
);

-- Messages refused at the door (malformed, oversized, wrong table): counted, never stored as events.
CREATE TABLE rejected_messages (
    id          bigserial PRIMARY KEY,
    topic       text    NOT NULL,
    reason      text    NOT NULL,
    size        integer NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now()
);
