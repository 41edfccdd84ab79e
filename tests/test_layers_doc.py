"""The import contract and its drawing (issue 31: packages import one way, docs/architecture.md draws them from
the code): every module of controller/ and drivers/ is in a layer, each layer says what it is, and the drawing
marks an edge that only a named exception makes."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from controller import layers_doc as ld


def test_every_layer_of_the_contract_says_what_it_is() -> None:
    layers, ignored = ld.read_layers()
    names = [layer.name for layer in layers]
    assert names[0] == "floor" and names[-1] == "drivers", names
    assert all(layer.meaning for layer in layers)
    assert {"controller.table", "controller.journal", "controller.mqtt", "controller.rules"} <= {
        element for layer in layers for element in layer.elements
    }
    assert all(" -> " in rule for rule in ignored)


def test_every_module_is_in_a_layer_and_no_edge_points_up_but_the_named_exceptions() -> None:
    layers, ignored = ld.read_layers()
    order = {element: i for i, layer in enumerate(layers) for element in layer.elements}
    edges = ld.measured_edges(layers, ignored)  # raises ContractError for a module in no layer
    upward = {edge for edge in edges if order[edge[1]] < order[edge[0]]}
    assert all(edges[edge] for edge in upward), sorted(e for e in upward if not edges[e])
    assert ("controller.table", "controller.journal") not in edges  # the journal is passed to the table
    assert ("controller.journal", "controller.mqtt") not in edges  # the re-fetch server is MQTT's


def test_a_layer_without_its_comment_is_refused(tmp_path: Path) -> None:
    text = ld.PYPROJECT.read_text(encoding="utf-8")
    first = next(line for line in text.splitlines() if line.startswith("    # floor: "))
    bad = tmp_path / "pyproject.toml"
    bad.write_text(text.replace(first + "\n", ""), encoding="utf-8")
    with pytest.raises(ld.ContractError, match="comment"):
        ld.read_layers(bad)


def test_the_section_is_redrawn_between_its_markers_and_the_hand_written_text_kept(tmp_path: Path) -> None:
    doc = tmp_path / "architecture.md"
    doc.write_text(
        f"# Architecture\n\nhand-written\n\n{ld.BEGIN}\nold drawing\n{ld.END}\n\n## After\n\nkept\n"
    )
    text = ld.render_doc(doc)
    assert text.startswith("# Architecture\n\nhand-written\n\n" + ld.BEGIN)
    assert "old drawing" not in text and "```mermaid\nflowchart TB\n" in text
    assert text.endswith(ld.END + "\n\n## After\n\nkept\n")
    assert ld.render_doc(doc) == text  # drawn from the contract and the code alone: the same twice


def test_the_floor_contract_covers_every_layer_of_the_product_but_the_floor() -> None:
    """The forbidden contract names whole root packages as its sources (a package's modules are all sources): every
    module of every layer but the floor's lies inside one of them, so none is free to import the floor."""
    contracts = tomllib.loads(ld.PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    floor = next(contract for contract in contracts if contract["id"] == "floor")
    layers, _ = ld.read_layers()
    product = {element for layer in layers for element in layer.elements} - set(floor["forbidden_modules"])
    sources = tuple(floor["source_modules"])
    outside = sorted(m for m in product if not any(m == s or m.startswith(s + ".") for s in sources))
    assert product and not outside, outside
    assert not any(f == s or f.startswith(s + ".") for f in floor["forbidden_modules"] for s in sources)
