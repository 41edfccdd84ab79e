"""The configuration's docs made from the key declarations (``controller.config.keys``): the commented example
``firmware_configs/table.example.toml`` and the key tables of docs/deploy.md §6 and docs/jackpot.md (each between
``<!-- keys: SECTION ... -->`` and ``<!-- /keys -->``; the prose around them is written by hand). Both are
written by ``python -m controller.docs_gen`` and checked by its ``--check``.
"""

from __future__ import annotations

import json
import re
from enum import Enum
from pathlib import Path

from controller.config.keys import (
    BY_NAME,
    COMPUTED,
    EXAMPLE_PINS,
    GPIO,
    PIN,
    REQUIRED,
    SECTIONS,
    UNSET,
    Key,
    Kind,
    Section,
)

EXAMPLE = "firmware_configs/table.example.toml"
DEPLOY_DOC = "docs/deploy.md"
JACKPOT_DOC = "docs/jackpot.md"  # its [jackpot] table
TABLE_DOCS = (DEPLOY_DOC, JACKPOT_DOC)  # the docs with generated key tables
NOTE_COLUMN = 33  # the example's trailing comments start here (0-based), or two spaces after a long line

EXAMPLE_HEADER = (
    "# tablectl table configuration: copy to /etc/tablectl/table.toml and edit.",
    '# Every key is described in docs/deploy.md ("Configuration keys"). Check it with:',
    "#   tablectl config check /etc/tablectl/table.toml",
    "# then record its digests (the table refuses to open until they match):",
    "#   tablectl config record /etc/tablectl/table.toml --manifest /etc/tablectl/integrity.json",
    "# Relative paths are relative to this file's folder. Money is integer minor units (cents).",
    "# Generated from controller/config/keys*.py by `python -m controller.docs_gen`: edit the declarations there.",
)
PINS_PREAMBLE = (
    "# BCM numbers. Outputs (lid_lock, warning_light) have fixed safe values: lid locked, light on.",
    "# Inputs: active_low = true for buttons wired to ground (the adapter enables the pull-up); debounce_ms.",
)


def toml_value(value: object, *, hex_int: bool = False) -> str:
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"0x{value:04X}" if hex_int else str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    raise TypeError(f"no TOML form for {value!r}")


def _with_note(line: str, note: str) -> str:
    return f"{line:<{NOTE_COLUMN - 2}}  # {note}" if note else line


def _example_line(k: Key) -> str | None:
    if k.example is not None:
        return _with_note(f"{k.name} = {toml_value(k.example, hex_int=k.hex)}", k.note)
    shown = k.commented
    if shown is None and k.default not in (REQUIRED, COMPUTED, UNSET):
        shown = k.default
    if shown is None:
        return None
    return _with_note(f"# {k.name} = {toml_value(shown, hex_int=k.hex)}", k.note)


def _pin_line(name: str, pin: int, active_low: bool, debounce_ms: int | None) -> str:
    parts = [f"pin = {pin}"]
    if active_low:
        parts.append("active_low = true")
    if debounce_ms is not None:
        parts.append(f"debounce_ms = {debounce_ms}")
    return f"{name} = {{ {', '.join(parts)} }}"


def render_example() -> str:
    lines = [*EXAMPLE_HEADER]
    for section in SECTIONS:
        lines.append("")
        lines.append(_with_note(f"[{section.name}]", section.note))
        lines += [line for k in section.keys if (line := _example_line(k)) is not None]
        if section is GPIO:
            lines += ["", *PINS_PREAMBLE, "[gpio.pins]"]
            lines += [_pin_line(*pin) for pin in EXAMPLE_PINS]
    return "\n".join(lines) + "\n"


def _range(k: Key) -> str:
    if k.type_doc:
        return k.type_doc
    if k.kind is Kind.CHOICE:
        return " \\| ".join(f"`{toml_value(c)}`" for c in k.choices)
    if k.kind is Kind.INTEGER:
        if k.minimum is not None and k.maximum is not None:
            text = f"{k.minimum}–{k.maximum}"
        elif k.minimum is not None:
            text = f"int ≥ {k.minimum}"
        else:
            text = "int"
        return f"{text} {k.unit}" if k.unit else text
    return str(k.kind.value)


def _default(k: Key) -> str:
    if k.default_doc:
        return k.default_doc
    if k.default is REQUIRED:
        return "— (required)"
    if k.default in (COMPUTED, UNSET):
        return "—"
    return f"`{toml_value(k.default)}`"


def _prefix(top: str, section: Section) -> str:
    rest = section.name[len(top) :].lstrip(".")
    return f"{rest}." if rest else ""


def render_table(names: list[str]) -> str:
    """One table of the keys of the named sections (the first is the heading's section)."""
    top = names[0]
    rows = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for name in names:
        section = BY_NAME[name]
        prefix = _prefix(top, section) if section is not PIN else "pins.<signal>."
        for k in section.keys:
            rows.append(f"| `{prefix}{k.name}` | {_range(k)} | {_default(k)} | {k.doc} |")
    return "\n".join(rows)


_BLOCK = re.compile(r"(<!-- keys: (.*?) -->\n)(.*?)(<!-- /keys -->)", re.S)


def render_tables(root: Path, doc: str) -> str:
    """``doc`` with each of its key tables made again from the declarations."""
    text = (root / doc).read_text(encoding="utf-8")
    return _BLOCK.sub(lambda m: f"{m.group(1)}{render_table(m.group(2).split())}\n{m.group(4)}", text)


def documented_sections(text: str) -> set[str]:
    return {name for m in _BLOCK.finditer(text) for name in m.group(2).split()}
