"""docs/architecture.md's section on the packages and their one direction, drawn from the import contract
(pyproject.toml ``[tool.importlinter]``, checked by ``lint-imports``) and from the imports measured in the code
(grimp, the graph import-linter checks): the layers, highest first, each with what it is, and every package-level
import edge found. The hand-written parts of the file are kept; only the text between the markers is generated.

A module of controller/ or drivers/ that no layer names is an error here, so the contract stays complete."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"
DOC = ROOT / "docs" / "architecture.md"
BEGIN = "<!-- BEGIN GENERATED: package layers (python -m controller.docs_gen; do not edit by hand) -->"
END = "<!-- END GENERATED: package layers -->"
LAYERS_ID = "layers"
_ITEM = re.compile(r'\s*"')  # a layer's string starts its line (a one-line "..." or a """...""" across lines)
_COMMENT = re.compile(r"\s*# (?P<name>[^:]+): (?P<meaning>.+)\Z")


class ContractError(ValueError):
    """The contract does not describe the code (a module in no layer, a layer without its comment)."""


@dataclass(frozen=True)
class Layer:
    name: str  # the comment's words before the colon: "journal"
    meaning: str  # the comment's words after it
    elements: tuple[str, ...]  # the modules and packages the layer holds
    independent: bool  # "|": its elements may not import each other; ":": they may


@dataclass(frozen=True)
class Unit:
    """One node of the drawing: a package, or the single modules of one layer taken together."""

    key: str  # the mermaid id
    label: str  # in the drawing
    name: str  # in the text: the package, or "<layer> modules"
    layer: int


def _layers_contract(config: dict[str, Any]) -> dict[str, Any]:
    for contract in config["tool"]["importlinter"]["contracts"]:
        if contract.get("id") == LAYERS_ID:
            found: dict[str, Any] = contract
            return found
    raise ContractError(f"pyproject.toml: no import contract with id {LAYERS_ID!r}")


def _comments(text: str) -> list[tuple[str, str]]:
    """The ``# name: meaning`` comment above each string of the layers contract's ``layers = [...]``, in order."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == "layers = [")
    found: list[tuple[str, str]] = []
    pending: tuple[str, str] | None = None
    in_string = False
    for line in lines[start + 1 :]:
        if in_string:
            in_string = '"""' not in line
            continue
        if line.strip() == "]":
            break
        comment = _COMMENT.fullmatch(line)
        if comment:
            pending = (comment["name"].strip(), comment["meaning"].strip())
        elif _ITEM.match(line):
            if pending is None:
                raise ContractError(
                    f"pyproject.toml: layer {line.strip()} has no '# name: meaning' comment above"
                )
            found.append(pending)
            pending = None
            in_string = line.count('"""') == 1
    return found


def read_layers(path: Path = PYPROJECT) -> tuple[list[Layer], list[str]]:
    """The contract's layers, highest first, and its ``ignore_imports`` (the exceptions, each named)."""
    text = path.read_text(encoding="utf-8")
    contract = _layers_contract(tomllib.loads(text))
    comments = _comments(text)
    if len(comments) != len(contract["layers"]):
        raise ContractError("pyproject.toml: each layer needs one '# name: meaning' comment")
    layers = []
    for raw, (name, meaning) in zip(contract["layers"], comments, strict=True):
        independent = ":" not in raw
        elements = tuple(e.strip() for e in re.split(r"[|:]", raw))
        layers.append(Layer(name, meaning, elements, independent))
    return layers, list(contract.get("ignore_imports", []))


def _element_of(module: str, elements: dict[str, int]) -> str | None:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in elements:
            return ".".join(parts[:n])
    return None


def _units(layers: list[Layer]) -> dict[str, Unit]:
    """element -> its node: a package is its own node, the single modules of one layer share one."""
    units: dict[str, Unit] = {}
    for index, layer in enumerate(layers):
        singles = [e for e in layer.elements if not _is_package(e)]
        for element in layer.elements:
            if element in singles and len(singles) > 1:
                names = ", ".join(s.rsplit(".", 1)[-1] for s in singles)
                label, name = f"controller: {names}", f"{layer.name} modules"
                units[element] = Unit(f"L{index + 1}_modules", label, name, index)
            else:
                units[element] = Unit(element.replace(".", "_"), element, element, index)
    return units


def _is_package(module: str) -> bool:
    return (ROOT.joinpath(*module.split(".")) / "__init__.py").is_file()


def measured_edges(layers: list[Layer], ignored: list[str]) -> dict[tuple[str, str], bool]:
    """(importer's element, imported's element) -> True when every import behind it is a named exception.

    The graph is import-linter's own (grimp): every import, at module level or inside a function, but for those
    under ``if TYPE_CHECKING:``. A root package itself (``controller``: its ``__version__``) is in no layer: left out.
    """
    import grimp  # development tooling (requirements/dev.txt), as lint-imports is

    exceptions = {tuple(side.strip() for side in rule.split("->")) for rule in ignored}
    elements = {e: i for i, layer in enumerate(layers) for e in layer.elements}
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    roots = tuple(config["root_packages"])  # the packages import-linter reads, as it reads them
    exclude = bool(config.get("exclude_type_checking_imports", False))
    graph = grimp.build_graph(*roots, exclude_type_checking_imports=exclude, cache_dir=None)
    edges: dict[tuple[str, str], bool] = {}
    for module in sorted(graph.modules):
        if module in roots:
            continue
        source = _element_of(module, elements)
        if source is None:
            raise ContractError(f"{module} is in no layer of the import contract (pyproject.toml)")
        for imported in graph.find_modules_directly_imported_by(module):
            if imported in roots:
                continue
            target = _element_of(imported, elements)
            if target is None or target == source:
                continue
            exception = (module, imported) in exceptions
            edges[source, target] = edges.get((source, target), True) and exception
    return edges


def render_section(layers: list[Layer], ignored: list[str], edges: dict[tuple[str, str], bool]) -> str:
    units = _units(layers)
    out = [
        BEGIN,
        "## Packages and their one direction",
        "",
        "Generated from the import contract (`pyproject.toml`, `[tool.importlinter]`; `lint-imports` checks it in",
        "`scripts/test`) and from the imports measured in the code (grimp, the graph import-linter checks: every",
        "import, inside functions too, but not those under `if TYPE_CHECKING:`). Highest layer first: a module imports",
        "from its own layer and the layers below, never from one above. In a layer written `a | b` the parts do not",
        "import each other; in `a : b` they may.",
        "",
        "| # | layer | modules | what it is |",
        "|---|---|---|---|",
    ]
    for index, layer in enumerate(layers):
        joiner = " \\| " if layer.independent else " : "
        names = joiner.join(f"`{e}`" for e in layer.elements)
        out.append(f"| {index + 1} | {layer.name} | {names} | {layer.meaning} |")
    out += ["", "```mermaid", "flowchart TB"]
    for index, layer in enumerate(layers):
        out.append(f'  subgraph L{index + 1}["{index + 1} {layer.name}"]')
        seen: set[str] = set()
        for element in layer.elements:
            unit = units[element]
            if unit.key not in seen:
                seen.add(unit.key)
                out.append(f'    {unit.key}["{unit.label}"]')
        out.append("  end")
    drawn: dict[tuple[str, str], bool] = {}
    for (source, target), exception in edges.items():
        key = (units[source].key, units[target].key)
        if key[0] != key[1]:
            drawn[key] = drawn.get(key, True) and exception
    order = {unit.key: (unit.layer, unit.key) for unit in units.values()}
    for a, b in sorted(drawn, key=lambda edge: (order[edge[0]], order[edge[1]])):
        out.append(f"  {a} {'-.->' if drawn[a, b] else '-->'} {b}")
    out += [
        "```",
        "",
        "Measured: each node and the nodes it imports (*exception*: only named exceptions make the",
    ]
    out += ["edge; drawn dashed above):", ""]
    labels = {unit.key: unit.name for unit in units.values()}
    for source in sorted({a for a, _ in drawn}, key=order.__getitem__):
        targets = sorted((b for a, b in drawn if a == source), key=order.__getitem__)
        names = ", ".join(f"`{labels[b]}`" + (" *exception*" if drawn[source, b] else "") for b in targets)
        out.append(f"- `{labels[source]}` → {names}")
    if ignored:
        out += ["", "Named exceptions (`ignore_imports`, each explained in pyproject.toml):", ""]
        out += [f"- `{rule}`" for rule in ignored]
    out.append(END)
    return "\n".join(out) + "\n"


def render_doc(path: Path = DOC) -> str:
    """docs/architecture.md with its generated section redrawn (appended when the markers are not there)."""
    layers, ignored = read_layers()
    section = render_section(layers, ignored, measured_edges(layers, ignored))
    text = path.read_text(encoding="utf-8")
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1].lstrip("\n")
        return head + section + ("\n" + tail if tail else "")
    return text.rstrip("\n") + "\n\n" + section
