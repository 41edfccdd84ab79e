"""The table's I/O shell: ``TableController`` (controller.py) around the pure core (controller/table/core.py).

table = TableController(journal, shoe, board=board, alerts=alerts)
await table.start()                                   # recover, safe outputs, resync with the shoe
await table.dealer_input("place_bet", {"seat": 1, "amount": 500})
await table.supervisor_action("ana", "clear_jam", {})  # raises Rejected(reason) when not allowed

A layer of its own (pyproject.toml [tool.importlinter]): above the table, the journal and MQTT, below the service.
"""

from controller.shell.controller import TableController

__all__ = ["TableController"]
