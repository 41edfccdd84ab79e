"""The table: a pure ``transitions`` state machine (core.py) behind an async shell (controller.py).

table = TableController(journal, shoe, board=board, alerts=alerts)
await table.start()                                   # recover, safe outputs, resync with the shoe
await table.dealer_input("place_bet", {"seat": 1, "amount": 500})
await table.supervisor_action("ana", "clear_jam", {})  # raises Rejected(reason) when not allowed
"""

from controller.effects import (
    Alert,
    Effect,
    Event,
    EventKind,
    GpioWrite,
    JournalRecord,
    Rejected,
    ShoeCommand,
    StateDocument,
)
from controller.table.alert_sink import AlertSink, LogAlerts
from controller.table.controller import TableController
from controller.table.core import JackpotSeam, Step, TableCore

__all__ = [
    "Alert",
    "AlertSink",
    "Effect",
    "Event",
    "EventKind",
    "GpioWrite",
    "JackpotSeam",
    "JournalRecord",
    "LogAlerts",
    "Rejected",
    "ShoeCommand",
    "StateDocument",
    "Step",
    "TableController",
    "TableCore",
]
