"""What the service opens at start-up before the table runs: the audit key, the journal, the command nonce
store, the MQTT link's settings. A full or read-only disk is one line an operator can act on (``StartupError``,
or the journal_io fault for the nonce store), never a traceback."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from controller.audit import keys
from controller.config import TableConfig
from controller.config.model import MqttConfig
from controller.journal import Journal
from controller.journal.table_files import audit_key_file, journal_file
from controller.mqtt.auth import NonceStore
from controller.mqtt.link import LinkConfig
from controller.service.errors import StartupError
from controller.table.journal_io import JournalProblem, classify, is_write_failure

log = logging.getLogger("tablectl.service")


def open_audit_key(config: TableConfig, state_dir: Path) -> Any:
    """The table's Ed25519 audit key (created 0600 on first start): it signs the checkpoints."""
    path = audit_key_file(config)
    try:
        return keys.load_or_create(path)
    except OSError as exc:  # first start on a full or read-only disk: one line, like the journal's
        if not is_write_failure(exc):
            raise
        where = state_dir if state_dir.exists() else state_dir.parent
        raise StartupError(f"{classify(exc, where).text}: cannot create the audit key {path}") from exc


def open_journal(config: TableConfig, state_dir: Path, audit_public_key: str) -> Journal:
    """The journal with its WAL checkpoint thread, or ``StartupError`` with one line naming the cause (disk full,
    read-only)."""
    path = journal_file(state_dir)
    try:
        state_dir.mkdir(parents=True, exist_ok=True)
        journal = Journal(path, table_id=config.table.id, audit_public_key=audit_public_key)
        journal.start_wal_checkpoints()  # the WAL copied into the database off the cards' commits (issue 44)
        return journal
    except Exception as exc:
        if not is_write_failure(exc):
            raise
        problem = classify(exc, state_dir if state_dir.exists() else state_dir.parent)
        raise StartupError(f"{problem.text}: cannot open the journal {path}") from exc


def open_nonce_store(journal: Journal) -> tuple[NonceStore, JournalProblem | None]:
    """The command nonce store, and the journal's problem when its table could not be created (it exists
    already when the disk filled up or went read-only): the service then starts in the journal_io fault."""
    try:
        return NonceStore(journal), None
    except Exception as exc:
        if not is_write_failure(exc):
            raise
        problem = classify(exc, journal.path.parent)
        store = NonceStore.__new__(NonceStore)
        store.journal = journal
        store.keep_s = 61  # NonceStore's default: commands are refused ("cannot record") until the disk works
        return store, problem


def link_config(m: MqttConfig) -> LinkConfig:
    """The MQTT link's settings from ``[mqtt]``."""
    password = m.password() or ""  # only from [mqtt] password_file: never on a command line
    return LinkConfig(
        host=m.host,
        port=m.port,
        username=m.username or "",
        password=password,
        client_id=m.client_id,
        keepalive=m.keepalive_s,
        tls=m.tls,
    )
