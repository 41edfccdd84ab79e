"""Expected failures of `tablectl` are one line on stderr (or the service's log), never a traceback, with the
exit code docs/cli.md gives: 2 usage or missing file, 3 configuration unusable on this machine."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tablebench.stack import ROOT, TABLECTL, Stack, StackOptions


def _run(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    # a new session and no stdin: no controlling terminal, as under cron or a pipe
    return subprocess.run(
        [*TABLECTL, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )


def _one_line(run: subprocess.CompletedProcess[str], code: int) -> str:
    both = run.stdout + run.stderr
    assert run.returncode == code, both
    assert "Traceback" not in both, both
    lines = [line for line in both.splitlines() if line.strip()]
    assert len(lines) == 1, both
    return lines[0]


def test_sign_without_a_terminal_says_how_to_give_the_pin(tmp_path):
    run = _run(
        ["sign", "--user", "alice", "--role", "supervisor", "--action", "clear_jam"],
        env={"TABLECTL_KEY_DIR": str(tmp_path), "TABLECTL_PIN": ""},
    )
    line = _one_line(run, 2)
    assert "no terminal" in line and "--pin" in line and "TABLECTL_PIN" in line


def test_demo_workdir_that_is_a_file(tmp_path):
    afile = tmp_path / "not-a-dir"
    afile.write_text("x")
    line = _one_line(_run(["demo", "--workdir", str(afile), "--auto", "1"]), 2)
    assert "not a directory" in line and str(afile) in line
    assert afile.read_text() == "x"


def test_missing_files_are_usage_errors(tmp_path):
    missing = str(tmp_path / "nope.db")
    assert "Traceback" not in _run(["journal", "verify", "--db", missing]).stderr
    assert _run(["journal", "verify", "--db", missing]).returncode == 2
    assert _run(["no-such-command"]).returncode == 2
    manifest = ["--manifest", str(tmp_path / "integrity.json")]
    for action, extra in (("check", []), ("record", manifest), ("verify", manifest)):
        line = _one_line(_run(["config", action, str(tmp_path / "nope.toml"), *extra]), 2)
        assert "nope.toml: no such file" in line, line


@pytest.fixture
def parts(tmp_path):
    """A broker, the emulated shoe and a complete configuration, but no controller."""
    stack = Stack(
        tmp_path / "stack", StackOptions(jackpot=False, config_overrides={"gpio": {"backend": "rpi"}})
    )
    try:
        stack.start_broker()
        stack.start_parts()
        yield stack
    finally:
        stack.stop()


def test_run_without_the_gpio_library_stops_in_one_line(parts):
    """backend "rpi" on a machine without RPi.GPIO (this CI machine): exit 3, the fix named."""
    pytest.importorskip("controller.gpio.rpi")
    try:
        import RPi.GPIO  # noqa: F401

        pytest.skip("RPi.GPIO is installed here")
    except (ImportError, RuntimeError):
        pass
    line = _one_line(_run(["run", "--config", str(parts.config_path)]), 3)
    assert line.startswith("tablectl run: gpio (rpi):") and "backend" in line


def test_run_with_the_shoe_missing_keeps_the_table_safe_and_says_so_in_one_line(tmp_path):
    """The shoe is not plugged in (its configured device does not exist): the service is not stopped by it —
    it runs with the lid locked, logs one line per attempt to open it, and `tablectl status` shows the link
    down (it was a traceback at start-up before)."""
    import json
    import signal
    import time

    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False))
    proc = None
    try:
        stack.start_broker()
        stack.start_parts()
        stack.shoe_proc.kill()
        stack.shoe_proc.wait()
        Path(stack.shoe_device).unlink(missing_ok=True)  # the emulator's symlink: the device is gone
        stack.start_controller()
        proc = stack.controller_proc
        deadline = time.monotonic() + 60
        doc = None
        while time.monotonic() < deadline and proc.poll() is None:
            run = _run(["status", "--config", str(stack.config_path), "--json"])
            if run.returncode == 0:
                doc = json.loads(run.stdout)
                if doc["broker_connected"]:
                    break
            time.sleep(0.1)  # polling interval
        assert doc is not None and doc["broker_connected"], stack.controller_log()
        assert doc["shoe_link_up"] is False and "shoe link down" in doc["text"]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        log = stack.log_path.read_text()
        assert "Traceback" not in log
        assert f"shoe: cannot open {stack.shoe_device}: serial port" in log
    finally:
        stack.stop()


def test_the_bench_launcher_refuses_a_control_socket_on_the_real_board(parts):
    """tablebench/service.py: the fake GPIO board's control socket needs the fake backend (exit 2, one line)."""
    run = subprocess.run(
        [sys.executable, "-m", "tablebench.service", "--config", str(parts.config_path),
         "--gpio-control", str(parts.workdir / "gpio.sock")],
        capture_output=True, text=True, cwd=ROOT, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    line = _one_line(run, 2)
    assert line == 'tablebench.service: --gpio-control needs the fake GPIO backend ([gpio] backend = "fake")'
    assert not (parts.workdir / "gpio.sock").exists()


@pytest.mark.parametrize("option", ["--shoe-port", "--mqtt-host", "--mqtt-port", "--mqtt-username"])
def test_run_has_no_command_line_override_of_the_configuration(tmp_path, option):
    """Issue 16: the shoe port and the broker come from the configuration file only (hashed and pinned by the
    session, docs/security.md); the overrides nothing used are gone, refused as usage errors (exit 2)."""
    config = tmp_path / "table.toml"
    config.write_text("")
    run = _run(["run", "--config", str(config), option, "1"])
    assert run.returncode == 2 and "unrecognized arguments" in run.stderr and "Traceback" not in run.stderr


def test_run_with_a_bad_configuration_says_so_on_stderr(tmp_path):
    config = tmp_path / "table.toml"
    config.write_text("[table]\nid = 7\n")
    run = _run(["run", "--config", str(config)])
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.startswith("tablectl run: bad configuration:") and "Traceback" not in run.stderr


def test_sign_refuses_a_pin_on_the_command_line_and_reads_it_from_a_file(tmp_path):
    """Issue 37: `--pin 123456` would show the PIN to every local account in the process list: refused in one
    line saying why and what to use; `--pin-file` (mode 0600) and `--pin-file -` (standard input) sign."""
    keys = Path(__file__).resolve().parent.parent / "docs" / "examples" / "keys" / "alice.key"
    argv = ["sign", "--user", "alice", "--role", "supervisor", "--key-file", str(keys), "--action", "clear_jam",
            "--args", '{"alert_id": 3}', "--ts", "1767225600", "--nonce", "00" * 16, "--request-id", "r1"]  # fmt: skip
    line = _one_line(_run([*argv, "--pin", "123456"], env={"TABLECTL_PIN": ""}), 2)
    assert "process list" in line and "--pin-file" in line and "123456" not in line
    pin = tmp_path / "pin"
    pin.write_text("123456\n")
    pin.chmod(0o644)
    assert "others may read it" in _one_line(
        _run([*argv, "--pin-file", str(pin)], env={"TABLECTL_PIN": ""}), 1
    )
    pin.chmod(0o600)
    signed = _run([*argv, "--pin-file", str(pin)], env={"TABLECTL_PIN": ""})
    assert signed.returncode == 0 and '"sig"' in signed.stdout, signed.stderr
    piped = subprocess.run([*TABLECTL, *argv, "--pin-file", "-"], input="123456\n", capture_output=True, text=True,
                           timeout=120, env={**os.environ, "TABLECTL_PIN": ""}, cwd=ROOT, check=False)  # fmt: skip
    assert piped.returncode == 0 and piped.stdout == signed.stdout, piped.stderr  # the same signature
