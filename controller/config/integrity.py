"""SHA-256 digests of the configuration and firmware profiles, recorded in a manifest, verified at start-up.

Issue: "At start-up the controller checks its configuration and firmware profiles against recorded SHA-256
digests and refuses to open the table if they differ."

Files are keyed by *role*, not by path: ``config`` (the table TOML), ``profile`` (the rule profile it
names) and ``firmware.shoe`` / ``firmware.reader`` / ``firmware.display`` (separate firmware files if used).
An update that moves the code to a new release directory therefore verifies as long as the contents are the
same; a changed profile shows up as a mismatch and needs a new ``tablectl config record`` (an approved
change). Secrets (credentials, MQTT password, TLS keys) are not digested: they rotate on their own schedule.

Manifest (JSON)::

    {"format": "tablectl-integrity/1", "recorded_at": "2026-11-22T10:00:00Z",
     "files": {"config": {"path": "/etc/tablectl/table.toml", "sha256": "<64 hex>"}, ...},
     "combined": "<64 hex>", "audit_public_key": "<64 hex: the table's checkpoint key, or null>"}

``combined`` is the SHA-256 of the sorted lines ``"<role> <sha256>\\n"``: one number to read out or log.
Recording it (with the audit key's public half) is ``controller.ops.manifest``: operations sit above
the configuration and the audit key.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from controller.config.errors import ConfigError
from controller.config.keys import PROFILE_PATTERN
from controller.config.load import DEFAULT_PROFILES_DIR, FIRMWARE_SECTIONS, read_toml, resolve_path
from controller.config.profile import profile_path
from controller.hex64 import HEX64

FORMAT = "tablectl-integrity/1"


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(65536), b""):
            h.update(chunk)
    return h.hexdigest()


def digest_files(config_path: str | os.PathLike[str]) -> dict[str, Path]:
    """Role -> file for everything the digests cover.

    Only reads the references (``table.profile``, ``table.profiles_dir``, ``[section] file``), resolved as
    ``load_config`` does, without validating the rest: a tampered profile that no longer parses must still
    show up as a digest mismatch. Raises ConfigError only if the references themselves cannot be read.
    """
    label = str(config_path)
    path = Path(os.path.abspath(config_path))
    data = read_toml(path, file_label=label)
    table = t if isinstance(t := data.get("table"), dict) else {}
    name = table.get("profile")
    if not isinstance(name, str) or not name:
        raise ConfigError.one(label, "table.profile", "missing (the profile to digest is named here)")
    pdir = table.get("profiles_dir")
    profiles_dir = resolve_path(path.parent, pdir) if isinstance(pdir, str) else DEFAULT_PROFILES_DIR
    files = {"config": path, "profile": profile_path(name, profiles_dir)}
    for section in FIRMWARE_SECTIONS:
        ref = data.get(section, {}).get("file") if isinstance(data.get(section), dict) else None
        if isinstance(ref, str) and ref:
            files[f"firmware.{section}"] = resolve_path(path.parent, ref)
    return files


def compute_digests(config_path: str | os.PathLike[str]) -> dict[str, str]:
    """Role -> SHA-256 hex of the config file, its rule profile and its separate firmware files.

    Raises ConfigError naming the file when one of them cannot be read.
    """
    out = {}
    for role, path in digest_files(config_path).items():
        try:
            out[role] = sha256_file(path)
        except OSError as exc:
            raise ConfigError.one(
                str(config_path), role, f"cannot read {path}: {exc.strerror or exc}"
            ) from None
    return out


def combined_digest(digests: dict[str, str]) -> str:
    text = "".join(f"{role} {digests[role]}\n" for role in sorted(digests))
    return hashlib.sha256(text.encode()).hexdigest()


def read_manifest(manifest_path: str | os.PathLike[str]) -> dict[str, str]:
    """Role -> recorded digest. Raises ValueError naming what is wrong with the manifest."""
    path = Path(manifest_path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ValueError(f"manifest not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read manifest {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"manifest {path} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"manifest {path}: format is not {FORMAT!r}")
    files = doc.get("files")
    if not isinstance(files, dict) or not files:
        raise ValueError(f"manifest {path}: no files recorded")
    out: dict[str, str] = {}
    for role, entry in files.items():
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if not isinstance(digest, str) or not HEX64.match(digest):
            raise ValueError(f"manifest {path}: files.{role}.sha256 is not a SHA-256 hex digest")
        out[role] = digest
    return out


def verify(config_path: str | os.PathLike[str], manifest_path: str | os.PathLike[str]) -> list[str]:
    """Mismatches between the files now and the manifest, one sentence each; empty means the table may open.

    A missing or unreadable manifest is a mismatch (the table stays closed), and so is a file that cannot be
    read. Only a configuration whose references cannot be read at all raises ConfigError.
    """
    files = digest_files(config_path)
    try:
        recorded = read_manifest(manifest_path)
    except ValueError as exc:
        return [str(exc)]
    problems = []
    for role in sorted(set(files) | set(recorded)):
        if role not in recorded:
            problems.append(f"{role}: {files[role]} is not in the manifest (record it after approval)")
            continue
        if role not in files:
            problems.append(f"{role}: recorded in the manifest but no longer used by the configuration")
            continue
        try:
            now = sha256_file(files[role])
        except OSError as exc:
            problems.append(f"{role}: cannot read {files[role]}: {exc}")
            continue
        if now != recorded[role]:
            problems.append(
                f"{role}: {files[role]} differs from the recorded digest "
                f"(recorded {recorded[role][:16]}..., now {now[:16]}...)"
            )
    return problems


PROFILE_NAME = re.compile(PROFILE_PATTERN)  # table.profile's declared pattern


def approved_profiles(manifest_path: str | os.PathLike[str]) -> dict[str, tuple[Path, str]]:
    """Rule profiles the manifest lists: name -> (file, recorded SHA-256). ``open_table`` takes only these
    names (issue 13 §2). Raises ValueError naming what is wrong with the manifest."""
    read_manifest(manifest_path)  # the format and every digest checked
    doc = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    out: dict[str, tuple[Path, str]] = {}
    for role, entry in doc["files"].items():
        if role == "profile" or role.startswith("profile."):
            path = Path(str(entry.get("path", "")))
            out[path.stem] = (path, entry["sha256"])
    return out


def recorded_combined(manifest_path: str | os.PathLike[str]) -> str:
    doc = json.loads(Path(manifest_path).read_text(encoding="utf-8"))
    combined = doc.get("combined") if isinstance(doc, dict) else None
    return combined if isinstance(combined, str) and HEX64.match(combined) else ""
