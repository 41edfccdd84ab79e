-- Floor archive, schema version 6: an arrival is contact only when it is news (floor/contact.py).
-- A retained message the floor broker hands over again (after its restart, to a worker that subscribes again)
-- says nothing about the table being reachable now: its arrival row carries contact = false, and the gap pass
-- raises known_to from it but leaves last_contact_at alone.
ALTER TABLE floor_arrivals ADD COLUMN contact boolean NOT NULL DEFAULT true;

-- Each archive worker says it is alive and subscribed on the floor broker (every few seconds, its maintenance
-- thread): with none heard from, tables that went quiet are not out of reach, the archive is not receiving
-- (floor/contact.py archive_receiving; the dashboard and the reports say which).
CREATE TABLE floor_workers (
    worker      text        PRIMARY KEY,
    seen_at     timestamptz NOT NULL DEFAULT now(),
    subscribed  boolean     NOT NULL
);
