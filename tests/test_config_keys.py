"""One declaration per configuration key (controller/config/keys.py, issue 31): the schemas, the loader's
defaults, the docs' key tables and the example file all come from it, so none can drift from another."""

from __future__ import annotations

import dataclasses
import tomllib
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from controller.config import load_config
from controller.config.keys import (
    BY_NAME,
    COMPUTED,
    PIN,
    REQUIRED,
    SECTIONS,
    UNSET,
    Key,
    Kind,
    Section,
    default,
)
from controller.config.keys_doc import (
    DEPLOY_DOC,
    EXAMPLE,
    TABLE_DOCS,
    documented_sections,
    render_example,
    render_tables,
)
from controller.config.keys_schema import key_schema, render, schemas
from tests.test_config import base_config, problems_of, set_key, write

ROOT = Path(__file__).resolve().parents[1]
NEWLINE = "@NEWLINE@"  # written as the TOML escape \n
ALL_KEYS = [(s, k) for s in (*SECTIONS, PIN) for k in s.keys]
IDS = [f"{s.name}.{k.name}" for s, k in ALL_KEYS]


def _dotted(section: Section, key: Key, signal: str = "lid_switch") -> str:
    return f"{section.name.replace('<signal>', signal)}.{key.name}"


@pytest.mark.parametrize("name", sorted(schemas()))
def test_the_shipped_schemas_are_the_generated_ones(name: str) -> None:
    assert (ROOT / "schemas" / "config" / name).read_text(encoding="utf-8") == render(name), (
        "run: python -m controller.docs_gen"
    )


def test_the_shipped_example_and_key_tables_are_the_generated_ones() -> None:
    assert (ROOT / EXAMPLE).read_text(encoding="utf-8") == render_example(), (
        "run: python -m controller.docs_gen"
    )
    for doc in TABLE_DOCS:
        assert (ROOT / doc).read_text(encoding="utf-8") == render_tables(ROOT, doc), f"{doc}: run docs_gen"


def test_every_section_has_its_key_table_in_the_docs() -> None:
    text = (ROOT / DEPLOY_DOC).read_text(encoding="utf-8")
    assert documented_sections(text) == set(BY_NAME)


def test_every_key_is_in_the_example_set_or_commented_out() -> None:
    text = (ROOT / EXAMPLE).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    for section in SECTIONS:
        node = data
        for part in section.name.split("."):
            node = node[part]
        for k in section.keys:
            assert k.name in node or f"# {k.name} = " in text, f"{section.name}.{k.name}"
    for k in PIN.keys:
        assert any(k.name in pin for pin in data["gpio"]["pins"].values()), k.name


@pytest.mark.parametrize(("section", "key"), ALL_KEYS, ids=IDS)
def test_a_declared_default_is_inside_its_own_range(section: Section, key: Key) -> None:
    if key.default in (REQUIRED, COMPUTED, UNSET) or "required when enabled" in key.default_doc:
        return  # no value to check (a disabled section holds placeholders the schema never sees)
    assert list(Draft202012Validator(key_schema(key)).iter_errors(key.default)) == []


@pytest.mark.parametrize(("section", "key"), ALL_KEYS, ids=IDS)
def test_an_example_value_is_inside_its_range(section: Section, key: Key) -> None:
    for value in (key.example, key.commented):
        if value is not None:
            value = value.value if hasattr(value, "value") else value
            assert list(Draft202012Validator(key_schema(key)).iter_errors(value)) == []


def test_an_absent_key_loads_as_its_declared_default(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    for name in ("alerts", "audit", "journal"):
        data.pop(name, None)
    for section in (BY_NAME["shoe"], BY_NAME["reader"], BY_NAME["display"], BY_NAME["mqtt"]):
        for k in section.keys:
            if not k.required and k.default not in (COMPUTED, UNSET) and k.name != "enabled":
                if section.name == "reader" and k.name in ("vendor_id", "product_id"):
                    continue  # required when enabled
                if section.name == "display" and k.name == "port":
                    continue
                data[section.name].pop(k.name, None)
    del data["gpio"]["pins"]["lid_switch"]["active_low"], data["gpio"]["pins"]["lid_switch"]["debounce_ms"]
    cfg = load_config(write(tmp_path, data))
    checked = 0
    for name in ("shoe", "reader", "display", "mqtt", "alerts", "audit", "journal"):
        got = getattr(cfg, name)
        for k in BY_NAME[name].keys:
            if k.required or k.default in (COMPUTED, UNSET) or (name in data and k.name in data[name]):
                continue
            assert getattr(got, k.name) == default(name, k.name), f"{name}.{k.name}"
            checked += 1
    pin = cfg.gpio.pin("lid_switch")
    assert (pin.active_low, pin.debounce_ms) == (
        default(PIN.name, "active_low"),
        default(PIN.name, "debounce_ms"),
    )
    assert checked >= 20


def _bad_values(key: Key) -> list[tuple[Any, str]]:
    out: list[tuple[Any, str]] = []
    if key.kind is Kind.INTEGER:
        out.append(("7", "is not of type 'integer'"))
        if key.maximum is not None:
            out.append((key.maximum + 1, "maximum"))
        if key.minimum is not None:
            out.append((key.minimum - 1, "minimum"))
    elif key.kind is Kind.BOOLEAN:
        out.append((1, "is not of type 'boolean'"))
    elif key.kind is Kind.CHOICE:
        out.append(("none of them", "is not one of"))
    elif key.pattern is not None:
        out.append(("x y", "does not match"))
    return out


CASES = [(s, k, v, r) for s, k in ALL_KEYS if "." not in s.name or s is PIN for v, r in _bad_values(k)]


@pytest.mark.parametrize(
    ("section", "key", "value", "reason"), CASES, ids=[f"{_dotted(s, k)}={v!r}" for s, k, v, _ in CASES]
)
def test_a_value_outside_the_declaration_is_refused_naming_the_key(
    tmp_path: Path, section: Section, key: Key, value: Any, reason: str
) -> None:
    data = base_config(tmp_path)
    dotted = _dotted(section, key)
    set_key(data, dotted, value)
    problems = problems_of(write(tmp_path, data))
    assert any(k == dotted and reason in r for _, k, r in problems), problems


@pytest.mark.parametrize(
    ("dotted", "value"),
    [("table.id", "bj07"), ("table.site", "lisboa"), ("table.profile", "pt-2001"), ("mqtt.prefix", "a/b")],
)
def test_a_name_with_a_trailing_newline_is_refused(tmp_path: Path, dotted: str, value: str) -> None:
    """Strings from outside are hostile: ``$`` would let a newline end a table id that goes into topics."""
    data = base_config(tmp_path)
    set_key(data, dotted, value + NEWLINE)
    path = write(tmp_path, data)
    path.write_text(path.read_text().replace(NEWLINE, "\\n"))  # a TOML escape: the value ends in a newline
    problems = problems_of(path)
    assert any(k == dotted and "does not match" in r for _, k, r in problems), problems


def test_a_chip_slot_name_with_a_trailing_newline_is_not_a_signal(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["gpio"]["pins"]["chip_slot_3" + NEWLINE] = {"pin": 25}
    path = write(tmp_path, data)
    path.write_text(path.read_text().replace(f"chip_slot_3{NEWLINE}", '"chip_slot_3\\n"'))
    problems = problems_of(path)
    assert any("not a GPIO signal name" in r for _, _, r in problems), problems


def test_the_model_holds_every_declared_key() -> None:
    """A key declared but not in the model would load and do nothing (docs/deploy.md: every key does something)."""
    from controller.config import model

    fields = {
        "shoe": model.ShoeConfig,
        "reader": model.ReaderConfig,
        "display": model.DisplayConfig,
        "mqtt": model.MqttConfig,
        "mqtt.tls": model.TlsConfig,
        "alerts": model.AlertsConfig,
        "audit": model.AuditConfig,
        "journal": model.JournalConfig,
        "supervisors": model.SupervisorsConfig,
        "jackpot": model.JackpotSection,
        PIN.name: model.PinConfig,
    }
    for name, cls in fields.items():
        have = {f.name for f in dataclasses.fields(cls)}
        for k in BY_NAME[name].keys:
            assert k.name in have or k.name == "file", f"{name}.{k.name} is not in {cls.__name__}"
    table = {f.name for f in dataclasses.fields(model.TableSection)}
    assert {k.name for k in BY_NAME["table"].keys} - table == {"profiles_dir"}  # read into profile_path


def test_the_jackpot_reads_the_declared_keys() -> None:
    """The jackpot's own validation (JackpotConfig.from_dict, below the configuration) takes the same keys."""
    from controller.jackpot.config import CORRECTION_KEYS, KEYS, LINK_KEYS

    assert [k.name for k in BY_NAME["jackpot"].keys] == [*KEYS, *CORRECTION_KEYS, *LINK_KEYS]
