"""The archive (runs as ``tablectl floor archive``, one worker per floor broker): every table's events kept once.

``store`` (the PostgreSQL schema, migrations and the archive's writes), ``worker`` (the MQTT consumer),
``report`` (what a running worker says about itself), ``repair`` and ``gaps`` (gap detection and the event
re-fetch), ``chain`` (audit checkpoints), ``claims`` (what a checkpoint has yet to prove), ``verify_events``
(events proven by the table's signed chain), ``quarantine`` (payloads kept aside), ``contact`` (when each table
was last heard), ``enrol`` (the tables' enrolled keys).
"""
