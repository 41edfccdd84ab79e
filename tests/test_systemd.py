"""systemd unit, udev rules and the install / update / rollback scripts.

`systemd-analyze verify` checks the unit as systemd itself would load it (Debian package `systemd`); the
update and rollback scripts run for real against a scratch /opt/tablectl with a stand-in systemctl.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SYSTEMD = ROOT / "systemd"
UNIT = SYSTEMD / "tablectl.service"
SCRIPTS = sorted(SYSTEMD.glob("*.sh"))


def parse_unit(text: str) -> dict[str, list[tuple[str, str]]]:
    """Sections -> [(key, value)] in order; keys may repeat (DeviceAllow=), as systemd allows."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], [])
            continue
        assert current is not None, f"directive outside a section: {line}"
        key, sep, value = line.partition("=")
        assert sep, f"not a directive: {line}"
        current.append((key.strip(), value.strip()))
    return sections


@pytest.fixture(scope="module")
def unit() -> dict[str, list[tuple[str, str]]]:
    return parse_unit(UNIT.read_text())


def values(unit: dict[str, list[tuple[str, str]]], section: str, key: str) -> list[str]:
    return [v for k, v in unit[section] if k == key]


def one(unit: dict[str, list[tuple[str, str]]], section: str, key: str) -> str:
    [value] = values(unit, section, key)
    return value


# ---- the unit's directives ----------


def test_notify_type_watchdog_and_restart(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert one(unit, "Service", "Type") == "notify"  # READY=1 from controller/sdnotify.py
    assert int(one(unit, "Service", "WatchdogSec")) > 0
    assert one(unit, "Service", "Restart") == "on-failure"
    # a refused configuration (exit 2 or 3, docs/cli.md) fails the unit at once instead of a restart loop
    assert set(one(unit, "Service", "RestartPreventExitStatus").split()) == {"2", "3"}
    assert one(unit, "Install", "WantedBy") == "multi-user.target"


def test_exec_start_and_safe_state_on_stop(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert one(unit, "Service", "ExecStart") == (
        "/opt/tablectl/.venv/bin/tablectl run --config /etc/tablectl/table.toml"
    )
    post = one(unit, "Service", "ExecStopPost")
    assert post.startswith("-/opt/tablectl/.venv/bin/python -m controller.service.safe_state safe-state")
    assert "--config /etc/tablectl/table.toml" in post


def test_dedicated_user_with_only_dialout_and_gpio(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert one(unit, "Service", "User") == "tablectl"
    assert sorted(one(unit, "Service", "SupplementaryGroups").split()) == ["dialout", "gpio"]
    assert one(unit, "Service", "StateDirectory") == "tablectl"


def test_hardening(unit: dict[str, list[tuple[str, str]]]) -> None:
    service = dict(unit["Service"])
    assert service["NoNewPrivileges"] == "yes"
    assert service["ProtectSystem"] == "strict"
    assert service["ProtectHome"] == "yes"
    assert service["PrivateTmp"] == "yes"
    assert service["CapabilityBoundingSet"] == ""
    # PrivateDevices=yes hides the serial, USB and GPIO devices: DevicePolicy=closed + DeviceAllow instead.
    assert "PrivateDevices" not in service
    # PrivateUsers= would map the dialout/gpio groups away; ProcSubset=pid hides /proc/cpuinfo (Pi detection).
    assert "PrivateUsers" not in service and "ProcSubset" not in service


def test_device_allow_list(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert one(unit, "Service", "DevicePolicy") == "closed"
    allowed = {v.split()[0]: v.split()[1] for v in values(unit, "Service", "DeviceAllow")}
    for device in ("char-ttyUSB", "char-ttyACM", "char-usb_device", "char-gpiochip"):
        assert allowed.get(device) == "rw", device


def test_waits_for_the_broker(unit: dict[str, list[tuple[str, str]]]) -> None:
    assert "mosquitto.service" in one(unit, "Unit", "After").split()
    assert "mosquitto.service" in one(unit, "Unit", "Wants").split()


# ---- systemd-analyze verify ----------

ANALYZE = shutil.which("systemd-analyze")
needs_analyze = pytest.mark.skipif(
    ANALYZE is None,
    reason="systemd-analyze not installed (Debian package 'systemd': apt-get install systemd)",
)


def verify(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    """Verify the unit with its /opt/tablectl/.venv/bin executables replaced by stubs that exist here."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    for name in ("tablectl", "python"):
        stub = bindir / name
        stub.write_text("#!/bin/sh\nexit 0\n")
        stub.chmod(0o755)
    path = tmp_path / "tablectl.service"
    path.write_text(text.replace("/opt/tablectl/.venv/bin/", f"{bindir}/"))
    assert ANALYZE is not None
    env = {**os.environ, "SYSTEMD_LOG_LEVEL": "notice"}
    return subprocess.run(
        [ANALYZE, "verify", str(path)], capture_output=True, text=True, env=env, check=False
    )


@needs_analyze
def test_systemd_analyze_verify_is_clean(tmp_path: Path) -> None:
    result = verify(tmp_path, UNIT.read_text())
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr  # a misspelt value is only a warning: none allowed


@needs_analyze
def test_systemd_analyze_catches_a_broken_unit(tmp_path: Path) -> None:
    """The check above can fail: a bad value is reported."""
    result = verify(tmp_path, UNIT.read_text().replace("Type=notify", "Type=notfy"))
    assert "notfy" in result.stderr


# ---- udev rules ----------

RULE_PAIR = re.compile(r'\s*([A-Za-z_]+(?:\{[^}]+\})?)\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*(?:,|$)')


def parse_rules(text: str) -> list[dict[str, tuple[str, str]]]:
    rules = []
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pos, rule = 0, {}
        while pos < len(line):
            m = RULE_PAIR.match(line, pos)
            assert m, f"cannot parse udev rule at {line[pos:]!r}"
            rule[m.group(1)] = (m.group(2), m.group(3))
            pos = m.end()
        rules.append(rule)
    return rules


def test_udev_rules_give_stable_names_and_groups() -> None:
    rules = parse_rules((SYSTEMD / "99-tablectl.rules").read_text())
    by_link = {r["SYMLINK"][1]: r for r in rules if "SYMLINK" in r}
    assert set(by_link) == {"tablectl-shoe", "tablectl-reader", "tablectl-display"}
    for name, rule in by_link.items():
        assert rule["SYMLINK"][0] == "+=", name
        assert rule["GROUP"] == ("=", "dialout"), name
        ids = {
            k.split("{")[1].rstrip("}"): v[1] for k, v in rule.items() if k.startswith(("ATTRS{", "ATTR{"))
        }
        assert re.fullmatch(r"[0-9a-f]{4}", ids["idVendor"]) and re.fullmatch(
            r"[0-9a-f]{4}", ids["idProduct"]
        )
        assert ids["serial"], name  # the serial keeps identical adapters apart
    assert by_link["tablectl-shoe"]["SUBSYSTEM"] == ("==", "tty")
    assert by_link["tablectl-reader"]["SUBSYSTEM"] == ("==", "usb")
    gpio = [r for r in rules if r.get("SUBSYSTEM") == ("==", "gpio")]
    assert gpio and gpio[0]["GROUP"] == ("=", "gpio")


def test_udev_placeholders_are_marked() -> None:
    text = (SYSTEMD / "99-tablectl.rules").read_text()
    assert "PLACEHOLDER" in text and "udevadm info --attribute-walk" in text


# ---- scripts ----------


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_parse(script: Path) -> None:
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.skipif(
    shutil.which("shellcheck") is None, reason="shellcheck not installed (apt-get install shellcheck)"
)
def test_scripts_are_shellcheck_clean() -> None:
    result = subprocess.run(
        ["shellcheck", "-x", *[p.name for p in SCRIPTS]],
        cwd=SYSTEMD,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_install_script_covers_every_step() -> None:
    # install.sh and the library it sources (the broker's files are kept by lib.sh's apply_broker_config, which
    # the floor's installer shares)
    text = (SYSTEMD / "install.sh").read_text() + (SYSTEMD / "lib.sh").read_text()
    assert "apply_broker_config" in (SYSTEMD / "install.sh").read_text()
    for needle in (
        "python3-venv",
        "mosquitto-clients",
        "usermod --groups dialout,gpio tablectl",
        "make_release",
        "switch_to",
        "controller.broker path acl",  # the wheel's template, never the source tree's (issue 26)
        "controller.broker render",
        "99-tablectl.rules",
        "systemctl enable tablectl.service",
    ):
        assert needle in text, needle


# ---- update and rollback, for real, in a scratch /opt/tablectl ----------


@pytest.fixture
def sandbox(tmp_path: Path) -> dict[str, str]:
    fake_systemctl = tmp_path / "systemctl"
    # is-active fails while the current release is marked BROKEN: a release whose service does not come up.
    fake_systemctl.write_text(
        "#!/bin/sh\n"
        f'echo "$*" >> "{tmp_path}/systemctl.log"\n'
        'if [ "$1" = is-active ] && [ -e "$TABLECTL_ROOT/current/BROKEN" ]; then exit 3; fi\n'
        "exit 0\n"
    )
    fake_systemctl.chmod(0o755)
    return {
        **os.environ,
        "TABLECTL_ROOT": str(tmp_path / "opt"),
        "TABLECTL_ETC": str(tmp_path / "etc"),
        "SYSTEMCTL": str(fake_systemctl),
        "TABLECTL_SKIP_VENV": "1",
        "TABLECTL_ROOT_OK": "1",
        "TABLECTL_KEEP": "3",
    }


def source_tree(tmp_path: Path, version: str, *, broken: bool = False) -> Path:
    src = tmp_path / f"src-{version}"
    (src / "controller").mkdir(parents=True)
    (src / "pyproject.toml").write_text(f'[project]\nname = "x"\nversion = "{version}"\n')
    (src / "VERSION").write_text(version)
    (src / ".venv").mkdir()  # the developer's venv is never copied
    if broken:
        (src / "BROKEN").write_text("")
    return src


def run(script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SYSTEMD / script), *args], env=env, capture_output=True, text=True, check=False
    )


def current_version(env: dict[str, str]) -> str:
    return (Path(env["TABLECTL_ROOT"]) / "current" / "VERSION").read_text()


def test_update_switch_and_rollback(tmp_path: Path, sandbox: dict[str, str]) -> None:
    root = Path(sandbox["TABLECTL_ROOT"])
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "1"))).returncode == 0
    assert current_version(sandbox) == "1"
    assert os.readlink(root / ".venv") == "current/.venv"  # what ExecStart= names
    assert os.readlink(root / "current").startswith("releases/")
    assert not (root / "current" / ".venv").exists()  # copied without the developer's venv
    assert "restart tablectl.service" in (tmp_path / "systemctl.log").read_text()

    assert run("update.sh", sandbox, str(source_tree(tmp_path, "2"))).returncode == 0
    assert current_version(sandbox) == "2"

    listing = run("rollback.sh", sandbox, "--list").stdout.splitlines()
    assert len(listing) == 2 and listing[1].endswith("(current)")

    result = run("rollback.sh", sandbox)
    assert result.returncode == 0, result.stderr
    assert current_version(sandbox) == "1"

    result = run("rollback.sh", sandbox, listing[1].split()[0])  # forward again, by name
    assert result.returncode == 0 and current_version(sandbox) == "2"


def test_failed_update_rolls_back_by_itself(tmp_path: Path, sandbox: dict[str, str]) -> None:
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "1"))).returncode == 0
    result = run("update.sh", sandbox, str(source_tree(tmp_path, "2", broken=True)))
    assert result.returncode != 0
    assert "rolled back" in result.stderr
    assert current_version(sandbox) == "1"


def test_rollback_without_an_older_release_refuses(tmp_path: Path, sandbox: dict[str, str]) -> None:
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "1"))).returncode == 0
    result = run("rollback.sh", sandbox)
    assert result.returncode != 0 and "no release older" in result.stderr
    assert current_version(sandbox) == "1"


def test_old_releases_are_pruned_but_not_current_or_previous(tmp_path: Path, sandbox: dict[str, str]) -> None:
    for v in "12345":
        assert run("update.sh", sandbox, str(source_tree(tmp_path, v))).returncode == 0
    releases = sorted((Path(sandbox["TABLECTL_ROOT"]) / "releases").iterdir())
    assert [(r / "VERSION").read_text() for r in releases] == ["3", "4", "5"]  # TABLECTL_KEEP=3


def test_update_refuses_a_folder_that_is_not_the_source(tmp_path: Path, sandbox: dict[str, str]) -> None:
    result = run("update.sh", sandbox, str(tmp_path))
    assert result.returncode != 0 and "pyproject.toml" in result.stderr


def test_an_update_cut_off_while_building_leaves_no_release(tmp_path: Path, sandbox: dict[str, str]) -> None:
    """pip cannot build the wheel (no index, issue 26): the half-made release is removed, current unchanged."""
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "1"))).returncode == 0
    env = {
        **sandbox,
        "TABLECTL_SKIP_VENV": "0",
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(tmp_path / "none"),
    }
    result = run("update.sh", env, str(source_tree(tmp_path, "2")))
    assert result.returncode != 0
    assert "removed the unfinished release" in result.stderr, result.stderr
    assert len(list((Path(sandbox["TABLECTL_ROOT"]) / "releases").iterdir())) == 1
    assert current_version(sandbox) == "1"


def test_an_incomplete_release_is_marked_never_offered_and_pruned(
    tmp_path: Path, sandbox: dict[str, str]
) -> None:
    """A release whose install was cut off by a power cut (its .incomplete mark left): --list says so, a rollback
    skips it and refuses it by name, the next prune removes it."""
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "1"))).returncode == 0
    releases = Path(sandbox["TABLECTL_ROOT"]) / "releases"
    [first] = [p.name for p in releases.iterdir()]
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "2"))).returncode == 0
    cut = releases / f"{first}-cut"  # sorts between the two: the previous one if it were offered
    cut.mkdir()
    (cut / ".incomplete").write_text("")
    (cut / "VERSION").write_text("cut")
    listing = run("rollback.sh", sandbox, "--list").stdout.splitlines()
    assert listing[1] == f"{cut.name}  (incomplete: an install or update that did not finish; not offered)"
    refused = run("rollback.sh", sandbox, cut.name)
    assert refused.returncode != 0 and "incomplete" in refused.stderr
    assert current_version(sandbox) == "2"
    assert run("rollback.sh", sandbox).returncode == 0 and current_version(sandbox) == "1"
    assert run("update.sh", sandbox, str(source_tree(tmp_path, "3"))).returncode == 0
    assert not cut.exists()  # the prune after the update removed it


def test_keep_is_configurable_and_checked(tmp_path: Path, sandbox: dict[str, str]) -> None:
    for v in "1234":
        assert (
            run("update.sh", {**sandbox, "TABLECTL_KEEP": "2"}, str(source_tree(tmp_path, v))).returncode == 0
        )
    releases = sorted((Path(sandbox["TABLECTL_ROOT"]) / "releases").iterdir())
    assert [(r / "VERSION").read_text() for r in releases] == ["3", "4"]
    bad = run("update.sh", {**sandbox, "TABLECTL_KEEP": "1"}, str(source_tree(tmp_path, "5")))
    assert bad.returncode != 0 and "TABLECTL_KEEP=1" in bad.stderr
