"""Every concern of the table core has the same face (issue 43; controller/table/concern.py).

The rules, checked here from the source (ast) and from a built core:

1. **The protocol.** Every concern the core composes (``TableCore.concerns``) satisfies ``Concern``: a unique
   ``name``, ``handlers()`` giving tables whose handlers are the concern's own bound methods (or a
   ``functools.partial`` of one), ``snapshot_into`` / ``restore_from``. A concern class is a class of
   controller/table/*.py that declares ``name: ClassVar[str]``; the core composes each of them exactly once.
2. **No concern holds another by its class.** No parameter of a concern's ``__init__`` is annotated with another
   concern's class: a collaborator is typed by a face (a ``Protocol`` of concern.py), a provider of one
   (``Callable[[], Face]``), the ``TableView`` provider, or a type that is not a concern (sink, gate, seam).
3. **A concern reads another only through its face or the view.** In a concern's methods, every attribute read
   on a collaborator typed by a face, ``self.<collaborator>.<member>`` or ``self.<provider>().<member>``, is a
   member the face declares (its own or a base face's); ``self.<collaborator>.s`` (another concern's state
   record) is never one.
4. **The faces are narrow.** A face declares none of the instance data attributes its concern assigns in its
   ``__init__`` (``s``, ``status``, ``raised``, ``values``, ``device``, ``on_duty``, ``seats``, ...): those are
   the concern's own state, read by others only through its properties, its methods or the view.
5. **Each concern has a test file of its own**: tests/test_concern_<name>.py.

The core itself (core.py) composes the concerns and builds the view; it is not a concern and is not checked by
2-4. Each check is shown to fail on a small bad source below."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path
from typing import Any

import pytest

from controller.table.concern import NO_HANDLERS, Concern, Handlers
from controller.table.dispatch import DispatchTables
from controller.table.snapshot import SNAPSHOT_KEYS, slices
from drivers import events as ev
from tablebench.table_testing import Harness

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "controller" / "table"

# which concern each face of concern.py describes (a new face is added here, or the test says so)
FACE_OWNERS = {
    "SetupFace": "TableSetup",
    "SessionControl": "TableSetup",
    "LidFace": "Lid",
    "RoundsFace": "RoundFlow",
    "CycleFace": "ShoeCycle",
    "FaultsFace": "Faults",
    "DeckCheckFace": "DeckChecks",
    "SafetyFace": "SafetyOutputs",
    "BetsFace": "DealerInputs",
    "DutyFace": "DealerDuty",
    "PlayersFace": "SeatedPlayers",
    "LinkFace": "ShoeLink",
}


def _trees() -> dict[str, ast.Module]:
    return {p.name: ast.parse(p.read_text(encoding="utf-8"), str(p)) for p in sorted(TABLE.glob("*.py"))}


def _is_concern_class(node: ast.ClassDef) -> bool:
    """Declares ``name: ClassVar[str]`` in its body."""
    return any(
        isinstance(s, ast.AnnAssign)
        and isinstance(s.target, ast.Name)
        and s.target.id == "name"
        and "ClassVar" in ast.unparse(s.annotation)
        for s in node.body
    )


def concern_classes(trees: dict[str, ast.Module]) -> dict[str, ast.ClassDef]:
    return {
        n.name: n
        for t in trees.values()
        for n in t.body
        if isinstance(n, ast.ClassDef) and _is_concern_class(n) and n.name != "Concern"  # the protocol
    }


def faces(tree: ast.Module) -> dict[str, set[str]]:
    """The face protocols of concern.py and the members each declares (with its base faces')."""
    own: dict[str, set[str]] = {}
    bases: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.endswith(("Face", "Control")):
            members = set()
            for s in node.body:
                if isinstance(s, ast.FunctionDef):
                    members.add(s.name)
                elif isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
                    members.add(s.target.id)
            own[node.name] = members
            bases[node.name] = [b.id for b in node.bases if isinstance(b, ast.Name)]

    def all_members(name: str) -> set[str]:
        return own[name].union(*(all_members(b) for b in bases[name] if b in own))

    return {name: all_members(name) for name in own}


def _init(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)


def _face_of(annotation: ast.expr | None, face_names: set[str]) -> tuple[str, bool] | None:
    """(face, through a provider) for ``Face`` or ``Callable[[], Face]``; None otherwise."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Name) and annotation.id in face_names:
        return annotation.id, False
    if isinstance(annotation, ast.Subscript) and ast.unparse(annotation.value) in (
        "Callable",
        "abc.Callable",
    ):
        args = annotation.slice
        if isinstance(args, ast.Tuple) and len(args.elts) == 2:
            ret = args.elts[1]
            if isinstance(ret, ast.Name) and ret.id in face_names:
                return ret.id, True
    return None


def _self_bindings(init: ast.FunctionDef) -> dict[str, str]:
    """``self.<attr> = <param>`` (also in tuple assignments): attr -> param."""
    bound: dict[str, str] = {}
    for s in ast.walk(init):
        if not isinstance(s, ast.Assign):
            continue
        for target in s.targets:
            pairs: list[tuple[ast.expr, ast.expr]] = []
            if isinstance(target, ast.Tuple) and isinstance(s.value, ast.Tuple):
                pairs = list(zip(target.elts, s.value.elts, strict=False))
            else:
                pairs = [(target, s.value)]
            for t, v in pairs:
                if (
                    isinstance(t, ast.Attribute)
                    and isinstance(t.value, ast.Name)
                    and t.value.id == "self"
                    and isinstance(v, ast.Name)
                ):
                    bound[t.attr] = v.id
    return bound


def _data_attributes(cls: ast.ClassDef) -> set[str]:
    """What the class's ``__init__`` assigns on ``self``: its own state (and its collaborators)."""
    init = _init(cls)
    found: set[str] = set()
    if init is None:
        return found
    for s in ast.walk(init):
        targets = (
            s.targets if isinstance(s, ast.Assign) else [s.target] if isinstance(s, ast.AnnAssign) else []
        )
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id == "self":
                    found.add(e.attr)
    return found


def constructor_links(trees: dict[str, ast.Module]) -> list[str]:
    """Rule 2: parameters of a concern's ``__init__`` typed by another concern's class."""
    concerns = concern_classes(trees)
    found = []
    for name, cls in concerns.items():
        init = _init(cls)
        if init is None:
            continue
        for arg in init.args.args[1:] + init.args.kwonlyargs:
            names = (
                {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
                if arg.annotation
                else set()
            )
            for other in sorted(names & set(concerns) - {name}):
                found.append(f"{name}.__init__({arg.arg}: {other})")
    return found


def face_reads(trees: dict[str, ast.Module], face_members: dict[str, set[str]]) -> list[str]:
    """Rule 3: reads on a face-typed collaborator of members its face does not declare."""
    found = []
    for name, cls in concern_classes(trees).items():
        init = _init(cls)
        if init is None:
            continue
        params = {a.arg: a.annotation for a in init.args.args[1:] + init.args.kwonlyargs}
        typed: dict[str, tuple[str, bool]] = {}
        for attr, param in _self_bindings(init).items():
            face = _face_of(params.get(param), set(face_members))
            if face is not None:
                typed[attr] = face
        for node in ast.walk(cls):
            if not isinstance(node, ast.Attribute):
                continue
            holder = node.value
            through_call = isinstance(holder, ast.Call) and not holder.args and not holder.keywords
            if through_call:
                assert isinstance(holder, ast.Call)
                holder = holder.func
            if not (
                isinstance(holder, ast.Attribute)
                and isinstance(holder.value, ast.Name)
                and holder.value.id == "self"
                and holder.attr in typed
            ):
                continue
            face, provider = typed[holder.attr]
            if provider != through_call:
                continue
            if node.attr not in face_members[face]:
                found.append(f"{name}: self.{holder.attr}{'()' if provider else ''}.{node.attr} ({face})")
    return sorted(set(found))


def wide_faces(trees: dict[str, ast.Module], face_members: dict[str, set[str]]) -> list[str]:
    """Rule 4: faces that declare their concern's own data attributes."""
    concerns = concern_classes(trees)
    found = []
    for face, members in sorted(face_members.items()):
        owner = FACE_OWNERS.get(face)
        if owner is None:
            found.append(f"{face}: no owner in FACE_OWNERS")
            continue
        for attr in sorted(members & _data_attributes(concerns[owner])):
            found.append(f"{face}.{attr} is {owner}'s own state")
    return found


# ---------------------------------------------------------------- 1. the protocol


def test_every_concern_the_core_composes_satisfies_the_protocol() -> None:
    core = Harness().core
    names = [c.name for c in core.concerns]
    assert len(names) == len(set(names)) == 15
    classes = {type(c).__name__ for c in core.concerns}
    assert classes == set(concern_classes(_trees()))  # every concern class composed, once
    for concern in core.concerns:
        assert isinstance(concern, Concern), concern.name
        declared = concern.handlers()
        assert isinstance(declared, Handlers)
        for table in (declared.device, declared.dealer, declared.supervisor, declared.counts):
            for key, handler in table.items():
                method = handler.func if isinstance(handler, functools.partial) else handler
                assert inspect.ismethod(method) and method.__self__ is concern, (concern.name, key)


def test_a_class_without_the_face_is_not_a_concern() -> None:
    class Partial:
        name = "partial"

        def handlers(self) -> Handlers:
            return NO_HANDLERS

    assert not isinstance(Partial(), Concern)  # no snapshot_into / restore_from


class _Fake:
    def __init__(self, name: str, handlers: Handlers, keys: dict[str, Any] | None = None) -> None:
        self.name, self._handlers, self._keys = name, handlers, keys or {}

    def handlers(self) -> Handlers:
        return self._handlers

    def snapshot_into(self, snap: dict[str, Any]) -> None:
        snap.update(self._keys)

    def restore_from(self, snap: dict[str, Any]) -> None:
        return None


def test_an_input_claimed_twice_or_by_nobody_fails_the_build() -> None:
    core = Harness().core
    twice = _Fake("twice", Handlers(device={ev.CardOut: lambda e: None}, supervisor={"ack_alert": print}))
    with pytest.raises(RuntimeError, match=r"CardOut.* claimed by both card_flow and twice"):
        DispatchTables().build([*core.concerns, twice])
    with pytest.raises(RuntimeError, match=r"ack_alert claimed by both supervisor and twice"):
        DispatchTables().build([*core.concerns, twice])
    missing = [c for c in core.concerns if c.name != "lid"]
    with pytest.raises(
        RuntimeError, match=r"no handler for .*LidChanged.*unlock_lid|no handler for .*LidChanged"
    ):
        DispatchTables().build(missing)
    DispatchTables().build(core.concerns)  # the core's own: complete, once


def test_each_snapshot_key_comes_from_exactly_one_concern_in_the_persisted_order() -> None:
    core = Harness().core
    given: dict[str, str] = {}
    for concern in core.concerns:
        part: dict[str, Any] = {}
        concern.snapshot_into(part)
        for key in part:
            assert key not in given, f"{key}: {given[key]} and {concern.name}"
            given[key] = concern.name
    # the unset ones are left out (older journals hold no such key): dealer_on_duty, players
    assert list(core.snapshot()) == [k for k in SNAPSHOT_KEYS if k in given or k in ("state", "resume_to")]
    assert set(SNAPSHOT_KEYS) - set(given) == {"state", "resume_to", "dealer_on_duty", "players"}
    machine = {"state": "closed", "resume_to": None}
    with pytest.raises(RuntimeError, match="'lid' of twice"):
        slices(machine, [*core.concerns, _Fake("twice", NO_HANDLERS, {"lid": {}})])
    with pytest.raises(RuntimeError, match="'colour' of new"):
        slices(machine, [*core.concerns, _Fake("new", NO_HANDLERS, {"colour": "red"})])


# ---------------------------------------------------------------- 2-4. reads through the faces or the view


def test_no_concern_holds_another_by_its_class() -> None:
    trees = _trees()
    assert len(concern_classes(trees)) == 15
    assert constructor_links(trees) == []


def test_no_concern_reads_another_except_through_its_face_or_the_view() -> None:
    trees = _trees()
    assert face_reads(trees, faces(trees["concern.py"])) == []


def test_the_faces_declare_no_concern_state() -> None:
    trees = _trees()
    face_members = faces(trees["concern.py"])
    assert set(face_members) == set(FACE_OWNERS)
    assert wide_faces(trees, face_members) == []


def test_the_checks_can_fail() -> None:
    bad = {
        "concern.py": ast.parse(
            "class LidFace(Protocol):\n    def is_open(self) -> bool: ...\n    status: LidStatus\n"
        ),
        "lid.py": ast.parse(
            "class Lid:\n    name: ClassVar[str] = 'lid'\n"
            "    def __init__(self, fx):\n        self.status = LidStatus()\n"
        ),
        "faults.py": ast.parse(
            "class Faults:\n    name: ClassVar[str] = 'faults'\n"
            "    def __init__(self, lid: LidFace, owner: Lid, rounds: Callable[[], LidFace]) -> None:\n"
            "        self.lid, self.owner, self._rounds = lid, owner, rounds\n"
            "    def f(self):\n"
            "        return self.lid.unlock, self.lid.is_open(), self._rounds().position, self.lid.s\n"
        ),
    }
    face_members = faces(bad["concern.py"])
    assert constructor_links(bad) == ["Faults.__init__(owner: Lid)"]
    assert face_reads(bad, face_members) == [
        "Faults: self._rounds().position (LidFace)",
        "Faults: self.lid.s (LidFace)",
        "Faults: self.lid.unlock (LidFace)",
    ]
    assert wide_faces(bad, face_members) == ["LidFace.status is Lid's own state"]


# ---------------------------------------------------------------- 5. a test file per concern


def test_every_concern_has_a_test_file_of_its_own() -> None:
    names = [c.name for c in Harness().core.concerns]
    missing = [n for n in names if not (ROOT / "tests" / f"test_concern_{n}.py").is_file()]
    assert missing == []
