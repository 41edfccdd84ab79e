-- Players (issue 41, floor/players/): the floor's player registry, its settings and its journal. Names and
-- personal details live only here: the tables and the bridge carry a card number or an anonymous pseudonym,
-- never a name (docs/floor.md "Players").

-- One row per registered card. player_id is a random pseudonym the floor's reports use in place of the card once
-- the player is erased; card_sha256 lets the floor recognise the archived events of an erased card (the
-- archived envelopes are the tables' journals and keep the card number: they cannot be edited).
CREATE TABLE players (
    player_id     text        PRIMARY KEY CHECK (player_id ~ '^P[0-9a-f]{16}$'),
    card          text        UNIQUE CHECK (card ~ '^[0-9A-Za-z]{4,32}$'),  -- NULL once erased
    card_sha256   text        NOT NULL UNIQUE CHECK (card_sha256 ~ '^[0-9a-f]{64}$'),
    name          text        CHECK (length(name) BETWEEN 1 AND 100),      -- NULL once erased
    details       text        CHECK (length(details) <= 500),              -- NULL once erased
    registered_at timestamptz NOT NULL DEFAULT now(),
    registered_by text        NOT NULL,
    erased_at     timestamptz,
    CHECK ((erased_at IS NULL) = (card IS NOT NULL)),
    CHECK (erased_at IS NULL OR (name IS NULL AND details IS NULL))
);

-- The players' settings (one row): the comp policy and how long personal details are kept.
CREATE TABLE player_settings (
    id             integer     PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    comp_share_pct numeric(5, 2) NOT NULL DEFAULT 0 CHECK (comp_share_pct BETWEEN 0 AND 100),
    retention_days integer     CHECK (retention_days BETWEEN 1 AND 36500),  -- NULL: kept until erased
    changed_at     timestamptz NOT NULL DEFAULT now(),
    changed_by     text        NOT NULL DEFAULT 'migration'
);
INSERT INTO player_settings (id) VALUES (1);

-- Every registration, change, erasure and settings change, with who and when; never a name or a detail.
CREATE TABLE player_log (
    id        bigserial   PRIMARY KEY,
    at        timestamptz NOT NULL DEFAULT now(),
    user_name text        NOT NULL,
    action    text        NOT NULL CHECK (action IN ('register', 'update', 'erase', 'settings')),
    player_id text,
    detail    text        NOT NULL DEFAULT ''
);
CREATE INDEX player_log_by_player ON player_log (player_id, at);

-- The tables' player events by player (a rating, retention's "last seen").
CREATE INDEX events_players ON events ((data->>'player'), ts) WHERE topic = 'events/player';
