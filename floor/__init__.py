"""The casino floor: every table's events in one place (docs/floor.md). A distribution of its own
(floor/pyproject.toml, blackjack-table-floor): it runs on the casino's servers, not on the table's Pi; it uses the
table's lower layers (rules, journal keys, audit, MQTT client, words), so it depends on the table's product, and
nothing in controller/ or drivers/ imports it. Its command line is floor/cli/.

One module per job: ``messages`` (what arrives from the floor broker, checked at the door), ``store`` (the
PostgreSQL schema, migrations and writes), ``archive`` (the MQTT consumer), ``repair`` (gap detection and the
event re-fetch), ``chain`` (audit checkpoints), ``verify_events`` (events proven by the table's signed chain),
``quarantine`` (payloads kept aside), ``enrol`` (the tables' enrolled keys), ``queries``/``report`` (what an
inspector and a floor manager ask), ``figures`` (each figure's one name, meaning and sign), ``web`` (the
dashboard). The table broker's bridge section is rendered on the table (controller/mqtt/floor_bridge.py).
"""
