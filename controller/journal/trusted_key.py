"""The table's audit public key a journal or an archive is verified with: given on the command line
(``--public-key HEX`` or ``--manifest FILE``) or found from the table's configuration (``--config``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.audit import keys
from controller.hex64 import HEX64
from controller.journal.table_files import audit_key_file

if TYPE_CHECKING:  # annotations only: the configuration package imports the rules and the schema
    from controller.config.model import TableConfig


@dataclass(frozen=True, slots=True)
class TrustedKey:
    """The table's audit public key (64 lowercase hex) and where it was found, for the messages ("signed by ...")."""

    hex: str
    source: str


def given_key(public_key: str | None, manifest: str | None) -> TrustedKey | None:
    """The key given with ``--public-key`` or the ``audit_public_key`` of ``--manifest``; None when neither was
    given. ValueError says what is wrong with the one given."""
    if public_key:
        key = public_key.strip().lower()
        if not HEX64.match(key):
            raise ValueError("--public-key: expected 64 hex digits (the raw Ed25519 public key)")
        return TrustedKey(key, "the given public key")
    if manifest:
        found = keys.public_key_from_manifest(manifest)
        if found is None:
            raise ValueError(f"manifest {manifest} records no audit_public_key")
        return TrustedKey(found, f"the key in {manifest}")
    return None


def configured_key(config: TableConfig) -> TrustedKey:
    """The key the table's checkpoints are verified with: the ``audit_public_key`` recorded in the configured
    integrity manifest (at approval, outside the table's state directory), else the public key of the audit key
    file (as ``state/software`` publishes it: controller/service/software.py). ValueError names why there is
    none (the manifest unreadable, the key file unusable, neither holding a key)."""
    manifest = config.table.integrity_manifest
    if manifest.is_file():
        found = keys.public_key_from_manifest(manifest)  # ValueError: unreadable, or not 64 hex
        if found is not None:
            return TrustedKey(found, f"the key in {manifest}")
    key_file = audit_key_file(config)
    try:
        found = keys.public_key_hex_of(key_file)
    except keys.KeyFileError as exc:
        raise ValueError(str(exc)) from None
    if found is None:
        raise ValueError(
            f"no audit public key: the integrity manifest {manifest} records none and the audit key {key_file}"
            " does not exist"
        )
    return TrustedKey(found, f"the public key of {key_file}")
