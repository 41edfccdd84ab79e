"""Replays recordings of the table core (tests/support/core_recorder.py) through the current core and
compares every result byte for byte: the canonical JSON of each Step's effects and result, of each
``publish_states()``, ``snapshot()`` and ``view()``, every refusal's reason, and a hash of the state after
every call (so the snapshot format, persisted in journals in the field, stays what it was)."""

from __future__ import annotations

import base64
import gzip
import json
import pickle
import sys
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:
    from support import core_recorder
    from support.core_recorder import UNDO_KEEP, effect_json, error_json, snap_hash, snap_text, step_json
except ImportError:  # run as a script from tests/support
    import core_recorder  # type: ignore[no-redef]
    from core_recorder import UNDO_KEEP, effect_json, error_json, snap_hash, snap_text, step_json  # type: ignore[no-redef]

from controller.canonical import canonical
from controller.table.inputs import decode  # the recordings keep the journal's dicts

sys.modules.setdefault("core_recorder", core_recorder)  # the recorded profiles' pickles name it


@dataclass
class Session:
    key: str  # "<source>/<sid>"
    lines: list[dict[str, Any]] = field(default_factory=list)

    @property
    def header(self) -> dict[str, Any]:
        return self.lines[0]

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [ln for ln in self.lines if ln["k"] not in ("new", "profile")]


def read_lines(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        for text in fh:
            if text.endswith("\n"):  # a process killed mid-line leaves a partial last line: not a call
                yield json.loads(text)


def _grouped(
    lines: Iterable[dict[str, Any]], source: str, by_id: dict[Any, Session]
) -> Iterator[tuple[Session, dict[str, Any]]]:
    """Each line added to its session in ``by_id`` (by its ``s``), yielded with that session as it stands then."""
    for line in lines:
        sid = line["s"]
        if sid not in by_id:
            by_id[sid] = Session(f"{source}/{sid}")
        session = by_id[sid]
        session.lines.append(line)
        yield session, line


def sessions(lines: Iterable[dict[str, Any]], source: str) -> list[Session]:
    by_id: dict[Any, Session] = {}
    for _ in _grouped(lines, source, by_id):
        pass
    return [s for s in by_id.values() if s.lines and s.lines[0]["k"] == "new"]


def first_session_with(
    lines: Iterable[dict[str, Any]], source: str, wanted: Callable[[dict[str, Any]], bool]
) -> Session:
    """The first session (in file order) to reach a call ``wanted`` accepts, up to and including that call;
    reading stops there. A prefix replays as its whole session does up to its last call (each call's result and
    state depend only on the calls before it), so one call can be altered without reading a whole recording."""
    for session, line in _grouped(lines, source, {}):
        if session.header["k"] == "new" and line["k"] not in ("new", "profile", "sync") and wanted(line):
            return session
    raise LookupError(f"{source}: no session has a call as wanted")


class Mismatch(AssertionError):
    pass


def _first_difference(expected: Any, actual: Any, path: str = "") -> str:
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key in sorted(set(expected) | set(actual)):
            if key not in expected or key not in actual or expected[key] != actual[key]:
                return _first_difference(expected.get(key), actual.get(key), f"{path}.{key}")
    if isinstance(expected, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(expected, actual, strict=False)):
            if a != b:
                return _first_difference(a, b, f"{path}[{i}]")
        if len(expected) != len(actual):
            return (
                f"{path}: {len(expected)} items recorded, {len(actual)} now; extra: "
                + canonical(expected[len(actual) :] or actual[len(expected) :])[:600]
            )
    return f"{path}: recorded {canonical(expected)[:600]} / now {canonical(actual)[:600]}"


def replay(session: Session, *, rewrite: bool = False) -> int:
    """Replay one session through the current core; raises ``Mismatch`` at the first differing call.
    Returns the number of calls compared. ``rewrite`` (re-recording a session after a deliberate behaviour
    change, tests/support/core_rerecord.py): each differing call's recorded result and state hash are replaced
    by the current core's instead; returns the number of calls replaced."""
    from controller.jackpot.table import TableJackpot
    from controller.table.core import TableCore

    head = session.header
    loads: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in session.lines:
        if line["k"] == "profile":
            loads[line["name"]].append(line)
    used: dict[str, int] = defaultdict(int)

    def loader(name: str) -> Any:
        recorded = loads.get(name)
        if not recorded:
            raise Mismatch(
                f"{session.key} ({head.get('test')}): the core loads profile {name!r}, never recorded"
            )
        line = recorded[min(used[name], len(recorded) - 1)]
        used[name] += 1
        value = pickle.loads(base64.b64decode(line["pickle"]))
        if not line["ok"]:
            raise value
        return value

    jackpot = {"TableJackpot": TableJackpot, None: None}[head["jackpot"]]
    core = TableCore(loader, jackpot=jackpot()) if jackpot else TableCore(loader)
    undos: dict[int, bytes] = {}
    applies = 0
    compared = 0
    calls = session.calls
    for index, call in enumerate(calls):
        kind = call["k"]
        if kind == "sync":
            core.restore(json.loads(call["snap"]))
            continue
        args = call["args"]
        try:
            if kind == "apply":
                applies += 1
                try:
                    out: Any = step_json(core.apply(decode(args["inp"]), args["now"], states=args["states"]))
                finally:
                    undos[applies] = core.undo
                    undos.pop(applies - UNDO_KEEP - 1, None)
            elif kind == "publish_states":
                out = {"effects": [effect_json(fx) for fx in core.publish_states()]}
            elif kind == "snapshot":
                out = {"doc": canonical(core.snapshot())}
            elif kind == "view":
                out = {"doc": canonical(core.view())}
            elif kind == "restore":
                if "undo" in args:
                    core.restore(undos[args["undo"]])
                else:
                    core.restore(json.loads(args["snap"]))
                out = {}
            else:
                raise Mismatch(f"{session.key}: unknown call kind {kind!r}")
        except Mismatch:
            raise
        except Exception as exc:
            out = error_json(exc)
        state_hash = snap_hash(snap_text(core))
        text = canonical(out)  # each side encoded once, compared as text (byte for byte)
        same_out = text == canonical(call["out"])
        if rewrite:
            if not same_out or state_hash != call["h"]:
                call["out"], call["h"] = json.loads(text), state_hash
                compared += 1
            continue
        if not same_out or state_hash != call["h"]:
            where = (
                _first_difference(call["out"], out)
                if not same_out
                else f"state after the call differs (hash {call['h']} recorded, {state_hash} now)"
            )
            before = [
                c.get("args", {}).get("inp") for c in calls[max(0, index - 3) : index] if c["k"] == "apply"
            ]
            raise Mismatch(
                f"{session.key} (test {head.get('test') or '-'}): call #{index} {kind}"
                f" args={canonical(args)[:400]}\n  first difference at {where}\n"
                f"  preceding inputs: {canonical(before)[:800]}"
            )
        compared += 1
    return compared
