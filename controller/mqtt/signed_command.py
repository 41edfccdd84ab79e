"""A signed supervisor/technician command, as the command topics take it (controller/mqtt/auth.py checks it):
built by `tablectl sign` (controller/cli/sign.py), the terminals' client (controller/client.py) and the tests."""

from __future__ import annotations

import re
import secrets
import time
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.mqtt import userkeys
from controller.mqtt.auth import sign

TABLE_LEVEL = re.compile(r"^[A-Za-z0-9_.-]{1,64}\Z")  # a site or table id as cmd_signed.schema.json takes it
DEFAULT_PREFIX = re.compile(r"^casino/([A-Za-z0-9_.-]{1,64})/table/([A-Za-z0-9_.-]{1,64})\Z")


def table_of(prefix: str) -> tuple[str, str] | None:
    """(site, table) of a default topic prefix ``casino/<site>/table/<id>``; None for another prefix."""
    m = DEFAULT_PREFIX.match(prefix.rstrip("/"))
    return (m.group(1), m.group(2)) if m else None


def build_command(
    user: str,
    pin: str,
    role: str,
    action: str,
    args: dict[str, Any],
    *,
    site: str,
    table: str,
    key_file: str | Path | None = None,
    private_key: Ed25519PrivateKey | None = None,
    ts: int | None = None,
    nonce: str | None = None,
    request_id: str | None = None,
) -> dict[str, Any]:
    """The one way to sign a command: with ``private_key``, or the key file (default
    ``<default key dir>/<user>.key``) opened with ``pin``, for the one table ``site``/``table`` (signed: another
    table refuses it). Raises ``userkeys.KeyFileError`` for a wrong PIN."""
    if private_key is None:
        path = key_file if key_file is not None else userkeys.key_path(userkeys.default_key_dir(), user)
        private_key = userkeys.load_key_file(path, user, pin)
    cmd: dict[str, Any] = {
        "request_id": request_id or f"req-{secrets.token_hex(6)}",
        "user": user,
        "role": role,
        "action": action,
        "args": args,
        "site": site,
        "table": table,
        "ts": int(time.time()) if ts is None else ts,
        "nonce": nonce or secrets.token_hex(16),
    }
    cmd["sig"] = sign(cmd, private_key)
    return cmd
