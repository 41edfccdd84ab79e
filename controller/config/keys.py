"""One declaration per key of the table configuration: its name, type, default, range or allowed values, unit
and a line for the docs (issue 31: each key was kept in four places).

From this table come the JSON Schemas in ``schemas/config/`` (``controller.config.keys_schema``, written and
checked by ``python -m controller.docs_gen``), the defaults ``load_config`` fills in (``default()``), the key
tables of docs/deploy.md §6 and the commented example ``firmware_configs/table.example.toml``
(``controller.config.keys_doc``). Cross-field rules (profile agreement, unique pins, timeouts) stay in code:
``load.py``, ``profile.py`` and the jackpot's own ``JackpotConfig.from_dict``.

The declarations are in ``keys_devices.py`` (the table and its devices) and ``keys_services.py`` (broker,
jackpot, supervisors, alerts, audit, journal), their vocabulary in ``key_types.py``; this module puts them in
the file's order and answers ``default(section, key)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from controller.config.key_types import (
    CHIP_SLOT_PATTERN,
    COMPUTED,
    INPUT_SIGNALS,
    NAME_PATTERN,
    PROFILE_PATTERN,
    REQUIRED,
    REQUIRED_SIGNALS,
    SIGNALS,
    TOPIC_PREFIX_PATTERN,
    UNSET,
    Key,
    Kind,
    Section,
    ShoeMode,
)
from controller.config.keys_devices import DISPLAY, EXAMPLE_PINS, GPIO, PIN, READER, SHOE, TABLE
from controller.config.keys_services import ALERTS, AUDIT, JACKPOT, JOURNAL, MQTT, MQTT_TLS, SUPERVISORS

__all__ = [
    "ALERTS",
    "AUDIT",
    "BY_NAME",
    "CHIP_SLOT_PATTERN",
    "COMPUTED",
    "DISPLAY",
    "EXAMPLE_PINS",
    "GPIO",
    "INPUT_SIGNALS",
    "JACKPOT",
    "JOURNAL",
    "MQTT",
    "MQTT_TLS",
    "NAME_PATTERN",
    "PIN",
    "PROFILE_PATTERN",
    "READER",
    "REQUIRED",
    "REQUIRED_SIGNALS",
    "SECTIONS",
    "SHOE",
    "SIGNALS",
    "SUPERVISORS",
    "TABLE",
    "TOPIC_PREFIX_PATTERN",
    "UNSET",
    "Key",
    "Kind",
    "Section",
    "ShoeMode",
    "bool_default",
    "default",
    "int_default",
]

# In the file's order (the example's and the docs'); [gpio.pins] is declared by PIN and the signal names.
SECTIONS: tuple[Section, ...] = (
    TABLE,
    SHOE,
    READER,
    DISPLAY,
    MQTT,
    MQTT_TLS,
    GPIO,
    JACKPOT,
    SUPERVISORS,
    ALERTS,
    AUDIT,
    JOURNAL,
)
BY_NAME: Mapping[str, Section] = MappingProxyType({s.name: s for s in (*SECTIONS, PIN)})


def default(section: str, key: str) -> object:
    """The declared default of ``section.key``; KeyError for a required or computed one (the loader works
    those out itself)."""
    value = BY_NAME[section].key(key).default
    if value is REQUIRED or value is COMPUTED:
        raise KeyError(f"{section}.{key} has no fixed default ({value!r})")
    return value


def int_default(section: str, key: str) -> int:
    value = default(section, key)
    assert isinstance(value, int) and not isinstance(value, bool), f"{section}.{key}"
    return value


def bool_default(section: str, key: str) -> bool:
    value = default(section, key)
    assert isinstance(value, bool), f"{section}.{key}"
    return value
