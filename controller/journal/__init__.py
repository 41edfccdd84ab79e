"""The journal: an append-only, hash-chained SQLite (WAL) record, with the MQTT outbox beside it."""

from controller.journal.store import (
    GENESIS_HASH,
    Journal,
    JournalError,
    JournalIntegrityError,
    OutboxRow,
    Record,
    Transaction,
    VerifyResult,
)

__all__ = [
    "GENESIS_HASH",
    "Journal",
    "JournalError",
    "JournalIntegrityError",
    "OutboxRow",
    "Record",
    "Transaction",
    "VerifyResult",
]
