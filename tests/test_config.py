"""Table configuration: load_config, its schema, cross-field rules and rule-profile agreement.

Every bad configuration must come back as a ConfigError naming the file, the dotted key and the reason.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from controller.config import ConfigError, GpioBackend, ShoeMode, TableConfig, load_config
from controller.config.model import resolve_port

ROOT = Path(__file__).resolve().parents[1]
REAL_PROFILES = ROOT / "firmware_configs" / "profiles"

# The tests' rule profile is a copy of the real PT-2001 profile (the rules engine validates it on load), with
# single lines changed where a test needs another policy.
PT_2001 = (REAL_PROFILES / "pt-2001.toml").read_text()


def profile_variant(**lines: str) -> str:
    """PT-2001's profile with the line starting ``key =`` replaced, e.g. shoe_start='"decks"'."""
    out = []
    for line in PT_2001.splitlines():
        key = line.split("=", 1)[0].strip()
        out.append(f"{key} = {lines[key]}" if key in lines and "=" in line else line)
    return "\n".join(out) + "\n"


def dump_toml(data: dict[str, Any]) -> str:
    """Just enough TOML writing for these tests: scalars, lists of scalars, nested tables."""

    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, int | float):
            return repr(v)
        if isinstance(v, str):
            return '"' + v.replace("\\", "\\\\").replace('"', '\\"') + '"'
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        raise TypeError(v)

    lines: list[str] = []

    def table(d: dict[str, Any], prefix: tuple[str, ...]) -> None:
        scalars = {k: v for k, v in d.items() if not isinstance(v, dict)}
        if prefix and (scalars or not d):
            lines.append(f"[{'.'.join(prefix)}]")
        for k, v in scalars.items():
            lines.append(f"{k} = {value(v)}")
        for k, v in d.items():
            if isinstance(v, dict):
                table(v, (*prefix, k))

    table(data, ())
    return "\n".join(lines) + "\n"


def base_config(tmp: Path) -> dict[str, Any]:
    (tmp / "profiles").mkdir(exist_ok=True)
    (tmp / "profiles" / "test-pt.toml").write_text(PT_2001)
    (tmp / "credentials.toml").write_text("# supervisors\n")
    pins = {
        "lid_lock": {"pin": 17},
        "warning_light": {"pin": 27},
        "lid_switch": {"pin": 22, "active_low": True, "debounce_ms": 30},
        "button_hit": {"pin": 5, "active_low": True},
        "button_stand": {"pin": 6, "active_low": True},
        "chip_slot_1": {"pin": 23, "active_low": True},
        "chip_slot_2": {"pin": 24, "active_low": True},
    }
    return {
        "table": {
            "id": "t1",
            "site": "lab",
            "profile": "test-pt",
            "profiles_dir": "profiles",
            "state_dir": "state",
        },
        "shoe": {"port": "/dev/tablectl-shoe", "mode": "continuous", "decks": 6, "burn_cards": 1},
        "reader": {"enabled": True, "vendor_id": 0x0403, "product_id": 0x6015, "serial": "R1"},
        "display": {"enabled": True, "port": "/dev/tablectl-display"},
        "mqtt": {"host": "127.0.0.1"},
        "gpio": {"backend": "fake", "pins": pins},
        "jackpot": {
            "enabled": True,
            "mode": "automatic",
            "bet_value": 100,
            "increment_bp": 7000,
            "reserve_bp": 1000,
            "seed": 1_000_000,
            "currency": "EUR",
        },
        "supervisors": {"credentials_file": "credentials.toml"},
        "alerts": {"escalate_after_s": 90},
    }


def write(tmp: Path, data: dict[str, Any], name: str = "table.toml") -> Path:
    path = tmp / name
    path.write_text(dump_toml(data))
    return path


def set_key(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = data
    for p in parents:
        node = node.setdefault(p, {})
    if value is DELETE:
        node.pop(last, None)
    else:
        node[last] = value


DELETE = object()


def problems_of(path: Path, **kwargs: Any) -> list[tuple[str, str, str]]:
    with pytest.raises(ConfigError) as info:
        load_config(path, **kwargs)
    return [(p.file, p.key, p.reason) for p in info.value.problems]


# ---- good configurations ----------


def test_base_config_loads_into_frozen_typed_dataclasses(tmp_path: Path) -> None:
    path = write(tmp_path, base_config(tmp_path))
    cfg = load_config(path)
    assert isinstance(cfg, TableConfig)
    assert cfg.table.id == "t1" and cfg.table.profile_path == tmp_path / "profiles" / "test-pt.toml"
    assert cfg.table.state_dir == tmp_path / "state"  # relative to the config file's folder
    assert cfg.table.integrity_manifest == tmp_path / "integrity.json"
    assert cfg.shoe.mode is ShoeMode.CONTINUOUS and cfg.shoe.continuous
    assert (cfg.shoe.baudrate, cfg.shoe.retries, cfg.shoe.burn_cards) == (115200, 3, 1)
    assert cfg.reader.vendor_id == 0x0403 and cfg.reader.serial == "R1"
    assert cfg.mqtt.prefix == "casino/lab/table/t1"  # default prefix casino/<site>/table/<id>
    assert cfg.mqtt.client_id == "tablectl-lab-t1" and cfg.mqtt.port == 1883 and cfg.mqtt.tls is None
    assert cfg.gpio.backend is GpioBackend.FAKE and cfg.gpio.chip_slots == 2
    assert cfg.jackpot.enabled and cfg.jackpot.seed == 1_000_000
    assert cfg.alerts.escalate_after_s == 90
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.table.id = "other"  # type: ignore[misc]


def test_jackpot_section_is_also_validated_by_the_jackpot_package(tmp_path: Path) -> None:
    jackpot_config = pytest.importorskip("controller.jackpot.config")
    cfg = load_config(write(tmp_path, base_config(tmp_path)))
    assert isinstance(cfg.jackpot.parsed, jackpot_config.JackpotConfig)
    assert cfg.jackpot.parsed.bet_value == 100


def test_safe_values_are_fixed_lid_locked_light_on(tmp_path: Path) -> None:
    """PT-2001 r.60/r.51: whatever the file says, a fault leaves the lid locked and the warning light on."""
    cfg = load_config(write(tmp_path, base_config(tmp_path)))
    specs = {p.name: p.spec() for p in cfg.gpio.pins}
    assert specs["lid_lock"].output and specs["lid_lock"].safe_value is True
    assert specs["warning_light"].output and specs["warning_light"].safe_value is True
    assert not specs["lid_switch"].output and specs["lid_switch"].debounce_ms == 30
    assert specs["button_hit"].active_low


def test_tls_defaults_port_8883_and_resolves_paths(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    for name in ("ca.crt", "c.crt", "c.key"):
        (tmp_path / name).write_text("x")
    (tmp_path / "pw").write_text("s3cret-Pa55\n")
    tls = {"ca": "ca.crt", "cert": "c.crt", "key": "c.key"}
    data["mqtt"].update(username="tablectl", password_file="pw", tls=tls)
    cfg = load_config(write(tmp_path, data))
    assert cfg.mqtt.port == 8883
    assert cfg.mqtt.tls is not None and cfg.mqtt.tls.ca == tmp_path / "ca.crt"
    assert cfg.mqtt.password() == "s3cret-Pa55"
    assert "s3cret" not in repr(cfg.mqtt)  # the password itself is never held by the config


def test_missing_optional_sections_take_defaults(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    for section in ("reader", "display", "jackpot", "alerts"):
        del data[section]
    cfg = load_config(write(tmp_path, data))
    assert not cfg.reader.enabled and not cfg.display.enabled and not cfg.jackpot.enabled
    assert cfg.alerts.escalate_after_s == 120


@pytest.mark.parametrize("name", ["demo.toml", "table.example.toml"])
def test_shipped_configs_load(name: str) -> None:
    """The shipped files against the real rule profile (firmware_configs/profiles/pt-2001.toml)."""
    if not (REAL_PROFILES / "pt-2001.toml").exists():
        pytest.skip(
            "firmware_configs/profiles/pt-2001.toml (the rules engine's profile) is not in this tree yet"
        )
    cfg = load_config(ROOT / "firmware_configs" / name, check_files=False)
    assert cfg.table.profile == "pt-2001"
    assert cfg.gpio.chip_slots == 7  # PT-2001 r.2: six or seven seats, one jackpot slot each (r.39)


def test_demo_config_uses_fake_gpio_and_plain_mqtt(tmp_path: Path) -> None:
    """Whatever the profile, demo.toml must be shaped for the demo: fake GPIO, local broker, no TLS."""
    data_text = (ROOT / "firmware_configs" / "demo.toml").read_text()
    (tmp_path / "profiles").mkdir()
    (tmp_path / "profiles" / "pt-2001.toml").write_text(PT_2001)
    path = tmp_path / "demo.toml"
    path.write_text(data_text.replace("[table]\n", '[table]\nprofiles_dir = "profiles"\n', 1))
    cfg = load_config(path, check_files=False)
    assert cfg.gpio.backend is GpioBackend.FAKE
    assert cfg.mqtt.tls is None and cfg.mqtt.host == "127.0.0.1"
    assert cfg.jackpot.seed >= 10_000 * cfg.jackpot.bet_value  # PT-2001 r.44


# ---- bad configurations: file, key, reason ----------

BAD = [
    ("shoe.baudrate", 12345, "shoe.baudrate", "is not one of"),
    ("shoe.baudrat", 9600, "shoe.baudrat", "unknown option"),
    ("table.id", DELETE, "table.id", "missing"),
    ("table.id", "bad id!", "table.id", "does not match"),
    ("shoe.mode", "semi", "shoe.mode", "is not one of"),
    ("shoe.decks", "six", "shoe.decks", "is not of type 'integer'"),
    ("table.min_bet", 500.0, "table.min_bet", "is not of type 'integer'"),  # money is never a float
    ("jackpot.bet_value", 100.0, "jackpot.bet_value", "is not of type 'integer'"),
    ("gpio.pins.lid_lock.active_low", 1, "gpio.pins.lid_lock.active_low", "is not of type 'boolean'"),
    ("gpio.backend", "pigpio", "gpio.backend", "is not one of"),
    ("gpio.pins.button_hti", {"pin": 9}, "gpio.pins.button_hti", "not a GPIO signal name"),
    ("gpio.pins.lid_lock", DELETE, "gpio.pins.lid_lock", "missing"),
    ("gpio.pins.button_hit.pin", 1, "gpio.pins.button_hit.pin", "minimum"),
    ("gpio.pins.button_stand.pin", 5, "gpio.pins.button_stand.pin", "already used by button_hit"),
    ("gpio.pins.lid_lock.debounce_ms", 10, "gpio.pins.lid_lock.debounce_ms", "only inputs"),
    ("gpio.pins.chip_slot_2", DELETE, None, None),  # a valid removal: slot 1 alone is contiguous
    ("gpio.pins.chip_slot_4", {"pin": 25}, "gpio.pins", "without gaps"),
    ("shoe.silence_timeout_ms", 1500, "shoe.silence_timeout_ms", "twice heartbeat_interval_ms"),
    ("table.min_bet", 1000, None, None),
    ("table.max_bet", 500, "table.max_bet", "below table.min_bet"),  # stacks on the previous row's min_bet
    ("mqtt.password_file", "credentials.toml", "mqtt.password_file", "username"),
    ("mqtt.port", 70000, "mqtt.port", "maximum"),
    ("mqtt.prefix", "casino/#", "mqtt.prefix", "does not match"),
    ("reader.vendor_id", DELETE, "reader.vendor_id", "required when enabled"),
    ("display.port", DELETE, "display.port", "required when enabled"),
    ("jackpot.currency", "euro", "jackpot.currency", "does not match"),
    ("jackpot.seed", DELETE, "jackpot.seed", "missing"),
    ("alerts.escalate_after_s", 0, "alerts.escalate_after_s", "minimum"),
    ("supervisors.credentials_file", "nowhere.toml", "supervisors.credentials_file", "file not found"),
]


@pytest.mark.parametrize(("key", "value", "want_key", "want_reason"), BAD, ids=[b[0] for b in BAD])
def test_bad_value_names_file_key_and_reason(
    tmp_path: Path, key: str, value: Any, want_key: str | None, want_reason: str | None
) -> None:
    data = base_config(tmp_path)
    if key == "table.max_bet":
        data["table"]["min_bet"] = 1000
    set_key(data, key, value)
    path = write(tmp_path, data)
    if want_key is None:
        load_config(path)  # the control rows must load
        return
    problems = problems_of(path)
    assert any(f == str(path) and k == want_key and want_reason in r for f, k, r in problems), problems


def test_jackpot_seed_below_ten_thousand_bets_is_refused(tmp_path: Path) -> None:
    """PT-2001 r.44: the starting value is at least 10,000 x the jackpot bet."""
    pytest.importorskip("controller.jackpot.config")
    data = base_config(tmp_path)
    data["jackpot"]["seed"] = 999_999
    problems = problems_of(write(tmp_path, data))
    assert [(k, "PT-2001 r.44" in r) for _, k, r in problems] == [("jackpot.seed", True)]


def test_automatic_jackpot_needs_chip_slots(tmp_path: Path) -> None:
    """PT-2001 r.41a: in automatic mode the slot senses the chip, so the slots must be wired."""
    data = base_config(tmp_path)
    del data["gpio"]["pins"]["chip_slot_1"], data["gpio"]["pins"]["chip_slot_2"]
    problems = problems_of(write(tmp_path, data))
    assert [k for _, k, _ in problems] == ["jackpot.mode"]
    data["jackpot"]["mode"] = "manual"  # PT-2001 r.41b: the dealer collects by hand, no slots needed
    load_config(write(tmp_path, data))


def test_tls_client_cert_without_key_is_refused(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "ca.crt").write_text("x")
    (tmp_path / "c.crt").write_text("x")
    data["mqtt"]["tls"] = {"ca": "ca.crt", "cert": "c.crt"}
    assert [k for _, k, _ in problems_of(write(tmp_path, data))] == ["mqtt.tls"]


def test_missing_tls_files_only_checked_when_asked(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["mqtt"]["tls"] = {"ca": "/nonexistent/ca.crt"}
    path = write(tmp_path, data)
    assert [k for _, k, _ in problems_of(path)] == ["mqtt.tls.ca"]
    load_config(path, check_files=False)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["shoe"]["baudrate"] = 1
    data["gpio"]["pins"]["lid_lock"]["pin"] = 99
    data["mqtt"]["colour"] = "red"
    keys = {k for _, k, _ in problems_of(write(tmp_path, data))}
    assert keys == {"shoe.baudrate", "gpio.pins.lid_lock.pin", "mqtt.colour"}


def test_error_text_is_one_line_per_problem_with_file_and_key(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["shoe"]["decks"] = 0
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: shoe.decks: ")


def test_not_toml_names_the_file_and_the_line(tmp_path: Path) -> None:
    path = tmp_path / "table.toml"
    path.write_text("[table]\nid = \n")
    [(file, key, reason)] = problems_of(path)
    assert file == str(path) and key == "" and "not valid TOML" in reason and "line 2" in reason


def test_missing_file(tmp_path: Path) -> None:
    [(_, _, reason)] = problems_of(tmp_path / "absent.toml")
    assert "file not found" in reason


# ---- rule profile agreement ----------


def test_missing_profile_is_refused(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["table"]["profile"] = "mo-2004"
    [(_, key, reason)] = problems_of(write(tmp_path, data))
    assert key == "table.profile" and "mo-2004.toml" in reason


@pytest.mark.parametrize(
    ("key", "value", "reason"),
    [
        ("decks", 4, "disagrees with rule profile test-pt.toml (decks = 6)"),  # PT-2001 profile: 6 decks
        (
            "burn_cards",
            2,
            "disagrees with rule profile test-pt.toml (burn.shoe_start = 'one')",
        ),  # PT-2001 r.10
        ("burn_each_round", 1, "burn.per_round = false"),  # PT-2001 r.10 burns only at the start
    ],
)
def test_shoe_settings_must_agree_with_the_profile(tmp_path: Path, key: str, value: int, reason: str) -> None:
    data = base_config(tmp_path)
    data["shoe"][key] = value
    [(_, k, r)] = problems_of(write(tmp_path, data))
    assert k == f"shoe.{key}" and reason in r


def test_burn_as_many_cards_as_decks(tmp_path: Path) -> None:
    """MO-2004 art.4.1.1: burn as many cards as decks when the profile says so."""
    data = base_config(tmp_path)
    (tmp_path / "profiles" / "mo-like.toml").write_text(profile_variant(shoe_start='"decks"'))
    data["table"]["profile"] = "mo-like"
    [(_, k, r)] = problems_of(write(tmp_path, data))
    assert k == "shoe.burn_cards" and "'decks'" in r
    data["shoe"]["burn_cards"] = 6
    assert load_config(write(tmp_path, data)).shoe.burn_cards == 6


def test_profile_must_allow_the_shuffler_kind(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "profiles" / "batch-only.toml").write_text(profile_variant(shufflers='["manual"]'))
    data["table"]["profile"] = "batch-only"
    [(_, k, r)] = problems_of(write(tmp_path, data))
    assert k == "shoe.mode" and "continuous shoe is not allowed" in r


def test_continuous_shuffler_has_no_cut_card_nor_warning_card(tmp_path: Path) -> None:
    """PT-2001 r.52: with an automatic shuffler there is no cut and no warning card."""
    data = base_config(tmp_path)
    data["shoe"].update(cut_card=True, warning_card_from_end=50)
    keys = sorted(k for _, k, _ in problems_of(write(tmp_path, data)))
    assert keys == ["shoe.cut_card", "shoe.warning_card_from_end"]
    data["shoe"]["mode"] = "batch"  # PT-2001 r.8/r.9: a batch shoe has both
    load_config(write(tmp_path, data))


def test_batch_shoe_needs_the_profiles_cut_and_warning_card(tmp_path: Path) -> None:
    """PT-2001 r.8 (cut card) and r.9 (warning card about the 50th card from the end) for a batch shoe."""
    data = base_config(tmp_path)
    data["shoe"].update(mode="batch", cut_card=False, warning_card_from_end=30)
    problems = problems_of(write(tmp_path, data))
    assert sorted(k for _, k, _ in problems) == ["shoe.cut_card", "shoe.warning_card_from_end"]


@pytest.mark.parametrize(
    ("max_bet", "reason"),
    [(16000, "above 30 x the minimum 500"), (14900, "not a multiple of the minimum 500")],
)
def test_bet_overrides_follow_the_profile(tmp_path: Path, max_bet: int, reason: str) -> None:
    """PT-2001 r.37: maximum at most 30 x minimum; r.14: bets are multiples of the minimum."""
    data = base_config(tmp_path)
    data["table"].update(min_bet=500, max_bet=max_bet)
    [(_, k, r)] = problems_of(write(tmp_path, data))
    assert k == "table.max_bet" and reason in r
    data["table"]["max_bet"] = 10000
    load_config(write(tmp_path, data))


def test_invalid_profile_is_refused_naming_the_profile(tmp_path: Path) -> None:
    pytest.importorskip("controller.rules.profiles")
    data = base_config(tmp_path)
    (tmp_path / "profiles" / "broken.toml").write_text(PT_2001.replace('book = "PT-2001"\n', ""))
    data["table"]["profile"] = "broken"
    [(file, _, r)] = problems_of(write(tmp_path, data))
    assert file == str(tmp_path / "profiles" / "broken.toml") and "book" in r


def test_shoe_port_glob_must_match_exactly_one_device(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["shoe"]["port"] = str(tmp_path / "by-id" / "usb-FTDI_*-if00-port0")
    cfg = load_config(write(tmp_path, data))
    with pytest.raises(ValueError, match="no device"):
        cfg.shoe.resolve_port()
    (tmp_path / "by-id").mkdir()
    (tmp_path / "by-id" / "usb-FTDI_SHOE0001-if00-port0").touch()
    assert cfg.shoe.resolve_port() == str(tmp_path / "by-id" / "usb-FTDI_SHOE0001-if00-port0")
    (tmp_path / "by-id" / "usb-FTDI_OTHER-if00-port0").touch()
    with pytest.raises(ValueError, match="exactly one"):
        cfg.shoe.resolve_port()
    assert resolve_port("/dev/tablectl-shoe") == "/dev/tablectl-shoe"  # a plain path is used as it is


# ---- separate firmware files ----------


def test_shoe_keys_from_a_separate_firmware_file(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "shoe.toml").write_text("baudrate = 57600\nretries = 5\ndecks = 6\n")
    data["shoe"] = {"file": "shoe.toml", "port": "/dev/ttyUSB0", "mode": "continuous"}
    cfg = load_config(write(tmp_path, data))
    assert (cfg.shoe.baudrate, cfg.shoe.retries, cfg.shoe.decks) == (57600, 5, 6)
    assert cfg.shoe.source == tmp_path / "shoe.toml"
    assert cfg.firmware_files() == {"shoe": tmp_path / "shoe.toml"}


def test_firmware_file_errors_name_the_firmware_file(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "shoe.toml").write_text("[shoe]\nbaudrate = 1234\ndecks = 6\n")
    data["shoe"] = {"file": "shoe.toml", "port": "/dev/ttyUSB0", "mode": "continuous"}
    [(file, key, _)] = problems_of(write(tmp_path, data))
    assert (file, key) == (str(tmp_path / "shoe.toml"), "shoe.baudrate")


def test_key_set_in_both_places_is_refused(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "shoe.toml").write_text("decks = 4\n")
    data["shoe"]["file"] = "shoe.toml"
    [(_, key, reason)] = problems_of(write(tmp_path, data))
    assert key == "shoe.decks" and "one place only" in reason


def test_missing_firmware_file(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    data["display"]["file"] = "display.toml"
    [(_, key, reason)] = problems_of(write(tmp_path, data))
    assert key == "display.file" and "file not found" in reason


# ---- unknown options: a key tablectl does not read is an error (as Klipper's configfile) ----------


def test_every_unknown_option_is_its_own_problem_with_a_suggestion(tmp_path: Path) -> None:
    """Attacks: a typo'd key, a key in the wrong section, an extra section, an unknown pin name, an extra key
    in a pin, in [mqtt.tls] and in a section the code does not read at all: each one Problem naming the
    file, section.key and "unknown option", with "did you mean" where a known name is close."""
    data = base_config(tmp_path)
    (tmp_path / "ca.crt").write_text("x")
    data["shoe"]["retrys"] = 3  # typo
    data["shoe"]["ack_timout_ms"] = 200  # a second typo in the same section: a second problem
    data["table"]["decks"] = 6  # right name, wrong section
    data["shoe_procedure"] = {"burn": 1}  # a section that does not exist
    data["gpio"]["pins"]["button_hti"] = {"pin": 9}  # unknown pin name
    data["gpio"]["pins"]["button_hit"]["pull_up"] = True
    data["mqtt"]["tls"] = {"ca": "ca.crt", "verify": False}  # would a reader think TLS checks were off?
    problems = problems_of(write(tmp_path, data), check_files=False)
    by_key = {k: r for f, k, r in problems if f == str(tmp_path / "table.toml")}
    assert set(by_key) == {
        "shoe.retrys",
        "shoe.ack_timout_ms",
        "table.decks",
        "shoe_procedure",
        "gpio.pins.button_hti",
        "gpio.pins.button_hit.pull_up",
        "mqtt.tls.verify",
    }, problems
    assert all("unknown option" in r or "unknown section" in r for r in by_key.values()), by_key
    assert "did you mean shoe.retries?" in by_key["shoe.retrys"]
    assert "did you mean shoe.ack_timeout_ms?" in by_key["shoe.ack_timout_ms"]
    assert "did you mean shoe.decks? (it belongs in [shoe])" in by_key["table.decks"]
    assert "did you mean gpio.pins.button_hit?" in by_key["gpio.pins.button_hti"]
    assert "did you mean" not in by_key["mqtt.tls.verify"]  # nothing close: no guess


def test_unknown_option_in_a_firmware_file_names_that_file(tmp_path: Path) -> None:
    data = base_config(tmp_path)
    (tmp_path / "shoe.toml").write_text("[shoe]\ndecks = 6\nburn_card = 1\n\n[reader]\nenabled = false\n")
    data["shoe"] = {"file": "shoe.toml", "port": "/dev/ttyUSB0", "mode": "continuous"}
    problems = problems_of(write(tmp_path, data))
    fw = str(tmp_path / "shoe.toml")
    assert {(f, k) for f, k, _ in problems} == {(fw, "shoe.burn_card"), (fw, "reader")}, problems
    assert all("unknown option" in r for _, _, r in problems)
    assert any("did you mean shoe.burn_cards?" in r for _, _, r in problems)


@pytest.mark.parametrize("path", sorted((ROOT / "firmware_configs").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_configurations_have_no_unknown_option(path: Path) -> None:
    """Every table configuration shipped (the example, the demo's) loads; the credentials file is not one."""
    if path.name.startswith("credentials"):
        pytest.skip("a credentials file, not a table configuration")
    load_config(path, check_files=False)


# ---- fuzz: bad input is a ConfigError, never a crash ----------

toml_leaves = st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12)
toml_values = (
    toml_leaves
    | st.lists(toml_leaves, max_size=3)
    | st.dictionaries(st.sampled_from(["pin", "x", "enabled", "ca"]), toml_leaves, max_size=3)
    | st.just(DELETE)
)


def _leaf_paths(d: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for k, v in d.items():
        p = f"{prefix}{k}"
        out += _leaf_paths(v, p + ".") if isinstance(v, dict) else [p]
    return out


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_mutation_loads_or_is_a_config_error(tmp_path: Path, data: st.DataObject) -> None:
    config = base_config(tmp_path)
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from([*_leaf_paths(config), "shoe.extra", "gpio.pins.chip_slot_3"]))
        value = data.draw(toml_values)
        set_key(config, key, value if value is DELETE else copy.deepcopy(value))
    path = write(tmp_path, config)
    try:
        load_config(path)
    except ConfigError as exc:
        assert exc.problems and all(p.file and p.reason for p in exc.problems)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(blob=st.binary(max_size=200))
def test_arbitrary_bytes_are_a_config_error(tmp_path: Path, blob: bytes) -> None:
    path = tmp_path / "table.toml"
    path.write_bytes(blob)
    with pytest.raises(ConfigError):
        load_config(path)
