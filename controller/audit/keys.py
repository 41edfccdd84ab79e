"""The table's audit key: one Ed25519 private key file that signs the journal's checkpoints.

The file is PEM (PKCS#8, unencrypted: the service must sign unattended), mode 0600, owned by the service user,
created on first start when absent (``load_or_create``). Its public key goes into the integrity manifest
(``tablectl config record``, as ``"audit_public_key"``) and into the retained ``state/software`` document
(``public_key_hex_of``), so the floor and an inspector verify checkpoints against a key they got from outside the
table's journal. Whoever can read this file can sign checkpoints as the table: see docs/security.md.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import stat
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import (
    Encoding,
    NoEncryption,
    PrivateFormat,
    load_pem_private_key,
)

from controller.audit.checkpoint import public_key_hex
from controller.hex64 import HEX64

log = logging.getLogger(__name__)

DEFAULT_KEY_NAME = "audit_key.pem"  # under the table's state_dir unless ``[audit] key_file`` says otherwise
MANIFEST_FIELD = "audit_public_key"


class KeyFileError(Exception):
    """The key file exists but cannot be used (unreadable, not an Ed25519 PEM key); says which file and why."""


def default_key_path(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / DEFAULT_KEY_NAME


def load_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"audit key {p}: cannot read: {exc.strerror or exc}") from None
    try:
        key = load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"audit key {p}: not a PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"audit key {p}: not an Ed25519 key")
    mode = stat.S_IMODE(p.stat().st_mode)
    if mode & 0o077:
        # Readable by others: tighten at once (who read it meanwhile could sign; docs/security.md says so).
        log.warning("audit key %s had mode %o; set to 0600", p, mode)
        with contextlib.suppress(OSError):
            os.chmod(p, 0o600)
    return key


def load_or_create(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """The key at ``path``; a new one written there (0600, created exclusively) when the file is absent."""
    p = Path(path)
    if p.exists():
        return load_key(p)
    p.parent.mkdir(parents=True, exist_ok=True)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it meanwhile: use that one
        return load_key(p)
    with os.fdopen(fd, "wb") as fh:
        fh.write(pem)
        fh.flush()
        os.fsync(fh.fileno())
    _give_to_dir_owner(p)
    log.info("audit key created: %s (public %s)", p, public_key_hex(key.public_key()))
    return key


def _give_to_dir_owner(path: Path) -> None:
    """``tablectl config record`` runs as root while the service runs as its own user (systemd ``User=``): a
    key made by root in the service's state directory goes to that directory's owner."""
    if os.geteuid() != 0:
        return
    st = path.parent.stat()
    if st.st_uid != 0:
        with contextlib.suppress(OSError):
            os.chown(path, st.st_uid, st.st_gid)


def public_key_hex_of(path: str | os.PathLike[str]) -> str | None:
    """The raw Ed25519 public key (64 hex) of the key file, or None when the file does not exist yet.

    For ``state/software`` (state/software: ``"audit_public_key"``). Raises KeyFileError for an unusable file."""
    p = Path(path)
    if not p.exists():
        return None
    return public_key_hex(load_key(p).public_key())


def public_key_from_manifest(manifest_path: str | os.PathLike[str]) -> str | None:
    """The ``audit_public_key`` recorded in an integrity manifest (None when it has none). ValueError when the
    manifest cannot be read or the field is not 64 lowercase hex digits."""
    p = Path(manifest_path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"manifest {p}: cannot read: {exc}") from None
    value = doc.get(MANIFEST_FIELD) if isinstance(doc, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not HEX64.match(value):
        raise ValueError(f"manifest {p}: {MANIFEST_FIELD} is not 64 lowercase hex digits")
    return value
