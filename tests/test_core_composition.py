"""The table core is composed, not mixed in (issue 31): no file of controller/table/ defines a class that a class
of another of its files extends (the core holds one object per concern and passes collaborators explicitly), and
the core's dispatch tables name their handlers, never build a name from a string (``getattr(self, "_on_" + x)``).
Read with ast from the source, so a mixin coming back fails here, not in a review."""

from __future__ import annotations

import ast
from pathlib import Path

TABLE = Path(__file__).resolve().parent.parent / "controller" / "table"


def _trees() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(TABLE.glob("*.py"))}


def _base_name(base: ast.expr) -> str | None:
    if isinstance(base, ast.Name):
        return base.id
    if isinstance(base, ast.Attribute):
        return base.attr
    return None


def cross_file_extensions(trees: dict[str, ast.Module]) -> list[str]:
    defined = {n.name: f for f, t in trees.items() for n in t.body if isinstance(n, ast.ClassDef)}
    found = []
    for f, tree in trees.items():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for base in map(_base_name, node.bases):
                    if base in defined and defined[base] != f:
                        found.append(f"{f}: {node.name} extends {base} ({defined[base]})")
    return found


def test_no_class_of_the_table_extends_one_from_another_of_its_files() -> None:
    trees = _trees()
    assert len(trees) > 20  # the walk found the package
    assert cross_file_extensions(trees) == []


def test_the_check_finds_a_mixin() -> None:
    """The check above can fail: a class extending one defined in a sibling file is named."""
    trees = {
        "base.py": ast.parse("class CoreBase:\n    pass\n"),
        "cards.py": ast.parse(
            "from controller.table import base\nclass CardFlow(base.CoreBase):\n    pass\n"
        ),
    }
    assert cross_file_extensions(trees) == ["cards.py: CardFlow extends CoreBase (base.py)"]


def _built_names(trees: dict[str, ast.Module]) -> list[str]:
    computed = []
    for f, tree in trees.items():
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], (ast.BinOp, ast.JoinedStr))  # "_on_" + name, f"_sv_{action}"
            ):
                computed.append(f"{f}:{node.lineno}")
    return computed


def test_no_handler_name_is_built_from_a_string() -> None:
    """getattr with a name put together from strings is how the mixins dispatched (``_on_`` + the event's class
    name); the core's dispatch tables (dispatch.py, core.py) map types and names to handlers explicitly. (A
    getattr over a dataclass's own field names, to serialise it, is not dispatch.)"""
    assert _built_names(_trees()) == []
    mixin = ast.parse(
        "class C:\n    def apply(self, e):\n        getattr(self, '_on_' + type(e).__name__)(e)\n"
    )
    assert _built_names({"core.py": mixin}) == ["core.py:3"]  # the check can fail
