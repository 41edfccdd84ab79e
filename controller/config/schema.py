"""Validate a parsed table configuration against the JSON Schemas in ``schemas/config/``.

The schemas check shape (types, ranges, unknown keys); cross-field rules live in ``load.py``.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, validators
from jsonschema.exceptions import ValidationError
from referencing import Registry
from referencing.jsonschema import DRAFT202012

from controller.config.errors import Problem
from controller.data import data_path

SCHEMA_DIR = data_path("schemas", "config")  # package data: works from the wheel and the checkout
TABLE_SCHEMA = "table.schema.json"


def _strict_integer(_checker: object, instance: object) -> bool:
    # JSON Schema counts 500.0 as an integer; TOML keeps it a float, and money is never a float.
    return isinstance(instance, int) and not isinstance(instance, bool)


_Validator = validators.extend(
    Draft202012Validator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer),
)


@cache
def _validator(schema_dir: Path = SCHEMA_DIR) -> Any:
    resources = []
    for path in sorted(schema_dir.glob("*.schema.json")):
        doc = json.loads(path.read_text(encoding="utf-8"))
        # Without "$schema", a $ref'd section keeps our strict-integer validator instead of the stock one.
        doc.pop("$schema", None)
        resources.append((doc["$id"], DRAFT202012.create_resource(doc)))
    registry: Registry = Registry().with_resources(resources)
    table = json.loads((schema_dir / TABLE_SCHEMA).read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(table)
    return _Validator(table, registry=registry)


def _key(error: ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if "propertyNames" in error.absolute_schema_path and isinstance(error.instance, str):
        return ".".join([*parts, error.instance])
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = sorted(k for k in error.instance if k not in allowed)
        if extra:
            return ".".join([*parts, extra[0]])
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return ".".join([*parts, missing]) if missing else ".".join(parts)
    return ".".join(parts)


def _reason(error: ValidationError) -> str:
    if error.validator == "additionalProperties":
        return "unknown key (misspelt, or not valid in this section)"
    if error.validator == "required":
        return "missing (required)"
    if "propertyNames" in error.absolute_schema_path:
        return "unknown signal name (see docs/deploy.md for the GPIO signal names)"
    return error.message


def schema_problems(data: dict[str, Any], file: str, origins: dict[str, str] | None = None) -> list[Problem]:
    """Every schema violation as a Problem; ``origins`` maps a section name to the file its keys came from."""
    origins = origins or {}
    try:
        validator = _validator()
    except (OSError, ValueError, KeyError) as exc:  # an installation fault, reported like a config fault
        return [Problem(file, "", f"cannot load the configuration schemas in {SCHEMA_DIR}: {exc}")]
    problems = []
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        key = _key(error)
        section = key.split(".", 1)[0]
        problems.append(Problem(origins.get(section, file), key, _reason(error)))
    return problems
