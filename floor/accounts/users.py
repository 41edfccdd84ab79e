"""The floor dashboard's users (table ``dashboard_users``): one account per person, a role, a password hash.

Passwords are kept only as a memory-hard hash: scrypt (``hashlib.scrypt``, N = 2^15, r = 8, p = 1: 32 MiB and
about 0.1 s per try), a random 16-byte salt per password, compared in constant time. The hash's text names its
parameters; parameters outside ``[2^14, 2^17]`` are refused, so a row edited in the database cannot make a login
derive a key of any size. The dashboard bounds how many derivations run at once (``floor/web/auth.py``).

A user's name is also the name the tables know the supervisor by (``controller.mqtt.userkeys.USER_NAME``): a
supervisor signs acknowledgements in the browser with the key enrolled at the tables under the same name.
"""

from __future__ import annotations

import enum
import functools
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime

import psycopg

from controller.mqtt.userkeys import USER_NAME

SCRYPT_N = 2**15
SCRYPT_R = 8
SCRYPT_P = 1
_N_RANGE = (2**14, 2**17)
_MAXMEM = 160 * 1024 * 1024  # above 128 * r * N for the largest N accepted
MIN_PASSWORD = 12
MAX_PASSWORD = 256


class Role(enum.StrEnum):
    VIEWER = "viewer"  # sees every table and alert
    SUPERVISOR = "supervisor"  # also acknowledges alerts (a table's: signed in the browser; the floor's)
    SURVEILLANCE = "surveillance"  # sees what a viewer sees, and the play sessions and advantage-play alerts


class UserError(ValueError):
    """A refused name, role or password, or a user that does not exist; the text says which."""


@dataclass(frozen=True, slots=True)
class User:
    name: str
    role: Role
    disabled: bool
    created_at: datetime
    changed_at: datetime


def check_name(name: str) -> str:
    if not USER_NAME.match(name):
        raise UserError(f"user name {name[:40]!r}: 1-32 letters, digits, '_', '.', '-'")
    return name


def check_password(password: str) -> str:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise UserError(f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters")
    if not password.strip() or any(ord(c) < 32 for c in password):
        raise UserError("a password has no control characters and is not only spaces")
    return password


def hash_password(password: str, *, n: int = SCRYPT_N) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(
        password.encode(), salt=salt, n=n, r=SCRYPT_R, p=SCRYPT_P, maxmem=_MAXMEM, dklen=32
    )
    return f"scrypt${n}${SCRYPT_R}${SCRYPT_P}${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    """True if ``password`` matches ``stored``; False for a wrong password or a hash this program refuses."""
    try:
        scheme, n_text, r_text, p_text, salt_hex, digest_hex = stored.split("$")
        n, r, p = int(n_text), int(r_text), int(p_text)
        salt, digest = bytes.fromhex(salt_hex), bytes.fromhex(digest_hex)
    except ValueError:
        return False
    if scheme != "scrypt" or not _N_RANGE[0] <= n <= _N_RANGE[1] or (r, p) != (SCRYPT_R, SCRYPT_P):
        return False
    if len(salt) != 16 or len(digest) != 32 or len(password) > MAX_PASSWORD:
        return False
    got = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=_MAXMEM, dklen=32)
    return hmac.compare_digest(got, digest)


@functools.cache
def dummy_hash() -> str:
    """A hash of no password: a login for a name without an account costs the same derivation as one with."""
    return hash_password(secrets.token_hex(16))


def check_login(password: str, stored: str | None) -> bool:
    """A login's password check; a name without an account (``stored`` None) costs the same and fails."""
    ok = verify_password(password[: MAX_PASSWORD + 1], stored if stored is not None else dummy_hash())
    return ok and stored is not None


def add_user(conn: psycopg.Connection, name: str, role: Role, password: str) -> None:
    check_name(name)
    stored = hash_password(check_password(password))
    with conn.transaction():
        cur = conn.execute(
            "INSERT INTO dashboard_users (name, role, password_hash) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO NOTHING",
            (name, role.value, stored),
        )
        if cur.rowcount != 1:
            raise UserError(f"user {name} exists (set its password with `floor user password`)")


def set_password(conn: psycopg.Connection, name: str, password: str) -> None:
    """A new password; every session of the user ends."""
    stored = hash_password(check_password(password))
    with conn.transaction():
        _update(
            conn,
            name,
            "UPDATE dashboard_users SET password_hash = %s, changed_at = now() WHERE name = %s",
            stored,
        )
        conn.execute("DELETE FROM dashboard_sessions WHERE user_name = %s", (name,))


def set_role(conn: psycopg.Connection, name: str, role: Role) -> None:
    with conn.transaction():
        _update(
            conn, name, "UPDATE dashboard_users SET role = %s, changed_at = now() WHERE name = %s", role.value
        )
        conn.execute("DELETE FROM dashboard_sessions WHERE user_name = %s", (name,))


def set_disabled(conn: psycopg.Connection, name: str, disabled: bool) -> None:
    """Disable (every session ends at once) or enable an account."""
    with conn.transaction():
        _update(
            conn,
            name,
            "UPDATE dashboard_users SET disabled = %s, changed_at = now() WHERE name = %s",
            disabled,
        )
        if disabled:
            conn.execute("DELETE FROM dashboard_sessions WHERE user_name = %s", (name,))


def _update(conn: psycopg.Connection, name: str, sql: str, value: object) -> None:
    cur = conn.execute(sql, (value, name))
    if cur.rowcount != 1:
        raise UserError(f"no user {name[:40]!r}")


def list_users(conn: psycopg.Connection) -> list[User]:
    rows = conn.execute(
        "SELECT name, role, disabled, created_at, changed_at FROM dashboard_users ORDER BY name"
    ).fetchall()
    return [User(r[0], Role(r[1]), r[2], r[3], r[4]) for r in rows]


def password_hash_of(conn: psycopg.Connection, name: str) -> tuple[Role, str] | None:
    """The role and stored hash of an enabled account, or None."""
    row = conn.execute(
        "SELECT role, password_hash FROM dashboard_users WHERE name = %s AND NOT disabled", (name,)
    ).fetchone()
    return (Role(row[0]), str(row[1])) if row else None
