"""A floor server has none of the table's own dependencies (issue 43; pyproject.toml, extra ``table``): every module
of the floor imports with them hidden, and the table's commands that need them say in one line what to install.

Run from this tree, in a fresh interpreter in which importing a module of the extra fails as it does where it is
not installed; tests/test_wheel_install.py proves the same on a venv built from the wheels."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TABLE_MODULES = ("serial", "serial_asyncio_fast", "usb", "transitions", "textual")

# Installed before anything else is imported: a module of the table's extra is "not installed".
HIDE = textwrap.dedent(
    f"""
    import sys

    class Hidden:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in {TABLE_MODULES!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Hidden())
    """
)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    return subprocess.run(
        [sys.executable, "-c", HIDE + textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_table_extra_is_what_is_hidden() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["table"]
    assert len(extra) == len(TABLE_MODULES) == 5, extra  # one module per distribution of the extra


def test_every_floor_module_imports_without_the_tables_dependencies() -> None:
    result = _python(
        """
        import importlib, pkgutil, floor
        failed, count = [], 0
        for m in pkgutil.walk_packages(floor.__path__, "floor."):
            count += 1
            try:
                importlib.import_module(m.name)
            except ImportError as exc:
                failed.append(f"{m.name}: {exc}")
        print(count)
        print("\\n".join(failed))
        """
    )
    assert result.returncode == 0, result.stderr
    count, *failed = result.stdout.strip().splitlines()
    assert int(count) > 40 and failed == [], result.stdout


def test_the_check_sees_a_table_import() -> None:
    """The hiding works: a module of the table's that needs the extra does not import."""
    result = _python("import controller.table.machine")
    assert result.returncode == 1 and "No module named 'transitions'" in result.stderr, result


def test_a_table_command_says_what_to_install() -> None:
    result = _python(
        """
        import sys
        from controller.cli.tablectl import main
        sys.exit(main(["run", "--config", "table.toml"]))
        """
    )
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.splitlines() == [
        "tablectl run: needs the table's own dependencies, not installed here (transitions is missing): a table "
        "installs the product with its extra `table`, pip install 'blackjack-table-controller[table]' (on a "
        "table's computer systemd/install.sh installs them from requirements/pi.txt: docs/deploy.md)"
    ], result.stderr
    listed = _python(
        """
        import sys
        from controller.cli.tablectl import main
        sys.exit(main(["floor", "--help"]))
        """
    )
    assert listed.returncode == 0 and "archive" in listed.stdout, listed
