"""Every command line the product prints for a person to paste works as pasted into a fresh shell (issue 26):
a login shell's environment without the project's venv on PATH, in another folder. The demo's floor-console line
used to say ``tablectl alerts ...`` and got ``tablectl: command not found``."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import time
from pathlib import Path

from controller.paste import command
from tablebench.demo_terminal import floor_console_line
from tablebench.stack import Stack, StackOptions

FRESH_PATH = "/usr/local/bin:/usr/bin:/bin"


def fresh_shell(line: str, home: Path, **kw: object) -> subprocess.Popen[bytes]:
    env = {"HOME": str(home), "PATH": FRESH_PATH, "TERM": "xterm-256color", "LANG": "C.UTF-8"}
    return subprocess.Popen(["bash", "--norc", "--noprofile", "-c", line], env=env, cwd=home, **kw)  # type: ignore[call-overload]


def test_a_printed_tablectl_command_runs_in_a_fresh_shell(tmp_path: Path) -> None:
    proc = fresh_shell(command("--version"), tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0 and re.match(rb"tablectl \d", out), out
    # the table's start-up refusal names the command to record the manifest with, runnable as printed
    from controller.service.integrity import manifest_problems

    class Cfg:  # only what manifest_problems reads
        path = tmp_path / "table with space.toml"

        class table:
            integrity_manifest = str(tmp_path / "none.json")

    (problem,) = manifest_problems(Cfg)  # type: ignore[arg-type]
    assert command("config", "record", Cfg.path, "--manifest", Cfg.table.integrity_manifest) in problem


def test_the_demos_floor_console_line_attaches_the_console_in_a_fresh_shell(tmp_path: Path) -> None:
    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False)).start()
    try:
        line = floor_console_line(stack)
        assert "PASSWORD" not in line and stack.users["supervisor2"] not in line  # not in the process list
        main, sub = pty.openpty()
        os.set_blocking(main, False)
        proc = fresh_shell(line, tmp_path, stdin=sub, stdout=sub, stderr=sub)
        os.close(sub)
        seen = b""
        deadline = time.monotonic() + 60
        try:
            while b"open alert" not in seen:  # the banner once connected: "... 1 table · 0 open alerts"
                assert proc.poll() is None, seen.decode(errors="replace")[-2000:]
                assert time.monotonic() < deadline, seen.decode(errors="replace")[-2000:]
                if select.select([main], [], [], 0.2)[0]:
                    try:
                        seen += os.read(main, 65536)
                    except OSError:
                        break
            os.write(main, b"q")
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(main)
        assert b"command not found" not in seen and b"UNREACHABLE" not in seen
        assert proc.returncode == 0
    finally:
        stack.stop()
