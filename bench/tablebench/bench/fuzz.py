"""Seeded mutation fuzzers for the two doors bad input comes through: the shoe's serial link parser
(`drivers/protocol`) and the MQTT command intake (`controller/mqtt/commands.py`).

The contract (CONTRIBUTING "Rules of the house"): bad input gets a clear error, is counted, and never crashes
or changes state. A crash here is any exception other than the documented refusal (`DecodeError` for payloads;
nothing at all from `FrameDecoder.feed` or `CommandIntake.process`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drivers import events as ev
from drivers.protocol import messages as msg
from drivers.protocol.framing import Frame, FrameDecoder, encode_frame
from drivers.protocol.messages import MsgType


@dataclass
class FuzzReport:
    name: str
    inputs: int = 0
    crashes: list[str] = field(default_factory=list)
    counters: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    def bump(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n

    def lines(self) -> list[str]:
        mark = "OK " if not self.crashes else "FAIL"
        out = [
            f"[{mark}] {self.name}: {self.inputs} inputs in {self.seconds:.1f} s, crashes {len(self.crashes)}"
        ]
        out += [f"  {k:28} {v}" for k, v in sorted(self.counters.items())]
        out += [f"  crash: {c}" for c in self.crashes[:10]]
        return out


def mutate(rng: random.Random, data: bytes) -> bytes:
    """One to four random edits: bit flip, byte replace, insert, delete, duplicate a slice, truncate."""
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(6)
        i = rng.randrange(len(b) + 1)
        if op == 0 and b:
            b[min(i, len(b) - 1)] ^= 1 << rng.randrange(8)
        elif op == 1 and b:
            b[min(i, len(b) - 1)] = rng.randrange(256)
        elif op == 2:
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
        elif op == 3 and b:
            del b[i : i + rng.randint(1, 4)]
        elif op == 4 and b:
            j = rng.randrange(len(b))
            b[i:i] = b[j : j + rng.randint(1, 16)]
        elif op == 5:
            del b[i:]
    return bytes(b)


# ---- the serial link ---------------------------------------------------------------------------------------


def _valid_frames() -> list[bytes]:
    """A corpus of every message type the host parses, as the shoe would send them."""
    events: list[ev.DeviceEvent] = [
        ev.CardOut("A", "S", 1),
        ev.CardOut("T", "H", 65535, face_up=True),
        ev.CardUnreadable(7, damaged=True),
        ev.CutCardOut(),
        ev.WarningCardOut(),
        ev.LidChanged(ev.LidState.FORCED_OPEN),
        ev.ShuffleStarted(),
        ev.ShuffleFinished(312),
        ev.Jammed(ev.JamLocation.SHUFFLER),
        ev.JamCleared(),
        ev.CardsInside(300),
        ev.DiscardInserted(12),
        ev.DeckCheckResult({"AS": 6, "KD": 5}, unreadable=1),
    ]
    out = [encode_frame(i + 1, *msg.encode_numbered_event(i + 1, e)) for i, e in enumerate(events)]
    ident = ev.Identified(1, "EMU-CSM", "1.0.0", "EMU0001", 6, True)
    out.append(encode_frame(0, MsgType.IDENTIFY, msg.encode_identify(msg.Identify(ident, 42))))
    res = msg.ResultMsg(9, ev.CommandResult(False, 0x10, "jammed"), 1234)
    out.append(encode_frame(20, MsgType.COMMAND_RESULT, msg.encode_result(res)))
    out.append(encode_frame(21, MsgType.ACK))
    out.append(encode_frame(22, MsgType.HEARTBEAT, msg.encode_heartbeat(msg.Heartbeat(False, 7))))
    out.append(encode_frame(0, MsgType.HELLO, msg.encode_hello(msg.Hello(2, 99, 42, 1000))))
    return out


def _decode(frame: Frame) -> str:
    """Decode a frame's payload like the driver does; returns the outcome name."""
    t = frame.type
    if t == MsgType.ACK:
        return "control"
    try:
        if t == MsgType.HEARTBEAT:
            msg.decode_heartbeat(frame.payload)
            return "control"
        if t == MsgType.HELLO:
            msg.decode_hello(frame.payload)
            return "control"
        if t == MsgType.IDENTIFY:
            msg.decode_identify(frame.payload)
        elif t == MsgType.COMMAND_RESULT:
            msg.decode_result(frame.payload)
        elif MsgType.LOCK_LID <= t <= MsgType.SET_WARNING_LIGHT:
            msg.decode_command(t, frame.payload)
        else:
            msg.decode_numbered_event(t, frame.payload)  # protocol v2 (docs/protocol.md §4)
    except msg.DecodeError:
        return "payload_refused"
    return "payload_ok"


class _Quiet:
    """Refusals are logged one by one by the product; a fuzz run would print millions of them."""

    def __enter__(self) -> None:
        logging.disable(logging.WARNING)

    def __exit__(self, *exc: object) -> None:
        logging.disable(logging.NOTSET)


def fuzz_link(n: int, seed: int = 0) -> FuzzReport:
    with _Quiet():
        return _fuzz_link(n, seed)


def _fuzz_link(n: int, seed: int) -> FuzzReport:
    """``n`` frames (mutated valid frames, random bytes, frames with random payloads and a correct CRC)."""
    rng = random.Random(seed)
    corpus = _valid_frames()
    known = {(f.seq, f.type, f.payload) for raw in corpus for f in FrameDecoder("corpus").feed(raw)}
    rep = FuzzReport("link parser (drivers/protocol)")
    dec = FrameDecoder("fuzz")
    start = time.monotonic()
    for i in range(n):
        kind = rng.randrange(10)
        if kind < 6:
            data = mutate(rng, rng.choice(corpus))
            rep.bump("mutated_frames")
        elif kind < 8:  # a well-formed frame around a random payload: only the message decoder stands guard
            t = rng.choice([*list(MsgType), rng.randrange(256)])
            payload = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 64)))
            data = encode_frame(rng.randrange(256), int(t), payload)
            rep.bump("random_payload_frames")
        else:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 80)))
            rep.bump("random_bytes")
        try:
            for frame in dec.feed(data):
                rep.bump(_decode(frame))
                if kind < 6 and (frame.seq, frame.type, frame.payload) not in known:
                    rep.bump("mutated_frame_passed_crc")  # CRC-16 lets ~1/65536 damaged frames through
        except Exception as exc:  # anything but a refusal is a crash
            rep.crashes.append(f"input {i}: {type(exc).__name__}: {exc} ({data.hex()[:120]})")
            dec = FrameDecoder("fuzz")
        if kind < 6 and rng.random() < 0.5:
            dec.feed(b"\x7e")  # resynchronise now and then, like a flag on the line
    rep.inputs = n
    for k, v in dec.stats.as_dict().items():
        rep.counters[f"decoder_{k}"] = v
    rep.seconds = time.monotonic() - start
    return rep


# ---- the MQTT command intake ------------------------------------------------------------------------------


def _fuzz_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    return Ed25519PrivateKey.from_private_bytes(bytes(range(32)))  # a fixed key, enrolled as alice + tom


def _seed_commands() -> list[tuple[str, dict[str, Any]]]:
    from controller.mqtt.signed_command import build_command

    key = _fuzz_key()
    signed = build_command(
        "alice", "", "supervisor", "clear_jam", {"alert_id": 3}, site="S1", table="T1", private_key=key
    )
    tech = build_command(
        "tom", "", "technician", "run_deck_check", {}, site="S1", table="T1", private_key=key
    )
    return [
        ("dealer", {"request_id": "p-1", "action": "place_bet", "args": {"seat": 2, "amount": 500}}),
        ("dealer", {"request_id": "p-2", "action": "stand", "args": {}}),
        ("dealer", {"request_id": "p-3", "action": "insurance", "args": {"seat": 1, "amount": 250}}),
        ("supervisor", signed),
        ("technician", tech),
    ]


def _structural(rng: random.Random, doc: Any, depth: int = 0) -> Any:
    """Replace a random value somewhere in the document with a hostile one."""
    hostile: list[Any] = [
        None, True, -1, 2**63, 1e308, float("nan"), "", "x" * 5000, "\u0000", "☃", [], {}, [1, [2, [3]]],
        {"seat": {"$gt": 0}}, "../../", "casino/#", "\ud800", "a\udfffb", 10**300,
        -(2**200), 1e-320, _nested(rng.randrange(10, 900)),
    ]  # fmt: skip
    if isinstance(doc, dict) and doc and depth < 4:
        d = dict(doc)
        k = rng.choice(list(d))
        if rng.random() < 0.2:
            del d[k]
        elif rng.random() < 0.2:
            d[rng.choice(["extra", "upcoming", "__proto__", k + "_"])] = rng.choice(hostile)
        else:
            d[k] = _structural(rng, d[k], depth + 1) if rng.random() < 0.5 else rng.choice(hostile)
        return d
    return rng.choice(hostile)


def _nested(depth: int) -> Any:
    doc: Any = 1
    for _ in range(depth):
        doc = [doc]
    return doc


_RAW_HOSTILE = (
    b'{"request_id":"r","action":"stand","args":{"seat":' + b"9" * 5000 + b"}}",  # beyond int digits limit
    b'{"request_id":"r","action":"stand","args":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"request_id":"r","action":"stand","args":{},"user":"\\ud800\\udc00\\ud800"}',
    b'{"request_id":"\\udfff","action":"stand","args":{}}',
    b"\xed\xa0\x80",  # a UTF-8-encoded surrogate: invalid UTF-8
    b"\xff\xfe\x00{",
    b'{"a":1e999999}',
    b'{"request_id":"r","action":"stand","args":{"seat":1.0e400}}',
)


def _payload(rng: random.Random, doc: dict[str, Any]) -> bytes:
    r = rng.random()
    if r < 0.03:
        return rng.choice(_RAW_HOSTILE)
    if r < 0.45:
        text = json.dumps(_structural(rng, doc), allow_nan=True)
        return text.encode("utf-8", errors="surrogatepass")
    raw = json.dumps(doc).encode()
    if r < 0.9:
        return mutate(rng, raw)
    return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 200)))


async def _fuzz_commands(n: int, seed: int, workdir: Path) -> FuzzReport:
    from controller.journal.store import Journal
    from controller.mqtt.alerts import AlertManager
    from controller.mqtt.auth import Authenticator, CredentialStore, NonceStore
    from controller.mqtt.commands import CommandIntake, CommandRequest
    from controller.mqtt.schemas import MessageInvalid, check, parse_json
    from controller.mqtt.userkeys import public_key_hex

    public = public_key_hex(_fuzz_key())
    creds = CredentialStore.from_dict(
        {"users": {"alice": {"roles": ["supervisor"], "public_key": public},
                   "tom": {"roles": ["technician"], "public_key": public}}}
    )  # fmt: skip

    rng = random.Random(seed)
    rep = FuzzReport("MQTT command intake (CommandIntake.process)")
    journal = Journal(workdir / "fuzz-journal.db", table_id="FZ")
    calls: list[CommandRequest] = []

    async def handler(req: CommandRequest) -> dict[str, Any]:
        calls.append(req)
        return {}

    intake = CommandIntake(
        handler=handler,
        auth=Authenticator(creds, NonceStore(journal), site="S1", table="T1"),
        alerts=AlertManager(journal),
        link=None,
    )
    seeds = _seed_commands()
    used_nonces: set[str] = set()
    roles = ["dealer", "supervisor", "technician", "monitor", "", "dealer/../supervisor"]
    start = time.monotonic()
    for i in range(n):
        role, doc = rng.choice(seeds)
        if rng.random() < 0.05:
            role = rng.choice(roles)
        payload = _payload(rng, doc)
        before = len(calls)
        seq, repeats = journal.last_seq, intake.counters.repeated
        try:
            resp = await intake.process(role, payload)
            intake.flush_results()
        except Exception as exc:
            rep.crashes.append(f"input {i} ({role}): {type(exc).__name__}: {exc} ({payload[:120]!r})")
            continue
        if journal.last_seq == seq and intake.counters.repeated == repeats:
            rep.crashes.append(f"input {i} ({role}): answered without a journal row ({payload[:120]!r})")
        reached = len(calls) > before
        if not isinstance(resp, dict) or "ok" not in resp:
            rep.crashes.append(f"input {i}: response without ok: {resp!r}")
        if reached and role != "dealer":
            # Only request_id is outside the signature; the signed fields must be the original ones, used once.
            got = json.loads(payload)
            signed = ("user", "role", "action", "args", "ts", "nonce", "sig")
            if any(got.get(k) != doc.get(k) for k in signed) or got["nonce"] in used_nonces:
                rep.crashes.append(f"input {i}: a forged or replayed {role} command reached the handler")
            used_nonces.add(got["nonce"])
            rep.bump("signed_original_accepted_once")
        elif reached:
            try:  # a dealer command that reached the table must be schema-valid (the ACL guards the rest)
                check("cmd_dealer.schema.json", parse_json(payload), "cmd/dealer")
            except MessageInvalid as exc:
                rep.crashes.append(f"input {i}: invalid dealer command reached the handler: {exc}")
            rep.bump("valid_dealer_commands_passed")
        else:
            rep.bump("refused")
    rep.inputs = n
    counters = dataclasses.asdict(intake.counters)
    rep.counters.update({f"intake_{k}": v for k, v in counters.items() if isinstance(v, int)})
    rep.seconds = time.monotonic() - start
    journal.close()
    return rep


def fuzz_commands(n: int, seed: int = 0, workdir: Path | None = None) -> FuzzReport:
    with _Quiet():
        if workdir is not None:
            return asyncio.run(_fuzz_commands(n, seed, workdir))
        with tempfile.TemporaryDirectory(prefix="fuzz-cmd-") as tmp:
            return asyncio.run(_fuzz_commands(n, seed, Path(tmp)))
