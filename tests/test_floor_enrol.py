"""``tablectl floor enrol`` (issue 25): an operator enrols a table's audit key on the floor; a table already holding
another key is changed only with --replace (and its checkpoints are judged again); trust on first use is per table
and off by default. Real PostgreSQL."""

from __future__ import annotations

import json

import psycopg
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from controller.audit.checkpoint import public_key_hex
from controller.cli import main as tablectl
from tests.support.floor import temp_database


def key() -> str:
    return public_key_hex(Ed25519PrivateKey.generate().public_key())


def test_enrol_show_replace_and_trust_on_first_use(tmp_path, capsys):
    first, second = key(), key()
    with temp_database() as dsn:
        base = ["floor", "enrol", "--dsn", dsn, "--site", "S1", "--table", "bj07"]
        assert tablectl([*base, "--key", "not-hex", "--user", "alice"]) == 1
        assert tablectl([*base, "--key", first]) == 2  # who enrols?
        assert tablectl([*base, "--key", first, "--user", "alice"]) == 0
        assert "enrolled: S1/bj07" in capsys.readouterr().out
        assert tablectl([*base, "--key", first.upper(), "--user", "bob"]) == 0
        assert "already enrolled" in capsys.readouterr().out
        # another key: refused without --replace (a re-keyed table is the operator's decision)
        manifest = tmp_path / "integrity.json"
        manifest.write_text(json.dumps({"format": "tablectl-integrity/1", "audit_public_key": second}))
        assert tablectl([*base, "--manifest", str(manifest), "--user", "bob"]) == 1
        assert "--replace" in capsys.readouterr().err
        with psycopg.connect(dsn) as conn:  # a checkpoint judged with the old key
            conn.execute(
                "INSERT INTO checkpoints (site, table_id, seq, event_id, hash, prev_seq, prev_hash, last_event_id,"
                " key_id, doc, signature_ok, chain, events_proven) VALUES ('S1', 'bj07', 5, 9, 'h', 0, 'p', 8, 'k',"
                " '{}', false, 'rejected', true)"
            )
        assert tablectl([*base, "--manifest", str(manifest), "--user", "bob", "--replace"]) == 0
        capsys.readouterr()
        with psycopg.connect(dsn) as conn:
            row = conn.execute(
                "SELECT public_key, key_source, enrolled_by, enrolled_at IS NOT NULL, trust_on_first_use"
                " FROM floor_tables WHERE table_id = 'bj07'"
            ).fetchone()
            assert row == (second, "enrolled", "bob", True, False)
            judged = conn.execute(
                "SELECT signature_ok, chain, events_proven, walk_next FROM checkpoints"
            ).fetchone()
            assert judged == (None, "pending", False, 8)  # judged again against the new key
        assert tablectl([*base]) == 0
        assert f"audit key {second} (enrolled, by bob)" in capsys.readouterr().out
        other = ["floor", "enrol", "--dsn", dsn, "--site", "S1", "--table", "bj08"]
        assert tablectl(other) == 0
        assert "no audit key (trust on first use off)" in capsys.readouterr().out
        assert tablectl([*other, "--trust-on-first-use", "on"]) == 0
        assert tablectl(other) == 0
        assert "trust on first use on" in capsys.readouterr().out
        assert tablectl(["floor", "enrol", "--dsn", dsn, "--site", "S1", "--table", "a/b"]) == 2
