-- Proving events without writing them again (issue 44, floor/archive/verify_events.py): the proof sets
-- ``verified`` on every archived event once. An index whose predicate names ``verified`` (``events_unverified``)
-- made each such update a new row version with an entry in every index of ``events``; no query needs it (the
-- dashboard's newest unverified document of a topic reads ``events_by_topic``, the proof reads the primary key).
-- Without it the update is HOT (the new version on the same page, no index touched) where the page has room:
-- the archive leaves some free in each page it fills.
DROP INDEX events_unverified;
ALTER TABLE events SET (fillfactor = 70);
