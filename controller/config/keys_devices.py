"""The declarations of the table's own and its devices' keys: ``[table]``, ``[shoe]``, ``[reader]``,
``[display]``, ``[gpio]`` and each ``[gpio.pins]`` entry (the vocabulary: ``controller.config.key_types``)."""

from __future__ import annotations

from controller.actions import CHIP_SLOT_PREFIX
from controller.config.key_types import (
    BAUDRATES,
    COMPUTED,
    NAME_PATTERN,
    PROFILE_PATTERN,
    REQUIRED,
    UNSET,
    Key,
    Kind,
    Section,
    ShoeMode,
)
from controller.gpio.base import GpioBackend
from controller.jackpot.config import CURRENCY_CODE


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
        Key(
            "currency",
            Kind.STRING,
            "the currency of every amount the table handles (bets, limits, results; ISO 4217, e.g. `EUR`): "
            "pinned at `open_table` and published in `events/session` `opened`, so every report of the floor "
            "writes the table's money in it. Must equal `jackpot.currency` when both are set",
            UNSET,
            pattern=CURRENCY_CODE.pattern,
            type_doc="`[A-Z]{3}`",
            default_doc="`jackpot.currency` when the jackpot is enabled, else none",
            commented="EUR",
            note="ISO 4217: what the table's amounts are in (the floor's reports say it)",
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
