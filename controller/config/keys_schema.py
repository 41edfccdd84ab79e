"""The JSON Schemas of the table configuration (``schemas/config/*.schema.json``), made from the key declarations
(``controller.config.keys``). ``python -m controller.docs_gen`` writes them; ``--check`` fails when they differ.
``controller.config.schema`` validates against the files (they are also package data for other readers).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from enum import Enum
from typing import Any

from controller.config.keys import (
    CHIP_SLOT_PATTERN,
    GPIO,
    PIN,
    REQUIRED_SIGNALS,
    SECTIONS,
    SIGNALS,
    Key,
    Kind,
    Section,
)

SCHEMA_URI = "https://json-schema.org/draft/2020-12/schema"
ID_BASE = "https://schemas.tablectl.invalid/config/"
TABLE_SCHEMA = "table.schema.json"


def _value(v: object) -> object:
    return v.value if isinstance(v, Enum) else v


def _string(k: Key) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "string"}
    if k.pattern is not None:
        out["pattern"] = k.pattern
    else:
        out["minLength"] = 1
    if k.max_length is not None:
        out["maxLength"] = k.max_length
    return out


def _integer(k: Key) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "integer"}
    if k.minimum is not None:
        out["minimum"] = k.minimum
    if k.maximum is not None:
        out["maximum"] = k.maximum
    return out


_BY_KIND: dict[Kind, Callable[[Key], dict[str, Any]]] = {
    Kind.STRING: _string,
    Kind.PATH: lambda k: {"type": "string", "minLength": 1},
    Kind.INTEGER: _integer,
    Kind.BOOLEAN: lambda k: {"type": "boolean"},
    Kind.CHOICE: lambda k: {"enum": [_value(c) for c in k.choices]},
}


def key_schema(k: Key) -> dict[str, Any]:
    out = _BY_KIND[k.kind](k)
    out["description"] = f"{k.doc} ({k.unit})" if k.unit else k.doc
    return out


def _object(section: Section) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "additionalProperties": False}
    required = [k.name for k in section.keys if k.required]
    if required:
        out["required"] = required
    out["properties"] = {k.name: key_schema(k) for k in section.keys}
    if section.required_when_enabled:
        out["if"] = {"properties": {"enabled": {"const": True}}}
        out["then"] = {"required": list(section.required_when_enabled)}
    if section.required_when_enabled_without is not None:
        absent, names = section.required_when_enabled_without
        out["allOf"] = [
            {
                "if": {"properties": {"enabled": {"const": True}}, "not": {"required": [absent]}},
                "then": {"required": list(names)},
            }
        ]
    return out


def _pins() -> dict[str, Any]:
    return {
        "type": "object",
        "required": list(REQUIRED_SIGNALS),
        "propertyNames": {"anyOf": [{"enum": list(SIGNALS)}, {"pattern": CHIP_SLOT_PATTERN}]},
        "additionalProperties": _object(PIN),
    }


def _file_schema(section: Section) -> dict[str, Any]:
    head: dict[str, Any] = {
        "$schema": SCHEMA_URI,
        "$id": ID_BASE + section.schema_file,
        "title": section.title,
    }
    if section.description:
        head["description"] = section.description
    return {**head, **_object(section)}


def schemas() -> dict[str, dict[str, Any]]:
    """file name in schemas/config/ -> its schema."""
    files = {s.schema_file: _file_schema(s) for s in SECTIONS if s.schema_file}
    properties: dict[str, Any] = {}
    for section in SECTIONS:
        parent, _, child = section.name.partition(".")
        if section.schema_file:
            properties[section.name] = {"$ref": section.schema_file}
        elif child:
            sub = _object(section)
            properties[parent]["properties"][child] = sub
        else:
            properties[section.name] = _object(section)
    properties[GPIO.name]["properties"]["pins"] = _pins()
    properties[GPIO.name]["required"] = [*properties[GPIO.name].get("required", []), "pins"]
    table = {
        "$schema": SCHEMA_URI,
        "$id": ID_BASE + TABLE_SCHEMA,
        "title": "tablectl table configuration (TOML)",
        "description": "Shape of /etc/tablectl/table.toml, generated from controller/config/keys.py (python -m "
        "controller.docs_gen). Cross-field rules (profile agreement, unique pins, timeouts) are checked in "
        "controller/config/load.py. Keys are documented in docs/deploy.md.",
        "type": "object",
        "additionalProperties": False,
        "required": [s.name for s in SECTIONS if s.required and "." not in s.name],
        "properties": properties,
    }
    return {TABLE_SCHEMA: table, **files}


def render(name: str) -> str:
    return json.dumps(schemas()[name], indent=2, ensure_ascii=False) + "\n"
