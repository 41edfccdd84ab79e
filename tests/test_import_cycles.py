"""No import circles in controller/, drivers/ and floor/ (issue 17): a module imported from a module it imports only
works by the accident of which one is imported first, and hides which of the two is the lower one. The graph is
built from each module's module-level imports (``import a.b``, ``from a import b``, ``from . import c``, also
inside a module-level ``if``/``try``), read with ast; an import under ``if TYPE_CHECKING:`` is for annotations
only and does not count, nor does an import inside a function."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("controller", "drivers", "floor")


def _modules(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports at module level."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import):
                out.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parent = package[: len(package) - (node.level - 1)]
                    base = ".".join([*parent, *([node.module] if node.module else [])])
                for alias in node.names:  # ``from pkg import sub`` imports the module pkg.sub
                    sub = f"{base}.{alias.name}"
                    out.add(sub if sub in modules else base)
            elif isinstance(node, ast.If):
                if not _type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                visit(node.orelse)
                visit(node.finalbody)
                for handler in node.handlers:
                    visit(handler.body)
            elif isinstance(node, ast.With):
                visit(node.body)

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)).body)
    return {m for m in out if m in modules and m != name}


def import_graph(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, set[str]]:
    modules = _modules(root, packages)
    return {name: _imported(name, path, modules) for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each import circle once, as the path that closes it (strongly connected components, Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(v: str) -> None:  # the graph is a few hundred modules deep at most
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(_path_within(graph, sorted(component)))

    for v in sorted(graph):
        if v not in index:
            connect(v)
    return found


def _path_within(graph: dict[str, set[str]], component: list[str]) -> list[str]:
    """A circle through the component's first module, for the message: a -> b -> ... -> a."""
    start, members = component[0], set(component)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return component


def test_no_import_circle_in_controller_and_drivers() -> None:
    graph = import_graph(ROOT)
    assert len(graph) > 100, "the walk found the packages"
    assert "controller.jackpot.hits" in graph["controller.jackpot.meter"]  # the graph sees real imports
    found = cycles(graph)
    assert found == [], "import circles:\n" + "\n".join(" -> ".join(c) for c in found)


def test_the_table_never_imports_the_floor_nor_a_library_module_the_command_line() -> None:
    """issue 31: the floor (floor/, on the casino's servers) stands on the table's lower layers, never the other
    way; the command line (controller/cli/, floor/cli/) is the top layer: no module below it imports it."""
    graph = import_graph(ROOT)
    assert "controller.rules.profiles" in graph["floor.reports.shift"]  # the graph sees the floor's imports
    floor_users = sorted(
        f"{m} -> {i}"
        for m, imps in graph.items()
        for i in imps
        if not m.startswith("floor") and i.startswith("floor")
    )
    assert floor_users == []
    for cli in ("controller.cli", "floor.cli"):
        below = sorted(
            f"{m} -> {i}"
            for m, imps in graph.items()
            for i in imps
            if (i == cli or i.startswith(cli + ".")) and not (m == cli or m.startswith(cli + "."))
        )
        assert below == [], cli


def test_the_hits_meter_and_engine_settlement_circles_stay_broken() -> None:
    """Each pair now has a lower module: hits below meter, round_state below engine and settlement."""
    graph = import_graph(ROOT)
    assert "controller.jackpot.meter" not in graph["controller.jackpot.hits"]
    assert "controller.rules.engine" not in graph["controller.rules.settlement"]
    assert "controller.rules.round_state" in graph["controller.rules.settlement"]


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def test_a_circle_is_found_and_named(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "controller/__init__.py": "",
            "controller/a.py": "from controller.b import x\n",
            "controller/b.py": "try:\n    from controller import c\nexcept ImportError:\n    pass\n",
            "controller/c.py": "from . import a\n",
            "drivers/__init__.py": "",
        },
    )
    assert cycles(import_graph(root)) == [["controller.a", "controller.b", "controller.c", "controller.a"]]


def test_type_checking_and_function_imports_do_not_count(tmp_path: Path) -> None:
    root = _tree(
        tmp_path,
        {
            "controller/__init__.py": "",
            "controller/a.py": "from controller.b import x\n",
            "controller/b.py": (
                "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from controller.a import y\n"
                "def f():\n    from controller.a import y\n"
            ),
            "drivers/__init__.py": "",
        },
    )
    assert cycles(import_graph(root)) == []
