"""Dashboard sessions (table ``dashboard_sessions``): a random token in the browser's cookie, its SHA-256 here.

The token is 32 random bytes (``secrets.token_urlsafe``); the database keeps only its SHA-256, so a copy of the
database logs nobody in. A session ends at its expiry, at logout, when its user is disabled or gets a new
password or role (``users.py`` deletes the rows), and is looked up again on every request (and every 15 s of a
server-sent-event stream), so any of these ends it at once.
"""

from __future__ import annotations

import hashlib
import re
import secrets
from dataclasses import dataclass
from datetime import datetime

import psycopg

from floor.accounts.users import Role

SESSION_COOKIE = "__Host-floor_session"  # __Host-: Secure, Path=/, no Domain (the browser enforces all three)
_TOKEN = re.compile(r"^[A-Za-z0-9_-]{43}\Z")  # token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Session:
    user: str
    role: Role
    expires_at: datetime
    token_sha256: str


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def create_session(conn: psycopg.Connection, user: str, client: str, lifetime_s: int) -> str:
    """A new session for ``user``; returns the token for the cookie (never stored)."""
    token = secrets.token_urlsafe(32)
    with conn.transaction():
        conn.execute("DELETE FROM dashboard_sessions WHERE expires_at < now()")
        conn.execute(
            "INSERT INTO dashboard_sessions (token_sha256, user_name, client, expires_at)"
            " VALUES (%s, %s, %s, now() + make_interval(secs => %s))",
            (_digest(token), user, client[:100], lifetime_s),
        )
    return token


def find_session(conn: psycopg.Connection, token: str | None) -> Session | None:
    """The live session of ``token`` (unexpired, its user enabled), else None."""
    if not token or not _TOKEN.match(token):
        return None
    return find_session_by_digest(conn, _digest(token))


def find_session_by_digest(conn: psycopg.Connection, token_sha256: str) -> Session | None:
    row = conn.execute(
        "SELECT u.name, u.role, s.expires_at, s.token_sha256 FROM dashboard_sessions s"
        " JOIN dashboard_users u ON u.name = s.user_name"
        " WHERE s.token_sha256 = %s AND s.expires_at > now() AND NOT u.disabled",
        (token_sha256,),
    ).fetchone()
    return Session(row[0], Role(row[1]), row[2], row[3]) if row else None


def end_session(conn: psycopg.Connection, session: Session) -> None:
    with conn.transaction():
        conn.execute("DELETE FROM dashboard_sessions WHERE token_sha256 = %s", (session.token_sha256,))
