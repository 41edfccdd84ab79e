"""Records every call into the pure table core, from outside the product, for the equivalence replay.

``install()`` wraps ``TableCore``'s public methods (the ones the shell calls: ``apply``, ``publish_states``,
``snapshot``, ``restore``, ``view``) and writes, per core instance, how it was constructed and every call
with its result in canonical JSON, one JSON object a line, to ``$CORE_RECORD_DIR/<pid>-<n>.jsonl``. Lines
are flushed as they are written: a process killed with SIGKILL (the bench's power-loss case) loses nothing
it had finished.

Enabled two ways, never by the product itself:
- in pytest: ``-p core_recorder_plugin`` (tests/support is on the path) with ``CORE_RECORD_DIR`` set;
- in any spawned process (the bench's service): put ``tests/support/core_recorder_site`` on ``PYTHONPATH``
  (its ``sitecustomize`` calls ``install()`` when ``CORE_RECORD_DIR`` is set).

Line shapes (``s`` the session id, unique per file):
- ``{"s", "k": "new", "jackpot": <class name>, "defaults": bool, "test": <pytest node id or "">}``
- ``{"s", "k": "profile", "name", "ok": bool, "pickle": <base64>}``: one load_profile call (its result or
  the exception), in call order
- ``{"s", "k": "sync", "snap": <snapshot JSON>}``: the state was changed from outside between two calls (a
  test poking the core); the replay restores it
- ``{"s", "k": <method>, "args": {...}, "out": {...}, "h": <hash of the snapshot after the call>}``
"""

from __future__ import annotations

import base64
import copyreg
import dataclasses
import functools
import hashlib
import io
import itertools
import os
import pickle
import threading
from pathlib import Path
from types import MappingProxyType
from typing import Any

from controller.canonical import canonical
from controller.table.inputs import encode

UNDO_KEEP = 256  # how many recent undo values a restore(bytes) may name


def effect_json(fx: Any) -> list[Any]:
    """One effect as plain JSON: what reaches the journal, the outbox and the device."""
    from controller.effects import Alert, Event, GpioWrite, JournalRecord, ShoeCommand, StateDocument
    from controller.table.messages import message_of

    if isinstance(fx, JournalRecord):
        return ["record", fx.kind, fx.data]
    if isinstance(fx, Event | StateDocument):  # as the shell publishes it: its one topic mapping
        msg = message_of(fx)
        text = msg.text if msg.text is not None else canonical(msg.data)
        return ["publish", msg.topic, msg.event_type, msg.retain, text]
    if isinstance(fx, Alert):
        return ["alert", fx.kind, fx.severity, fx.reason, fx.details]
    if isinstance(fx, ShoeCommand):
        cmd = fx.command
        return [
            "command",
            type(cmd).__name__,
            {f.name: getattr(cmd, f.name) for f in dataclasses.fields(cmd)},
        ]
    if isinstance(fx, GpioWrite):
        return ["gpio", fx.name, fx.value]
    return ["unknown", type(fx).__name__, repr(fx)]


def step_json(step: Any) -> dict[str, Any]:
    return {"effects": [effect_json(fx) for fx in step.effects], "result": step.result}


def error_json(exc: BaseException) -> dict[str, Any]:
    from controller.effects import Rejected

    if isinstance(exc, Rejected):
        return {"rejected": exc.reason}
    return {"error": type(exc).__name__, "text": str(exc)}


def snap_text(core: Any) -> str:
    return canonical(core.snapshot())


def snap_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


class _Writer:
    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.path = directory / f"{os.getpid()}-{os.urandom(3).hex()}.jsonl"
        self.lock = threading.Lock()
        self.fh: Any = None
        self.ids = itertools.count(1)

    def write(self, line: dict[str, Any]) -> None:
        text = canonical(line) + "\n"
        with self.lock:
            if self.fh is None or self.fh.closed:
                self.fh = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - lives with the process
            self.fh.write(text)
            self.fh.flush()


_writer: _Writer | None = None


def _test_name() -> str:
    name = os.environ.get("PYTEST_CURRENT_TEST", "")
    return name.rsplit(" (", 1)[0]


def install(directory: str | os.PathLike[str] | None = None) -> bool:
    """Wrap TableCore (idempotent). Returns False when no directory is configured."""
    global _writer
    directory = directory or os.environ.get("CORE_RECORD_DIR")
    if not directory:
        return False
    if _writer is not None:
        return True
    _writer = _Writer(Path(directory))
    from controller.table import core as core_mod

    cls = core_mod.TableCore
    orig_init = cls.__init__
    orig = {name: getattr(cls, name) for name in ("apply", "publish_states", "snapshot", "restore", "view")}
    w = _writer

    @functools.wraps(orig_init)
    def __init__(self: Any, load_profile: Any, *args: Any, **kwargs: Any) -> None:
        sid = next(w.ids)
        rec = {"sid": sid, "depth": 0, "last": b"", "undos": {}, "applies": 0}

        def loader(name: str) -> Any:
            try:
                result = load_profile(name)
            except BaseException as exc:
                w.write({"s": sid, "k": "profile", "name": name, "ok": False, "pickle": _b64(exc)})
                raise
            w.write({"s": sid, "k": "profile", "name": name, "ok": True, "pickle": _b64(result)})
            return result

        defaults = not args and set(kwargs) <= {"jackpot"}
        jackpot = kwargs.get("jackpot")
        w.write(
            {
                "s": sid,
                "k": "new",
                "jackpot": type(jackpot).__name__ if jackpot is not None else None,
                "defaults": defaults,
                "test": _test_name(),
            }
        )
        self.__dict__["_rec"] = rec
        rec["depth"] += 1
        try:
            orig_init(self, loader, *args, **kwargs)
        finally:
            rec["depth"] -= 1
        rec["last"] = self._frozen()

    def wrap(name: str) -> Any:
        fn = orig[name]

        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            rec = self.__dict__.get("_rec")
            if rec is None or rec["depth"]:
                return fn(self, *args, **kwargs)
            sid = rec["sid"]
            rec["depth"] += 1
            if self._frozen() != rec["last"]:  # changed from outside since the last call
                w.write({"s": sid, "k": "sync", "snap": snap_text(self)})
            line: dict[str, Any] = {"s": sid, "k": name, "args": _args(rec, name, args, kwargs)}
            try:
                result = fn(self, *args, **kwargs)
            except BaseException as exc:
                line["out"] = error_json(exc)
                raise
            else:
                line["out"] = _out(name, result)
                return result
            finally:
                if name == "apply":
                    n = rec["applies"] = rec["applies"] + 1
                    undos = rec["undos"]
                    undos[self.undo] = n
                    if len(undos) > UNDO_KEEP:
                        del undos[next(iter(undos))]
                rec["last"] = self._frozen()
                line["h"] = snap_hash(snap_text(self))
                rec["depth"] -= 1
                w.write(line)

        return wrapper

    cls.__init__ = __init__
    for name in orig:
        setattr(cls, name, wrap(name))
    return True


def _b64(obj: Any) -> str:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}
    pickler.dump(obj)
    return base64.b64encode(buf.getvalue()).decode()


def _reduce_proxy(proxy: MappingProxyType[Any, Any]) -> tuple[Any, ...]:
    return (make_proxy, (dict(proxy),))


def make_proxy(data: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    return MappingProxyType(data)


def _args(rec: dict[str, Any], name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    if name == "apply":
        inp, now = args[0], args[1]
        states = kwargs.get("states", args[2] if len(args) > 2 else True)
        return {"inp": encode(inp), "now": now, "states": states}  # the journal's shape (inputs.py)
    if name == "restore":
        snap = args[0] if args else kwargs["snap"]
        if isinstance(snap, bytes):
            n = rec["undos"].get(snap)
            if n is not None:
                return {"undo": n}  # the undo taken by the n-th apply of this core
            return {"snap": canonical(pickle.loads(snap))}
        return {"snap": canonical(snap)}
    return {}


def _out(name: str, result: Any) -> Any:
    if name == "apply":
        return step_json(result)
    if name == "publish_states":
        return {"effects": [effect_json(fx) for fx in result]}
    if name in ("snapshot", "view"):
        return {"doc": canonical(result)}
    return {}
