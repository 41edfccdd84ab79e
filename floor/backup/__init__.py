"""The floor database's backups: WAL archiving's directory, base backups and retention (``base``), a restore to a
point in time (``restore``), the restore check (``verify``), and what is late or failed (``health``); docs/floor.md
"Backups and point-in-time recovery"."""
