"""One declaration per key of the table configuration: its name, type, default, range or allowed values, unit
and a line for the docs (issue 31: each key was kept in four places).

From this table come the JSON Schemas in ``schemas/config/`` (``controller.config.keys_schema``, written and
checked by ``python -m controller.docs_gen``), the defaults ``load_config`` fills in (``default()``), the key
tables of docs/deploy.md §6 and the commented example ``firmware_configs/table.example.toml``
(``controller.config.keys_doc``). Cross-field rules (profile agreement, unique pins, timeouts) stay in code:
``load.py``, ``profile.py`` and the jackpot's own ``JackpotConfig.from_dict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

from controller.actions import BUTTON_ACTIONS, CHIP_SLOT_PREFIX
from controller.gpio.base import OUTPUT_SAFE_VALUES, GpioBackend
from controller.jackpot.config import (
    BP_DENOMINATOR,
    CURRENCY_CODE,
    DEFAULT_CONFIRM_S,
    MAX_CONFIRM_S,
    METER_MAX,
    MIN_SEED_MULTIPLE,
    Mode,
)


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
    description: str = ""  # the schema's description (cross-field rules the schema cannot state)
    note: str = ""  # the example file's comment on the section's header line
    preamble: tuple[str, ...] = ()  # the example file's comment lines above the header

    def key(self, name: str) -> Key:
        for k in self.keys:
            if k.name == name:
                return k
        raise KeyError(f"{self.name}.{name} is not declared")


def _timeout(name: str, lo: int, hi: int, default: int, doc: str, note: str = "") -> Key:
    return Key(name, Kind.INTEGER, doc, default, lo, hi, unit="ms", example=default, note=note)


_LINK_TIMEOUTS = (
    _timeout(
        "ack_timeout_ms",
        10,
        10000,
        200,
        "wait this long for an ACK before retransmitting",
        note="wait this long for an ACK before retransmitting",
    ),
    Key(
        "retries",
        Kind.INTEGER,
        "retransmissions before the link is declared down",
        3,
        0,
        20,
        example=3,
        note="retransmissions before the link is declared down",
    ),
)
_BAUDRATE = Key("baudrate", Kind.CHOICE, "the serial line's rate", 115200, choices=BAUDRATES, example=115200)


def _file(section: str) -> Key:
    return Key(
        "file",
        Kind.PATH,
        "separate firmware file holding (some of) these keys, read as if written in the section",
        commented=f"{section}.toml",
        note="a separate firmware file for a technician (optional)",
    )


TABLE = Section(
    "table",
    "the table",
    required=True,
    keys=(
        Key(
            "id",
            Kind.STRING,
            "table id (MQTT topics, broker account `table-<id>`)",
            REQUIRED,
            pattern=NAME_PATTERN,
            type_doc="string `[A-Za-z0-9_-]`, at most 64",
            example="bj07",
            note="table id: [A-Za-z0-9_-], used in MQTT topics",
        ),
        Key(
            "site",
            Kind.STRING,
            "casino / site id",
            REQUIRED,
            pattern=NAME_PATTERN,
            type_doc="string `[A-Za-z0-9_-]`, at most 64",
            example="lisboa",
            note="casino/site id",
        ),
        Key(
            "profile",
            Kind.STRING,
            "the rule profile this table is approved for: `<profiles_dir>/<profile>.toml`, e.g. `pt-2001`. Its "
            "file is recorded in the integrity manifest; `open_table` without a profile opens with it, and one "
            "naming another profile is refused (`this table is configured for pt-2001 (table.profile)`, "
            "answered and journaled with who). Checked at load against `[shoe]` and the bet limits; published "
            "in `state/software`",
            REQUIRED,
            pattern=PROFILE_PATTERN,
            type_doc="string `[a-z0-9_-]`, at most 64",
            example="pt-2001",
            note="the rule profile this table is approved for (open_table uses it, refuses others)",
        ),
        Key(
            "state_dir",
            Kind.PATH,
            "journal and snapshots (`/var/lib/tablectl` under systemd)",
            REQUIRED,
            example="/var/lib/tablectl",
            note="journal and snapshots (systemd StateDirectory=tablectl)",
        ),
        Key(
            "integrity_manifest",
            Kind.PATH,
            "the recorded digests (§3)",
            "integrity.json",
            default_doc="`integrity.json` beside the config",
            note="default: next to this file",
        ),
        Key(
            "profiles_dir",
            Kind.PATH,
            "where `profile` is read from (at load, by `config record` and by `open_table`)",
            COMPUTED,
            default_doc="the profiles installed with the release (package data `controller/data/profiles`, "
            "the same files as `firmware_configs/profiles`)",
            commented="/etc/tablectl/profiles",
            note="default: the profiles installed with the release (package data)",
        ),
        Key(
            "min_bet",
            Kind.INTEGER,
            "the house's table minimum inside the book's: PT-2001 r.14 \"o mínimo ... fixado para a mesa\". "
            "At `open_table` it replaces the profile's `[bets]` minimum in the profile text the session pins "
            "(`table_limits` is pinned beside the file's digest): every bet check (`bet 500 outside the table "
            "limits 1000..20000 (PT-2001 r.14)`) and `state/table` `limits` (the pit terminal's chips) use it",
            minimum=1,
            unit="minor units",
            default_doc="the profile's",
            commented=500,
            note="optional: the table's limits inside the profile's (PT-2001 r.14, r.37),",
        ),
        Key(
            "max_bet",
            Kind.INTEGER,
            "the house's table maximum (PT-2001 r.37: at most 30 × the minimum): ≥ `min_bet`, at most "
            "`bets.max_multiple` × the minimum and a multiple of it when the profile says `multiple_of_min`; "
            "pinned and used like `min_bet`",
            minimum=1,
            unit="minor units",
            default_doc="the profile's",
            commented=15000,
            note="minor units; every bet check and the pit terminal use them",
        ),
    ),
)

SHOE = Section(
    "shoe",
    "shuffler-shoe link and shoe procedure ([shoe] section, or a separate shoe firmware file)",
    required=True,
    schema_file="shoe.schema.json",
    firmware_file=True,  # reader#shoe
    keys=(
        _file("shoe"),
        Key(
            "port",
            Kind.STRING,
            "`/dev/tablectl-shoe`, a path, or a `/dev/serial/by-id/` glob matching exactly one device",
            REQUIRED,
            example="/dev/tablectl-shoe",
            note="udev name (systemd/99-tablectl.rules), a path, or a by-id glob",
        ),
        _BAUDRATE,
        *_LINK_TIMEOUTS,
        _timeout(
            "silence_timeout_ms",
            100,
            120000,
            3000,
            "no frame at all for this long: link down; must exceed 2 × `heartbeat_interval_ms`",
            note="no frame at all for this long: link down",
        ),
        _timeout(
            "heartbeat_interval_ms",
            50,
            60000,
            1000,
            "how often the shoe is asked for a sign of life",
            note="must be under half of silence_timeout_ms",
        ),
        Key(
            "mode",
            Kind.CHOICE,
            "the shoe this table has; the profile's `shoe.shufflers` must allow it (`continuous`; "
            "`manual`/`automatic` for batch). `open_table` without `shuffler` opens with it; one naming the "
            "other kind is refused (`configured as continuous (shoe.mode)`); the shoe reporting another kind "
            "at identify is the `profile_mismatch` alert",
            REQUIRED,
            choices=tuple(ShoeMode),
            example=ShoeMode.CONTINUOUS,
            note='"continuous" shuffler or "batch" shoe; open_table uses it, refuses the other',
        ),
        Key(
            "decks",
            Kind.INTEGER,
            "must equal the profile's `decks` (PT-2001 r.3)",
            REQUIRED,
            1,
            8,
            example=6,
            note="must be allowed by the rule profile (PT-2001 r.3: 4 or 6)",
        ),
        Key(
            "burn_cards",
            Kind.INTEGER,
            "burned after each shuffle before dealing; must match the profile's `burn.shoe_start`: `none` 0, "
            "`one` 1, `decks` = `decks` (PT-2001 r.10, MO-2004 art.4.1)",
            1,
            0,
            8,
            example=1,
            note="burned before dealing starts (PT-2001 r.10)",
        ),
        Key(
            "burn_each_round",
            Kind.INTEGER,
            "extra burn at the start of each round: > 0 exactly when the profile's `burn.per_round` is true "
            "(MO-2004 art.4.2)",
            0,
            0,
            2,
            example=0,
            note="MO-2004 art.4 options; must match the profile",
        ),
        Key(
            "cut_card",
            Kind.BOOLEAN,
            'batch: true exactly when the profile\'s `shoe.cut_card` is not `"none"` (PT-2001 r.8); '
            "continuous: must be false (r.52)",
            False,
            example=False,
            note="batch shoe only (PT-2001 r.8); no cut card with a shuffler (r.52)",
        ),
        Key(
            "warning_card_from_end",
            Kind.INTEGER,
            "batch: must equal the profile's (PT-2001 r.9: 50; MO-2004 art.2.1.1: 30) and lie inside the "
            "shoe; continuous: must be 0 (r.52); 0 = none",
            0,
            0,
            416,
            unit="cards",
            example=0,
            note="batch shoe only, about 50 (PT-2001 r.9); 0 = none",
        ),
    ),
)

READER = Section(
    "reader",
    "USB card reader ([reader] section, or a separate reader firmware file)",
    schema_file="reader.schema.json",
    firmware_file=True,
    note="a separate USB card reader deals the cards (docs/reader.md)",
    keys=(
        Key(
            "enabled",
            Kind.BOOLEAN,
            "the cards are read by this separate USB reader, not the shoe (docs/reader.md): the service opens "
            "it beside the shoe; its unplugging is the link fault",
            True,
            default_doc="true (an absent `[reader]` is disabled)",
            example=True,
            note="false: the shoe's own reader; an unplugged reader is the link fault",
        ),
        _file("reader"),
        Key(
            "vendor_id",
            Kind.INTEGER,
            "the reader's USB vendor id (`lsusb`; TOML hex `0x0403` works); required when enabled; the same "
            "in `systemd/99-tablectl.rules`",
            0,
            0,
            0xFFFF,
            default_doc="— (required when enabled)",
            example=0x0403,
            hex=True,
            note="PLACEHOLDER: the card reader's USB vendor id (lsusb)",
        ),
        Key(
            "product_id",
            Kind.INTEGER,
            "its USB product id; required when enabled",
            0,
            0,
            0xFFFF,
            default_doc="— (required when enabled)",
            example=0x6015,
            hex=True,
            note="PLACEHOLDER: its product id",
        ),
        Key(
            "serial",
            Kind.STRING,
            "USB serial (`lsusb -v`), to pick one of several identical readers",
            example="READER0001",
            note="PLACEHOLDER: its USB serial (lsusb -v), optional",
        ),
        _timeout(
            "read_timeout_ms",
            10,
            60000,
            1000,
            "how long each interrupt read waits for a report before polling again",
        ),
    ),
)

DISPLAY = Section(
    "display",
    "jackpot display link ([display] section, or a separate display firmware file)",
    schema_file="display.schema.json",
    firmware_file=True,
    keys=(
        Key(
            "enabled",
            Kind.BOOLEAN,
            "the jackpot sign is connected (docs/jackpot.md)",
            True,
            default_doc="true (an absent `[display]` is disabled)",
            example=True,
        ),
        _file("display"),
        Key(
            "port",
            Kind.STRING,
            "the sign's serial device, e.g. `/dev/tablectl-display`; required when enabled",
            "",
            default_doc="— (required when enabled)",
            example="/dev/tablectl-display",
        ),
        _BAUDRATE,
        *(
            Key(k.name, k.kind, k.doc, k.default, k.minimum, k.maximum, unit=k.unit, example=k.example)
            for k in _LINK_TIMEOUTS
        ),
    ),
)

MQTT = Section(
    "mqtt",
    "the table's broker",
    required=True,
    keys=(
        Key(
            "host",
            Kind.STRING,
            "broker host (`localhost` on the table's own Pi)",
            REQUIRED,
            example="localhost",
        ),
        Key(
            "port",
            Kind.INTEGER,
            "the broker's port",
            COMPUTED,
            1,
            65535,
            default_doc="8883 with `[mqtt.tls]`, else 1883",
            example=8883,
        ),
        Key(
            "prefix",
            Kind.STRING,
            "the topics' prefix: no `+`/`#`, no white space, no leading/trailing `/`",
            COMPUTED,
            pattern=TOPIC_PREFIX_PATTERN,
            type_doc="topic",
            default_doc="`casino/<site>/table/<id>`",
            commented="casino/lisboa/table/bj07",
            note="default: casino/<site>/table/<id>",
        ),
        Key(
            "client_id",
            Kind.STRING,
            "a prefix: a random suffix is added at every start, so no broker account can take the "
            "controller's id (docs/security.md)",
            COMPUTED,
            max_length=128,
            default_doc="`tablectl-<site>-<id>`",
            commented="tablectl-lisboa-bj07",
            note="prefix (default tablectl-<site>-<id>); a random suffix is added",
        ),
        Key("keepalive_s", Kind.INTEGER, "MQTT keep-alive", 30, 5, 3600, unit="s", example=30),
        Key(
            "username",
            Kind.STRING,
            "`table-<id>` (the ACL gives the controller role by that name)",
            example="table-bj07",
            note="broker account table-<id> (role from the name: firmware_configs/mosquitto/acl)",
        ),
        Key(
            "password_file",
            Kind.PATH,
            "read at connect time, never kept in memory by the config; needs `username`",
            example="mqtt-password",
            note="/etc/tablectl/mqtt-password (written by systemd/install.sh)",
        ),
    ),
)

MQTT_TLS = Section(
    "mqtt.tls",
    "TLS to the broker (absent: plain MQTT)",
    keys=(
        Key(
            "ca",
            Kind.PATH,
            "CA certificate that signed the broker's",
            REQUIRED,
            example="/etc/mosquitto/certs/ca.crt",
        ),
        Key(
            "cert",
            Kind.PATH,
            "client certificate: `cert` and `key` both or neither",
            commented="/etc/tablectl/client.crt",
            note="client certificate: both cert and key, or neither",
        ),
        Key("key", Kind.PATH, "the client certificate's key", commented="/etc/tablectl/client.key"),
    ),
)

GPIO = Section(
    "gpio",
    "the GPIO board",
    required=True,
    keys=(
        Key(
            "backend",
            Kind.CHOICE,
            '`"rpi"` (RPi.GPIO API; rpi-lgpio on a Pi 5) or `"fake"` (in memory, no pins: a table without a '
            "GPIO board, the demo and tests)",
            REQUIRED,
            choices=tuple(GpioBackend),
            example=GpioBackend.RPI,
            note='"rpi" (RPi.GPIO API; rpi-lgpio on a Pi 5) or "fake"',
        ),
    ),
)

# One [gpio.pins] entry: signal name -> { pin = ..., active_low = ..., debounce_ms = ... }
PIN = Section(
    "gpio.pins.<signal>",
    "one GPIO signal",
    keys=(
        Key(
            "pin",
            Kind.INTEGER,
            "BCM number; 0 and 1 are the HAT ID EEPROM bus; each pin once only",
            REQUIRED,
            2,
            27,
        ),
        Key(
            "active_low",
            Kind.BOOLEAN,
            "true for a contact to ground: the adapter turns the internal pull-up on (pull-down otherwise) "
            "and reports *pressed* as true",
            False,
        ),
        Key(
            "debounce_ms",
            Kind.INTEGER,
            "inputs only: RPi.GPIO's `bouncetime`; 0 disables it",
            20,
            0,
            1000,
            unit="ms",
        ),
    ),
)
# The example's wiring: signal -> (BCM pin, active_low, debounce_ms or None for the default)
EXAMPLE_PINS: tuple[tuple[str, int, bool, int | None], ...] = (
    ("lid_lock", 17, False, None),
    ("warning_light", 27, False, None),
    ("lid_switch", 22, True, 30),
    ("button_hit", 5, True, None),
    ("button_stand", 6, True, None),
    ("button_double", 13, True, None),
    ("button_split", 19, True, None),
    ("button_surrender", 26, True, None),
    ("button_insurance", 16, True, None),
    ("button_even_money", 20, True, None),
    ("button_no_more_bets", 21, True, None),
    ("button_next_round", 12, True, None),
    *((f"{CHIP_SLOT_PREFIX}{n}", pin, True, 50) for n, pin in enumerate((23, 24, 25, 18, 4, 7, 8), start=1)),
)

JACKPOT = Section(
    "jackpot",
    "progressive jackpot ([jackpot] section, PT-2001 r.38-50)",
    schema_file="jackpot.schema.json",
    required_when_enabled=("mode", "bet_value", "increment_bp", "reserve_bp", "seed", "currency"),
    description="Money in integer minor units, shares in basis points. Cross-field rules the schema cannot "
    "state, checked by controller.jackpot.config.JackpotConfig.from_dict: seed >= 10000 x bet_value (PT-2001 "
    "r.44); increment_bp + reserve_bp <= 10000; seed <= correction_ceiling. A correction never sets the meter "
    "below the seed (r.44).",
    note="PT-2001 r.38-50; values fixed by the regulator (r.40)",
    keys=(
        Key(
            "enabled",
            Kind.BOOLEAN,
            "the table offers the jackpot (PT-2001 r.38)",
            REQUIRED,
            default_doc="— (an absent `[jackpot]` is disabled)",
            example=True,
        ),
        Key(
            "mode",
            Kind.CHOICE,
            '`"automatic"`: the slot senses the chip, the display increments automatically, collection '
            'triggered by the dealer (r.41a; needs `chip_slot_N` inputs); `"manual"`: the dealer collects, '
            "leaves a marker and increments by hand (r.41b)",
            "manual",
            choices=tuple(Mode),
            default_doc="— (required when enabled)",
            example=Mode.AUTOMATIC,
            note='"automatic": chip slots sense the chip (r.41a); "manual" (r.41b)',
        ),
        Key(
            "bet_value",
            Kind.INTEGER,
            "the jackpot chip's value, one chip per player per hand (r.47), set by the regulator (r.40)",
            0,
            1,
            METER_MAX,
            unit="minor units",
            default_doc="— (required when enabled)",
            example=100,
            note="one chip per player per hand (r.47), minor units",
        ),
        Key(
            "increment_bp",
            Kind.INTEGER,
            "share of each jackpot bet added to the meter (r.40)",
            0,
            0,
            BP_DENOMINATOR,
            unit="basis points",
            default_doc="— (required when enabled)",
            example=7000,
            note="basis points of each jackpot bet added to the meter",
        ),
        Key(
            "reserve_bp",
            Kind.INTEGER,
            f"share set aside for the next seed (may be 0); `increment_bp + reserve_bp` ≤ {BP_DENOMINATOR}",
            0,
            0,
            BP_DENOMINATOR,
            unit="basis points",
            default_doc="— (required when enabled)",
            example=1000,
            note="basis points set aside for the next seed",
        ),
        Key(
            "seed",
            Kind.INTEGER,
            f"the meter's starting value, at least {MIN_SEED_MULTIPLE:,} × `bet_value` (r.44), refused "
            "otherwise with `jackpot.seed: ... (PT-2001 r.44)`",
            0,
            0,
            METER_MAX,
            unit="minor units",
            default_doc="— (required when enabled)",
            example=1000000,
            note="at least 10,000 x bet_value (r.44)",
        ),
        Key(
            "currency",
            Kind.STRING,
            "ISO 4217 code, e.g. `EUR`",
            "",
            pattern=CURRENCY_CODE.pattern,
            type_doc="`[A-Z]{3}`",
            default_doc="— (required when enabled)",
            example="EUR",
        ),
        Key(
            "correction_ceiling",
            Kind.INTEGER,
            "a supervisor's `jackpot_correct` never sets the meter above this; at least `seed`",
            minimum=0,
            maximum=METER_MAX,
            unit="minor units",
            default_doc=f"{METER_MAX:,} (the sign's digits)",
            example=5000000,
            note="a supervisor's correction never sets the meter above this (minor units)",
        ),
        Key(
            "correction_max_change",
            Kind.INTEGER,
            "one correction changes the meter by at most this; never below the seed (r.44)",
            minimum=1,
            maximum=METER_MAX,
            unit="minor units",
            default_doc="`seed`",
            example=100000,
            note="nor changes it by more than this; never below the seed (r.44)",
        ),
        Key(
            "correction_confirm_s",
            Kind.INTEGER,
            "a second, different supervisor confirms a correction (`jackpot_correct_confirm`) within this",
            minimum=1,
            maximum=MAX_CONFIRM_S,
            unit="s",
            default_doc=str(DEFAULT_CONFIRM_S),
            example=300,
            note="a second supervisor confirms it within this many seconds",
        ),
    ),
)

SUPERVISORS = Section(
    "supervisors",
    "who may sign commands",
    required=True,
    keys=(
        Key(
            "credentials_file",
            Kind.PATH,
            "the supervisors' and technicians' PUBLIC keys and roles, written by `tablectl sign --add-to FILE` "
            "(format in docs/mqtt.md); must exist and be readable when the service starts",
            REQUIRED,
            example="credentials.toml",
            note="supervisor/technician keys: tablectl sign --add-to (docs/mqtt.md)",
        ),
    ),
)

ALERTS = Section(
    "alerts",
    "alerts",
    keys=(
        Key(
            "escalate_after_s",
            Kind.INTEGER,
            "an alert not acknowledged by then goes to the floor supervisor",
            120,
            1,
            86400,
            unit="s",
            example=120,
            note="unacknowledged alert goes to the floor supervisor after this",
        ),
    ),
)

AUDIT = Section(
    "audit",
    "signed checkpoints of the journal (docs/security.md)",
    note="signed checkpoints of the journal (docs/security.md)",
    keys=(
        Key(
            "key_file",
            Kind.PATH,
            "the table's Ed25519 key that signs the journal's checkpoints (PEM, mode 0600); made on first start",
            COMPUTED,
            default_doc="`audit_key.pem` in `table.state_dir`",
            commented="/var/lib/tablectl/audit_key.pem",
            note="default: audit_key.pem in table.state_dir; made on first start",
        ),
        Key(
            "checkpoint_interval_s",
            Kind.INTEGER,
            "a signed checkpoint at least this often while records are written (and at every round end)",
            60,
            1,
            60,
            unit="s",
            example=60,
            note="a signed checkpoint at least this often while records are written",
        ),
    ),
)

JOURNAL = Section(
    "journal",
    "the journal's retention and its disk",
    keys=(
        Key(
            "event_retention_days",
            Kind.INTEGER,
            "published events kept for re-fetch (`cmd/replay`) after the broker's ack",
            30,
            1,
            3650,
            unit="days",
            example=30,
            note="published events kept for re-fetch (cmd/replay); `journal prune --config` keeps them",
        ),
        Key(
            "disk_warn_free_mb",
            Kind.INTEGER,
            "a warning `disk_space` alert below this much free space on the journal's filesystem",
            256,
            0,
            1048576,
            unit="MB",
            example=256,
            note="the journal's filesystem: a warning alert below this much free space",
        ),
        Key(
            "disk_refuse_free_mb",
            Kind.INTEGER,
            "no new round below this (the round in progress finishes); at most `disk_warn_free_mb`",
            64,
            0,
            1048576,
            unit="MB",
            example=64,
            note="and no new round below this (the round in progress finishes)",
        ),
        Key(
            "disk_warn_free_inodes",
            Kind.INTEGER,
            "the same warning for free inodes",
            2000,
            0,
            1000000000,
            unit="inodes",
            example=2000,
            note="the same for free inodes",
        ),
        Key(
            "disk_refuse_free_inodes",
            Kind.INTEGER,
            "no new round below this many free inodes; at most `disk_warn_free_inodes`",
            500,
            0,
            1000000000,
            unit="inodes",
            example=500,
        ),
    ),
)

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
