-- Floor archive, schema version 8 (issue 40): the linked progressive's controller (floor/progressive/,
-- docs/progressive.md). One link = one meter fed by its member tables' jackpot chips, taken from the archived
-- (verified) events/jackpot envelopes exactly once.

-- The link's parameters, versioned: a new version only with the link suspended, under dual control.
CREATE TABLE progressive_params (
    link        text        NOT NULL CHECK (link ~ '^[a-z0-9-]{1,32}$'),
    version     integer     NOT NULL CHECK (version >= 1),
    params      jsonb       NOT NULL,   -- floor/progressive/params.py LinkParams.to_dict
    set_by      text        NOT NULL,
    approved_by text        NOT NULL,
    reason      text        NOT NULL,
    set_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (link, version)
);

-- The link's state: one row, updated in the transaction of every change (FOR UPDATE). The meter's invariant is a
-- constraint, so no commit can leave it broken (PostgreSQL checks it on every row written).
CREATE TABLE progressive_links (
    link                 text    PRIMARY KEY CHECK (link ~ '^[a-z0-9-]{1,32}$'),
    site                 text    NOT NULL,
    params_version       integer NOT NULL,
    status               text    NOT NULL CHECK (status IN ('running', 'suspended')),
    meter_units          bigint  NOT NULL CHECK (meter_units >= 0),
    reserve_units        bigint  NOT NULL CHECK (reserve_units >= 0),
    overflow_units       bigint  NOT NULL CHECK (overflow_units >= 0),
    seeded_units         bigint  NOT NULL,   -- base put on the meter (at the start and at each reseed)
    contributed_units    bigint  NOT NULL,   -- contributions' share that went to the meter
    reserve_in_units     bigint  NOT NULL,
    reserve_moved_units  bigint  NOT NULL,   -- reserve moved onto the meter
    overflow_in_units    bigint  NOT NULL,
    overflow_moved_units bigint  NOT NULL,   -- overflow moved onto the meter
    prizes_units         bigint  NOT NULL,   -- prizes frozen off the meter
    returned_units       bigint  NOT NULL,   -- prizes of rejected hits given back
    corrections_units    bigint  NOT NULL,
    next_order           bigint  NOT NULL DEFAULT 1,  -- the next hit's order (commit order across tables)
    pub_seq              bigint  NOT NULL DEFAULT 0,  -- the last published meter's seq (never reused)
    journal_seq          bigint  NOT NULL DEFAULT 0,
    journal_hash         text    NOT NULL,
    updated_at           timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (link, params_version) REFERENCES progressive_params (link, version),
    CONSTRAINT progressive_meter_accounted CHECK (meter_units = seeded_units + contributed_units
        + reserve_moved_units + overflow_moved_units - prizes_units + returned_units + corrections_units),
    CONSTRAINT progressive_reserve_accounted CHECK (reserve_units = reserve_in_units - reserve_moved_units),
    CONSTRAINT progressive_overflow_accounted CHECK (overflow_units = overflow_in_units - overflow_moved_units)
);

-- Every archived events/jackpot envelope the controller took, once: the exactly-once key (a re-delivered or
-- re-fetched event is the same (site, table_id, event_id)). Refused ones too, with the reason.
CREATE TABLE progressive_inputs (
    link      text        NOT NULL REFERENCES progressive_links (link),
    site      text        NOT NULL,
    table_id  text        NOT NULL,
    event_id  bigint      NOT NULL,
    action    text        NOT NULL,
    outcome   text        NOT NULL CHECK (outcome IN ('applied', 'refused')),
    reason    text,
    taken_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (link, site, table_id, event_id)
);

-- The contributions counted (what the report sums per table and shift).
CREATE TABLE progressive_contributions (
    link            text        NOT NULL REFERENCES progressive_links (link),
    site            text        NOT NULL,
    table_id        text        NOT NULL,
    event_id        bigint      NOT NULL,
    round_id        text        NOT NULL,
    chips           integer     NOT NULL CHECK (chips >= 0),
    amount_minor    bigint      NOT NULL CHECK (amount_minor >= 0),
    to_meter_units  bigint      NOT NULL,
    to_reserve_units bigint     NOT NULL,
    to_overflow_units bigint    NOT NULL,
    ts              timestamptz NOT NULL,   -- when the table committed it
    counted_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (link, site, table_id, event_id)
);
CREATE INDEX progressive_contributions_by_ts ON progressive_contributions (link, ts);

-- Hits, in the order the controller committed them; the prize frozen at that moment.
CREATE TABLE progressive_hits (
    hit_id        bigserial   PRIMARY KEY,
    link          text        NOT NULL REFERENCES progressive_links (link),
    hit_order     bigint      NOT NULL,
    site          text        NOT NULL,
    table_id      text        NOT NULL,
    event_id      bigint      NOT NULL,
    round_id      text        NOT NULL,
    seat          integer     NOT NULL,
    combination   text        NOT NULL,
    amount_minor  bigint      NOT NULL CHECK (amount_minor >= 0),
    meter_units_before bigint NOT NULL,
    status        text        NOT NULL CHECK (status IN ('pending', 'paid', 'rejected')),
    ordered_at    timestamptz NOT NULL DEFAULT now(),
    settled_at    timestamptz,
    settled_event_id bigint,
    UNIQUE (link, hit_order),
    UNIQUE (link, site, table_id, event_id)
);
CREATE INDEX progressive_hits_pending ON progressive_hits (link, hit_order) WHERE status = 'pending';

-- Corrections of the meter (dual control, the link suspended).
CREATE TABLE progressive_corrections (
    correction_id bigserial   PRIMARY KEY,
    link          text        NOT NULL REFERENCES progressive_links (link),
    delta_units   bigint      NOT NULL,
    reason        text        NOT NULL,
    requested_by  text        NOT NULL,
    approved_by   text        NOT NULL,
    at            timestamptz NOT NULL DEFAULT now()
);

-- Every change of a link, appended only, hash-chained (hash = SHA-256 of prev_hash + the record's canonical JSON:
-- floor/progressive/journal.py): contributions, hits, settlements, reseeds, status and parameter changes,
-- corrections, and every refusal with who and why.
CREATE TABLE progressive_journal (
    link      text        NOT NULL,
    seq       bigint      NOT NULL CHECK (seq >= 1),
    at        timestamptz NOT NULL DEFAULT now(),
    kind      text        NOT NULL,
    data      jsonb       NOT NULL,
    prev_hash text        NOT NULL,
    hash      text        NOT NULL,
    PRIMARY KEY (link, seq)
);

-- The controller's intake: every archived events/jackpot envelope naming a link is queued here by the archive's own
-- insert (a trigger, in the archive's transaction); the controller deletes what it took in the transaction that
-- took it. So it reads only what is not taken yet, never the whole history (floor/progressive/intake.py). An
-- envelope queued but not yet verified stays queued until the archive proves it.
CREATE TABLE progressive_queue (
    link      text   NOT NULL,
    site      text   NOT NULL,
    table_id  text   NOT NULL,
    event_id  bigint NOT NULL,
    PRIMARY KEY (link, site, table_id, event_id)
);

CREATE FUNCTION progressive_enqueue() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.topic = 'events/jackpot' AND (NEW.data ->> 'link') ~ '^[a-z0-9-]{1,32}$' THEN
        INSERT INTO progressive_queue (link, site, table_id, event_id)
            VALUES (NEW.data ->> 'link', NEW.site, NEW.table_id, NEW.event_id) ON CONFLICT DO NOTHING;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER events_progressive_enqueue AFTER INSERT ON events
    FOR EACH ROW WHEN (NEW.topic = 'events/jackpot') EXECUTE FUNCTION progressive_enqueue();
