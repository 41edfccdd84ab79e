"""Validate a parsed table configuration against the JSON Schemas in ``schemas/config/``.

The schemas check shape (types, ranges, unknown keys); they are generated from the key declarations
(``keys.py``, by ``python -m controller.docs_gen``). Cross-field rules live in ``load.py``.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
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


_Validator = validators.extend(  # type: ignore[no-untyped-call]  # types-jsonschema leaves extend unannotated
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


def _known_keys(schema: object) -> list[str]:
    """The option names a (sub)schema reads: its properties, or the names its ``propertyNames`` allows (none
    for a boolean schema)."""
    if not isinstance(schema, Mapping):
        return []
    names = list(schema.get("properties", {}))
    for alt in schema.get("propertyNames", {}).get("anyOf", []):
        names += alt.get("enum", [])
    return names


@cache
def _section_keys(schema_dir: Path = SCHEMA_DIR) -> dict[str, list[str]]:
    """Each top-level section's option names (``$ref``'d sections read from their file), for "it belongs in
    [shoe]"."""
    table = json.loads((schema_dir / TABLE_SCHEMA).read_text(encoding="utf-8"))
    out: dict[str, list[str]] = {}
    for name, sub in table.get("properties", {}).items():
        if "$ref" in sub:
            sub = json.loads((schema_dir / sub["$ref"]).read_text(encoding="utf-8"))
        out[name] = _known_keys(sub)
    return out


def _suggestion(name: str, path: list[str], known: list[str], sections: dict[str, list[str]]) -> str:
    """ "did you mean ..." for a close spelling, or the section an option of this name belongs in."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if close:
        return f"; did you mean {'.'.join([*path, close[0]])}?"
    if not path:  # an unknown section: a known one spelt close to it
        return ""
    elsewhere = sorted(f"{sec}.{name}" for sec, keys in sections.items() if name in keys and sec != path[0])
    if elsewhere:
        return f"; did you mean {elsewhere[0]}? (it belongs in [{elsewhere[0].rsplit('.', 1)[0]}])"
    return ""


def _unknown(error: ValidationError, sections: dict[str, list[str]]) -> list[tuple[str, str]]:
    """One (dotted key, reason) per option the configuration names but tablectl does not read."""
    path = [str(p) for p in error.absolute_path]
    if "propertyNames" in error.absolute_schema_path and isinstance(error.instance, str):
        known = _known_keys({"propertyNames": error.schema})  # error.schema: the propertyNames schema
        hint = _suggestion(error.instance, path, known, sections)
        what = (
            "not a GPIO signal name (see docs/deploy.md)" if path[-1:] == ["pins"] else "not read by tablectl"
        )
        return [(".".join([*path, error.instance]), f"unknown option: {what}{hint}")]
    known = _known_keys(error.schema)
    instance = error.instance if isinstance(error.instance, dict) else {}  # _is_unknown: an object
    out = []
    for name in sorted(k for k in instance if k not in known):
        key = ".".join([*path, name])
        if not path:
            reason = f"unknown section [{name}]: not read by tablectl"
        else:
            reason = f"unknown option in [{'.'.join(path)}]: not read by tablectl"
        out.append((key, reason + _suggestion(name, path, known, sections)))
    return out


def _key(error: ValidationError) -> str:
    parts = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else ""
        return ".".join([*parts, missing]) if missing else ".".join(parts)
    return ".".join(parts)


def _reason(error: ValidationError) -> str:
    if error.validator == "required":
        return "missing (required)"
    return error.message


def _is_unknown(error: ValidationError) -> bool:
    return (error.validator == "additionalProperties" and isinstance(error.instance, dict)) or (
        "propertyNames" in error.absolute_schema_path and isinstance(error.instance, str)
    )


def schema_problems(data: dict[str, Any], file: str, origins: dict[str, str] | None = None) -> list[Problem]:
    """Every schema violation as a Problem; ``origins`` maps a section name to the file its keys came from."""
    origins = origins or {}
    try:
        validator = _validator()
        sections = _section_keys()
    except (OSError, ValueError, KeyError) as exc:  # an installation fault, reported like a config fault
        return [Problem(file, "", f"cannot load the configuration schemas in {SCHEMA_DIR}: {exc}")]
    found: list[tuple[str, str]] = []
    for error in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        found += _unknown(error, sections) if _is_unknown(error) else [(_key(error), _reason(error))]
    problems = []
    for key, reason in dict.fromkeys(found):  # the same finding once (anyOf may report a name twice)
        section = key.split(".", 1)[0]
        problems.append(Problem(origins.get(section, file), key, reason))
    return problems
