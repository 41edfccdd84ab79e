"""Supervisor / technician command credentials: HMAC-SHA256 with a per-user key derived from the PIN.

- key = PBKDF2-HMAC-SHA256(password = PIN (UTF-8), salt = "tablectl-cmd-v1:" + user, iterations, 32 bytes);
  the terminal derives it from the typed PIN, the controller stores only the key (credentials file, see
  ``firmware_configs/credentials.example.toml``).
- canonical command = JSON of {"action","args","nonce","role","ts","user"} with sorted keys, separators (",",
  ":"), UTF-8 (``ensure_ascii=False``); mac = lowercase hex HMAC-SHA256(key, canonical).
- accepted only with a fresh ``ts`` (|now - ts| <= window) and a nonce never seen before; used nonces are kept
  in the journal database (table ``cmd_nonces``), so a replay after a restart is still refused.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from controller.actions import SUPERVISOR_ACTIONS, TECHNICIAN_ACTIONS
from controller.journal.store import Journal

SALT_PREFIX = "tablectl-cmd-v1:"
DEFAULT_ITERATIONS = 600_000
SIGNED_FIELDS = ("action", "args", "nonce", "role", "ts", "user")
_USER = re.compile(r"^[A-Za-z0-9_.-]{1,32}$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")

# Who may do what. PT-2001 r.51: a chief inspector clears jams and replaces damaged cards, or calls a
# technician.
ROLE_ACTIONS: dict[str, frozenset[str]] = {
    "supervisor": frozenset(SUPERVISOR_ACTIONS),
    "technician": frozenset(TECHNICIAN_ACTIONS),
}


class AuthError(ValueError):
    """A command failed authentication; ``reason`` is safe to send back (names no secret)."""


def derive_key(user: str, pin: str, iterations: int = DEFAULT_ITERATIONS) -> bytes:
    return hashlib.pbkdf2_hmac(
        "sha256", pin.encode("utf-8"), (SALT_PREFIX + user).encode("utf-8"), iterations, 32
    )


def canonical(cmd: dict[str, Any]) -> bytes:
    return json.dumps(
        {k: cmd[k] for k in SIGNED_FIELDS}, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def sign(cmd: dict[str, Any], key: bytes) -> str:
    return hmac.new(key, canonical(cmd), hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Credential:
    user: str
    roles: frozenset[str]
    key: bytes
    iterations: int

    def __repr__(self) -> str:  # never print the key
        return f"Credential({self.user!r}, roles={sorted(self.roles)})"


class CredentialStore:
    def __init__(self, creds: dict[str, Credential]) -> None:
        self._creds = creds

    @classmethod
    def load(cls, path: str | Path) -> CredentialStore:
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise AuthError(f"{path}: {exc}") from None
        return cls.from_dict(data, str(path))

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "credentials") -> CredentialStore:
        users = data.get("users", {})
        if not isinstance(users, dict):
            raise AuthError(f"{where}: [users] must be a table")
        creds = {}
        for user, entry in users.items():
            w = f"{where}: users.{user}"
            if not _USER.match(user) or not isinstance(entry, dict):
                raise AuthError(f"{w}: bad user name or entry")
            roles = entry.get("roles")
            if not isinstance(roles, list) or not roles or any(r not in ROLE_ACTIONS for r in roles):
                raise AuthError(f"{w}.roles: expected a non-empty list of {', '.join(ROLE_ACTIONS)}")
            key = entry.get("key")
            if not isinstance(key, str) or not _HEX64.match(key):
                raise AuthError(f"{w}.key: expected 64 lowercase hex digits (the PBKDF2-derived key)")
            iterations = entry.get("iterations", DEFAULT_ITERATIONS)
            if not isinstance(iterations, int) or iterations < 1:
                raise AuthError(f"{w}.iterations: expected a positive integer")
            creds[user] = Credential(user, frozenset(roles), bytes.fromhex(key), iterations)
        return cls(creds)

    def get(self, user: str) -> Credential | None:
        return self._creds.get(user)

    def users(self) -> dict[str, Credential]:
        return dict(self._creds)


def render_credentials(creds: dict[str, Credential]) -> str:
    out = [
        "# Command credentials: PBKDF2-derived keys, never PINs (docs/mqtt.md).\n"
        "# Written by `tablectl sign --add-to`.\n"
    ]
    for c in sorted(creds.values(), key=lambda c: c.user):
        roles = ", ".join(f'"{r}"' for r in sorted(c.roles))
        out.append(
            f'\n[users."{c.user}"]\nroles = [{roles}]\niterations = {c.iterations}\nkey = "{c.key.hex()}"\n'
        )
    return "".join(out)


def add_user(
    path: str | Path, user: str, pin: str, roles: list[str], iterations: int = DEFAULT_ITERATIONS
) -> None:
    """Add or replace ``user`` in the credentials file (created if missing)."""
    path = Path(path)
    creds = CredentialStore.load(path).users() if path.exists() else {}
    if not _USER.match(user):
        raise AuthError(f"user {user!r}: 1-32 letters, digits, '_', '.', '-'")
    if any(r not in ROLE_ACTIONS for r in roles) or not roles:
        raise AuthError(f"roles {roles}: expected some of {', '.join(ROLE_ACTIONS)}")
    creds[user] = Credential(user, frozenset(roles), derive_key(user, pin, iterations), iterations)
    path.write_text(render_credentials(creds))


class NonceStore:
    """Used command nonces, in the journal database so that they survive a restart."""

    def __init__(self, journal: Journal) -> None:
        self.journal = journal
        with journal.transaction() as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS cmd_nonces "
                "(nonce TEXT PRIMARY KEY, user TEXT NOT NULL, ts INTEGER NOT NULL)"
            )

    def use(self, nonce: str, user: str, ts: int, *, forget_before: int) -> bool:
        """Record the nonce; False if it was seen before. Nonces older than ``forget_before`` are pruned (a
        command that old is refused as stale anyway)."""
        with self.journal.transaction() as tx:
            if tx.execute("SELECT 1 FROM cmd_nonces WHERE nonce = ?", (nonce,)).fetchone():
                return False
            tx.execute("INSERT INTO cmd_nonces(nonce, user, ts) VALUES (?,?,?)", (nonce, user, ts))
            tx.execute("DELETE FROM cmd_nonces WHERE ts < ?", (forget_before,))
        return True


class Authenticator:
    def __init__(self, store: CredentialStore, nonces: NonceStore, *, window_s: int = 30) -> None:
        self.store = store
        self.nonces = nonces
        self.window_s = window_s

    def verify(self, cmd: dict[str, Any], topic_role: str, now: float) -> None:
        """Raise ``AuthError`` unless ``cmd`` (already schema-valid) is authentic, fresh and unused."""
        user, role, action = cmd["user"], cmd["role"], cmd["action"]
        if role != topic_role:
            raise AuthError(f"role {role!r} signed but sent on the {topic_role} topic")
        if action not in ROLE_ACTIONS[role]:
            raise AuthError(f"action {action!r} is not a {role} action")
        cred = self.store.get(user)
        if cred is None:
            raise AuthError(f"unknown user {user!r}")
        if role not in cred.roles:
            raise AuthError(f"user {user!r} does not hold the {role} role")
        if not hmac.compare_digest(sign(cmd, cred.key), cmd["mac"]):
            raise AuthError("bad signature (wrong PIN/key or altered command)")
        # Freshness after the MAC so that a forger learns nothing from the order of checks.
        age = now - cmd["ts"]
        if abs(age) > self.window_s:
            raise AuthError(f"stale command (ts {age:+.0f} s from controller time, window {self.window_s} s)")
        if not self.nonces.use(cmd["nonce"], user, cmd["ts"], forget_before=int(now) - 2 * self.window_s - 1):
            raise AuthError("replayed command (nonce already used)")
