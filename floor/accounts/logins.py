"""The dashboard's log (table ``dashboard_log``) and its login lockout.

Every login, failed login, logout, refusal and acknowledgement is a row: who (the name as given), from which
client address, what, and why. Failed logins are counted from these rows, so the lockout holds across restarts
and across several dashboard processes on one database:

- **attempts in flight count**: before its password is checked, a login takes one of the account's and the
  address's attempts (``reserve``: a ``login_failed`` row "being checked", under an advisory lock, so parallel
  logins from many addresses cannot all pass the check first); a success gives it back, a failure confirms it.
  So at most ``USER_FAILURES`` passwords of one account are checked per window, however many arrive at once;
- an account with ``USER_FAILURES`` failed logins (or logins being checked) in the last ``WINDOW_S`` seconds, or
  a client address with ``CLIENT_FAILURES``, is refused without a password check until the oldest of those
  failures is ``WINDOW_S`` old; an attempt while refused is logged (``login_locked``, at most one row a minute
  per account and address) but does not extend the lockout;
- the failure that starts a lockout logs a ``lockout`` row and raises a critical ``login_lockout`` floor alert
  naming the account or address (shown on the dashboard, acknowledged by a supervisor).

Names without an account count like names with one (the answer is the same: a login never tells which).
"""

from __future__ import annotations

import enum
from datetime import datetime

import psycopg

from floor.archive.store import LOGIN_LOCK
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef

USER_FAILURES = 5
CLIENT_FAILURES = 20
WINDOW_S = 15 * 60
LOCKOUT_ALERT = "login_lockout"
CHECKING = "password being checked"  # a login_failed row taken before the check (reserve), until confirmed
DASHBOARD = TableRef("floor", "dashboard")  # where the dashboard's own floor alerts are filed


class LogEvent(enum.StrEnum):
    LOGIN = "login"
    LOGIN_FAILED = "login_failed"
    LOGIN_LOCKED = "login_locked"  # refused while locked out (not counted again)
    LOCKOUT = "lockout"
    LOGOUT = "logout"
    REFUSED = "refused"  # a request refused: no session, wrong role, wrong origin, over a cap
    ACK = "ack"  # an acknowledgement (relayed to a table, or of a floor alert) and its outcome
    RELAYED = (
        "relayed"  # another signed supervisor command relayed to a table (a player seated) and its outcome
    )


class Subject(enum.StrEnum):
    ACCOUNT = "account"
    CLIENT = "client"


_LIMIT = {Subject.ACCOUNT: USER_FAILURES, Subject.CLIENT: CLIENT_FAILURES}
_FAILURES_SQL = {
    Subject.ACCOUNT: "SELECT at FROM dashboard_log WHERE event = 'login_failed' AND user_name = %s"
    " AND at > now() - make_interval(secs => %s) ORDER BY at DESC LIMIT %s",
    Subject.CLIENT: "SELECT at FROM dashboard_log WHERE event = 'login_failed' AND client = %s"
    " AND at > now() - make_interval(secs => %s) ORDER BY at DESC LIMIT %s",
}


def log_event(cur: psycopg.Cursor, event: LogEvent, user: str, client: str, detail: str = "") -> None:
    cur.execute(
        "INSERT INTO dashboard_log (user_name, client, event, detail) VALUES (%s, %s, %s, %s)",
        (user[:64], client[:100], event.value, detail[:300]),
    )


def _failures(cur: psycopg.Cursor, subject: Subject, value: str, limit: int) -> list[datetime]:
    """The newest ``limit`` failed logins of ``subject`` inside the window, newest first."""
    cur.execute(_FAILURES_SQL[subject], (value, WINDOW_S, limit))
    return [row[0] for row in cur.fetchall()]


def reserve(conn: psycopg.Connection, user: str, client: str) -> int | None:
    """Take one attempt of ``user`` and of ``client`` before the password is checked: the id of the row that
    counts it (a failure until ``release`` gives it back), or None when either has no attempt left (failures and
    attempts in flight together reach the limit)."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOGIN_LOCK,))  # one count at a time
        for subject, value in ((Subject.ACCOUNT, user), (Subject.CLIENT, client)):
            if len(_failures(cur, subject, value, _LIMIT[subject])) >= _LIMIT[subject]:
                return None
        row = cur.execute(
            "INSERT INTO dashboard_log (user_name, client, event, detail) VALUES (%s, %s, %s, %s) RETURNING id",
            (user[:64], client[:100], LogEvent.LOGIN_FAILED.value, CHECKING),
        ).fetchone()
        return int(row[0]) if row else None


def release(conn: psycopg.Connection, attempt: int) -> None:
    """The password was right: the attempt taken by ``reserve`` is given back."""
    with conn.transaction():
        conn.execute("DELETE FROM dashboard_log WHERE id = %s AND detail = %s", (attempt, CHECKING))


def _confirmed(cur: psycopg.Cursor, subject: Subject, value: str, limit: int) -> int:
    """How many of the newest ``limit`` failures of ``subject`` inside the window are confirmed (not in flight)."""
    column = "user_name" if subject is Subject.ACCOUNT else "client"
    cur.execute(
        f"SELECT count(*) FROM (SELECT detail FROM dashboard_log WHERE event = 'login_failed' AND {column} = %s"
        " AND at > now() - make_interval(secs => %s) ORDER BY at DESC LIMIT %s) f WHERE detail <> %s",
        (value, WINDOW_S, limit, CHECKING),
    )
    row = cur.fetchone()
    return int(row[0]) if row else 0


def locked_until(conn: psycopg.Connection, user: str, client: str) -> datetime | None:
    """When the lockout of ``user`` or ``client`` ends (the later of the two), or None if neither is locked."""
    cur = conn.cursor()
    ends = []
    for subject, value in ((Subject.ACCOUNT, user), (Subject.CLIENT, client)):
        failures = _failures(cur, subject, value, _LIMIT[subject])
        if len(failures) >= _LIMIT[subject]:
            ends.append(failures[-1])
    if not ends:
        return None
    row = cur.execute("SELECT %s::timestamptz + make_interval(secs => %s)", (max(ends), WINDOW_S)).fetchone()
    return row[0] if row else None


def record_locked(conn: psycopg.Connection, user: str, client: str, detail: str) -> None:
    """Log an attempt refused while locked out: at most one row per account and address a minute, so a locked-out
    attacker's flood cannot grow the table (the process log has each)."""
    with conn.transaction():
        cur = conn.cursor()
        cur.execute(
            "SELECT 1 FROM dashboard_log WHERE event = 'login_locked' AND user_name = %s AND client = %s"
            " AND at > now() - interval '1 minute' LIMIT 1",
            (user[:64], client[:100]),
        )
        if cur.fetchone() is None:
            log_event(cur, LogEvent.LOGIN_LOCKED, user, client, detail)


def record_failure(
    conn: psycopg.Connection, user: str, client: str, detail: str, attempt: int | None = None
) -> list[Subject]:
    """Log a failed login (confirm the ``attempt`` ``reserve`` took); returns what it locked out now (alerted)."""
    started = []
    with conn.transaction():
        cur = conn.cursor()
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (LOGIN_LOCK,))  # one count at a time
        cur.execute("UPDATE dashboard_log SET detail = %s WHERE id = %s", (detail[:300], attempt))
        if attempt is None or cur.rowcount != 1:
            log_event(cur, LogEvent.LOGIN_FAILED, user, client, detail)
        for subject, value in ((Subject.ACCOUNT, user), (Subject.CLIENT, client)):
            if _confirmed(cur, subject, value, _LIMIT[subject] + 1) != _LIMIT[subject]:
                continue  # below the limit, or beyond it (attempts that raced past the check): alerted once
            # exactly at the limit: this failure starts the lockout (later ones are refused before counting)
            log_event(cur, LogEvent.LOCKOUT, user, client, f"{subject.value} {value} locked out")
            cur.execute("SELECT currval('dashboard_log_id_seq')")
            row = cur.fetchone()
            raise_alert(
                cur,
                DASHBOARD,
                LOCKOUT_ALERT,
                "critical",
                f"{_LIMIT[subject]} failed dashboard logins for {subject.value} {value} within"
                f" {WINDOW_S // 60} minutes: refused for up to {WINDOW_S // 60} minutes",
                {"subject": subject.value, "value": value, "user": user, "client": client},
                f"{LOCKOUT_ALERT}:{subject.value}:{value}:{row[0] if row else 0}",
            )
            started.append(subject)
    return started
