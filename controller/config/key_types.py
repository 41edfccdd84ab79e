"""The vocabulary of the configuration's key declarations (``controller.config.keys``): a key's kind, its
default markers, a key and a section, and the name patterns and signal names the declarations use."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from controller.actions import BUTTON_ACTIONS, CHIP_SLOT_PREFIX
from controller.gpio.base import OUTPUT_SAFE_VALUES


class ShoeMode(StrEnum):
    CONTINUOUS = "continuous"  # cards stay inside for the whole session (PT-2001 r.57)
    BATCH = "batch"  # a shoe is shuffled, dealt to the cut card, reshuffled


class Kind(StrEnum):
    """A key's type: how the schema checks it and the docs name it."""

    STRING = "string"
    PATH = "path"  # a string; relative paths are relative to the configuration file's folder
    INTEGER = "int"
    BOOLEAN = "bool"
    CHOICE = "choice"  # one of ``choices``


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


class _Computed:
    def __repr__(self) -> str:
        return "COMPUTED"


REQUIRED = _Required()  # no default: the key must be set (when its section is)
COMPUTED = (
    _Computed()
)  # the default is worked out at load (``default_doc`` says how); ``default()`` refuses it
UNSET = None  # optional without a default: absent stays absent (None in the model)

# Patterns are matched with re.search: ``\Z`` (not ``$``) so a trailing newline is not part of a valid name.
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z"
PROFILE_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,63}\Z"
TOPIC_PREFIX_PATTERN = r"^[^/+#\s][^+#\s]*[^/+#\s]\Z|^[^/+#\s]\Z"
CHIP_SLOT_PATTERN = rf"^{CHIP_SLOT_PREFIX}[1-9][0-9]?\Z"
BAUDRATES = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
REQUIRED_SIGNALS = ("lid_lock", "warning_light", "lid_switch")
INPUT_SIGNALS = ("lid_switch", *BUTTON_ACTIONS)
SIGNALS = (*OUTPUT_SAFE_VALUES, *INPUT_SIGNALS)  # the names [gpio.pins] takes, besides chip_slot_N


@dataclass(frozen=True, slots=True)
class Key:
    name: str
    kind: Kind
    doc: str  # the docs' one line: what the key does
    default: object = UNSET  # a value, REQUIRED, COMPUTED or UNSET
    minimum: int | None = None
    maximum: int | None = None
    choices: tuple[object, ...] = ()
    pattern: str | None = None
    max_length: int | None = None
    unit: str = ""
    default_doc: str = ""  # the docs' default column when it is not the value itself
    type_doc: str = ""  # the docs' type column when the kind and range do not say it well
    example: object = None  # the example file's value; None: the line is commented out
    commented: object = None  # value shown on a commented-out example line (default: the default)
    note: str = ""  # the example file's trailing comment
    hex: bool = False  # the example writes the value in hex (USB ids)

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True, slots=True)
class Section:
    name: str  # dotted: "mqtt.tls" is the [mqtt.tls] sub-table
    title: str  # what the section is (schema title, docs)
    keys: tuple[Key, ...]
    required: bool = False  # the file must have it
    schema_file: str = ""  # a schema of its own in schemas/config/ (else inside table.schema.json)
    firmware_file: bool = False  # takes ``file = ...``: a separate firmware file holding its keys
    required_when_enabled: tuple[str, ...] = ()  # with ``enabled = true`` these keys are required
    # (key K, names): with ``enabled = true`` and K absent these keys are required too (the jackpot's own meter
    # without a link)
    required_when_enabled_without: tuple[str, tuple[str, ...]] | None = None
    description: str = ""  # the schema's description (cross-field rules the schema cannot state)
    note: str = ""  # the example file's comment on the section's header line
    preamble: tuple[str, ...] = ()  # the example file's comment lines above the header

    def key(self, name: str) -> Key:
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(f"{self.name}.{name} is not declared")
