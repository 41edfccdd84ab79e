"""The product as a Pi gets it (issue 16, Install): a wheel built from this tree, installed in a fresh venv
with the hash-locked dependencies (requirements/pi.txt, as systemd/install.sh does), run from a directory
outside the checkout. ``tablectl replay``, ``config check``, ``jackpot-math`` and ``run`` must find their
schemas and rule profiles in the installed package, never in the source tree.

The floor as its servers get it (issue 31): its own wheel (floor/pyproject.toml) beside the product's, in a venv of
their own with requirements/floor.txt; the product's wheel holds none of the floor, and its ``tablectl floor``
says where the floor's commands are. A floor server gets none of the table's own dependencies (issue 43: the
product's extra ``table``, pyproject.toml): neither the lock nor the wheels' metadata bring them, and no module of
the floor imports them.

After the locked dependencies, each venv installs its wheels offline (``--no-index``) with their dependencies
resolved: the table's as ``[table,pi]``, the floor's plain; a requirement the lock lacks makes that step fail.

Module-scoped builds (about 15 s each: pip's cache holds the locked files)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from controller import __version__
from tablebench.stack import dump_toml, write_demo_credentials

ROOT = Path(__file__).resolve().parent.parent
# What the wheels are built from: the project's own files (the floor's distribution in floor/, beside the
# product's as in a checkout), nothing else of the checkout.
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "controller", "drivers", "floor")

pytestmark = pytest.mark.timeout(300)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False)


def _copy_sources(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in SOURCES:
        src = ROOT / name
        if src.is_dir():
            # symlinks=False: controller/data's links to schemas/ and firmware_configs/ become the files
            shutil.copytree(src, dest / name, symlinks=False, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)


def _pip(venv: Path) -> list[str]:
    """pip acting on ``venv``: the host's (``pip --python``, pip >= 22.3), the venv has none of its own."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]


def _venv(venv: Path, base: Path) -> list[str]:
    """A fresh venv, and the command that installs into it: the host's pip (``pip --python``), which installs
    into it what the venv's own would, hash-checked and byte-compiled. Made without ensurepip's copy of pip (no
    part of what a table or a floor server runs; about 8 s a venv on a loaded machine)."""
    made = _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], base)
    assert made.returncode == 0, made.stderr
    return [*_pip(venv), "install", "-q"]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("wheel")
    src, dist, venv = base / "src", base / "dist", base / "venv"
    src.mkdir()
    _copy_sources(src)
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)], base)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("*.whl")
    pip = _venv(venv, base)
    deps = _run([*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "pi.txt")], base)
    assert deps.returncode == 0, deps.stdout + deps.stderr
    # the table's extras resolved from what the lock installed, nothing fetched: the lock covers them
    proj = _run([*pip, "--no-index", "--find-links", str(dist), f"{wheel}[table,pi]"], base)
    assert proj.returncode == 0, proj.stdout + proj.stderr
    work = base / "work"  # the current directory of every command: nothing of the checkout is near
    work.mkdir()
    return {"wheel": wheel, "venv": venv, "work": work, "src": src}


@pytest.fixture(scope="module")
def floor_installed(installed: dict[str, Path]) -> dict[str, Path]:
    """A floor server's venv: requirements/floor.txt (hash-checked), then the product's and the floor's wheels."""
    base = installed["src"].parent
    dist, venv = base / "floor-dist", base / "floor-venv"
    built = _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), "./floor"],
        installed["src"],
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = dist.glob("*.whl")
    pip = _venv(venv, base)
    deps = _run([*pip, "--require-hashes", "-r", str(ROOT / "requirements" / "floor.txt")], base)
    assert deps.returncode == 0, deps.stdout + deps.stderr
    # the floor's wheel with its requirements resolved offline: the product's wheel (its base, no extra) from the
    # local build, the rest from what the lock installed; a requirement of the table's would fail here
    found = ["--no-index", "--find-links", str(dist), "--find-links", str(installed["wheel"].parent)]
    proj = _run([*pip, *found, str(wheel)], base)
    assert proj.returncode == 0, proj.stdout + proj.stderr
    return {"wheel": wheel, "venv": venv, "work": installed["work"]}


# The table's own dependencies (pyproject.toml, extra `table`): distributions and the modules they bring.
TABLE_EXTRA = {
    "pyserial": "serial",
    "pyserial-asyncio-fast": "serial_asyncio_fast",
    "pyusb": "usb",
    "transitions": "transitions",
    "textual": "textual",
}


def _env(installed: dict[str, Path]) -> dict[str, str]:
    """The caller's environment without what would point the installed tablectl back at the checkout."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _tablectl(installed: dict[str, Path], *args: str) -> subprocess.CompletedProcess[str]:
    return _run([str(installed["venv"] / "bin" / "tablectl"), *args], installed["work"], _env(installed))


def test_the_wheel_holds_the_schemas_and_profiles(installed: dict[str, Path]) -> None:
    names = set(zipfile.ZipFile(installed["wheel"]).namelist())
    for path in [
        *(ROOT / "schemas").rglob("*.schema.json"),
        *(ROOT / "firmware_configs" / "profiles").glob("*.toml"),
    ]:
        rel = path.relative_to(ROOT).as_posix().replace("firmware_configs/", "")
        assert f"controller/data/{rel}" in names, rel
    assert not any(n.startswith(("tests/", "hil_tests/")) for n in names)


# What a Pi must not get (issue 16): the development tooling, by its home and by its old names in the product.
TOOLING_IN_WHEEL = re.compile(
    r"^(tablebench|bench)/|^controller/(bench/|demo\.py|stack\.py|table/testing\.py|gpio/fake_server\.py)"
    r"|^drivers/(emulator/|display/emulator|fake_shoe\.py)|emulator|fake_server"
)


def test_the_wheel_holds_no_development_tooling(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    modules = [n for n in names if n.endswith(".py")]
    assert (
        "controller/service/table_service.py" in modules and "drivers/shoe.py" in modules
    )  # the list is the product's
    assert [n for n in names if TOOLING_IN_WHEEL.search(n)] == []
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(installed["wheel"]).read(entry_points).decode()
    assert "tablectl.commands" not in text and "tablectl = controller.cli:main" in text, text


def test_the_product_wheel_holds_no_floor(installed: dict[str, Path]) -> None:
    wheel = zipfile.ZipFile(installed["wheel"])
    names = wheel.namelist()
    assert "controller/cli/tablectl.py" in names  # the list is the product's
    assert [n for n in names if n.startswith("floor/") or "/floor/" in n] == []
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert not re.search(r"psycopg|aiohttp|extra == .floor", metadata), metadata


def test_the_floor_wheel_holds_its_modules_migrations_and_static_files(
    floor_installed: dict[str, Path],
) -> None:
    wheel = zipfile.ZipFile(floor_installed["wheel"])
    names = set(wheel.namelist())
    floor = ROOT / "floor"
    kept = [
        *floor.rglob("*.py"),
        *(floor / "migrations").glob("*.sql"),
        *(path for path in (floor / "web" / "static").iterdir() if path.is_file()),
    ]
    assert (
        len([p for p in kept if p.suffix == ".sql"]) >= 5
        and (floor / "web" / "static" / "index.html") in kept
    )
    missing = [p for p in kept if f"floor/{p.relative_to(floor).as_posix()}" not in names]
    assert missing == [], missing
    # the floor only: neither the product, nor the project's own files, nor a build's leftovers
    assert [n for n in names if not n.startswith(("floor/", "blackjack_table_floor-"))] == []
    assert not any(n.endswith(("pyproject.toml", "setup.cfg")) or "/build/" in n for n in names)
    metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    requires = [
        line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")
    ]
    assert "blackjack-table-controller" in requires, requires


def test_the_installed_tablectl_says_the_floor_is_not_installed(installed: dict[str, Path]) -> None:
    for args in (
        ["floor"],
        ["floor", "--help"],
        ["floor", "migrate", "--dsn", "postgresql://x@127.0.0.1/floor"],
    ):
        result = _tablectl(installed, *args)
        assert result.returncode == 2 and result.stdout == "", result
        assert result.stderr.splitlines() == [
            "tablectl floor: the floor is not installed here (its commands come with the floor's own distribution, "
            "blackjack-table-floor, on the floor's servers: docs/floor.md)"
        ], result.stderr


def test_the_installed_floor_runs_its_commands_from_its_own_package(floor_installed: dict[str, Path]) -> None:
    tablectl = str(floor_installed["venv"] / "bin" / "tablectl")
    listed = _run([tablectl, "floor", "--help"], floor_installed["work"], _env(floor_installed))
    assert listed.returncode == 0 and re.search(r"^\s+migrate\s", listed.stdout, re.M), listed
    web = _run([tablectl, "floor", "web", "--help"], floor_installed["work"], _env(floor_installed))
    assert web.returncode == 0 and "--listen" in web.stdout, web  # the dashboard's module imports (aiohttp)
    py = str(floor_installed["venv"] / "bin" / "python")
    code = (
        "import floor.archive.store as s, floor.web.app as w; "
        "print(s.MIGRATIONS_DIR); print(len(s.migrations())); "
        "print(w.STATIC); print((w.STATIC / 'index.html').is_file())"
    )
    found = _run([py, "-c", code], floor_installed["work"], _env(floor_installed))
    assert found.returncode == 0, found.stderr
    migrations_dir, count, static, index = found.stdout.split()
    assert Path(migrations_dir).is_relative_to(floor_installed["venv"]), found.stdout
    assert int(count) == len(list((ROOT / "floor" / "migrations").glob("*.sql"))), found.stdout
    assert Path(static).is_relative_to(floor_installed["venv"]) and index == "True", found.stdout


def test_the_floor_server_gets_none_of_the_tables_dependencies(floor_installed: dict[str, Path]) -> None:
    py = str(floor_installed["venv"] / "bin" / "python")
    listed = _run(
        [*_pip(floor_installed["venv"]), "list", "--format=json"],
        floor_installed["work"],
        _env(floor_installed),
    )
    assert listed.returncode == 0, listed.stderr
    names = {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}
    assert {"blackjack-table-controller", "blackjack-table-floor", "psycopg", "aiohttp"} <= names, names
    assert names & {*TABLE_EXTRA, "rich"} == set(), names  # rich: textual's
    checked = _run([*_pip(floor_installed["venv"]), "check"], floor_installed["work"], _env(floor_installed))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # every module of the floor imports there, and none of them imports a module of the table's extra
    code = (
        "import importlib, pkgutil, sys, floor\n"
        "failed = []\n"
        "for m in pkgutil.walk_packages(floor.__path__, 'floor.'):\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except Exception as exc:\n"
        "        failed.append(f'{m.name}: {exc!r}')\n"
        "print('\\n'.join(failed) or 'ok')\n"
        f"print(sorted(n for n in sys.modules if n.split('.')[0] in {sorted(TABLE_EXTRA.values())!r}))\n"
        "print(len([n for n in sys.modules if n.startswith('floor.')]))\n"
    )
    imported = _run([py, "-c", code], floor_installed["work"], _env(floor_installed))
    assert imported.returncode == 0, imported.stderr
    failed, table_modules, count = imported.stdout.strip().rsplit("\n", 2)
    assert (failed, table_modules) == ("ok", "[]") and int(count) > 40, imported.stdout
    # `tablectl floor` lists its commands; the table's own commands say in one line what is missing
    tablectl = str(floor_installed["venv"] / "bin" / "tablectl")
    for args in (["floor", "--help"], ["floor", "archive", "--help"], ["floor", "web", "--help"]):
        ran = _run([tablectl, *args], floor_installed["work"], _env(floor_installed))
        assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran
    for name, missing in (("run", "transitions"), ("terminal", "textual"), ("alerts", "textual")):
        ran = _run([tablectl, name, "--config", "table.toml"], floor_installed["work"], _env(floor_installed))
        assert ran.returncode == 2 and ran.stdout == "", ran
        assert ran.stderr.splitlines() == [
            f"tablectl {name}: needs the table's own dependencies, not installed here ({missing} is missing): a "
            "table installs the product with its extra `table`, pip install 'blackjack-table-controller[table]' "
            "(on a table's computer systemd/install.sh installs them from requirements/pi.txt: docs/deploy.md)"
        ], ran.stderr


def test_the_table_gets_its_own_dependencies(installed: dict[str, Path]) -> None:
    listed = _run([*_pip(installed["venv"]), "list", "--format=json"], installed["work"], _env(installed))
    assert listed.returncode == 0, listed.stderr
    names = {d["name"].lower().replace("_", "-") for d in json.loads(listed.stdout)}
    assert set(TABLE_EXTRA) <= names and not names & {"psycopg", "aiohttp", "blackjack-table-floor"}, names
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"][
        "table"
    ]
    assert {re.split(r"[<>=!~;\[ ]", spec, maxsplit=1)[0].lower() for spec in declared} == set(TABLE_EXTRA)


@pytest.mark.parametrize("name", ["bench", "demo", "emulate-shoe", "emulate-display"])
def test_the_installed_tablectl_says_the_bench_is_not_installed(
    installed: dict[str, Path], name: str
) -> None:
    result = _tablectl(installed, name, "--help")
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr.splitlines() == [
        f"tablectl {name}: the bench is not installed (development tooling: pip install -e ./bench; docs/bench.md)"
    ], result.stderr
    listed = _tablectl(installed, "--help")
    assert listed.returncode == 0 and "run the table controller service" in listed.stdout
    assert not re.search(rf"^\s+{name}\s", listed.stdout, re.M), listed.stdout


def test_the_installed_package_is_not_the_checkout(installed: dict[str, Path]) -> None:
    where = _tablectl(installed, "--version")
    assert where.returncode == 0 and where.stdout.strip() == f"tablectl {__version__}", where
    py = installed["venv"] / "bin" / "python"
    found = _run(
        [str(py), "-c", "import controller; print(controller.__file__)"], installed["work"], _env(installed)
    )
    assert Path(found.stdout.strip()).is_relative_to(installed["venv"]), found


def test_replay_reads_the_round_schema_and_profile_from_the_package(installed: dict[str, Path]) -> None:
    round_file = installed["work"] / "round.json"
    shutil.copy(ROOT / "docs" / "examples" / "rounds" / "pt-2001-double-blackjack-r19.json", round_file)
    result = _tablectl(installed, "replay", "--json", round_file.name)
    assert result.returncode in (0, 1), result.stderr  # 1: the round has dealer errors (reported, no crash)
    report = json.loads(result.stdout)
    assert report["profile"] == "pt-2001" and "settlement" in report, report
    assert "Traceback" not in result.stderr


def test_jackpot_math_reads_the_profile_from_the_package(installed: dict[str, Path]) -> None:
    result = _tablectl(installed, "jackpot-math", "--profile", "mo-2004", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["decks"] == 6  # MO-2004's profile: decks = 6


def _config(installed: dict[str, Path], name: str = "table.toml", profile: str = "pt-2001") -> Path:
    """The demo configuration with every file it names in the temp directory, and a shoe that is not there."""
    work = installed["work"]
    cfg = tomllib.loads((ROOT / "firmware_configs" / "demo.toml").read_text())
    cfg["table"]["state_dir"] = str(work / "state")
    cfg["table"]["profile"] = profile
    cfg["shoe"]["port"] = str(work / "no-shoe")
    cfg["display"]["enabled"] = False
    cfg["jackpot"]["enabled"] = False
    creds, _keys = write_demo_credentials(work)
    cfg["supervisors"]["credentials_file"] = str(creds)
    path = work / name
    path.write_text(dump_toml(cfg))
    return path


def test_config_check_and_run_load_schemas_and_profile_from_the_package(installed: dict[str, Path]) -> None:
    path = _config(installed)
    check = _tablectl(installed, "config", "check", path.name)
    assert check.returncode == 0, check.stdout + check.stderr
    record = _tablectl(installed, "config", "record", path.name, "--manifest", "integrity.json")
    assert record.returncode == 0, record.stdout + record.stderr
    profile_line = next(line for line in check.stdout.splitlines() if " profile " in line)
    profile_path = Path(profile_line.split()[-1])
    assert profile_path.is_relative_to(installed["venv"]) and profile_path.name == "pt-2001.toml", (
        check.stdout
    )

    bad = _config(installed, "bad.toml", profile="no-such-book")  # proves the lookup can fail
    refused = _tablectl(installed, "config", "check", bad.name)
    assert refused.returncode != 0 and "no-such-book" in refused.stdout + refused.stderr, refused

    # config, schemas, profile and integrity manifest loaded, journal opened; the shoe is missing, so the
    # service keeps the lid locked and retries (docs/cli.md) and reports itself in status.json; SIGTERM ends it.
    status = installed["work"] / "state" / "status.json"
    proc = subprocess.Popen(
        [str(installed["venv"] / "bin" / "tablectl"), "run", "--config", path.name],
        cwd=installed["work"],
        env=_env(installed),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not status.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)  # polling for a condition, bounded by the deadline
        assert status.exists(), "the installed service never wrote its status"
    finally:
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    assert "Traceback" not in out, out
    assert (installed["work"] / "state" / "journal.db").exists()
