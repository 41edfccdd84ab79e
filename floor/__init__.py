"""The casino floor: every table's events in one place (docs/floor.md).

One module per job: ``messages`` (what arrives from the floor broker, checked at the door), ``store`` (the
PostgreSQL schema, migrations and writes), ``archive`` (the MQTT consumer), ``repair`` (gap detection and the
event re-fetch), ``chain`` (audit checkpoints), ``verify_events`` (events proven by the table's signed chain),
``quarantine`` (payloads kept aside), ``enrol`` (the tables' enrolled keys), ``queries``/``report`` (what an
inspector and a floor manager ask), ``bridge`` (the table broker's bridge section) and ``web`` (the dashboard).
"""
