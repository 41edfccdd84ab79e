"""The running service's status for local readers: a JSON document and a Prometheus textfile.

The service writes ``status.json`` into its state directory (atomically: a temporary file renamed over it) on
every change and at least every ``REFRESH_S`` seconds; `tablectl status` reads it. Reading the file gives no
power to act: it is written by the service only, and nothing in it is a secret. A document older than
``STALE_AFTER_S`` means the service is not running (or hung): `tablectl status` says so and exits 1.

With ``tablectl run --metrics-file PATH`` the same values go to a node_exporter textfile-collector file
(``*.prom``, written atomically), metric names prefixed ``tablectl_``, labelled with site and table.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from controller import __version__
from controller.journal.table_files import journal_file
from controller.ops.disk import DiskSpace, describe
from controller.ops.textfile import prometheus_label, prometheus_number, write_atomic
from controller.table.machine import FAULT_STATES

STATUS_FILE = "status.json"
# Under systemd the status goes to the unit's RuntimeDirectory (/run/tablectl, mode 0755: systemd/tablectl.service)
# so that an operator can read it without the group that reads the journal and /etc/tablectl; elsewhere (demo,
# bench, tests) to the state directory.
RUNTIME_DIRECTORY_ENV = "RUNTIME_DIRECTORY"
SYSTEMD_RUNTIME_DIR = Path("/run/tablectl")
FORMAT = "tablectl-status/1"
REFRESH_S = 5.0  # written at least this often while the service runs
STALE_AFTER_S = 30.0  # older than this: the service is not running or is hung


@dataclass(frozen=True, slots=True)
class Status:
    site: str
    table: str
    version: str
    pid: int
    started_at: float  # Unix seconds
    written_at: float  # Unix seconds
    text: str  # what systemctl status shows (sd_notify STATUS=)
    shoe_link_up: bool
    broker_connected: bool
    journal_bytes: int  # journal.db plus its WAL
    journal_records: int  # last record's seq
    last_checkpoint_seq: int | None
    last_checkpoint_ts: str | None  # ISO 8601, as signed
    outbox_depth: int  # rows not yet acknowledged by the broker
    faults: tuple[str, ...] = field(default_factory=tuple)  # active faults, by name
    journal_first_seq: int = 1  # the first record kept (after `tablectl journal prune`: the anchor)
    disk_free_bytes: int | None = (
        None  # the journal's filesystem (controller/ops/disk.py); None: not measured
    )
    disk_free_inodes: int | None = None
    shoe_problem: str = ""  # why the shoe's link is down, in words ("" while it is up)
    format: str = FORMAT

    @property
    def uptime_s(self) -> float:
        return max(0.0, self.written_at - self.started_at)

    def checkpoint_age_s(self, now: float) -> float | None:
        if self.last_checkpoint_ts is None:
            return None
        try:
            return max(0.0, now - datetime.fromisoformat(self.last_checkpoint_ts).timestamp())
        except ValueError:
            return None

    def to_json(self) -> str:
        return json.dumps({**asdict(self), "faults": list(self.faults)}, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Status:
        data = json.loads(text)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a tablectl status document")
        data["faults"] = tuple(str(f) for f in data.get("faults", ()))
        try:
            return cls(**data)
        except TypeError as exc:
            raise ValueError(f"not a tablectl status document: {exc}") from None


def journal_bytes(db: Path) -> int:
    total = 0
    for suffix in ("", "-wal"):
        with contextlib.suppress(OSError):
            total += (db.parent / (db.name + suffix)).stat().st_size
    return total


def prometheus(status: Status, now: float | None = None) -> str:
    """The status as Prometheus text exposition format (version 0.0.4): HELP and TYPE for every metric."""
    now = time.time() if now is None else now
    base = f'site="{prometheus_label(status.site)}",table="{prometheus_label(status.table)}"'
    out: list[str] = []

    def metric(name: str, kind: str, help_text: str, samples: list[tuple[str, float]]) -> None:
        out.append(f"# HELP tablectl_{name} {help_text}")
        out.append(f"# TYPE tablectl_{name} {kind}")
        for extra, value in samples:
            labels = base + (f",{extra}" if extra else "")
            out.append(f"tablectl_{name}{{{labels}}} {prometheus_number(value)}")

    metric("info", "gauge", "Version of the running controller (always 1).",
           [(f'version="{prometheus_label(status.version)}"', 1)])  # fmt: skip
    metric("up", "gauge", "1 while the service writes its status (0: stale, not running).",
           [("", 1 if now - status.written_at <= STALE_AFTER_S else 0)])  # fmt: skip
    metric("shoe_link_up", "gauge", "Serial link to the shuffler-shoe up (1) or down (0).",
           [("", int(status.shoe_link_up))])  # fmt: skip
    metric("broker_connected", "gauge", "MQTT broker connected (1) or not (0).",
           [("", int(status.broker_connected))])  # fmt: skip
    metric("journal_bytes", "gauge", "Size of the journal database and its WAL in bytes.",
           [("", status.journal_bytes)])  # fmt: skip
    metric("journal_records", "gauge", "Sequence number of the journal's last record.",
           [("", status.journal_records)])  # fmt: skip
    metric("journal_first_seq", "gauge", "Sequence number of the journal's first record (above 1 after a prune).",
           [("", status.journal_first_seq)])  # fmt: skip
    if status.last_checkpoint_seq is not None:
        metric("last_checkpoint_seq", "gauge", "Journal seq covered by the last signed audit checkpoint.",
               [("", status.last_checkpoint_seq)])  # fmt: skip
    age = status.checkpoint_age_s(now)
    if age is not None:
        metric("last_checkpoint_age_seconds", "gauge", "Seconds since the last signed audit checkpoint.",
               [("", round(age, 3))])  # fmt: skip
    if status.disk_free_bytes is not None:
        metric("journal_disk_free_bytes", "gauge", "Bytes free for the service on the journal's filesystem.",
               [("", status.disk_free_bytes)])  # fmt: skip
    if status.disk_free_inodes is not None:
        metric("journal_disk_free_inodes", "gauge", "Inodes free on the journal's filesystem.",
               [("", status.disk_free_inodes)])  # fmt: skip
    metric("outbox_depth", "gauge", "Journaled events not yet acknowledged by the broker.",
           [("", status.outbox_depth)])  # fmt: skip
    metric("fault_active", "gauge", "1 while the named fault holds the table (lid locked), else 0.",
           [(f'fault="{name}"', int(name in status.faults)) for name in FAULT_STATES])  # fmt: skip
    metric("uptime_seconds", "gauge", "Seconds since the service started.", [("", round(status.uptime_s, 3))])
    return "\n".join(out) + "\n"


# ---- for a human ----
def human(status: Status, now: float | None = None) -> str:
    now = time.time() if now is None else now
    age = now - status.written_at
    stale = age > STALE_AFTER_S
    age_cp = status.checkpoint_age_s(now)
    checkpoint = (
        "none yet"
        if status.last_checkpoint_seq is None
        else f"seq {status.last_checkpoint_seq}" + (f", {age_cp:.0f} s ago" if age_cp is not None else "")
    )
    lines = [
        f"table {status.site}/{status.table}  tablectl {status.version}  pid {status.pid}",
        "service: " + (f"NOT RUNNING (status {age:.0f} s old)" if stale else f"up {status.uptime_s:.0f} s"),
        f"status:  {status.text}",
        f"shoe:    {_shoe(status)}",
        f"broker:  {'connected' if status.broker_connected else 'NOT CONNECTED'}",
        f"journal: {_records(status)}, {status.journal_bytes} bytes; last checkpoint {checkpoint}",
        f"disk:    {_disk(status)}",
        f"outbox:  {status.outbox_depth} unacknowledged",
        "faults:  " + (", ".join(status.faults) if status.faults else "none"),
    ]
    return "\n".join(lines) + "\n"


def _shoe(status: Status) -> str:
    if status.shoe_link_up:
        return "up"
    return f"DOWN: {status.shoe_problem or 'not connected'}; lid locked, no dealing until it answers"


def status_dir(state_dir: Path, environ: dict[str, str] | None = None) -> Path:
    """Where the service writes ``status.json``: systemd's ``$RUNTIME_DIRECTORY`` (its first entry) if set."""
    runtime = (os.environ if environ is None else environ).get(RUNTIME_DIRECTORY_ENV, "")
    first = runtime.split(":")[0].strip()
    return Path(first) if first else state_dir


def _disk(status: Status) -> str:
    if status.disk_free_bytes is None or status.disk_free_inodes is None:
        return "not measured"
    return describe(DiskSpace(status.disk_free_bytes, status.disk_free_inodes)) + " (journal's filesystem)"


def _records(status: Status) -> str:
    if status.journal_first_seq <= 1:
        return f"{status.journal_records} records"
    first, last = status.journal_first_seq, status.journal_records
    return f"records {first} to {last} ({max(0, last - first + 1)}; pruned before {first}, see the archive)"


def read(state_dir: Path) -> Status:
    """The service's last status document (OSError if absent; ValueError if not one)."""
    return Status.from_json((state_dir / STATUS_FILE).read_text(encoding="utf-8"))


def stale(status: Status, now: float | None = None) -> bool:
    return (time.time() if now is None else now) - status.written_at > STALE_AFTER_S


def snapshot_of(service: Any, started_at: float) -> Status:
    """Read what the running TableService knows (no I/O beyond the journal's own queries)."""
    cfg = service.config
    journal = service.journal
    table = service.table
    checkpoint = journal.last_checkpoint_record() if journal is not None else None
    disk = service.disk.space if getattr(service, "disk", None) is not None else None
    return Status(
        site=cfg.table.site,
        table=cfg.table.id,
        version=__version__,
        pid=os.getpid(),
        started_at=started_at,
        written_at=time.time(),
        text=service.status_text(),
        shoe_link_up=bool(service.shoe and service.shoe.connected),
        shoe_problem=service.shoe_problem() if hasattr(service, "shoe_problem") else "",
        broker_connected=bool(service.link and service.link.connected),
        journal_bytes=journal_bytes(journal_file(cfg.table.state_dir)),
        journal_records=journal.last_seq if journal is not None else 0,
        journal_first_seq=max(1, journal.first_seq()) if journal is not None else 1,
        last_checkpoint_seq=checkpoint.get("seq") if checkpoint else None,
        last_checkpoint_ts=checkpoint.get("ts") if checkpoint else None,
        outbox_depth=journal.outbox_size() if journal is not None else 0,
        faults=tuple(sorted(table.core.faults)) if table is not None else (),
        disk_free_bytes=disk.free_bytes if disk is not None else None,
        disk_free_inodes=disk.free_inodes if disk is not None else None,
    )


class StatusWriter:
    """Called from the service's health loop: writes on every change and every ``REFRESH_S`` seconds."""

    def __init__(self, state_dir: Path, metrics_file: Path | None) -> None:
        self.path = state_dir / STATUS_FILE
        self.metrics_file = metrics_file
        self.started_at = time.time()
        self._last_key: tuple[Any, ...] | None = None
        self._last_write = 0.0

    def tick(self, service: Any) -> None:
        status = snapshot_of(service, self.started_at)
        key = (status.text, status.shoe_link_up, status.shoe_problem, status.broker_connected, status.faults,
               status.journal_records, status.outbox_depth, status.last_checkpoint_seq,
               status.disk_free_bytes, status.disk_free_inodes)  # fmt: skip
        if key == self._last_key and status.written_at - self._last_write < REFRESH_S:
            return
        write_atomic(self.path, status.to_json() + "\n")
        if self.metrics_file is not None:
            write_atomic(self.metrics_file, prometheus(status, status.written_at))
        self._last_key, self._last_write = key, status.written_at
