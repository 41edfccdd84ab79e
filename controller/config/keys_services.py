"""The declarations of the service's keys: ``[mqtt]``, ``[mqtt.tls]``, ``[jackpot]``, ``[supervisors]``,
``[alerts]``, ``[audit]`` and ``[journal]`` (the vocabulary: ``controller.config.key_types``)."""

from __future__ import annotations

from controller.config.key_types import COMPUTED, REQUIRED, TOPIC_PREFIX_PATTERN, Key, Kind, Section
from controller.jackpot.config import (
    BP_DENOMINATOR,
    CURRENCY_CODE,
    DEFAULT_CONFIRM_S,
    MAX_CONFIRM_S,
    METER_MAX,
    MIN_SEED_MULTIPLE,
    Mode,
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
