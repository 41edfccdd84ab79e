"""The page's signer (floor/web/static/keys.js) against the Python one (controller/mqtt/auth.py), in
Debian's headless chromium: the same canonical bytes for the same command, and a signature made in the browser
by a non-extractable WebCrypto Ed25519 key that the table's verifier accepts (docs/mqtt.md "Signed commands")."""

from __future__ import annotations

import json
import random

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from controller.canonical import canonical as canonical_text
from controller.mqtt.auth import canonical as command_bytes
from controller.mqtt.auth import signature_valid
from controller.mqtt.schemas import check
from tests.support.floor import temp_database
from tests.support.floor_web import CHROMIUM, chromium, dashboard, log_in

pytestmark = pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed")

# Strings where JSON writers may differ: escapes, control characters, DEL, U+2028/9, non-BMP characters (keys
# are ordered by code point in Python: U+FF61 before U+1F600, which JS's default sort puts first by UTF-16 unit)
AWKWARD = ["", "plain", 'q"uote', "back\\slash", "tab\tnl\ncr\r", "\x00\x01\x1f\x7f", "\u2028\u2029",
           "é ñ ü", "中文", "😀", "\uff61", "\ud7ff\ue000", "/slash", "<script>", "\b\f"]  # fmt: skip


def _random_text(rng: random.Random) -> str:
    ranges = [(0, 0x7F), (0x80, 0xD800), (0xE000, 0x110000)]
    return rng.choice(AWKWARD) + "".join(
        chr(rng.randrange(*rng.choice(ranges))) for _ in range(rng.randrange(4))
    )


def _random_value(rng: random.Random, depth: int = 0) -> object:
    kind = rng.randrange(6 if depth < 3 else 4)
    if kind == 0:
        return rng.choice([None, True, False])
    if kind == 1:
        return rng.randrange(-(2**53) + 1, 2**53)
    if kind in (2, 3):
        return _random_text(rng)
    if kind == 4:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(5))}


def test_the_page_writes_the_same_canonical_bytes_and_its_signature_verifies_at_the_table():
    rng = random.Random(25)
    values = [
        {k: i for i, k in enumerate(AWKWARD)},
        AWKWARD,
        {"\uff61": 1, "😀": 2, "a": {"z": 0, "b": [1, -1]}},
    ]
    values += [_random_value(rng) for _ in range(300)]
    with temp_database() as dsn, dashboard(dsn) as web, chromium() as browser:
        page = browser.new_page()
        log_in(page, web.url, "carol")
        written = page.evaluate("(values) => values.map(canonicalJSON)", values)
        assert written == [canonical_text(v) for v in values]
        # what the page cannot write the same way as Python, it refuses rather than sign something else
        for bad in ("1.5", "2 ** 60", "'\\ud800'", "NaN"):
            refused = page.evaluate(
                f"() => {{ try {{ canonicalJSON({bad}); return 'written'; }} catch (e) {{ return 'refused'; }} }}"
            )
            assert refused == "refused", bad

        page.click("#make-key")
        page.wait_for_selector("#pubkey:text-matches('^[0-9a-f]{64}$')")
        public = Ed25519PublicKey.from_public_bytes(bytes.fromhex(page.inner_text("#pubkey")))
        args = {"alert_id": 7, "note": "é😀\u2028"}
        cmd = page.evaluate(
            "async (args) => signCommand(await loadSigningKey('carol'), 'supervisor', 'ack_alert', args, 'S1', 'T1')",
            args,
        )
        check("cmd_signed.schema.json", cmd, "the page's command")
        assert cmd["user"] == "carol" and cmd["args"] == args and signature_valid(cmd, public)
        assert (cmd["site"], cmd["table"]) == ("S1", "T1")
        assert not signature_valid({**cmd, "table": "T2"}, public)  # the table is in the signed bytes
        assert not signature_valid({**cmd, "args": {"alert_id": 8, "note": args["note"]}}, public)
        signed_text = page.evaluate(
            "(c) => canonicalJSON({action: c.action, args: c.args, nonce: c.nonce, role: c.role, site: c.site,"
            " table: c.table, ts: c.ts, user: c.user})",
            cmd,
        )
        assert signed_text.encode() == command_bytes(cmd)
        # the key survives a reload (IndexedDB) and stays the same
        page.reload()
        page.wait_for_selector("#pubkey:text-matches('^[0-9a-f]{64}$')")
        assert page.inner_text("#pubkey") == public.public_bytes_raw().hex()
        assert json.loads(json.dumps(cmd)) == cmd
