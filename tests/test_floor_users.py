"""``tablectl floor user``: dashboard accounts made by the real command against PostgreSQL; passwords come from a
file or standard input, never the command line, and are stored only as scrypt hashes (issue 25)."""

from __future__ import annotations

import subprocess
import sys

import psycopg

from floor.accounts.sessions import create_session, find_session
from floor.accounts.users import Role, verify_password
from tests.support.floor import temp_database

TABLECTL = [sys.executable, "-m", "controller.cli"]


def _user(dsn: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*TABLECTL, "floor", "user", *args, "--dsn", dsn], input=stdin, capture_output=True,
                          text=True, timeout=60)  # fmt: skip


def test_users_are_made_from_a_password_file_or_stdin_and_stored_as_scrypt_hashes(tmp_path):
    password_file = tmp_path / "pw"
    password_file.write_text("ana-floor-password-77\n")
    with temp_database() as dsn:
        made = _user(dsn, "add", "ana", "--role", "supervisor", "--password-file", str(password_file))
        assert made.returncode == 0, made.stderr
        assert (
            _user(
                dsn, "add", "vic", "--role", "viewer", "--password-file", "-", stdin="vic-password-1234\n"
            ).returncode
            == 0
        )
        # no option takes a password on the command line (other users of the host read argv)
        argv = _user(dsn, "add", "eve", "--role", "viewer", "--password", "eve-password-123")
        assert argv.returncode == 2  # (argparse: "--password" is not taken for --password-file either)
        assert (
            _user(dsn, "add", "eve", "--role", "boss", "--password-file", str(password_file)).returncode == 2
        )
        short = _user(dsn, "add", "eve", "--role", "viewer", "--password-file", "-", stdin="short\n")
        assert short.returncode == 1 and "12 to 256" in short.stderr
        again = _user(dsn, "add", "ana", "--role", "viewer", "--password-file", str(password_file))
        assert again.returncode == 1 and "exists" in again.stderr
        with psycopg.connect(dsn) as conn:
            rows = dict(conn.execute("SELECT name, password_hash FROM dashboard_users").fetchall())
            dump = str(conn.execute("SELECT * FROM dashboard_users").fetchall())
        assert set(rows) == {"ana", "vic"} and "ana-floor-password-77" not in dump
        assert rows["ana"].startswith("scrypt$32768$8$1$") and verify_password(
            "ana-floor-password-77", rows["ana"]
        )
        assert verify_password("vic-password-1234", rows["vic"])
        listing = _user(dsn, "list").stdout.splitlines()
        assert [line.split("\t")[:3] for line in listing] == [["ana", "supervisor", "enabled"],
                                                              ["vic", "viewer", "enabled"]]  # fmt: skip


def test_disabling_or_a_new_password_ends_the_sessions(tmp_path):
    with temp_database() as dsn:
        assert _user(dsn, "add", "ana", "--role", "supervisor", "--password-file", "-",
                     stdin="ana-floor-password-77\n").returncode == 0  # fmt: skip
        with psycopg.connect(dsn) as conn:
            token = create_session(conn, "ana", "10.0.0.1", 3600)
            session = find_session(conn, token)
        assert session is not None and session.role is Role.SUPERVISOR
        assert _user(dsn, "disable", "ana").returncode == 0
        with psycopg.connect(dsn) as conn:
            assert find_session(conn, token) is None
        assert _user(dsn, "enable", "ana").returncode == 0
        with psycopg.connect(dsn) as conn:
            assert find_session(conn, token) is None  # ended, not suspended
            token = create_session(conn, "ana", "10.0.0.1", 3600)
        assert (
            _user(dsn, "password", "ana", "--password-file", "-", stdin="a-new-password-for-ana\n").returncode
            == 0
        )
        assert _user(dsn, "role", "ana", "--role", "viewer").returncode == 0
        with psycopg.connect(dsn) as conn:
            assert find_session(conn, token) is None
            (stored,) = conn.execute("SELECT password_hash FROM dashboard_users").fetchone()
        assert verify_password("a-new-password-for-ana", stored)
        assert _user(dsn, "disable", "nobody").returncode == 1
