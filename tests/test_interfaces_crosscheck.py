"""The documented interfaces do what the docs say: README's `tablectl` subcommands, every docs/examples file
through the command its doc names, the emulator's control channel, and docs/mqtt.md against schemas/mqtt/ and
what the table core actually publishes and accepts.

Real parts only: the CLI runs as a subprocess, the emulator on a real pty, the table core through its harness."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from controller.mqtt.auth import ROLE_ACTIONS
from controller.mqtt.schemas import validate_message
from controller.table.messages import Publish, messages
from controller.topics import SPECS
from tablebench.table_testing import Harness

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MQTT_DOC = (DOCS / "mqtt.md").read_text()
SCHEMAS = ROOT / "schemas" / "mqtt"
ROUNDS = sorted((DOCS / "examples" / "rounds").glob("*.json"))
SCENARIOS = sorted((DOCS / "examples" / "scenarios").glob("*"))


def tablectl(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "controller.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        env={**os.environ, **(env or {})},
        timeout=120,
    )


def schema(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / name).read_text())


def table_rows(doc: str, start: str, stop: str) -> list[list[str]]:
    """The body rows of the first markdown table between the lines starting with ``start`` and ``stop``."""
    section = doc[doc.index(start) : doc.index(stop, doc.index(start))]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines()]
    return [r for r in rows if len(r) > 1 and not set(r[0]) <= {"-"} and r[0] != "action"]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# ---------------------------------------------------------------------------------------------- the CLI
README_COMMANDS = sorted(
    set(re.findall(r"^\| `tablectl ([a-z-]+)", (ROOT / "README.md").read_text(), re.M))
    | {"alerts"}  # listed in the same row as `terminal`
)


def test_readme_lists_every_subcommand_and_nothing_else() -> None:
    proc = tablectl("--help")
    assert proc.returncode == 0, proc.stderr
    listed = set(re.findall(r"^    ([a-z][a-z-]+)\s", proc.stdout, re.M))
    assert listed == set(README_COMMANDS)


@pytest.mark.parametrize("command", README_COMMANDS)
def test_every_subcommand_has_help(command: str) -> None:
    proc = tablectl(command, "--help")
    assert proc.returncode == 0 and proc.stdout.startswith(f"usage: tablectl {command}"), proc.stderr
    assert "Traceback" not in proc.stderr


JACKPOT_MATH_FULL = ("jackpot-math", "--decks", "6", "--bet-value", "100", "--increment-bp", "5000")
JACKPOT_MATH_FULL = (
    *JACKPOT_MATH_FULL,
    "--reserve-bp",
    "500",
    "--seed",
    "1000000",
    "--meter",
    "2500000",
    "--json",
)
DOCUMENTED_RUNS = [
    ("rtp", "--decks", "6"),  # README, docs/profiles.md
    ("rtp", "--decks", "6", "--json"),
    ("jackpot-math", "--profile", "pt-2001"),  # README, docs/jackpot.md
    JACKPOT_MATH_FULL,  # docs/jackpot.md
    ("bench", "show"),  # docs/bench.md
    ("config", "check", "--no-file-check", "firmware_configs/table.example.toml"),  # docs/deploy.md
    ("config", "check", "--no-file-check", "firmware_configs/demo.toml"),
]


@pytest.mark.parametrize("args", DOCUMENTED_RUNS, ids=" ".join)
def test_documented_invocations_exit_0(args: tuple[str, ...]) -> None:
    proc = tablectl(*args)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() and "Traceback" not in proc.stderr


def test_rtp_matches_docs_profiles() -> None:
    """docs/profiles.md: insurance RTP 288/311 = 92.60 % at six decks (`tablectl rtp --decks 6`)."""
    out = json.loads(tablectl("rtp", "--decks", "6", "--json").stdout)
    assert out["insurance"]["rtp"] == "288/311" and out["insurance"]["percent"] == "92.60"


def test_config_check_prints_the_documented_digest_lines() -> None:
    """docs/deploy.md: one "sha256  role  path" line per file + combined."""
    proc = tablectl("config", "check", "--no-file-check", "firmware_configs/table.example.toml")
    lines = proc.stdout.strip().splitlines()
    assert re.match(r"^[0-9a-f]{64}\s+config\s+\S+table\.example\.toml$", lines[0]), lines
    assert re.match(r"^[0-9a-f]{64}\s+combined$", lines[-1]), lines


def test_sign_reproduces_the_worked_example_in_mqtt_md() -> None:
    """docs/mqtt.md "Signed commands": the documented `tablectl sign` line prints the documented message."""
    block = re.search(r"\$ (tablectl sign .*?\\\n\s+.*?)\n(\{.*\})\n", MQTT_DOC)
    assert block is not None
    argv = block.group(1).replace("\\\n", " ").split()[1:]
    argv = [a.strip("'") for a in argv]
    assert argv[-2] == "<<<" and "--pin" not in argv  # the PIN on standard input, never on the command line
    argv, pin = argv[:-2], argv[-1]
    proc = tablectl(*argv, stdin=pin + "\n")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == json.loads(block.group(2))
    # the PIN from the environment (the documented alternative) gives the same signature
    no_pin = [a for i, a in enumerate(argv) if a != "--pin-file" and (i == 0 or argv[i - 1] != "--pin-file")]
    proc = tablectl(*no_pin, env={"TABLECTL_PIN": "123456"})
    assert json.loads(proc.stdout)["sig"] == json.loads(block.group(2))["sig"]
    # a wrong PIN does not open the key file: nothing is signed
    proc = tablectl(*no_pin, env={"TABLECTL_PIN": "123457"})
    assert proc.returncode == 1 and "wrong PIN" in proc.stderr and not proc.stdout


# --------------------------------------------------------------------------- docs/examples: rounds
@pytest.mark.parametrize("path", ROUNDS, ids=lambda p: p.stem)
def test_example_round_replays_with_exit_0_and_its_expect_block(path: Path) -> None:
    """docs/rounds.md: `tablectl replay FILE` (and `-` for stdin) exits 0 and gives the `expect` block."""
    doc = json.loads(path.read_text())
    by_file, by_stdin = (
        tablectl("replay", str(path), "--pretty"),
        tablectl("replay", "--json", "-", stdin=path.read_text()),
    )
    assert by_file.returncode == 0 and by_stdin.returncode == 0, by_file.stderr + by_stdin.stderr
    out = json.loads(by_file.stdout)
    assert out == json.loads(by_stdin.stdout)
    s, want = out["settlement"], doc["expect"]
    for key in ("total_net", "seat_nets", "dealer_cards"):
        assert s[key] == want[key], key
    assert [{k: h[k] for k in w} for h, w in zip(s["hands"], want["hands"], strict=True)] == want["hands"]
    assert [e["rule"] for e in out["dealer_errors"]] == want["dealer_error_rules"]


def test_rounds_md_json_blocks_replay() -> None:
    """The format example and the worked example in docs/rounds.md replay as documented."""
    text = (DOCS / "rounds.md").read_text()
    blocks = re.findall(r"```json\n(.*?)```", text, re.S)
    fmt = next(b for b in blocks if '"format": 1' in b)
    assert tablectl("replay", "--json", "-", stdin=fmt).returncode == 0
    worked = next(b for b in blocks if '"TS", "TH", "6D"' in b)
    out = json.loads(tablectl("replay", "--json", "-", stdin=worked).stdout)["settlement"]
    assert out["hands"][0]["outcome"] == "win" and out["hands"][0]["net"] == 1000
    assert out["dealer_cards"] == ["TH", "5C", "9S"] and out["dealer_total"] == 24


def test_replay_exit_codes_as_documented() -> None:
    """docs/rounds.md: 1 for an invalid round (JSON with valid false), 2 for an unreadable file."""
    bad = tablectl(
        "replay",
        "--json",
        "-",
        stdin='{"profile":"pt-2001","bets":[{"seat":1,"amount":1000}],"cards":["ZZ"]}',
    )
    assert bad.returncode == 1 and json.loads(bad.stdout)["valid"] is False
    assert tablectl("replay", "-", stdin="not json").returncode == 2
    assert tablectl("replay", str(ROOT / "no-such-round.json")).returncode == 2


# ------------------------------------------------------------------------ docs/examples: scenarios
@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_example_scenario_runs_in_emulate_shoe(path: Path, sig: signal.Signals, tmp_path: Path) -> None:
    """docs/emulator.md: `tablectl emulate-shoe --scenario FILE` prints one ready line, answers the control
    socket, and SIGINT/SIGTERM stop it with status 0, the symlink and socket removed (a control client still
    connected must not make it print a traceback)."""
    link = tmp_path / "shoe"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "controller.cli",
            "emulate-shoe",
            "--scenario",
            str(path),
            "--link",
            str(link),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        ready = json.loads(proc.stdout.readline())
        assert set(ready) == {"device", "link", "control", "pid"}
        assert ready["link"] == str(link) and ready["control"] == f"{link}.ctl" and ready["pid"] == proc.pid
        assert os.path.realpath(link) == ready["device"]
        sock = socket.socket(socket.AF_UNIX)
        sock.settimeout(30)
        sock.connect(ready["control"])
        stream = sock.makefile("rw")

        def op(request: dict[str, Any]) -> dict[str, Any]:
            stream.write(json.dumps(request) + "\n")
            stream.flush()
            return json.loads(stream.readline())

        assert op({"op": "ping"}) == {"ok": True}
        state = op({"op": "state"})["state"]
        kind = json.loads(path.read_text())["kind"] if path.suffix == ".json" else None
        assert state["kind"] in ("continuous", "batch") and (kind is None or state["kind"] == kind)
        drawn = op({"op": "draw", "count": 2})
        assert drawn["ok"] and drawn["drawn"] >= 1
        dealt = op({"op": "dealt", "since": 0, "limit": 500})
        assert dealt["total"] == drawn["drawn"] == len(dealt["dealt"])
        refused = op({"op": "no_such_op"})
        assert refused["ok"] is False and refused["error"]
        proc.send_signal(sig)  # with the control client still connected
        assert proc.wait(30) == 0
        stream.close()
        sock.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    err = proc.stderr.read()
    assert "Traceback" not in err, err
    assert not os.path.lexists(link) and not os.path.exists(f"{link}.ctl")


def test_bad_scenario_exits_2_naming_the_key(tmp_path: Path) -> None:
    """docs/emulator.md: a bad scenario exits with status 2 and a message naming the key at fault."""
    bad = tmp_path / "bad.json"
    bad.write_text('{"decks": 12}')
    proc = tablectl("emulate-shoe", "--scenario", str(bad), "--link", str(tmp_path / "shoe"))
    assert proc.returncode == 2 and "decks" in proc.stderr


def test_every_example_file_is_documented() -> None:
    """Every file under docs/examples/ is named (or its folder is) in the doc that says how to run it."""
    emulator, rounds = (DOCS / "emulator.md").read_text(), (DOCS / "rounds.md").read_text()
    for path in SCENARIOS:
        assert f"`{path.name}`" in emulator, path
    assert "examples/rounds/" in rounds
    assert "docs/examples/keys/alice.key" in MQTT_DOC  # the worked signing example's key file
    assert {p.parent.name for p in (DOCS / "examples").rglob("*") if p.is_file()} == {
        "rounds",
        "scenarios",
        "keys",
    }


# ------------------------------------------------------------------------------------- docs/mqtt.md
def test_topic_table_matches_topics_py() -> None:
    rows = re.findall(
        r"^\| `([a-z_/+#]+)` \| [^|]+ \| (yes|no) \| (\d) \| \[`([a-z_]+\.schema\.json)`", MQTT_DOC, re.M
    )
    documented = {(t, r == "yes", int(q), s) for t, r, q, s in rows}
    assert documented == {(s.pattern, s.retained, s.qos, s.schema) for s in SPECS}
    for _, _, _, name in documented:
        assert (SCHEMAS / name).is_file()


def test_dealer_commands_doc_matches_schema_and_core() -> None:
    """Every documented dealer action and argument is accepted by cmd_dealer.schema.json, and the schema
    accepts nothing the doc does not list."""
    rows = table_rows(MQTT_DOC, "**Dealer**", "**Supervisor**")
    actions = {a for r in rows for a in ticked(r[0])}
    args = {t.split(":")[0] for r in rows for t in ticked(r[1]) if re.fullmatch(r"[a-z_]+(: true)?", t)}
    s = schema("cmd_dealer.schema.json")
    assert actions == set(s["properties"]["action"]["enum"])
    assert args == set(s["properties"]["args"]["properties"])
    documented_top = set(re.findall(r'"([a-z_]+)"', MQTT_DOC[MQTT_DOC.index("**Dealer**") :][:600]))
    assert set(s["properties"]) <= documented_top | {"request_id", "action", "args"}


def test_signed_commands_doc_matches_schema_and_roles() -> None:
    rows = table_rows(MQTT_DOC, "**Supervisor**", "**Technician**")
    supervisor = {a for r in rows for a in ticked(r[0])}
    tech_line = MQTT_DOC[MQTT_DOC.index("**Technician**") :].split("\n")[0]
    technician = set(ticked(tech_line)) - {"cmd/technician"}
    assert supervisor == set(ROLE_ACTIONS["supervisor"])
    assert technician == set(ROLE_ACTIONS["technician"])
    assert supervisor | technician == set(schema("cmd_signed.schema.json")["properties"]["action"]["enum"])


def _envelope(p: Publish, event_id: int) -> bytes:
    return json.dumps(
        {
            "event_id": event_id,
            "ts": "2026-01-01T00:00:00.000Z",
            "type": p.event_type,
            "table": "T1",
            "data": p.data,
        }
    ).encode()


def _play_one_round() -> list[Publish]:
    """PT-2001, continuous shuffler: one seat, a burn (r.10), the dealer stands on 17 (r.19)."""
    h = Harness()
    h.open_continuous("pt-2001")
    h.dealer("place_bet", seat=1, amount=1000)
    h.dealer("no_more_bets")
    # PT-2001 r.10: the shoe's first card is burnt; seat 1: T 9 = 19; dealer 7 + K = 17 stands (r.19)
    for code in ["2C", "TS", "7H", "9D", "KC"]:
        h.card(code)
    h.dealer("stand")
    return messages(h.effects)


def test_published_card_and_settlement_events_match_the_doc() -> None:
    """docs/mqtt.md topic table: events/card carries exactly the documented fields; events/settlement is the
    replay settlement (docs/rounds.md Output) with round_id; every message validates against its schema."""
    published = _play_one_round()
    for i, p in enumerate(published, 1):
        if p.data is not None:
            validate_message(p.topic, _envelope(p, i))
    row = next(line for line in MQTT_DOC.splitlines() if line.startswith("| `events/card`"))
    always = set(re.search(r"`\{([a-z_, ]+)\}`", row).group(1).replace(" ", "").split(","))
    optional = {"hidden", "errors"}
    card_props = set(schema("event_card.schema.json")["properties"]["data"]["properties"])
    assert card_props == always | optional
    cards = [p.data for p in published if p.topic == "events/card"]
    assert len(cards) >= 5
    for data in cards:
        assert set(data) - optional <= always
        assert always - {"code", "rank", "suit"} <= set(data)
        assert ("hidden" in data) != ("code" in data)
    (settlement,) = [p.data for p in published if p.topic == "events/settlement"]
    typed = set(schema("event_settlement.schema.json")["properties"]["data"]["properties"])
    assert set(settlement) <= typed
    assert settlement["hands"][0]["outcome"] == "win" and settlement["total_net"] == 1000
    for name in ("stake", "outcome", "net"):
        assert name in row_of("events/settlement") and name in settlement["hands"][0]


def row_of(topic: str) -> str:
    return next(line for line in MQTT_DOC.splitlines() if line.startswith(f"| `{topic}`"))


def test_shoe_procedures_documented_are_the_ones_published() -> None:
    """events/shoe: the procedure names in docs/mqtt.md are exactly those the table core publishes."""
    core = "".join(
        p.read_text() for p in sorted((ROOT / "controller" / "table").glob("*.py"))
    )  # one per concern
    published = set(re.findall(r'"shoe",\s*procedure="([a-z_]+)"', core))
    documented = set(ticked(row_of("events/shoe")))
    assert published and published <= documented
    assert not documented & {
        "warning",
        "shuffle_start",
        "shuffle_end",
        "lid_cycle",
    }  # never published
