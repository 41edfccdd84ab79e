"""The floor's units and installer scripts (systemd/floor/), without a machine: the units as systemd loads them
(`systemd-analyze verify` and `security --offline`), hardened at least as the table's unit, their command lines
accepted by the commands they run, the scripts shellcheck-clean. The installed floor, booted:
tests/test_floor_installer_debian.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from test_systemd import parse_unit

from floor.cli import tablectl as floor_cli

ROOT = Path(__file__).resolve().parents[1]
FLOOR = ROOT / "systemd" / "floor"
UNITS = {"archive": FLOOR / "tablectl-floor-archive@.service", "web": FLOOR / "tablectl-floor-web.service",
         "progressive": FLOOR / "tablectl-floor-progressive@.service"}  # fmt: skip
TABLE_UNIT = ROOT / "systemd" / "tablectl.service"
ANALYZE = shutil.which("systemd-analyze")
# What the table's unit may lack or set otherwise for its hardware (serial, USB, GPIO): its device list and netlink.
TABLE_ONLY = {"DeviceAllow", "RestrictAddressFamilies", "SupplementaryGroups", "ExecStopPost", "KillMode"}
HARDENING = re.compile(
    r"^(No|Protect|Private|Restrict|Lock|Remove|SystemCall|Capability|Ambient|Device|Memory)"
)


def service(name: str) -> dict[str, str]:
    return dict(parse_unit(UNITS[name].read_text())["Service"])


@pytest.mark.parametrize("name", sorted(UNITS))
def test_notify_with_watchdog_and_restart(name: str) -> None:
    s = service(name)
    assert s["Type"] == "notify" and s["NotifyAccess"] == "main"
    assert int(s["WatchdogSec"]) > 0
    assert s["Restart"] == "on-failure" and s["RestartPreventExitStatus"] == "2"  # exit 2: a refused option
    unit = dict(parse_unit(UNITS[name].read_text())["Unit"])
    for dep in ("mosquitto.service", "postgresql.service"):
        assert dep in unit["After"].split() and dep in unit["Wants"].split()


@pytest.mark.parametrize("name", sorted(UNITS))
def test_own_user_and_at_least_the_tables_hardening(name: str) -> None:
    s = service(name)
    assert s["User"] == f"floor-{name}" and s["Group"] == f"floor-{name}" and "SupplementaryGroups" not in s
    ours = parse_unit(UNITS[name].read_text())["Service"]
    for key, value in parse_unit(TABLE_UNIT.read_text())["Service"]:
        if HARDENING.match(key) and key not in TABLE_ONLY:
            assert (key, value) in ours, key
    assert s["RestrictAddressFamilies"] == "AF_UNIX AF_INET AF_INET6"  # no netlink: no USB hot-plug here
    assert s["PrivateDevices"] == "yes" and s["MemoryDenyWriteExecute"] == "yes"


def _parse_exec_start(name: str) -> argparse.Namespace:
    """ExecStart's `tablectl floor ...` arguments, parsed by the floor's own parser (with sample settings)."""
    settings = {"FLOOR_BROKER_HOST": "localhost", "FLOOR_SITE": "lisboa", "FLOOR_WEB_LISTEN": "0.0.0.0:8443",
                "FLOOR_PUBLIC_URL": "https://floor1:8443"}  # fmt: skip
    line = service(name)["ExecStart"].replace("%i", "1")
    for key, value in settings.items():
        line = line.replace("${" + key + "}", value)
    argv = shlex.split(line)
    assert argv[:2] == ["/opt/tablectl-floor/.venv/bin/tablectl", "floor"]
    parser = argparse.ArgumentParser()
    floor_cli.add_arguments(parser)
    return parser.parse_args(argv[2:])


def test_archive_unit_runs_the_archive_worker_over_tls() -> None:
    args = _parse_exec_start("archive")
    assert args.floor_command == "archive" and args.worker == "1" and args.site == "lisboa"
    assert args.ca == "/etc/tablectl-floor/certs/ca.crt" and args.username == "archive"


def test_progressive_unit_runs_its_links_controller() -> None:
    args = _parse_exec_start("progressive")
    assert args.floor_command == "progressive" and args.progressive_command == "run" and args.link == "1"
    assert str(args.config) == "/etc/tablectl-floor/progressive/1.toml"


def test_web_unit_serves_https_itself() -> None:
    args = _parse_exec_start("web")
    assert args.floor_command == "web"
    assert str(args.tls_cert) == "/etc/tablectl-floor/certs/web.crt"
    assert str(args.tls_key) == "/etc/tablectl-floor/certs/web.key"
    assert args.ca == "/etc/tablectl-floor/certs/ca.crt" and args.username == "supervisor-floor"


@pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze not installed (apt-get install systemd)")
@pytest.mark.parametrize("name", sorted(UNITS))
def test_systemd_analyze_verify_and_security(name: str, tmp_path: Path) -> None:
    assert ANALYZE is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    stub = bindir / "tablectl"
    stub.write_text("#!/bin/sh\nexit 0\n")
    stub.chmod(0o755)
    unit_name = UNITS[name].name.replace("@.service", "@1.service")
    path = tmp_path / unit_name
    path.write_text(UNITS[name].read_text().replace("/opt/tablectl-floor/.venv/bin/", f"{bindir}/"))
    env = {**os.environ, "SYSTEMD_LOG_LEVEL": "notice"}
    verified = subprocess.run(
        [ANALYZE, "verify", str(path)], capture_output=True, text=True, env=env, check=False
    )
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr
    security = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager", str(path)],
                              capture_output=True, text=True, env=env, check=False)  # fmt: skip
    level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
    assert level is not None, security.stdout[-1000:] + security.stderr
    assert float(level.group(1)) <= 2.0, security.stdout  # the table's unit: 1.9


@pytest.mark.skipif(
    shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)"
)
def test_scripts_are_shellcheck_clean() -> None:
    scripts = [p.name for p in sorted(FLOOR.glob("*.sh"))] + ["tablectl-floor", "tablectl-floor-wal-archive"]
    result = subprocess.run(
        ["shellcheck", "-x", *scripts], cwd=FLOOR, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr


def verify_with_timer(unit: Path, tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """`systemd-analyze verify` of a oneshot and its timer as installed (tablectl a stub); (the unit's copy, the
    environment it was verified in)."""
    assert ANALYZE is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "tablectl").write_text("#!/bin/sh\nexit 0\n")
    (bindir / "tablectl").chmod(0o755)
    for path in (unit, unit.with_suffix(".timer")):
        (tmp_path / path.name).write_text(
            path.read_text().replace("/opt/tablectl-floor/.venv/bin/", f"{bindir}/")
        )
    env = {**os.environ, "SYSTEMD_LOG_LEVEL": "notice"}
    copy, timer = tmp_path / unit.name, tmp_path / f"{unit.stem}.timer"
    verified = subprocess.run(
        [ANALYZE, "verify", str(copy), str(timer)], capture_output=True, text=True, env=env, check=False
    )
    assert verified.returncode == 0 and verified.stderr.strip() == "", verified.stderr
    return copy, env


BACKUP_UNITS = {
    "run": FLOOR / "tablectl-floor-backup.service",
    "verify": FLOOR / "tablectl-floor-backup-verify.service",
}


@pytest.mark.parametrize("action", sorted(BACKUP_UNITS))
def test_backup_units_run_the_backup_commands_as_postgres_on_a_timer(action: str, tmp_path: Path) -> None:
    """Docs/floor.md "Backups and point-in-time recovery": a oneshot as the server's account, its command line
    accepted by `tablectl floor backup`, started by its timer, which makes up a run missed while off."""
    unit = BACKUP_UNITS[action]
    s = dict(parse_unit(unit.read_text())["Service"])
    assert s["Type"] == "oneshot" and s["User"] == s["Group"] == "postgres"
    line = s["ExecStart"]
    for key, value in {"FLOOR_BACKUP_DSN": "postgresql:///floor?host=/var/run/postgresql&user=postgres",
                       "FLOOR_BACKUP_DIR": "/srv/floor-backup", "FLOOR_BACKUP_KEEP": "7"}.items():  # fmt: skip
        line = line.replace("${" + key + "}", value)
    argv = shlex.split(line)
    assert argv[:2] == ["/opt/tablectl-floor/.venv/bin/tablectl", "floor"]
    parser = argparse.ArgumentParser()
    floor_cli.add_arguments(parser)
    args = parser.parse_args(argv[2:])
    assert args.floor_command == "backup" and args.backup_command == action
    assert args.backup_dir == "/srv/floor-backup" and args.dsn.startswith("postgresql:///floor")
    timer = dict(parse_unit(unit.with_suffix(".timer").read_text())["Timer"])
    assert timer["Persistent"] == "true" and timer["OnCalendar"]
    if ANALYZE is not None:
        verify_with_timer(unit, tmp_path)


JUDGE_UNIT = FLOOR / "tablectl-floor-judge.service"


def test_judging_pass_runs_as_the_archive_account_on_a_timer(tmp_path: Path) -> None:
    """Docs/floor.md "Judged rounds": the judging pass (`tablectl floor judge`) is a oneshot as the archive's
    account with its DSN, its command line accepted by the floor's command, started every 10 minutes by its timer
    (a run missed while off made up), hardened as the archive worker, and installed and enabled by install.sh."""
    s = dict(parse_unit(JUDGE_UNIT.read_text())["Service"])
    assert s["Type"] == "oneshot" and s["User"] == s["Group"] == "floor-archive"
    envs = [v for k, v in parse_unit(JUDGE_UNIT.read_text())["Service"] if k == "EnvironmentFile"]
    assert "/etc/tablectl-floor/archive.env" in envs  # FLOOR_DSN as floor_archive (grants.sql: judged_rounds)
    argv = shlex.split(s["ExecStart"])
    assert argv[:2] == ["/opt/tablectl-floor/.venv/bin/tablectl", "floor"]
    parser = argparse.ArgumentParser()
    floor_cli.add_arguments(parser)
    args = parser.parse_args(argv[2:])
    assert args.floor_command == "judge" and args.hours == 2
    ours = parse_unit(JUDGE_UNIT.read_text())["Service"]
    for key, value in parse_unit(UNITS["archive"].read_text())["Service"]:
        if HARDENING.match(key) and key != "NotifyAccess":  # a oneshot sends no notifications
            assert (key, value) in ours, key
    timer = dict(parse_unit(JUDGE_UNIT.with_suffix(".timer").read_text())["Timer"])
    assert timer["Persistent"] == "true" and timer["OnCalendar"] == "*:0/10"
    installer = (FLOOR / "install.sh").read_text() + (FLOOR / "lib.sh").read_text()
    assert '"${JUDGE_UNITS[@]}"' in installer and 'systemctl start "$JUDGE_TIMER"' in installer
    if ANALYZE is not None:
        unit, env = verify_with_timer(JUDGE_UNIT, tmp_path)
        security = subprocess.run([ANALYZE, "security", "--offline=true", "--no-pager", str(unit)],
                                  capture_output=True, text=True, env=env, check=False)  # fmt: skip
        level = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", security.stdout)
        assert level is not None and float(level.group(1)) <= 2.0, security.stdout[-1500:]


def test_every_grant_names_a_table_of_the_migrations() -> None:
    """grants.sql names only tables the migrations create (and, in the booted test, every one of them)."""
    created = set()
    for sql in sorted((ROOT / "floor" / "migrations").glob("*.sql")):
        created |= set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)", sql.read_text()))
    grants = (FLOOR / "grants.sql").read_text()
    named = set()
    for block in re.findall(r"GRANT [A-Z, ]+ ON\s+(.*?)\s+TO ", grants, re.S):
        if "ALL " not in block:
            named |= {t.strip() for t in block.split(",")}
    assert named - created - {"schema_migrations"} == set()
    assert created - named == set()  # each table's rights are said
