"""The floor takes the table's product only through its public names (issue 43): no module of floor/ imports a
name with a leading underscore from controller/ or drivers/ (``from controller.ops.status import _esc`` was one),
nor reaches one through a module it imported (``status._esc``). A private name may change with no notice; what
the floor needs is made public where it lives."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("controller", "drivers")


def _private_uses(path: Path, root: Path = ROOT) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    product_aliases: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.ImportFrom)
            and (node.module or "").split(".")[0] in PRODUCT
            and not node.level
        ):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.module}.{alias.name}")
                product_aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PRODUCT:
                    product_aliases.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in product_aliases
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_the_floor_imports_no_private_name_of_the_product() -> None:
    uses = [use for path in sorted((ROOT / "floor").rglob("*.py")) for use in _private_uses(path)]
    assert uses == []


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    """The check can fail: both ways of reaching a private name are seen."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from controller.ops import status\nfrom controller.ops.status import _esc\n\nstatus._num(1)\n",
        encoding="utf-8",
    )
    assert [u.split(" ")[1] for u in _private_uses(probe, tmp_path)] == [
        "controller.ops.status._esc",
        "status._num",
    ]
