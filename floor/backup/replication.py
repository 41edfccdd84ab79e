"""Is the standby floor server keeping up? What PostgreSQL says of its streaming replication, judged against a
stated bound; each problem a floor alert (issue 45, docs/floor.md "The standby floor server").

On the primary: the physical replication slot the installer made for the standby (``STANDBY_SLOT``; its
existence is what says "a standby is expected here") and ``pg_stat_replication`` (how far each connected standby
has replayed). On a standby: ``pg_last_wal_receive_lsn`` / ``pg_last_wal_replay_lsn`` and the time of the last
transaction replayed. A server with neither slot nor standby role has nothing to say (a single floor server).

Read by ``tablectl floor backup status`` and the dashboard's status line (through ``floor.backup.health``), and
alerted by the archive's maintenance pass on the primary (a standby cannot write an alert: it is read-only)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import psycopg

STANDBY_SLOT = "floor_standby"  # systemd/floor/lib.sh floor_standby_slot, docs/floor.md
BEHIND_BYTES = 64 * 1024 * 1024  # the standby may be this much WAL behind the primary before it is alerted
BEHIND_TIME = timedelta(seconds=60)  # ... or this long behind in replaying what it has
BEHIND_ALERT = "standby_behind"
GONE_ALERT = "standby_gone"


class Role(enum.StrEnum):
    SINGLE = "single"  # no standby expected (no slot) and not one itself
    PRIMARY = "primary"
    STANDBY = "standby"


@dataclass(frozen=True, slots=True)
class Sender:
    """One row of pg_stat_replication: a standby streaming from this primary."""

    name: str  # application_name (the standby's cluster name)
    client: str
    state: str
    sync_state: str  # async, sync, potential, quorum
    behind_bytes: int | None  # WAL written here and not yet replayed there
    replay_lag: timedelta | None


@dataclass(frozen=True, slots=True)
class Slot:
    name: str
    active: bool
    retained_bytes: int | None  # WAL kept here for it (grows while it is away)
    wal_status: str | None


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # BEHIND_ALERT or GONE_ALERT
    severity: str
    message: str
    dedupe_key: str


@dataclass(frozen=True, slots=True)
class Replication:
    role: Role
    now: datetime
    senders: tuple[Sender, ...] = ()
    slot: Slot | None = None
    synchronous: str = ""  # synchronous_standby_names ("" = asynchronous)
    # a standby's own view
    receiving: bool = False  # its WAL receiver streams from a primary
    receive_behind_bytes: int | None = None  # received and not replayed yet
    last_replayed_at: datetime | None = None  # commit time of the last transaction replayed

    def problems(self) -> list[Problem]:
        if self.role is Role.PRIMARY:
            return self._primary_problems()
        if self.role is Role.STANDBY:
            return self._standby_problems()
        return []

    def _primary_problems(self) -> list[Problem]:
        hour = f"{self.now:%Y%m%d%H}"  # one alert per hour while the state lasts
        if not self.senders:
            kept = (
                f" ({_size(self.slot.retained_bytes)} of WAL kept for it)"
                if self.slot and self.slot.retained_bytes
                else ""
            )
            return [Problem(GONE_ALERT, "critical", f"the standby floor server is not connected{kept}: the archive"
                            " has no second copy until it is back", f"{GONE_ALERT}:{hour}")]  # fmt: skip
        out = []
        for s in self.senders:
            if s.behind_bytes is None and self.slot is not None:  # the lag columns need pg_read_all_stats:
                s = replace(s, behind_bytes=self.slot.retained_bytes)  # the slot's flushed position instead
            if _behind(s.behind_bytes, s.replay_lag):
                lag = _lag(s.behind_bytes, s.replay_lag)
                bound = f"bound {_size(BEHIND_BYTES)} or {_secs(BEHIND_TIME)}"
                message = f"the standby {s.name} is {lag} behind ({bound})"
                out.append(Problem(BEHIND_ALERT, "warning", message, f"{BEHIND_ALERT}:{s.name}:{hour}"))
        return out

    def _standby_problems(self) -> list[Problem]:
        hour = f"{self.now:%Y%m%d%H}"
        out = []
        if not self.receiving:
            out.append(Problem(GONE_ALERT, "critical", "this standby receives nothing from the primary",
                               f"{GONE_ALERT}:receiver:{hour}"))  # fmt: skip
        if self.receive_behind_bytes is not None and self.receive_behind_bytes > BEHIND_BYTES:
            out.append(Problem(BEHIND_ALERT, "warning", f"this standby has {_size(self.receive_behind_bytes)}"
                               " received and not replayed", f"{BEHIND_ALERT}:replay:{hour}"))  # fmt: skip
        return out

    def lines(self) -> list[str]:
        """What ``tablectl floor backup status`` prints of replication."""
        if self.role is Role.SINGLE:
            return ["replication: none (no standby slot here; a single floor server)"]
        if self.role is Role.STANDBY:
            at = self.last_replayed_at
            replayed = f"the last transaction replayed was committed {at:%Y-%m-%d %H:%M:%S} UTC" if at else ""
            replayed = replayed or "nothing replayed yet"
            recv = "streaming from the primary" if self.receiving else "NOT receiving from the primary"
            pending = (
                f", {_size(self.receive_behind_bytes)} received and not replayed"
                if self.receive_behind_bytes
                else ""
            )
            return [f"replication: this server is a STANDBY (read-only), {recv}{pending}; {replayed}"]
        mode = f"synchronous ({self.synchronous})" if self.synchronous else "asynchronous"
        if not self.senders:
            return [f"replication: primary, {mode}; the standby is NOT connected"]
        return [f"replication: primary, {mode}; standby {s.name} at {s.client}: {s.state}, {s.sync_state},"
                f" {_lag(s.behind_bytes, s.replay_lag)} behind" for s in self.senders]  # fmt: skip

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role.value,
            "synchronous_standby_names": self.synchronous,
            "standbys": [
                {
                    "name": s.name,
                    "client": s.client,
                    "state": s.state,
                    "sync_state": s.sync_state,
                    "behind_bytes": s.behind_bytes,
                    "replay_lag_s": s.replay_lag.total_seconds() if s.replay_lag is not None else None,
                }
                for s in self.senders
            ],
            "receiving": self.receiving,
            "receive_behind_bytes": self.receive_behind_bytes,
            "last_replayed_at": self.last_replayed_at.isoformat() if self.last_replayed_at else None,
        }


def _behind(behind: int | None, lag: timedelta | None) -> bool:
    return (behind is not None and behind > BEHIND_BYTES) or (lag is not None and lag > BEHIND_TIME)


def _size(n: int | None) -> str:
    if n is None:
        return "?"
    return f"{n / 1048576:.1f} MiB" if n >= 1048576 else f"{n} bytes"


def _secs(t: timedelta) -> str:
    return f"{t.total_seconds():.0f} s"


def _lag(behind: int | None, lag: timedelta | None) -> str:
    return f"{_size(behind)} / {_secs(lag) if lag is not None else '0 s'}"


def read_replication(conn: psycopg.Connection) -> Replication:
    row = conn.execute(
        "SELECT pg_is_in_recovery(), now(), current_setting('synchronous_standby_names')"
    ).fetchone()
    assert row is not None
    in_recovery, now, sync = bool(row[0]), row[1], str(row[2])
    if in_recovery:
        r = conn.execute(
            # a row while the receiver runs; its columns but pid are hidden without pg_read_all_stats
            "SELECT EXISTS (SELECT 1 FROM pg_stat_wal_receiver WHERE coalesce(status, 'streaming') = 'streaming'),"
            " pg_wal_lsn_diff(pg_last_wal_receive_lsn(), pg_last_wal_replay_lsn()),"
            " pg_last_xact_replay_timestamp()"
        ).fetchone()
        assert r is not None
        return Replication(Role.STANDBY, now, receiving=bool(r[0]),
                           receive_behind_bytes=int(r[1]) if r[1] is not None else None,
                           last_replayed_at=r[2])  # fmt: skip
    s = conn.execute(
        "SELECT slot_name, active, pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn), wal_status"
        " FROM pg_replication_slots WHERE slot_name = %s",
        (STANDBY_SLOT,),
    ).fetchone()
    senders = tuple(
        Sender(
            str(a or "?"),
            str(c or "local"),
            str(st or "?"),
            str(ss or "?"),
            int(b) if b is not None else None,
            lag,
        )
        for a, c, st, ss, b, lag in conn.execute(
            "SELECT application_name, client_addr::text, state, sync_state,"
            " pg_wal_lsn_diff(pg_current_wal_lsn(), replay_lsn), replay_lag FROM pg_stat_replication"
        ).fetchall()
    )
    if s is None and not senders:
        return Replication(Role.SINGLE, now)
    slot = Slot(str(s[0]), bool(s[1]), int(s[2]) if s[2] is not None else None, s[3]) if s else None
    return Replication(Role.PRIMARY, now, senders, slot, sync)
