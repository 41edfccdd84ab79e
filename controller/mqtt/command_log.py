"""The command intake's logger (one name for all its parts, as the service's log lines show it) and its one
line for a journal that cannot be written (controller/mqtt/commands.py)."""

from __future__ import annotations

import logging

intake_log = logging.getLogger("controller.mqtt.commands")


def journal_failure(exc: BaseException, what: str) -> bool:
    """A disk failure (full, read-only) is the service's ``journal_io`` fault, raised by the journal's failure
    listener: one line here, no traceback. False for anything else (a bug: the caller logs the traceback)."""
    from controller.table.journal_io import is_write_failure

    if not is_write_failure(exc):
        return False
    intake_log.error("commands: could not journal %s: %s", what, exc)
    return True
