"""The development tooling lives apart from the product (issue 16): the tablebench distribution (bench/)
holds the bench, the demo, the emulators, the fake GPIO board's control socket and the bench's launcher of the
service; the product (controller/, drivers/) never imports it, `tablectl run` has no bench option, and the
tooling's subcommands are there only when tablebench is installed (tests/test_wheel_install.py: the product
wheel alone)."""

from __future__ import annotations

import ast
import asyncio
import subprocess
from pathlib import Path

import pytest

from controller.cli import tablectl as cli
from controller.gpio.base import PinSpec
from controller.gpio.fake import FakeBoard
from tablebench import gpio_server
from tablebench.gpio_server import FakeBoardServer
from tablebench.stack import ROOT, TABLECTL

PRODUCT = ("controller", "drivers", "floor")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_no_product_module_imports_the_tooling() -> None:
    """Every import statement of controller/, drivers/ and floor/, the lazy ones inside functions included."""
    files = [p for package in PRODUCT for p in (ROOT / package).rglob("*.py")]
    assert len(files) > 100  # the walk did find the product
    found = {
        f"{p.relative_to(ROOT)}: {name}"
        for p in files
        for name in _imported(p)
        if name == "tablebench" or name.startswith("tablebench.")
    }
    assert found == set()


def test_no_tooling_is_left_in_the_product_packages() -> None:
    """The tooling's modules, by their old names, are gone from the product (moved to bench/tablebench/)."""
    old = ["controller/bench", "controller/demo.py", "controller/stack.py", "controller/gpio/fake_server.py",
           "controller/table/testing.py", "drivers/emulator", "drivers/display/emulator.py",
           "drivers/display/emulator_cli.py", "drivers/fake_shoe.py", "controller/table/__main__.py"]  # fmt: skip
    assert [p for p in old if (ROOT / p).exists()] == []
    from controller import (
        broker,  # the production broker's accounts and ACL stay; the embedded broker does not
    )

    assert not hasattr(broker, "Broker") and not hasattr(broker, "free_port")
    assert (ROOT / "bench" / "tablebench" / "stack.py").is_file()


def test_the_product_link_has_no_fault_injection() -> None:
    """Losing acks on purpose is the emulated shoe's (tablebench/emulator/line_faults.py LossyAckLink), not a knob of
    the product's link (drivers/link.py) that anything holding the object could turn."""
    from drivers.link import ReliableLink
    from tablebench.emulator.line_faults import LossyAckLink

    assert not hasattr(ReliableLink(name="x"), "ignore_acks")
    assert "ignore_acks" not in (ROOT / "drivers" / "link.py").read_text()
    assert LossyAckLink(name="x").ignore_acks == 0


def test_tablectl_run_has_no_bench_option(tmp_path: Path) -> None:
    run = subprocess.run(
        [*TABLECTL, "run", "--config", str(tmp_path / "t.toml"), "--gpio-control", str(tmp_path / "g.sock")],
        capture_output=True, text=True, cwd=ROOT, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 2 and "unrecognized arguments: --gpio-control" in run.stderr, run.stderr


def test_the_tooling_subcommands_come_from_the_entry_points() -> None:
    """In this (development) install tablebench registers them; `tablectl --help` lists them."""
    assert set(cli.tooling_commands()) >= set(cli.TOOLING)
    assert not set(cli.TOOLING) & set(cli.COMMANDS)  # none of them is the product's


@pytest.mark.parametrize("name", ["bench", "demo", "emulate-shoe", "emulate-display"])
def test_without_the_tooling_its_subcommands_refuse_in_one_line(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As on a product-only install (no tablebench entry points): one line, exit 2, nothing imported."""
    monkeypatch.setattr(cli, "tooling_commands", dict)
    assert cli.main([name, "--help"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.splitlines() == [f"tablectl {name}: the bench is not installed " + (
        "(development tooling: pip install -e ./bench; docs/bench.md)")]  # fmt: skip


# ---- the fake GPIO board's control socket (tablebench/gpio_server.py), opened by tablebench/service.py ----
def _board() -> FakeBoard:
    board = FakeBoard()
    board.setup(
        [PinSpec("lid_lock", 5, output=True, safe_value=True), PinSpec("button_hit", 6, output=False)]
    )
    return board


async def test_the_control_socket_listens_before_the_board_is_set_up_and_drives_it_after(tmp_path: Path):
    """The launcher opens the socket before the service starts: until the service has set up its board the
    socket answers that it is not there yet; then it presses buttons and reads outputs of that board."""
    holder: dict[str, FakeBoard | None] = {"board": None}
    path = str(tmp_path / "gpio.sock")
    server = FakeBoardServer(lambda: holder["board"], path)
    await server.start()
    try:
        early = await gpio_server.call(path, "read", name="lid_lock")
        assert early == {"ok": False, "error": "the service has not set up its GPIO board yet"}
        board = holder["board"] = _board()
        pressed: list[tuple[str, bool]] = []
        board.on_edge("button_hit", lambda n, v: pressed.append((n, v)))
        assert await gpio_server.call(path, "press", name="button_hit") == {"ok": True}
        assert pressed == [("button_hit", True), ("button_hit", False)]
        assert await gpio_server.call(path, "read", name="lid_lock") == {"ok": True, "value": True}
        bad = await gpio_server.call(path, "read", name="no_such_pin")
        assert bad["ok"] is False and "no_such_pin" in bad["error"]
    finally:
        await server.stop()
    assert not Path(path).exists()
    with pytest.raises(OSError):
        await asyncio.wait_for(gpio_server.call(path, "read", name="lid_lock"), 5)


def test_the_control_socket_refuses_a_board_that_is_not_the_fake_one(tmp_path: Path) -> None:
    server = FakeBoardServer(lambda: object(), str(tmp_path / "gpio.sock"))
    reply = server.handle({"op": "read", "name": "lid_lock"})
    assert reply["ok"] is False and 'backend = "fake"' in reply["error"]
