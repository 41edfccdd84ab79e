"""The retained ``state/software`` document (contract 8): version, profile and rule book, the digests in
force, the audit public key; published at every start (docs/security.md)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from controller import __version__
from controller.audit import keys
from controller.config import ConfigError, TableConfig
from controller.config.integrity import combined_digest, compute_digests
from controller.journal import Journal
from controller.journal.table_files import audit_key_file
from controller.mqtt.unjournaled import UnjournaledPublisher
from controller.table.journal_io import is_write_failure
from controller.topics import SOFTWARE_STATE, STATE_TYPE

log = logging.getLogger("tablectl.service")


def audit_public_key(config: TableConfig) -> str | None:
    """The table's audit checkpoint public key, hex (docs/security.md), or None before the key exists."""
    path = audit_key_file(config)
    try:
        return keys.public_key_hex_of(path)
    except Exception as exc:  # an unusable key file: the checkpoints say so; the document shows none
        log.error("state/software: audit key %s: %s", path, exc)
        return None


def rule_book(profile_path: Path) -> str | None:
    """The profile's ``book`` (e.g. "PT-2001"), read without trusting the file to parse."""
    from controller.rules.profiles import ProfileError, profile_toml

    try:
        book = profile_toml(profile_path.read_text(encoding="utf-8"), source=profile_path.name).get("book")
    except (OSError, UnicodeDecodeError, ProfileError):
        return None
    return book[:64] if isinstance(book, str) else None


def software_document(config: TableConfig) -> dict[str, Any]:
    """Contract 8: ``state/software``: version, profile and book, the digests in force, the audit key."""
    try:
        digests = compute_digests(config.path)
    except ConfigError as exc:  # a file gone unreadable: shown as such by the integrity check
        log.error("state/software: %s", exc)
        digests = {}
    return {
        "version": __version__,
        "profile": config.table.profile,
        "rule_book": rule_book(config.table.profile_path),
        "digests": digests,
        "combined": combined_digest(digests),
        "audit_public_key": audit_public_key(config),
    }


def publish_software(config: TableConfig, journal: Journal, unjournaled: UnjournaledPublisher | None) -> None:
    """``state/software``, retained, through the journal; without it while the journal cannot be written."""
    data = software_document(config)
    try:
        with journal.transaction() as tx:
            tx.publish(SOFTWARE_STATE, STATE_TYPE, data, retain=True)
    except Exception as exc:
        if not is_write_failure(exc) or unjournaled is None:
            raise
        unjournaled.publish(SOFTWARE_STATE, STATE_TYPE, data, retain=True)
