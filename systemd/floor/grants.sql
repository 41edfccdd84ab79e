-- The rights of the floor's PostgreSQL roles (systemd/floor/install.sh runs this as floor_owner after every
-- migration; docs/floor.md "The database's roles"). Least privilege:
--   floor_owner    owns the database and every table: migrations, users, enrolment (the technician's commands)
--   floor_archive  the archive workers: read and write the archive's tables; nothing of the dashboard's
--   floor_web      the dashboard: reads the archive and the player registry; writes only its sessions, its log
--                  and alert acknowledgements
--   floor_progressive  the linked progressives' controllers: read the archived events, write their links' rows
--                  (docs/progressive.md); their dual-control commands run as floor_owner (tablectl-floor)
-- A migration that adds a table adds it here too (tests/test_floor_installer.py checks that every table is named).
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC;

GRANT SELECT ON schema_migrations TO floor_archive, floor_web, floor_progressive;

GRANT SELECT, INSERT, UPDATE, DELETE ON
    events, floor_tables, checkpoints, floor_alerts, replay_requests, missing_events, rejected_messages,
    floor_arrivals, quarantined_events, floor_workers, judged_rounds
    TO floor_archive;
-- the backups' record: read by the maintenance pass (late or failed: a floor alert), written by the backup jobs,
-- which run as the superuser postgres (docs/floor.md "Backups and point-in-time recovery")
GRANT SELECT ON floor_backups TO floor_archive;

GRANT SELECT ON
    events, floor_tables, checkpoints, floor_alerts, replay_requests, missing_events, rejected_messages,
    floor_arrivals, quarantined_events, floor_workers, judged_rounds, dashboard_users, dashboard_sessions, dashboard_log,
    floor_backups,
    progressive_params, progressive_links, progressive_inputs, progressive_contributions, progressive_hits,
    progressive_corrections, progressive_journal
    TO floor_web;
-- players (issue 41): the dashboard reads the registry to name players to supervisors (floor/web/players.py
-- leaves the names out for every other role); registering, erasing and the settings are the technician's
-- commands (tablectl floor players, as floor_owner). The archive workers get nothing of it.
-- player_log holds who did what and when, never a name or a detail.
GRANT SELECT ON players, player_settings, player_log TO floor_web;
GRANT INSERT, DELETE ON dashboard_sessions TO floor_web;
GRANT INSERT ON dashboard_log TO floor_web;
-- a login takes its attempt before the password is checked (floor/accounts/logins.py reserve): the row is confirmed as a
-- failure (its detail written) or given back (deleted) once the check is done
GRANT UPDATE (detail), DELETE ON dashboard_log TO floor_web;
GRANT INSERT, UPDATE ON floor_alerts TO floor_web;

-- the linked progressive's controller (floor/progressive/): the archive's events read, its own rows written; the
-- journal only appended; a floor alert for each refused envelope
GRANT SELECT ON events TO floor_progressive;
-- the archive's insert queues each events/jackpot envelope naming a link (a trigger of migration 8)
GRANT INSERT ON progressive_queue TO floor_archive;
GRANT SELECT, DELETE ON progressive_queue TO floor_progressive;
GRANT SELECT, INSERT ON progressive_params, progressive_contributions, progressive_journal TO floor_progressive;
GRANT SELECT, INSERT, UPDATE ON progressive_links, progressive_inputs, progressive_hits TO floor_progressive;
GRANT SELECT ON progressive_corrections TO floor_progressive;
GRANT SELECT, INSERT ON floor_alerts TO floor_progressive;

GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO floor_archive, floor_web, floor_progressive;
