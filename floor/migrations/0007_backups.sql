-- Floor archive, schema version 7: the record of the database's own backups (floor/backup/, docs/floor.md
-- "Backups and point-in-time recovery"). One row per base backup taken and per restore check made, written by
-- the backup and verification jobs (tablectl floor backup run / verify) when they end, good or not; the
-- archive's maintenance pass, `tablectl floor backup status` and the dashboard read the newest of each kind.
CREATE TABLE floor_backups (
    id          bigserial   PRIMARY KEY,
    kind        text        NOT NULL CHECK (kind IN ('base', 'verify')),
    label       text        NOT NULL,               -- the base backup's folder name (verify: the one restored)
    started_at  timestamptz NOT NULL,
    finished_at timestamptz NOT NULL DEFAULT now(),
    ok          boolean     NOT NULL,
    summary     text        NOT NULL,               -- one line: what was done, or why it failed
    details     jsonb       NOT NULL DEFAULT '{}'
);
CREATE INDEX floor_backups_newest ON floor_backups (kind, finished_at DESC);
