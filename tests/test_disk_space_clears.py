"""Alarms whose cause is gone follow one rule (issue 42; docs/mqtt.md "Alerts"): the journal disk's
``disk_space`` alerts close themselves once space is back, as the measurement that raised them says so, while
a safety fault's alert (a jam) waits for an authorised person. A real SQLite journal on a real small filesystem
(a 32 MB tmpfs: mounting needs root, CI runs as root), filled and freed with files; the watch the service runs
(controller/service/disk.py) measures it with statvfs. The whole service on a small tmpfs, rounds refused and
started again, is hil_tests/test_journal_disk_space.py. Runs in about a second."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from controller.config.model import JournalConfig
from controller.journal import Journal
from controller.mqtt.alerts import AlertManager
from controller.ops.disk import MB, DiskLevel
from controller.service.disk import DiskWatch

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounts a tmpfs: needs root (CI runs as root)")

LIMITS = JournalConfig(disk_warn_free_mb=16, disk_refuse_free_mb=8, disk_warn_free_inodes=20,
                       disk_refuse_free_inodes=5)  # fmt: skip


@contextlib.contextmanager
def small_tmpfs(mountpoint: Path) -> Iterator[Path]:
    mountpoint.mkdir(parents=True, exist_ok=True)
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32m,nr_inodes=400", "tmpfs", str(mountpoint)],
                         capture_output=True, text=True, check=False)  # fmt: skip
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {res.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)


def fill_to(directory: Path, free_mb: int) -> Path:
    """A filler file leaving about ``free_mb`` free."""
    st = os.statvfs(directory)
    filler = directory / f"filler-{free_mb}"
    with filler.open("wb") as fh:
        fh.write(b"\0" * max(0, st.f_bavail * st.f_frsize - free_mb * MB))
    return filler


def disk_alerts(manager: AlertManager) -> list[tuple[str, str]]:
    return [
        (a.severity, str((a.details or {}).get("key"))) for a in manager.open_alerts if a.kind == "disk_space"
    ]


def acknowledgements(journal: Journal) -> list[tuple[str, str | None]]:
    return [
        (r.data["alert"]["kind"], r.data["alert"]["acked_by"])
        for r in journal.records(kinds=("alert",))
        if r.data["action"] == "acknowledged"
    ]


def test_disk_space_alerts_close_themselves_when_space_is_back_and_a_jam_waits(tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "state") as state:
        journal = Journal(state / "journal.db", table_id="T1")
        manager = AlertManager(journal)
        jam = manager.raise_alert("jam", "critical", "the shoe jammed", rule="PT-2001 r.51")
        watch = DiskWatch(state, LIMITS, manager)
        assert watch.check() is DiskLevel.OK and disk_alerts(manager) == []

        warn = fill_to(state, 12)
        assert watch.check() is DiskLevel.WARN
        assert disk_alerts(manager) == [("warning", "warn")]
        refuse = fill_to(state, 4)
        assert watch.check() is DiskLevel.REFUSE
        assert disk_alerts(manager) == [("warning", "warn"), ("critical", "refuse")]
        assert watch.refusal("dealer", "place_bet", betting=True) is not None  # no new round

        refuse.unlink()  # above the refusal threshold again, still below the warning one
        assert watch.check() is DiskLevel.WARN
        assert disk_alerts(manager) == [("warning", "warn")]  # "no new round" is not true any more: closed
        assert watch.refusal("dealer", "place_bet", betting=True) is None
        warn.unlink()
        assert watch.check() is DiskLevel.OK
        assert disk_alerts(manager) == []
        assert acknowledgements(journal) == [("disk_space", "tablectl"), ("disk_space", "tablectl")]
        assert [a.alert_id for a in manager.open_alerts] == [
            jam.alert_id
        ]  # a safety fault waits for a person
        assert watch.check() is DiskLevel.OK and len(acknowledgements(journal)) == 2  # nothing closed twice
        journal.close()


def test_an_alert_left_open_before_a_restart_closes_at_the_first_measurement(tmp_path: Path) -> None:
    """The service stopped while the disk was full; space was freed meanwhile: the alert book rebuilt from the
    journal holds the critical alert, and the new watch's first look closes it."""
    with small_tmpfs(tmp_path / "state") as state:
        journal = Journal(state / "journal.db", table_id="T1")
        watch = DiskWatch(state, LIMITS, AlertManager(journal))
        filler = fill_to(state, 4)
        assert watch.check() is DiskLevel.REFUSE
        journal.close()
        filler.unlink()

        journal = Journal(state / "journal.db", table_id="T1")
        manager = AlertManager(journal)
        assert disk_alerts(manager) == [("critical", "refuse")]
        assert DiskWatch(state, LIMITS, manager).check() is DiskLevel.OK
        assert disk_alerts(manager) == [] and acknowledgements(journal) == [("disk_space", "tablectl")]
        journal.close()
