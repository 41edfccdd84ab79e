"""Commands against the real stack (`tablectl run`, real mosquitto, emulated shoe): a retried `stand` whose
answer was lost (issue 14 item 6), across a kill -9, and the lockout seen from a supervisor's terminal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from controller.client import CommandFailed, TableClient
from tablebench.demo_session import prepare_session
from tablebench.emulator.control_client import ControlClient
from tablebench.stack import DEMO_PINS, Stack, StackOptions

WAIT = 30


@pytest.fixture
async def table(tmp_path):
    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False)).start()
    try:
        await prepare_session(stack, "pt-2001", lambda line: None)
        yield stack
    finally:
        stack.stop()


async def _connected(stack: Stack, user: str) -> TableClient:
    c = stack.client(user)
    await c.connect()
    await c.wait_for(lambda v: v.status == "online" and "round" in v.states and "shoe" in v.states, WAIT)
    return c


async def _to_first_decision(c: TableClient, ctl: Any) -> dict[str, Any]:
    """Bets on seats 1 and 3, cards drawn until a player decides (insurance declined)."""
    await c.wait_for(lambda v: not v.states["shoe"].get("shuffling"), WAIT)
    for seat in (1, 3):
        await c.dealer("place_bet", seat=seat, amount=1000)
    await c.dealer("no_more_bets")
    while True:
        rnd = c.view.states.get("round", {})
        allowed = rnd.get("allowed_actions") or []
        if "stand" in allowed:
            return rnd
        if "decline_insurance" in allowed:
            await c.dealer("decline_insurance", seat=rnd["turn"]["seat"])
            continue
        if rnd.get("complete"):
            pytest.skip("the round ended before a player decided (dealer blackjack)")
        before = c.view.states["shoe"].get("dealt_this_shoe")
        await ctl.draw(1)
        await c.wait_for(lambda v, b=before: v.states["shoe"].get("dealt_this_shoe") != b, WAIT)


def _turn(c: TableClient) -> Any:
    return (c.view.states["round"].get("turn") or {}).get("seat"), c.view.states["round"].get("turn", {})


async def test_a_retried_stand_whose_answer_was_lost_acts_once_even_across_kill_9(table: Stack) -> None:
    """issue 14 item 6: a committed `stand` without its answer, retried with the same request id (after a
    kill -9 and restart too): the recorded answer, and the next seat is not stood."""
    c = await _connected(table, "dealer")
    ctl = await ControlClient.connect(table.shoe_control)
    try:
        rnd = await _to_first_decision(c, ctl)
        seat = rnd["turn"]["seat"]
        body = {"request_id": "stand-lost-1", "action": "stand", "args": {}}
        lost = Properties(PacketTypes.PUBLISH)
        lost.ResponseTopic = f"{c.prefix}/cmd/dealer/response/nobody"  # an answer the dealer cannot read
        c.mqtt.publish(f"{c.prefix}/cmd/dealer", json.dumps(body), properties=lost)
        await c.wait_for(lambda v: (v.states["round"].get("turn") or {}).get("seat") != seat, WAIT)
        after_first = c.view.states["round"]
        answer = await c.request("dealer", body)
        assert answer["ok"] is True and answer["request_id"] == "stand-lost-1"
        # the retry was answered from the record: nothing else moved (the next seat still has its turn)
        await c.wait_for(lambda v: True, 1)
        assert c.view.states["round"]["turn"] == after_first["turn"]
        assert c.view.states["round"]["round_id"] == after_first["round_id"]
        # kill -9 and restart: the answer comes from the journal
        table.kill_controller()
        table.start_controller()
        await c.wait_for(lambda v: v.status == "offline", WAIT)
        await c.wait_for(lambda v: v.status == "online", WAIT)
        again = await c.request("dealer", body, timeout=20)
        assert again == answer
        await c.wait_for(lambda v: "round" in v.states, WAIT)
        assert c.view.states["round"]["turn"] == after_first["turn"]
    finally:
        await ctl.close()
        await c.close()


async def test_lockout_refuses_the_right_pin_after_five_wrong_signatures(table: Stack, tmp_path) -> None:
    """issue 13 §3: online guessing. Five commands signed with a key that is not alice's (what a wrong key
    file or a forger sends): refused, "your key is not enrolled at table demo1" each time; then alice's own
    valid command: refused, "not authorised" (locked out), and a critical command_lockout alert for the floor;
    another user through the same account is not refused."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from controller.mqtt.signed_command import build_command

    sup = await _connected(table, "supervisor1")
    try:
        wrong = Ed25519PrivateKey.generate()
        for _ in range(5):
            body = build_command(
                "alice", "", "supervisor", "lock_lid", {}, site="demo", table="demo1", private_key=wrong
            )
            r = await sup.request("supervisor", body)
            assert r == {"request_id": body["request_id"], "ok": False,
                         "reason": f"your key is not enrolled at table {table.opts.table_id}"}  # fmt: skip
        with pytest.raises(CommandFailed, match=r"^lock_lid: not authorised$"):
            await sup.supervisor("alice", DEMO_PINS["alice"], "lock_lid")
        await sup.wait_for(
            lambda v: any(
                a["kind"] == "command_lockout" and a["severity"] == "critical" for a in v.alerts_open
            ),
            WAIT,
        )
        # only alice is locked: bob through the very account the guesses came from acknowledges the alert (a relay
        # passing on one user's bad signatures is not locked, issue 37)
        alert_id = next(a["alert_id"] for a in sup.view.alerts_open if a["kind"] == "command_lockout")
        r = await sup.supervisor("bob", DEMO_PINS["bob"], "ack_alert", alert_id=alert_id)
        assert r["ok"] is True
    finally:
        await sup.close()


@pytest.fixture
def bare(tmp_path):
    stack = Stack(tmp_path / "bare", StackOptions(jackpot=False)).start()
    try:
        yield stack
    finally:
        stack.stop()


async def test_no_account_can_take_over_the_controllers_client_id(bare: Stack) -> None:
    """Attack (issue 13 §3): a dealer account connected 17 times in 20 s under the controller's predictable
    client id (tablectl-<site>-<id>), each time disconnecting it and firing its last will. The configured id is
    now only a prefix of a random one: connecting under the predictable ids disconnects nothing."""
    import asyncio

    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    watcher = await _connected(bare, "monitor")
    statuses: list[str] = []
    watcher.on_change.append(lambda _e: statuses.append(watcher.view.status))
    site, table = bare.opts.site, bare.opts.table_id
    try:
        for cid in (f"tablectl-{site}-{table}", f"table-{table}", table):
            thief = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=cid, protocol=mqtt.MQTTv5)
            thief.username_pw_set("dealer", bare.users["dealer"])
            thief.connect(bare.host, bare.port)
            thief.loop_start()
            await asyncio.sleep(1.0)  # a takeover would drop the controller at once and the will would follow
            thief.disconnect()
            thief.loop_stop()
        assert "offline" not in statuses and watcher.view.status == "online"
        dealer = await _connected(bare, "dealer")
        try:  # and the controller still answers
            with pytest.raises(CommandFailed, match="not allowed in state closed"):
                await dealer.dealer("place_bet", seat=1, amount=1000)
        finally:
            await dealer.close()
    finally:
        await watcher.close()


def test_an_old_hmac_credentials_file_stops_the_service_in_one_line(tmp_path) -> None:
    """A table upgraded without re-enrolling its supervisors: `tablectl run` says so in one line (exit 3, the
    outputs stay safe) instead of a traceback (docs/deploy.md)."""
    import subprocess

    from tablebench.stack import ROOT, TABLECTL

    stack = Stack(tmp_path / "stack", StackOptions(jackpot=False))
    try:
        stack.start_broker()
        stack.start_parts()
        creds = stack.workdir / "credentials.toml"
        creds.write_text(
            '[users."alice"]\nroles = ["supervisor"]\niterations = 600000\nkey = "' + "ab" * 32 + '"\n'
        )
        run = subprocess.run(
            [*TABLECTL, "run", "--config", str(stack.config_path)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=60,
        )
        assert run.returncode == 3, run.stdout + run.stderr
        # one line on stderr (docs/cli.md), beside the service's log lines; nothing on stdout
        lines = [line for line in run.stderr.splitlines() if line.startswith("tablectl run:")]
        assert run.stdout == "" and len(lines) == 1, run.stderr
        assert lines[0].startswith("tablectl run: supervisor credentials:"), run.stderr
        assert "re-enrol" in lines[0] and "Traceback" not in run.stdout + run.stderr
    finally:
        stack.stop()


async def test_a_profile_name_with_a_trailing_newline_is_refused_by_the_name_check(bare: Stack) -> None:
    """Issue 27 §7: ``$`` matches before a final newline, so "pt-2001\\n" passed the profile name pattern and
    was stopped only by a later check. Now the name check itself refuses it (fullmatch / \\Z)."""
    sup = await _connected(bare, "supervisor1")
    try:
        with pytest.raises(CommandFailed, match="never a path") as refused:
            await sup.supervisor("alice", DEMO_PINS["alice"], "open_table", profile="pt-2001\n")
        assert "listed in the integrity manifest, never a path" in refused.value.reason
    finally:
        await sup.close()
