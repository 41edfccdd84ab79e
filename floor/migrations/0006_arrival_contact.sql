-- Floor archive, schema version 6: an arrival is contact only when it is news (floor/contact.py).
-- A retained message the floor broker hands over again (after its restart, to a worker that subscribes again)
-- says nothing about the table being reachable now: its arrival row carries contact = false, and the gap pass
-- raises known_to from it but leaves last_contact_at alone.
ALTER TABLE floor_arrivals ADD COLUMN contact boolean NOT NULL DEFAULT true;
