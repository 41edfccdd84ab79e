"""The retained ``state/players`` at every start (issue 41, docs/mqtt.md "Players at the seats"): the players the
table holds seated after its recovery (none on a table that never seated one), through the journal like every
message, so the floor knows who sits where whatever the broker kept. Without the journal (it cannot be written:
the journal_io fault) it is not published: the core publishes it again at its next change. The core's own record
of what it published (``StateDocuments.published``, part of its state) is not touched: only inputs change it."""

from __future__ import annotations

import logging

from controller.effects import DocumentName
from controller.journal import Journal
from controller.table.core import TableCore
from controller.table.journal_io import is_write_failure
from controller.table.messages import DOCUMENT_TOPICS
from controller.topics import STATE_TYPE

log = logging.getLogger("tablectl.service")


def publish_players(journal: Journal, core: TableCore) -> None:
    data = core.players.document()
    try:
        with journal.transaction() as tx:
            tx.publish(DOCUMENT_TOPICS[DocumentName.PLAYERS], STATE_TYPE, data, retain=True)
    except Exception as exc:
        if not is_write_failure(exc):
            raise
        log.error("state/players not published at start: the journal cannot be written (%s)", exc)
