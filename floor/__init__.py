"""The casino floor: every table's events in one place (docs/floor.md). A distribution of its own
(floor/pyproject.toml, blackjack-table-floor): it runs on the casino's servers, not on the table's Pi; it uses the
table's lower layers (rules, journal keys, audit, MQTT client, words), so it depends on the table's product, and
nothing in controller/ or drivers/ imports it. Its command line is floor/cli/.

One subpackage per part, importing one way (the import contract ``floor-layers`` in pyproject.toml), from the top:
``cli`` (``tablectl floor ...``), ``web`` (the dashboard), ``players`` and ``progressive`` (the player registry,
the linked progressive's controller), ``protection`` (advantage play), ``reports`` (what an inspector and a floor
manager ask), ``accounts`` (users, logins, sessions), ``archive`` (the MQTT consumer and the PostgreSQL store),
``backup`` (base backups and their health), ``common`` (messages, alerts, notify and small helpers). The table
broker's bridge section is rendered on the table (controller/mqtt/floor_bridge.py).
"""
