-- Floor archive, schema version 10 (issue 44): a report reads its window of the archive, never the history.
-- Every report's query names a topic and a time window, the floor's or one table's (floor/report.py, shift.py,
-- shift_dealers.py, rounds.py, sessions_play.py, players/load.py): one index range over (topic, ts) or over
-- (table_id, topic, ts) (one table id, at any site), as long as the window's rows whatever the archive's age.
-- The index on ts alone served none of them (each also names a topic): (topic, ts) replaces it.
-- Not partitioned by time: the primary key (site, table_id, event_id), which stores a redelivered event once,
-- would have to include the partition key.
DROP INDEX events_by_ts;
CREATE INDEX events_by_topic_ts ON events (topic, ts);
CREATE INDEX events_by_table_ts ON events (table_id, topic, ts);
