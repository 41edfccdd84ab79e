"""Dual control of a link (docs/progressive.md "Dual control"): suspend, resume, new parameters, a correction of
the meter, each by two different supervisors (the dashboard's accounts, floor/accounts/users.py, both passwords
checked), each journaled with who and why; a refusal is journaled too, with its reason, and raised as ``Refused``.

Parameters and corrections change only with the link suspended (issue 40: never while the link is in operation);
a suspension stops the tables taking linked chips (the meter's ``status``), contributions of rounds already in
flight are still counted."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import psycopg

from floor.accounts import users
from floor.common.alerts import raise_alert
from floor.common.messages import TableRef
from floor.common.notify import notify
from floor.progressive import journal, ledger
from floor.progressive import meter as mt
from floor.progressive.params import LinkParams

MAX_REASON = 200


class Refused(RuntimeError):
    """A change refused; the text says why (and it is journaled when the link exists)."""


@dataclass(frozen=True, slots=True)
class Credential:
    name: str
    password: str = field(repr=False)


def _journal_refusal(conn: psycopg.Connection, link_name: str, data: dict[str, Any]) -> None:
    with conn.transaction():
        cur = conn.cursor()
        link = ledger.read(cur, link_name, lock=True)
        if link is None:
            return
        head = journal.append(cur, link_name, link.journal, "refused", data)
        ledger.save(cur, replace(link, journal=head))


def _authorise(conn: psycopg.Connection, first: Credential, second: Credential) -> str | None:
    """None when both are enabled supervisors with the right passwords and not the same person; else why not."""
    if first.name == second.name:
        return "dual control needs two different supervisors"
    for c in (first, second):
        found = users.password_hash_of(conn, c.name)
        if not users.check_login(c.password, found[1] if found else None):
            return f"{c.name}: wrong password, or no such enabled account"
        assert found is not None
        if found[0] is not users.Role.SUPERVISOR:
            return f"{c.name} is a {found[0].value}, not a supervisor"
    return None


def _change(
    conn: psycopg.Connection,
    link_name: str,
    action: str,
    first: Credential,
    second: Credential,
    reason: str,
    apply: Callable[[psycopg.Cursor, ledger.Link], tuple[ledger.Link, dict[str, Any]]],
) -> ledger.Link:
    """Authorise, then ``apply(cur, link) -> (link, journal data)`` under the link's lock, journaled; or refuse."""
    who = {"action": action, "by": first.name, "with": second.name, "reason": reason[:MAX_REASON]}
    why = "a reason is required" if not reason.strip() else _authorise(conn, first, second)
    if why is None:
        try:
            with conn.transaction():
                cur = conn.cursor()
                link = ledger.read(cur, link_name, lock=True)
                if link is None:
                    raise Refused(f"link {link_name}: no such link")
                link, data = apply(cur, link)
                head = journal.append(cur, link_name, link.journal, action, who | data)
                link = replace(link, journal=head)
                ledger.save(cur, link)
                cur.execute("SELECT pg_notify(%s, %s)", (ledger.NOTIFY_CHANNEL, link_name))
                _alert_members(cur, link, action, first.name, second.name, reason)
                notify(cur)
            return link
        except Refused as exc:
            why = str(exc)
    _journal_refusal(conn, link_name, who | {"refusal": why})
    raise Refused(f"{action} refused: {why}")


def _status(
    target: ledger.LinkStatus,
) -> Callable[[psycopg.Cursor, ledger.Link], tuple[ledger.Link, dict[str, Any]]]:
    def apply(cur: psycopg.Cursor, link: ledger.Link) -> tuple[ledger.Link, dict[str, Any]]:
        if link.status is target:
            raise Refused(f"link {link.link} is {target.value} already")
        return replace(link, status=target), {"status": target.value}

    return apply


def _alert_members(
    cur: psycopg.Cursor, link: ledger.Link, action: str, by: str, with_: str, reason: str
) -> None:
    """Each member table's alert list says what changed on its link, by whom and why (issue 40: parameter changes
    as alerts and journal records)."""
    text = f"linked progressive {link.link}: {action} by {by} with {with_} ({reason[:MAX_REASON]})"
    text += f"; now {link.status.value}"
    for table in link.params.members:
        raise_alert(
            cur, TableRef(link.site, table), "progressive_changed", "info", text,
            {"link": link.link, "action": action, "by": by, "with": with_, "journal_seq": link.journal.seq},
            f"progressive:{link.link}:journal:{link.journal.seq}:{table}",
        )  # fmt: skip


def suspend(
    conn: psycopg.Connection, link: str, first: Credential, second: Credential, reason: str
) -> ledger.Link:
    return _change(conn, link, "suspend", first, second, reason, _status(ledger.LinkStatus.SUSPENDED))


def resume(
    conn: psycopg.Connection, link: str, first: Credential, second: Credential, reason: str
) -> ledger.Link:
    return _change(conn, link, "resume", first, second, reason, _status(ledger.LinkStatus.RUNNING))


def _suspended(link: ledger.Link, what: str) -> None:
    if link.status is not ledger.LinkStatus.SUSPENDED:
        raise Refused(f"link {link.link} is {link.status.value}: {what} only while it is suspended")


def set_params(
    conn: psycopg.Connection,
    link_name: str,
    params: LinkParams,
    first: Credential,
    second: Credential,
    reason: str,
) -> ledger.Link:
    def apply(cur: psycopg.Cursor, link: ledger.Link) -> tuple[ledger.Link, dict[str, Any]]:
        _suspended(link, "parameters change")
        if params.link != link.link or params.site != link.site:
            raise Refused("the link's name and site cannot change")
        if params.currency != link.params.currency:
            raise Refused(f"the currency cannot change under a running meter ({link.params.currency})")
        if params == link.params:
            raise Refused("the parameters are the recorded ones already")
        old = link.params.to_dict()
        changed = {k: {"old": old[k], "new": v} for k, v in params.to_dict().items() if old[k] != v}
        new = ledger.add_params(cur, link, params, first.name, second.name, reason[:MAX_REASON])
        return new, {"version": new.params_version, "changes": changed}

    return _change(conn, link_name, "set", first, second, reason, apply)


def correct(
    conn: psycopg.Connection,
    link_name: str,
    new_minor: int,
    first: Credential,
    second: Credential,
    reason: str,
) -> ledger.Link:
    def apply(cur: psycopg.Cursor, link: ledger.Link) -> tuple[ledger.Link, dict[str, Any]]:
        _suspended(link, "a correction")
        try:
            meter, delta = mt.correct(link.meter, new_minor)
        except mt.MeterError as exc:
            raise Refused(str(exc)) from None
        cur.execute(
            "INSERT INTO progressive_corrections (link, delta_units, reason, requested_by, approved_by)"
            " VALUES (%s, %s, %s, %s, %s)",
            (link.link, delta, reason[:MAX_REASON], first.name, second.name),
        )
        return replace(link, meter=meter), {"delta_units": delta, "meter_units": meter.meter_units}

    return _change(conn, link_name, "correct", first, second, reason, apply)
