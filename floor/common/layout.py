"""The floor's layout: which table stands in which pit and area (``floor.toml``, named by ``--layout``).

```toml
[[pit]]
name = "Pit 1"            # shown to supervisors
area = "Main floor"       # pits are grouped by area
tables = ["bj01", "bj02"] # table ids as the tables publish them
```

Unknown keys, a table in two pits, an id that is not a table id, and more than ``MAX_TABLES`` tables are refused
with the file and the key. A table the layout does not name stands in the pit ``UNASSIGNED`` (it is shown, never
dropped). Pits are shown in the order the file lists them (``Layout.order``). Pure: ``parse_layout`` takes the text."""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

MAX_TABLES = 20_000
MAX_NAME = 64
UNASSIGNED = "unassigned"
UNASSIGNED_AREA = "not in the floor layout"  # its area, in words (not "unassigned / unassigned")
_TABLE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PIT_KEYS = {"name", "area", "tables"}


class LayoutError(ValueError):
    """A layout file that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Pit:
    name: str
    area: str
    tables: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Layout:
    pits: tuple[Pit, ...] = ()

    def order(self) -> dict[str, int]:
        """Each pit's place in the layout file: pits are shown in this order (Pit 1, Pit 2, ... as the file lists
        them), whatever their areas; ``UNASSIGNED`` comes last."""
        out: dict[str, int] = {}
        for i, pit in enumerate(self.pits):
            out.setdefault(pit.name, i)
        return out

    def pit_of(self, table_id: str) -> Pit:
        for pit in self.pits:
            if table_id in pit.tables:
                return pit
        return Pit(UNASSIGNED, UNASSIGNED_AREA, ())


def _text(value: object, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_NAME or not value.isprintable():
        raise LayoutError(f"{where}: a printable name of 1 to {MAX_NAME} characters, got {value!r}")
    return value


def parse_layout(text: str, source: str = "floor.toml") -> Layout:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LayoutError(f"{source}: not TOML: {exc}") from exc
    unknown = set(data) - {"pit"}
    if unknown:
        raise LayoutError(f"{source}: key {sorted(unknown)[0]}: unknown (known: pit)")
    pits: list[Pit] = []
    seen: dict[str, str] = {}  # table id -> the pit it is in
    raw = data.get("pit", [])
    if not isinstance(raw, list):
        raise LayoutError(f"{source}: key pit: an array of tables ([[pit]])")
    for i, entry in enumerate(raw):
        where = f"{source}: pit[{i}]"
        if not isinstance(entry, dict):
            raise LayoutError(f"{where}: a table with name, area and tables")
        extra = set(entry) - _PIT_KEYS
        if extra:
            raise LayoutError(f"{where}.{sorted(extra)[0]}: unknown key (known: area, name, tables)")
        name, area = _text(entry.get("name"), f"{where}.name"), _text(entry.get("area"), f"{where}.area")
        tables = entry.get("tables", [])
        if not isinstance(tables, list):
            raise LayoutError(f"{where}.tables: a list of table ids")
        for t in tables:
            if not isinstance(t, str) or not _TABLE_ID.fullmatch(t):
                raise LayoutError(f"{where}.tables: {t!r} is not a table id")
            if t in seen:
                raise LayoutError(f"{where}.tables: {t} is already in pit {seen[t]!r}")
            seen[t] = name
        if len(seen) > MAX_TABLES:
            raise LayoutError(f"{where}.tables: more than {MAX_TABLES} tables")
        pits.append(Pit(name, area, tuple(tables)))
    return Layout(tuple(pits))


def load_layout(path: Path | None) -> Layout:
    """The layout at ``path`` (none given: every table unassigned)."""
    if path is None:
        return Layout()
    try:
        text = path.read_text()
    except OSError as exc:
        raise LayoutError(f"{path}: {exc.strerror}") from exc
    return parse_layout(text, str(path))
