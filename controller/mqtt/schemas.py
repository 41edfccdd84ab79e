"""Validate an MQTT message against the JSON Schema (draft 2020-12) of its topic (``schemas/mqtt/``).

``validate_message(relative_topic, payload_bytes)`` raises ``MessageInvalid`` with a reason naming the topic,
the JSON path and what is wrong. On top of the schemas it refuses, at any depth, a key that would describe
cards still inside the shoe (upcoming cards, shuffle results): PT-2001 r.57 keeps the cards inside for the
whole session and nothing we publish may reveal their order.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from controller.data import data_path
from controller.topics import spec_for

SCHEMA_DIR = data_path("schemas", "mqtt")  # package data (controller/data)
FORBIDDEN_KEY = re.compile(
    r"(?i)(upcoming|next_?cards?|cards?_ahead|shoe_order|deck_order|card_order|shuffle_(result|order|seq|sequence)"
    r"|remaining_(cards|order|sequence)|inside_(order|cards))"
)
MAX_PAYLOAD = 64 * 1024


class MessageInvalid(ValueError):
    pass


@cache
def _registry() -> tuple[Registry, dict[str, dict[str, Any]]]:
    by_name: dict[str, dict[str, Any]] = {}
    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        by_name[path.name] = schema
        resources.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources), by_name


@cache
def validator(schema_file: str) -> Draft202012Validator:
    registry, by_name = _registry()
    if schema_file not in by_name:
        raise MessageInvalid(f"no schema file {schema_file} in {SCHEMA_DIR}")
    return Draft202012Validator(by_name[schema_file], registry=registry)


def schema_files() -> dict[str, dict[str, Any]]:
    return dict(_registry()[1])


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def parse_json(payload: bytes) -> Any:
    """Strict JSON: UTF-8, no NaN/Infinity, bounded size. Raises ``MessageInvalid``."""
    if len(payload) > MAX_PAYLOAD:
        raise MessageInvalid(f"payload too large ({len(payload)} bytes > {MAX_PAYLOAD})")
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MessageInvalid(f"payload is not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except (ValueError, RecursionError) as exc:
        raise MessageInvalid(f"payload is not valid JSON ({exc})") from None


def find_forbidden_key(value: Any, path: str = "$") -> str | None:
    if isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and FORBIDDEN_KEY.search(k):
                return f"{path}.{k}"
            found = find_forbidden_key(v, f"{path}.{k}")
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = find_forbidden_key(v, f"{path}[{i}]")
            if found:
                return found
    return None


# Fields that describe a person (issue 41: an anonymous player's description): a refusal names the field and the
# rule it breaks, never its value (refusals are logged: controller/mqtt/command_refusals.py).
UNQUOTED_FIELDS = frozenset({"anonymous", "description"})


def _describes_a_person(value: Any, path_end: Any, depth: int = 0) -> bool:
    if path_end in UNQUOTED_FIELDS:
        return True
    if isinstance(value, dict) and depth < 4:
        return any(k in UNQUOTED_FIELDS or _describes_a_person(v, None, depth + 1) for k, v in value.items())
    return False


def check(schema_file: str, instance: Any, what: str) -> None:
    """Validate a decoded instance; raise ``MessageInvalid`` naming the first (deepest-path) error."""
    errors = sorted(
        validator(schema_file).iter_errors(instance), key=lambda e: (len(e.absolute_path), e.message)
    )
    if errors:
        err = errors[0]
        where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path)
        end = err.absolute_path[-1] if err.absolute_path else None
        if _describes_a_person(err.instance, end):
            shown = f"does not satisfy its schema's {err.validator!s} (the value is not repeated)"
            raise MessageInvalid(f"{what}: {where}: {shown} (schema {schema_file})")
        raise MessageInvalid(f"{what}: {where}: {err.message[:300]} (schema {schema_file})")
    bad = find_forbidden_key(instance)
    if bad:
        raise MessageInvalid(f"{what}: {bad}: field would reveal cards inside the shoe (PT-2001 r.57)")


def validate_message(relative_topic: str, payload: bytes) -> None:
    """Raise ``MessageInvalid`` unless ``payload`` is a valid message for ``relative_topic``."""
    spec = spec_for(relative_topic)
    if spec is None:
        raise MessageInvalid(f"{relative_topic}: not a topic of the table's tree (docs/mqtt.md)")
    if spec.schema == "status.schema.json":
        # The status topic carries plain text (so the last will is readable by anything), not JSON.
        try:
            instance: Any = payload.decode("utf-8")
        except UnicodeDecodeError:
            raise MessageInvalid(f"{relative_topic}: status payload is not UTF-8 text") from None
    else:
        try:
            instance = parse_json(payload)
        except MessageInvalid as exc:
            raise MessageInvalid(f"{relative_topic}: {exc}") from None
    check(spec.schema, instance, relative_topic)
