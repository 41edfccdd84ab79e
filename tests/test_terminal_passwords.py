"""The terminals' broker passwords never on the command line (issue 16; docs/terminal.md): a file only its owner
reads, the environment, or a prompt. A password given as an option would be in the process list for every
local account (/proc/<pid>/cmdline)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from controller.terminal.broker_password import PasswordError, broker_password

TABLECTL = [sys.executable, "-m", "controller.cli"]


@pytest.mark.parametrize(
    "argv",
    [
        ["terminal", "--site", "s", "--table", "t", "--password", "hunter2"],
        ["terminal", "--site", "s", "--table", "t", "--supervisor-password", "hunter2"],
        ["alerts", "--password", "hunter2"],
    ],
)
def test_a_password_on_the_command_line_is_refused(argv: list[str]) -> None:
    run = subprocess.run(
        [*TABLECTL, *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert run.returncode == 2 and "unrecognized arguments" in run.stderr and "Traceback" not in run.stderr


def test_without_a_password_the_terminals_say_how_to_give_one_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if "MQTT_PASSWORD" not in k}
    for argv in (["terminal", "--site", "s", "--table", "t"], ["alerts"]):
        run = subprocess.run(
            [*TABLECTL, *argv], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL, env=env
        )
        assert run.returncode == 2 and run.stdout == "", run.stdout
        [line] = run.stderr.splitlines()
        assert "--password-file FILE, $TABLECTL_MQTT_PASSWORD, or type it at a terminal" in line


def test_the_password_file_must_be_the_owners_alone(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("TABLECTL_MQTT_PASSWORD", raising=False)
    f = tmp_path / "dealer.pw"
    f.write_text("s3cret\nignored\n")
    f.chmod(0o600)
    assert broker_password(str(f), "TABLECTL_MQTT_PASSWORD", "x", interactive=False) == "s3cret"
    f.chmod(0o640)
    with pytest.raises(PasswordError, match="readable by others: chmod 600"):
        broker_password(str(f), "TABLECTL_MQTT_PASSWORD", "x", interactive=False)
    f.write_text("\n")
    f.chmod(0o600)
    with pytest.raises(PasswordError, match="is empty"):
        broker_password(str(f), "TABLECTL_MQTT_PASSWORD", "x", interactive=False)
    with pytest.raises(PasswordError, match="cannot read"):
        broker_password(str(tmp_path / "none"), "TABLECTL_MQTT_PASSWORD", "x", interactive=False)
    monkeypatch.setenv("TABLECTL_MQTT_PASSWORD", "from-env")
    assert broker_password(None, "TABLECTL_MQTT_PASSWORD", "x", interactive=False) == "from-env"
