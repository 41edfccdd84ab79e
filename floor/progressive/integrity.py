"""The controller's own software, authenticated at start (issue 40): the SHA-256 over every Python module of the
packages it runs (``floor`` and ``controller``: each file's path relative to its package and its SHA-256, in
order) checked against the digest recorded in a manifest. ``tablectl floor progressive record`` writes the
manifest (an approved release); ``run`` refuses to start when the digest differs or the manifest is missing.

Manifest (JSON)::

    {"format": "tablectl-floor-progressive/1", "recorded_at": "...Z", "software_sha256": "<64 hex>",
     "public_keys": {"<link>": "<64 hex: the link's meter key>"}}
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from controller.hex64 import HEX64

FORMAT = "tablectl-floor-progressive/1"
PACKAGES = ("controller", "floor")


class IntegrityError(RuntimeError):
    """The software does not match its manifest, or the manifest cannot be used; says which."""


def software_digest(packages: tuple[str, ...] = PACKAGES) -> str:
    h = hashlib.sha256()
    for name in packages:
        module = importlib.import_module(name)
        root = Path(next(iter(module.__path__)))
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            h.update(f"{name}/{rel} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return h.hexdigest()


def read_manifest(path: str | os.PathLike[str]) -> dict[str, Any]:
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise IntegrityError(
            f"manifest {p}: not found (record it: tablectl floor progressive record)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IntegrityError(f"manifest {p}: cannot read: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise IntegrityError(f"manifest {p}: format is not {FORMAT!r}")
    if not isinstance(doc.get("software_sha256"), str) or not HEX64.match(doc["software_sha256"]):
        raise IntegrityError(f"manifest {p}: software_sha256 is not a SHA-256 hex digest")
    return doc


def check(path: str | os.PathLike[str]) -> str:
    """The digest, when it is the recorded one; IntegrityError otherwise."""
    recorded = read_manifest(path)["software_sha256"]
    actual = software_digest()
    if actual != recorded:
        raise IntegrityError(
            f"software digest {actual[:16]}... is not the one recorded in {path} ({recorded[:16]}...):"
            " refusing to run (an unapproved change of the release?)"
        )
    return actual


def record(path: str | os.PathLike[str], public_keys: dict[str, str]) -> dict[str, Any]:
    """Write the manifest for the software as installed now (keeps the links' keys already recorded)."""
    p = Path(path)
    keys: dict[str, str] = {}
    if p.exists():
        try:
            old = read_manifest(p).get("public_keys")
            keys = dict(old) if isinstance(old, dict) else {}
        except IntegrityError:
            keys = {}
    doc = {
        "format": FORMAT,
        "recorded_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "software_sha256": software_digest(),
        "public_keys": keys | public_keys,
    }
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, p)
    return doc
