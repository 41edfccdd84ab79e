"""docs/architecture.md walks one card and one supervisor command through the code, function by function
(issue 43). Every module and name the two walks give must exist: read with ``ast`` (nothing is imported), so a
renamed or moved function fails here until the walk follows it.

A reference is a backticked path followed by one or more backticked names (`` `drivers/link.py`
`ReliableLink.feed` ``, `` `drivers/serial_port.py` `resolve_port` and `open_serial` ``): the name is a function,
class or assignment at the module's top level, or ``Class.member`` (a method, property or class attribute). A
backticked ``Class.member`` without a path must be defined in one of the modules the walks name."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
WALKS = (
    "## One card, from the shoe's bytes to MQTT",
    "## One supervisor command, from MQTT to its answer",
)

_NAME = r"_?[A-Za-z]\w*(?:\.\w+)?"
# a module of the repository, then the names it defines: `a`, `b` and `c` (after "→" a name is another module's)
PATH_REF = re.compile(
    rf"`((?:bench|controller|drivers|floor)/[\w/]+\.py)`((?:\s+`{_NAME}`)(?:(?:,|\s+and)\s+`{_NAME}`)*)"
)
NAME_IN_CHAIN = re.compile(rf"`({_NAME})`")
ANY_PATH = re.compile(r"`((?:bench|controller|drivers|floor)/[\w/]+\.py)`")
CLASS_MEMBER = re.compile(r"`(_?[A-Z]\w*\.\w+)`")  # a bare `Class.member`
STEP = re.compile(r"^(\d+)\. ", re.MULTILINE)


@dataclass(frozen=True)
class Ref:
    walk: str
    path: str
    name: str  # "" for a path named alone


def section(text: str, heading: str) -> str:
    """The text under ``heading`` up to the next ``## `` heading."""
    start = text.index(heading + "\n")
    rest = text[start + len(heading) + 1 :]
    end = rest.find("\n## ")
    return rest if end < 0 else rest[:end]


def steps(body: str) -> list[str]:
    """The numbered steps of a walk, each with its continuation lines."""
    marks = list(STEP.finditer(body))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(body)
        chunk = body[m.start() : end]
        out.append(chunk.split("\n\n", 1)[0])  # a paragraph after the last step is not part of it
    return out


def refs(walk: str, body: str) -> tuple[list[Ref], list[str]]:
    """The (path, name) references of a walk and its bare ``Class.member`` names."""
    text = " ".join(line.strip() for line in body.splitlines())  # a reference may wrap
    found: list[Ref] = []
    taken: list[tuple[int, int]] = []
    for m in PATH_REF.finditer(text):
        taken.append(m.span())
        for name in NAME_IN_CHAIN.findall(m.group(2)):
            found.append(Ref(walk, m.group(1), name))
    for m in ANY_PATH.finditer(text):
        found.append(Ref(walk, m.group(1), ""))
    bare = [
        m.group(1)
        for m in CLASS_MEMBER.finditer(text)
        if not any(a <= m.start() < b for a, b in taken)  # a name after its path is checked there
    ]
    return found, bare


@cache
def definitions(path: str) -> frozenset[str]:
    """What a module defines: its top-level names and ``Class.member`` of each top-level class."""
    tree = ast.parse((ROOT / path).read_text(encoding="utf-8"), filename=path)
    names: set[str] = set()

    def targets(node: ast.stmt) -> list[str]:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return [node.name]
        if isinstance(node, ast.Assign):
            return [t.id for t in node.targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        return []

    for node in tree.body:
        names.update(targets(node))
        if isinstance(node, ast.ClassDef):
            for member in node.body:
                names.update(f"{node.name}.{n}" for n in targets(member))
    return frozenset(names)


def problems(found: list[Ref], bare: list[str]) -> list[str]:
    """Every reference that the code does not define, named with its walk."""
    out = []
    missing = sorted({(r.walk, r.path) for r in found if not (ROOT / r.path).is_file()})
    out += [f"{walk}: {path} does not exist" for walk, path in missing]
    for r in found:
        if r.name and (ROOT / r.path).is_file() and r.name not in definitions(r.path):
            out.append(f"{r.walk}: {r.path} defines no {r.name}")
    existing = sorted({r.path for r in found if (ROOT / r.path).is_file()})
    for name in bare:
        if not any(name in definitions(p) for p in existing):
            out.append(f"`{name}` is defined in none of the modules the walks name")
    return out


def the_walks() -> tuple[dict[str, list[str]], list[Ref], list[str]]:
    text = DOC.read_text(encoding="utf-8")
    all_steps: dict[str, list[str]] = {}
    found: list[Ref] = []
    bare: list[str] = []
    for heading in WALKS:
        body = section(text, heading)
        walk = heading.removeprefix("## ")
        all_steps[walk] = steps(body)
        f, b = refs(walk, body)
        found += f
        bare += b
    return all_steps, found, bare


def test_each_walk_is_numbered_one_step_after_another() -> None:
    all_steps, _, _ = the_walks()
    card, command = all_steps.values()
    assert 20 <= len(card) <= 40, len(card)
    assert 15 <= len(command) <= 30, len(command)
    for walk, numbered in all_steps.items():
        numbers = [int(s.split(".", 1)[0]) for s in numbered]  # each begins "N. " (STEP)
        assert numbers == list(range(1, len(numbers) + 1)), (walk, numbers)


def test_every_module_and_name_of_the_walks_exists() -> None:
    all_steps, found, bare = the_walks()
    named = [r for r in found if r.name]
    # the parser finds what the walks name: at least one name per step on average
    assert len(named) >= sum(len(s) for s in all_steps.values()), len(named)
    assert {r.walk for r in named} == set(all_steps)
    assert bare, "no bare Class.member found: the parser lost them"
    assert problems(found, bare) == []


def test_each_step_names_at_least_one_function_or_class() -> None:
    all_steps, _, _ = the_walks()
    empty = [
        (walk, s.split(":", 1)[0])
        for walk, numbered in all_steps.items()
        for s in numbered
        if not any(r.name for r in refs(walk, s)[0]) and not refs(walk, s)[1]
    ]
    assert empty == []


RENAMED = [
    ("`controller/table/cards.py` `CardFlow.on_card_gone`", "cards.py defines no CardFlow.on_card_gone"),
    (
        "`drivers/serial_port.py` `resolve_port` and `open_serial_port`",
        "serial_port.py defines no open_serial_port",
    ),
    ("`controller/table/no_such_module.py` `Thing`", "no_such_module.py does not exist"),
    ("`drivers/link.py` `ReliableLink.send` and `ReliableLink.fed`", "link.py defines no ReliableLink.fed"),
]


@pytest.mark.parametrize(("line", "expected"), RENAMED)
def test_a_renamed_or_moved_reference_is_found(line: str, expected: str) -> None:
    found, bare = refs("walk", "1. " + line + ": what it does.")
    found_problems = problems(found, bare)
    assert len(found_problems) == 1 and found_problems[0].endswith(expected), found_problems


def test_a_bare_member_defined_nowhere_named_is_found() -> None:
    found, bare = refs("walk", "1. `drivers/link.py` `ReliableLink.feed`, then `ReliableLink.swallow`.")
    assert problems(found, bare) == [
        "`ReliableLink.swallow` is defined in none of the modules the walks name"
    ]
