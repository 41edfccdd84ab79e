"""Record the integrity manifest (``controller.config.integrity``: the digests of the configuration and its
profiles) with the public half of the table's audit key, made now if absent (``tablectl config record``).

Here, in operations, not in the configuration package nor the audit package: it reads the configuration and
makes the audit key, and operations sit above both (issue 31: packages import one way).
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.audit.checkpoint import public_key_hex
from controller.audit.keys import KeyFileError, load_or_create
from controller.config.integrity import FORMAT, combined_digest, compute_digests, digest_files
from controller.config.load import audit_key_path, read_toml


def build_manifest(config_path: str | os.PathLike[str]) -> dict[str, Any]:
    files = digest_files(config_path)
    digests = compute_digests(config_path)
    return {
        "format": FORMAT,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": {role: {"path": str(files[role]), "sha256": digests[role]} for role in sorted(files)},
        "combined": combined_digest(digests),
        "audit_public_key": _audit_public_key(config_path),
    }


def _audit_public_key(config_path: str | os.PathLike[str]) -> str | None:
    """The table's checkpoint key (made now if absent: controller/audit/keys.py); None if it cannot be made
    here (e.g. recorded on a workstation without the state directory): record again on the table."""
    path = Path(os.path.abspath(config_path))
    try:
        key = load_or_create(audit_key_path(read_toml(path), path.parent))
    except (OSError, KeyFileError):
        return None
    return public_key_hex(key.public_key())


def write_manifest(
    config_path: str | os.PathLike[str], manifest_path: str | os.PathLike[str]
) -> dict[str, Any]:
    """Record the manifest atomically (temp file + rename), readable by all, and return it."""
    manifest = build_manifest(config_path)
    out = Path(manifest_path)
    fd, tmp = tempfile.mkstemp(prefix=".integrity-", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(manifest, fh, indent=2, sort_keys=True)
            fh.write("\n")
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return manifest
