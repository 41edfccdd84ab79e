"""The table: a pure ``transitions`` state machine (core.py); its async shell is ``controller.shell``
(``TableController``), a layer above this one."""

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
    "TableCore",
]
