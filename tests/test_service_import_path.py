"""What runs on the Pi is separate from development tooling (issue 16, Install): importing the service, or
starting `tablectl run` far enough to parse its options, loads none of the bench, demo, emulators, the fake
GPIO server or the test harness. Checked in a fresh interpreter, where sys.modules shows what was imported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Development tooling: the tablebench distribution (bench/: the HIL bench, the demo stack, the emulated shoe and
# display, the fake shoe of the unit tests, the fake GPIO board's control socket, the table test harness) and
# the test tools.
TOOLING = ("tablebench", "pytest", "hypothesis")

PROBES = {
    "import controller.service.table_service": "import controller.service.table_service",
    "tablectl run --help": (
        "import contextlib, io\n"
        "from controller.cli import main\n"
        "with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['run', '--help'])"
    ),
}


@pytest.mark.parametrize("probe", list(PROBES), ids=list(PROBES))
def test_the_service_imports_no_development_tooling(probe: str, tmp_path: Path) -> None:
    code = PROBES[probe] + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.splitlines()[-1])
    assert "controller.service.table_service" in loaded  # the probe did load the service
    leaked = [m for m in loaded if any(m == t or m.startswith(t + ".") for t in TOOLING)]
    assert leaked == [], f"the service pulled in development tooling: {leaked}"
