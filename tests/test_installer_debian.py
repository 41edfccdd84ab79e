"""The installer as a technician runs it (issue 26): a fresh Debian bookworm root filesystem (debootstrap, minbase:
no udev, no sudo, no procps), booted under systemd (``systemd-nspawn --boot --private-network``), where
``systemd/install.sh`` runs from a copy of this checkout as docs/deploy.md says. What it checks:

1. an install cut off while building its release (pip finds no files) leaves no release and no ``current``;
2. a fresh install: the configuration is refused (no credentials file yet), so the unit is left stopped (never
   started, not enabled), one clear last line, exit non-zero; mosquitto runs the shipped ``mosquitto.conf`` with
   the ACL rendered from the wheel's template; ``/etc/udev/rules.d`` was made; no CA private key on the table;
3. the technician's step 5/6 (credentials, table.toml for this table, manifest) and a re-run that adds a dealer's
   broker account: no new release, mosquitto not restarted but the account works (and a wrong password does
   not), tablectl starts and reaches READY=1 (journal and TLS broker up) with the shipped broker settings while
   the shoe is not plugged in yet, and says so (STATUS=, `tablectl status`); then the shoe's device appears and
   the running service takes it (issue 42); a further re-run with nothing changed restarts nothing; one with a
   broken configuration is refused and leaves the running service alone;
4. ``update.sh`` and ``rollback.sh``: the service comes back up each time and ``tablectl journal verify``
   passes after each.

What differs from a Pi, and why: the machine has no network (pip installs the same hash-locked files from a
wheelhouse downloaded beforehand, through pip's own PIP_NO_INDEX/PIP_FIND_LINKS); the shoe is the emulated one
on a pseudo-terminal of this host (this host's /dev/pts is bound in as /run/host-pts), plugged in by making the
``/dev/tablectl-shoe`` link udev would make, so a drop-in adds ``DeviceAllow=char-pts`` (a real shoe is a
ttyUSB, already allowed); ``table.toml`` disables the card reader and the display and uses the
fake GPIO backend (no such hardware in a container), as a technician edits it for a table without them.
Commands reach the machine through ``nsenter`` (no systemd-machined on this host for ``machinectl``).

The machine's copy is on a tmpfs of its own (debian_root.in_memory: copying, installing and removing it cost a
minute or more on a shared disk). Cold: debootstrap takes a few minutes (cached in /var/cache/tablectl-test, see
tests/support/debian_root.py);
warm: about two minutes. Skips, with the reason printed, only when not root or Debian's mirror is unreachable.
"""

from __future__ import annotations

import json
import os
import re
import select
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support import debian_root
from support.debian_root import Machine

ROOT = Path(__file__).resolve().parents[1]
TABLECTL = "/opt/tablectl/.venv/bin/tablectl"
CFG = "/etc/tablectl/table.toml"
INSTALL = "/root/tablectl/systemd/install.sh"
OFFLINE_PIP = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "/root/wheelhouse"}

pytestmark = pytest.mark.timeout(1800)


@pytest.fixture(scope="module")
def cached() -> tuple[Path, Path]:
    reason = debian_root.skip_reason()
    if reason:
        print(f"SKIPPED installer test: {reason}", file=sys.stderr)
        pytest.skip(reason)
    return debian_root.rootfs(), debian_root.wheelhouse()


@pytest.fixture
def shoe(tmp_path: Path) -> Iterator[str]:
    """The emulated shoe on a pty of this host (tablebench, development tooling): the device path."""
    tablectl = Path(sys.executable).with_name("tablectl")
    proc = subprocess.Popen(
        [str(tablectl), "emulate-shoe", "--link", str(tmp_path / "shoe"), "--seed", "7"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "the emulated shoe did not report ready"
        device = json.loads(proc.stdout.readline())["device"]
        os.chmod(device, 0o666)  # the service's user in the machine (group dialout there) opens it
        yield device
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture
def machine(cached: tuple[Path, Path], tmp_path: Path) -> Iterator[Machine]:
    rootfs, wheels = cached
    with debian_root.in_memory(tmp_path / "machine") as root:
        yield from booted(root, rootfs, wheels, tmp_path)


def booted(root: Path, rootfs: Path, wheels: Path, tmp_path: Path) -> Iterator[Machine]:
    debian_root.copy_tree(rootfs, root)
    # What an installed system has and debootstrap does not write: host name and /etc/hosts (localhost).
    (root / "etc" / "hostname").write_text("table-bj07\n")
    (root / "etc" / "hosts").write_text("127.0.0.1\tlocalhost\n::1\tlocalhost\n127.0.1.1\ttable-bj07\n")
    debian_root.copy_checkout(root / "root" / "tablectl")  # docs/deploy.md step 2: the source tree on the Pi
    (root / "root" / "wheelhouse").mkdir()
    m = Machine(
        root=root,
        name=f"installer-{os.getpid()}",
        # the shoe's pty is this host's: plugged in later as udev would (plug_in_shoe)
        binds=("--bind=/dev/pts:/run/host-pts", f"--bind-ro={wheels}:/root/wheelhouse"),
        log=tmp_path / "nspawn.log",
    )
    try:
        m.boot()
        yield m
    finally:
        m.poweroff()


def plug_in_shoe(m: Machine, device: str) -> None:
    """The shoe plugged in: udev makes /dev/tablectl-shoe (systemd/99-tablectl.rules), here to the emulated
    shoe's pty on this host (its /dev/pts bound in as /run/host-pts)."""
    linked = m.run(["ln", "-s", f"/run/host-pts/{Path(device).name}", "/dev/tablectl-shoe"])
    assert linked.returncode == 0, linked.stderr


def table_status(m: Machine) -> str:
    shown = m.run([TABLECTL, "status", "--config", CFG])
    return shown.stdout + shown.stderr


def install(m: Machine, *args: str, pip: dict[str, str] = OFFLINE_PIP) -> subprocess.CompletedProcess[str]:
    return m.run([INSTALL, *args], env=pip, timeout=600)


def releases(m: Machine) -> list[str]:
    return sorted(p.name for p in (m.root / "opt" / "tablectl" / "releases").iterdir())


def wait_for(condition: Callable[[], bool], timeout: float = 120.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)  # the poll interval of a condition wait
    return True


def journal_verify(m: Machine) -> subprocess.CompletedProcess[str]:
    # docs/deploy.md: as the service's user, with runuser (no sudo on a minimal Debian)
    return m.run(["runuser", "-u", "tablectl", "--", TABLECTL, "journal", "verify", "--config", CFG])


def edit_for_this_table(path: Path) -> None:
    """docs/deploy.md step 5 for a table without card reader, display or GPIO board (a container)."""
    text = path.read_text()
    text, n_reader = re.subn(r"(\[reader\][^\n]*\nenabled = )true", r"\1false", text)
    text, n_display = re.subn(r"(\[display\][^\n]*\nenabled = )true", r"\1false", text)
    text, n_gpio = re.subn(r'backend = "rpi"', 'backend = "fake"', text)
    assert (n_reader, n_display, n_gpio) == (1, 1, 1), "table.example.toml changed: update this edit"
    path.write_text(text)


def test_install_on_a_fresh_debian_as_the_docs_say(machine: Machine, shoe: str) -> None:
    m = machine
    assert not (m.root / "etc" / "udev").exists()  # a minimal Debian: the installer must create rules.d

    # 1. cut off while building the release: nothing left behind, nothing switched
    cut = install(m, "--table-id", "bj07", "--site", "lisboa", pip={"PIP_NO_INDEX": "1"})
    assert cut.returncode != 0
    assert "removed the unfinished release" in cut.stderr, cut.stderr[-3000:]
    assert releases(m) == [] and not (m.root / "opt" / "tablectl" / "current").is_symlink()

    # 2. fresh install: the configuration is refused (no credentials yet), the unit stays stopped
    first = install(m, "--table-id", "bj07", "--site", "lisboa")
    assert first.returncode != 0, first.stderr[-3000:]
    last = first.stderr.strip().splitlines()[-1]
    assert last.startswith("tablectl: error: configuration refused") and "left stopped" in last, last
    assert "credentials" in first.stderr  # the reason, from tablectl config check
    assert len([line for line in first.stderr.splitlines() if line.startswith("tablectl: error:")]) == 1
    assert m.show("tablectl.service", "ActiveState") == "inactive"
    assert (
        m.show("tablectl.service", "ExecMainStartTimestampMonotonic") == "0"
    )  # never started: no crash loop
    assert m.show("tablectl.service", "UnitFileState") == "disabled"  # nor at the next boot
    [release] = releases(m)
    assert os.readlink(m.root / "opt" / "tablectl" / "current") == f"releases/{release}"
    assert m.show("mosquitto.service", "ActiveState") == "active"
    shipped = ROOT / "firmware_configs" / "mosquitto" / "mosquitto.conf"
    assert (m.root / "etc" / "mosquitto" / "mosquitto.conf").read_bytes() == shipped.read_bytes()
    assert "user table-bj07" in (m.root / "etc" / "mosquitto" / "acl").read_text()
    assert (m.root / "etc" / "udev" / "rules.d" / "99-tablectl.rules").is_file()
    keys = m.run(["grep", "-rlE", "BEGIN (RSA |EC |ENCRYPTED )?PRIVATE KEY", "/etc", "/var/lib"])
    assert keys.stdout.split() == ["/etc/mosquitto/certs/broker.key"], keys.stdout  # no CA key on the table
    listed = m.run(["/root/tablectl/systemd/rollback.sh", "--list"]).stdout.splitlines()
    assert listed == [f"{release}  (current)"]

    # 3. the technician's step 5/6, then a re-run to add a dealer's broker account
    enrol = m.run(
        [
            TABLECTL,
            "sign",
            "--add-to",
            "/etc/tablectl/credentials.toml",
            "--user",
            "ana",
            "--role",
            "supervisor",
            "--key-file",
            "/root/ana.key",
        ],
        env={"TABLECTL_PIN": "246810"},  # never on the command line (issue 37): the process list shows it
    )
    assert enrol.returncode == 0, enrol.stderr
    edit_for_this_table(m.root / "etc" / "tablectl" / "table.toml")
    recorded = m.run([TABLECTL, "config", "record", CFG, "--manifest", "/etc/tablectl/integrity.json"])
    assert recorded.returncode == 0, recorded.stderr
    dropin = m.root / "etc" / "systemd" / "system" / "tablectl.service.d"
    dropin.mkdir(parents=True)
    (dropin / "test-pty-shoe.conf").write_text("[Service]\nDeviceAllow=char-pts rw\n")  # the emulated shoe
    with (m.root / "etc" / "tablectl" / "mqtt-users.toml").open("a") as users:
        users.write('"dealer-bj07" = "dealer-pass-5309"\n')
    broker_pid = m.show("mosquitto.service", "MainPID")

    again = install(m)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "no new release" in again.stderr and releases(m) == [release]
    assert m.show("mosquitto.service", "MainPID") == broker_pid  # accounts re-read, broker not restarted
    pub = [
        "mosquitto_pub",
        "-h",
        "localhost",
        "-p",
        "8883",
        "--cafile",
        "/etc/mosquitto/certs/ca.crt",
        "-u",
        "dealer-bj07",
        "-t",
        "lisboa/bj07/probe",
        "-m",
        "x",
    ]
    assert m.run([*pub, "-P", "dealer-pass-5309"]).returncode == 0
    assert m.run([*pub, "-P", "wrong-password"]).returncode != 0
    # READY=1 once the journal and the TLS broker connection are up (Type=notify), the shoe not plugged in yet:
    # the table runs, says so, and takes the shoe when its device appears (issue 42)
    assert not (m.root / "dev" / "tablectl-shoe").exists()
    assert m.wait_unit("tablectl.service", {"active"}) == "active", m.run(
        ["journalctl", "-u", "tablectl", "--no-pager", "-n", "40"]
    ).stdout
    assert m.show("tablectl.service", "UnitFileState") == "enabled"
    service_pid = m.show("tablectl.service", "MainPID")
    assert "not plugged in" in m.show("tablectl.service", "StatusText")
    absent = table_status(m)
    assert "shoe:    DOWN: not plugged in: serial port '/dev/tablectl-shoe' not found" in absent, absent
    plug_in_shoe(m, shoe)
    assert wait_for(lambda: "shoe:    up" in table_status(m)), table_status(m)
    assert wait_for(lambda: "shoe, journal and broker up" in m.show("tablectl.service", "StatusText"))
    assert m.show("tablectl.service", "MainPID") == service_pid  # taken by the running service

    unchanged = install(m)
    assert unchanged.returncode == 0, unchanged.stderr[-3000:]
    assert "not restarted" in unchanged.stderr
    assert m.show("tablectl.service", "MainPID") == service_pid
    assert m.show("mosquitto.service", "MainPID") == broker_pid
    assert releases(m) == [release]

    # a configuration broken while the table runs: refused, the running service left as it was
    cfg = m.root / "etc" / "tablectl" / "table.toml"
    good = cfg.read_text()
    cfg.write_text(good.replace('profile = "pt-2001"', 'profile = "no-such-profile"', 1))
    broken = install(m)
    assert broken.returncode != 0
    assert "left running on the configuration it started with" in broken.stderr.strip().splitlines()[-1]
    assert m.show("tablectl.service", "MainPID") == service_pid
    # fixed again: the change in /etc/tablectl since the start is what restarts it (still no new release)
    cfg.write_text(good)
    applied = install(m)
    assert applied.returncode == 0, applied.stderr[-3000:]
    assert "starting tablectl.service" in applied.stderr and releases(m) == [release]
    assert wait_for(lambda: m.show("tablectl.service", "MainPID") not in ("0", service_pid))
    assert m.wait_unit("tablectl.service", {"active"}) == "active"

    # 4. update and rollback keep the journal verifiable
    assert journal_verify(m).returncode == 0
    updated = m.run(["/root/tablectl/systemd/update.sh"], env=OFFLINE_PIP, timeout=600)
    assert updated.returncode == 0, updated.stderr[-3000:]
    assert len(releases(m)) == 2 and m.show("tablectl.service", "ActiveState") == "active"
    verified = journal_verify(m)
    assert verified.returncode == 0 and "hash chain intact" in verified.stdout, (
        verified.stdout + verified.stderr
    )
    rolled = m.run(["/root/tablectl/systemd/rollback.sh"], timeout=300)
    assert rolled.returncode == 0, rolled.stderr
    assert os.readlink(m.root / "opt" / "tablectl" / "current") == f"releases/{release}"
    assert m.show("tablectl.service", "ActiveState") == "active"
    verified = journal_verify(m)
    assert verified.returncode == 0 and "hash chain intact" in verified.stdout, (
        verified.stdout + verified.stderr
    )
