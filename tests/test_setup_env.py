"""scripts/setup-env is sourced by scripts/demo and scripts/test (issue 16, Install): it must leave the caller's
shell options as they were (no `set -euo pipefail` left behind), put .venv/bin on PATH, and keep the test-only
system tools (shellcheck, systemd-analyze, chromium) out of the demo's set-up."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SETUP = ROOT / "scripts" / "setup-env"


def _bash(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=600, check=False
    )


def test_sourcing_leaves_the_callers_options_alone_and_sets_path() -> None:
    result = _bash(
        f'set +e +u +o pipefail; source {SETUP}; echo "flags=$-"; '
        "shopt -qo pipefail && echo pipefail=on || echo pipefail=off; command -v tablectl; false; echo survived"
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    flags = next(line for line in lines if line.startswith("flags="))
    assert "e" not in flags.removeprefix("flags=") and "u" not in flags.removeprefix("flags="), flags
    assert "pipefail=off" in lines
    assert str(ROOT / ".venv" / "bin" / "tablectl") in lines
    assert lines[-1] == "survived"  # a failing command after the source does not end the caller's shell


def test_a_caller_with_errexit_keeps_it() -> None:
    result = _bash(f'set -e; source {SETUP}; echo "flags=$-"')
    assert result.returncode == 0, result.stderr
    assert "e" in result.stdout.strip().removeprefix("flags=")


def test_the_demo_does_not_ask_for_the_test_only_tools() -> None:
    text = SETUP.read_text()
    gated = text.split('if [ "${SETUP_TEST_TOOLS:-0}" = 1 ]; then', 1)
    assert len(gated) == 2, "the test-only tools are no longer behind SETUP_TEST_TOOLS"
    before, after = gated[0], gated[1].split("\n    fi\n", 1)[0]
    for tool in ("shellcheck", "systemd-analyze", "chromium"):
        assert tool not in before.split("# What the demo needs", 1)[-1], tool
        assert tool in after, tool
    assert "SETUP_TEST_TOOLS" not in (ROOT / "scripts" / "demo").read_text()
    assert "export SETUP_TEST_TOOLS=1" in (ROOT / "scripts" / "test").read_text()
